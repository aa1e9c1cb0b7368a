#!/usr/bin/env bash
# Installs a built wheel into fresh environments of Python 3.10, 3.12 and
# 3.13 (NEOFLOW_SMOKE_PYTHONS), as a user would (pip resolves PyTorch and
# the rest from the package index), with no Go on PATH and no checkout on
# sys.path, and runs tests/smoke/smoke.py in each.
#
#   bash scripts/smoke-wheel.sh [WHEEL]      # default: dist/neoflow-*.whl
#
# The environments are made with uv (PyPI's uv), whose cache makes a fresh
# one with PyTorch in seconds after the first; each is removed afterwards.
# The Pythons are pyenv's or python3.X on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/fresh-env.sh

whl=$(realpath "${1:-$(ls dist/neoflow-*.whl)}")
for v in ${NEOFLOW_SMOKE_PYTHONS:-3.10 3.12 3.13}; do
  echo "== smoke test of $(basename "$whl") on Python $v"
  env_dir=$(fresh_env "$v")
  "$UV" pip install -q -p "$env_dir/bin/python" "$whl"
  run_without_go "$env_dir/bin/python" "$PWD/tests/smoke/smoke.py"
  rm -rf "$env_dir"
done
