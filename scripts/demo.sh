#!/usr/bin/env bash
# Sets everything up, then shows the tpu device off.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/python examples/quickstart.py
echo
echo "demo: training the nanoGPT example on tpu for a short while"
.venv/bin/python examples/train_gpt.py --steps 60
