#!/usr/bin/env bash
# Builds neoflow's wheel with both libraries, the CPU-only libneoflow.so and
# the CUDA build libneoflow_cuda.so, checks that it holds both, and installs
# it into the virtual environment. These are the Dockerfile's build steps,
# for a plain machine without a container engine; CI runs them. No GPU is
# needed: cuda.h and the libcuda link stub come from CUDA_HOME or, on
# Debian, from scripts/cuda-dev.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

echo "== CUDA headers"
NEOFLOW_CUDA_DEV=$(bash scripts/cuda-dev.sh)
export NEOFLOW_CUDA_DEV
echo "cuda.h and libcuda.so from $NEOFLOW_CUDA_DEV"

echo "== pip wheel ."
rm -rf dist
NEOFLOW_BUILD_CUDA=1 "$PY" -m pip wheel -q --no-deps -w dist .
whl=$(ls dist/neoflow-*.whl)
"$PY" - "$whl" <<'PYEOF'
import sys
import zipfile

names = zipfile.ZipFile(sys.argv[1]).namelist()
for lib in ("neoflow/libneoflow.so", "neoflow/libneoflow_cuda.so"):
    if lib not in names:
        raise SystemExit(f"{sys.argv[1]} lacks {lib}")
print(f"{sys.argv[1]} holds libneoflow.so and libneoflow_cuda.so")
PYEOF
"$PY" -m pip install -q --force-reinstall --no-deps "$whl"
