#!/usr/bin/env bash
# Builds neoflow's release wheel, dist/neoflow-VERSION-cp310-abi3-manylinux_2_17_x86_64.whl,
# with both libraries (the CPU-only libneoflow.so and the CUDA build
# libneoflow_cuda.so), checks it and installs it into the virtual
# environment. No GPU, CUDA toolkit or root is needed: cgo compiles with Zig
# targeting glibc 2.17 (scripts/manylinux-cc) and cuda.h comes from the
# nvidia-cuda-runtime-cu12 package. The checks: auditwheel gives the wheel its
# manylinux tag (libcuda.so.1, the driver, stays outside it, as in PyTorch's
# wheels), no library needs a glibc symbol newer than 2.17 (objdump -T), and
# both libraries are in it, stripped.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

PLAT=manylinux_2_17_x86_64
NEOFLOW_ZIG=$("$PY" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
export NEOFLOW_ZIG CC="$PWD/scripts/manylinux-cc"
echo "== pip wheel . (CC: Zig $("$NEOFLOW_ZIG" version), glibc 2.17; cuda.h from $NEOFLOW_CUDA_INCLUDE)"
rm -rf dist build
NEOFLOW_BUILD_CUDA=1 "$PY" -m pip wheel -q --no-deps -w dist/linux .

echo "== auditwheel repair --plat $PLAT"
PATH="$NEOFLOW_VENV/bin:$PATH" "$PY" -m auditwheel repair --plat "$PLAT" --exclude libcuda.so.1 -w dist dist/linux/neoflow-*.whl
rm -rf dist/linux
whl=$(ls dist/neoflow-*.whl)
"$PY" scripts/check_wheel.py "$whl" --plat "$PLAT"

"$PY" -m pip install -q --force-reinstall --no-deps "$whl"
echo "installed $whl"
