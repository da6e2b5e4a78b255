#!/usr/bin/env bash
# cleave's main job on built-in defaults: installs what is missing, builds, and runs `cleave` with
# the given arguments, by default `inspect gpt` (GPT-2 small from the zoo: its training step's
# parameters, weights + gradients + optimizer state, saved activations and FLOPs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
if [ $# -eq 0 ]; then
  set -- inspect gpt
fi
exec "${CLEAVE_BUILD_DIR:-build}/cleave" "$@"
