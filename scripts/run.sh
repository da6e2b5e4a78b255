#!/usr/bin/env bash
# cleave's main job on built-in defaults: installs what is missing, builds, and runs `cleave` with
# the given arguments, by default `op conv2d` (the built-in convolution on example shapes: its
# iteration space and what each half of every 2-way split reads, writes and reduces).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
if [ $# -eq 0 ]; then
  set -- op conv2d
fi
exec "${CLEAVE_BUILD_DIR:-build}/cleave" "$@"
