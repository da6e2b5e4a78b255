#!/usr/bin/env bash
# Installs the Debian 12 packages cleave needs to build, test and benchmark. Idempotent: installs
# only what is missing. Later issues add packages to PACKAGES.
set -euo pipefail

PACKAGES=(
  g++ cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libfmt-dev
  libgtest-dev googletest libgmock-dev libbenchmark-dev
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
