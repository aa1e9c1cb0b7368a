#!/usr/bin/env bash
# Sets up everything from nothing, installs neoflow and runs the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
"$PY" -m pip install -q .
cd examples && "$PY" demo.py
