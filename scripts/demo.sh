#!/usr/bin/env bash
# Sets up everything from nothing, installs neoflow, runs the demo and then
# trains one workload (MI-LSTM) end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
"$PY" -m pip install -q .
cd examples
"$PY" demo.py
echo
"$PY" milstm.py --steps 20
