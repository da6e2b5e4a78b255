#!/usr/bin/env bash
# Installs the Debian 12 packages cleave needs to build, test and benchmark. Idempotent: installs
# only what is missing. oneDNN is the runtime's kernels (its CMake config needs the OpenCL
# headers); libonnx + protobuf the importer; python3-torch/torchvision/onnx export the importer's
# test models; clang + its runtime build the importer's fuzz target (libFuzzer); METIS the
# mincut search's partitioner; pybind11 the Python module; chromium opens `cleave report`'s HTML in
# its test (headless); Open MPI the runtime's MPI backend (`cleave run --backend mpi`, its tests
# run mpirun; iproute2 makes the network namespaces of the two-host test).
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev googletest libgmock-dev libbenchmark-dev
  libdnnl-dev ocl-icd-opencl-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  python3-onnx python3-torch python3-torchvision python3-numpy
  clang libclang-rt-14-dev
  libmetis-dev
  openmpi-bin libopenmpi-dev iproute2
  python3-dev pybind11-dev python3-pybind11
  chromium
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
