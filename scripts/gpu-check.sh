#!/usr/bin/env bash
# The checks of the CUDA backend that need an NVIDIA GPU, for a machine that
# has one with PyTorch but no Go toolchain. It installs the prebuilt wheel
# (dist/neoflow-*.whl, from scripts/build-wheel.sh on any x86-64 Linux
# machine) into a scratch directory and runs, by stage:
#
#   tests  the GPU test suite: tests/python/test_cuda.py (every op forward
#          and backward against PyTorch, gradcheck in float64, float16 and
#          bfloat16, a non-default stream, a CUDA graph, the GPU tuner), the
#          "cuda" cases of the math library, torch.func and torch.vmap tests,
#          and the GPU benchmark smoke tests
#   bench  bench/workloads.py --device cuda (neoflow against PyTorch eager
#          and torch.compile; the capsule and LSTM-cell speed targets), with
#          $NEOFLOW_BENCH_ARGS appended (e.g. "--batches 16 64 --tune 8")
#   gemm   bench/gemm.py --tune (float32 GEMM 4096^3 against torch.matmul)
#   bandwidth  bench/bandwidth.py --device cuda (memory-bound ops against
#          the measured copy bandwidth)
#
# Usage: scripts/gpu-check.sh STAGE... [--cpu-ok]
# Logs and results go to $OUT (default /tmp/neoflow-gpu-check); the last
# lines printed are a summary. Every stage runs even when an earlier one
# fails; the exit status is the first failure's. --cpu-ok runs without a
# GPU (the GPU tests then skip), to check the plumbing.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/neoflow-gpu-check}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"

stages=() cpu_ok=0
for a in "$@"; do
  case $a in
    tests | bench | gemm | bandwidth) stages+=("$a") ;;
    --cpu-ok) cpu_ok=1 ;;
    *) echo "gpu-check: unknown argument $a (stages: tests bench gemm bandwidth; flag: --cpu-ok)" >&2; exit 2 ;;
  esac
done
[ ${#stages[@]} -gt 0 ] || { echo "usage: scripts/gpu-check.sh tests|bench|gemm|bandwidth... [--cpu-ok]" >&2; exit 2; }

whl=$(ls dist/neoflow-*.whl 2>/dev/null | head -1)
[ -n "$whl" ] || { echo "gpu-check: no dist/neoflow-*.whl: build it with scripts/build-wheel.sh and bring dist/ along" >&2; exit 2; }
site=$(mktemp -d /tmp/neoflow-site.XXXXXX)
trap 'rm -rf "$site"' EXIT
"$PY" -m pip install -q --no-index --no-deps --no-compile --target "$site" "$whl" || { echo "gpu-check: installing $whl failed" >&2; exit 2; }
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}

{
  echo "wheel: $whl"
  if command -v nvidia-smi >/dev/null; then nvidia-smi -L 2>&1; else echo "nvidia-smi: not found"; fi
  "$PY" - <<'PYEOF'
import platform
import torch
import neoflow
from neoflow import config
print("python", platform.python_version(), "torch", torch.__version__, "cuda", torch.version.cuda)
print("neoflow", neoflow.__version__, "from", neoflow.__file__)
if torch.cuda.is_available():
    print("gpu", torch.cuda.get_device_name(), "sm_%d%d" % torch.cuda.get_device_capability())
print("cuda build loaded:", config.cuda_enabled())
PYEOF
} 2>&1 | tee "$OUT/env.txt"

gpu=1
if ! "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'; then
  gpu=0
  if [ $cpu_ok = 0 ]; then
    echo "gpu-check: torch.cuda.is_available() is False on this machine (--cpu-ok runs anyway)" >&2
    exit 2
  fi
  echo "gpu-check: no GPU; going on (--cpu-ok)"
fi

status=0 summary=()
note() { summary+=("$1"); }

run_tests() {
  local timeout=()
  "$PY" -c 'import pytest_timeout' 2>/dev/null && timeout=(--timeout "${NEOFLOW_TEST_TIMEOUT:-300}")
  (cd tests/python && "$PY" -m pytest -q -rfE -p no:cacheprovider --durations=20 "${timeout[@]}" \
    --junitxml "$OUT/pytest-cuda.xml" -k "not cpu" test_cuda.py test_bench_smoke.py::test_gpu_benchmarks_smoke \
    test_math.py test_func_transforms.py test_vmap.py) 2>&1 | tee "$OUT/pytest-cuda.log"
  local rc=${PIPESTATUS[0]}
  note "tests: $(tail -1 "$OUT/pytest-cuda.log") (rc $rc)"
  return "$rc"
}

run_bench() {
  local dev=cuda
  [ $gpu = 1 ] || dev=cpu
  local args=(--device "$dev" --out "$OUT")
  [ "$dev" = cpu ] && args+=(--size small --batches 1 --repeat 2 --warmup 0 --no-compile --no-ops)
  # NEOFLOW_BENCH_ARGS adds arguments, e.g. "--batches 16 64 --no-ops --tune 8" for a tuned run.
  read -r -a extra <<<"${NEOFLOW_BENCH_ARGS:-}"
  args+=("${extra[@]}")
  "$PY" bench/workloads.py "${args[@]}" 2>&1 | tee "$OUT/bench.log"
  local rc=${PIPESTATUS[0]}
  note "bench: rc $rc; $(ls "$OUT"/workloads-*.md 2>/dev/null | head -1)"
  return "$rc"
}

run_gemm() {
  "$PY" bench/gemm.py --tune "${NEOFLOW_GEMM_TRIALS:-48}" --out "$OUT" 2>&1 | tee "$OUT/gemm.log"
  local rc=${PIPESTATUS[0]}
  note "gemm: rc $rc; $(grep -m1 -i 'of torch.matmul' "$OUT/gemm.log" || true)"
  return "$rc"
}

run_bandwidth() {
  local dev=cuda
  [ $gpu = 1 ] || dev=cpu
  "$PY" bench/bandwidth.py --device "$dev" --out "$OUT" 2>&1 | tee "$OUT/bandwidth.log"
  local rc=${PIPESTATUS[0]}
  note "bandwidth: rc $rc; $(grep -m1 'Copy (' "$OUT/bandwidth.log" || true)"
  return "$rc"
}

for s in "${stages[@]}"; do
  echo "== $s"
  start=$SECONDS
  "run_$s"
  rc=$?
  [ $status = 0 ] && status=$rc
  note "$s took $((SECONDS - start)) s"
done

rm -rf "$site"
echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$status"
