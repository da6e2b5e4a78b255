#!/usr/bin/env bash
# cleave's main job on built-in defaults: installs what is missing, builds, and runs `cleave` with
# the given arguments, by default `compare gpt --cluster dgx-a100`: GPT-2 small from the zoo on
# the DGX A100 preset, each planning algorithm's plan lowered, simulated and compared (step time,
# samples/s, efficiency, memory per device against capacity, traffic, where the time goes).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
if [ $# -eq 0 ]; then
  set -- compare gpt --cluster dgx-a100
fi
exec "${CLEAVE_BUILD_DIR:-build}/cleave" "$@"
