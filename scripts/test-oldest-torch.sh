#!/usr/bin/env bash
# The oldest PyTorch neoflow declares (MIN_TORCH in pyext/neoflow/version.py,
# X.Y: its newest X.Y.* release), in a fresh environment of Python 3.10 with the built wheel: the
# smoke test, then the custom-op and backend tests.
#
#   bash scripts/test-oldest-torch.sh [WHEEL]     # default: dist/neoflow-*.whl
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/fresh-env.sh

floor=$(sed -n 's/^MIN_TORCH = "\(.*\)"$/\1/p' pyext/neoflow/version.py)
whl=$(realpath "${1:-$(ls dist/neoflow-*.whl)}")
echo "== torch==$floor.* on Python 3.10 with $(basename "$whl")"
env_dir=$(fresh_env 3.10)
trap 'rm -rf "$env_dir"' EXIT
"$UV" pip install -q -p "$env_dir/bin/python" "$whl" "torch==$floor.*" pytest hypothesis setuptools  # torch 2.5's Inductor imports setuptools
"$env_dir/bin/python" -c 'import torch; print("torch", torch.__version__)'
run_without_go "$env_dir/bin/python" "$PWD/tests/smoke/smoke.py"
# Run from tests/python so that `import neoflow` is the installed wheel.
cd tests/python
"$env_dir/bin/python" -m pytest -q -p no:cacheprovider test_ops.py test_grad.py test_vmap.py test_func_transforms.py \
  test_backend.py
