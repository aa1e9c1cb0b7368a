#!/usr/bin/env bash
# Builds the sdist and checks it as a user without the wheel would meet it:
# it holds the Go core (sources, go.mod, go.sum, generated protobuf code);
# without Go on PATH, building it fails at once with a message naming Go;
# with Go it builds a wheel with both libraries (cuda.h from the
# nvidia-cuda-runtime-cu12 build requirement, the system's C compiler) that
# passes the smoke test in a fresh environment.
#
#   bash scripts/check-sdist.sh        # writes dist/neoflow-VERSION.tar.gz
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/fresh-env.sh

echo "== python -m build --sdist"
rm -f dist/neoflow-*.tar.gz
"$PY" -m build -q --sdist -o dist . >/dev/null
sdist=$(realpath dist/neoflow-*.tar.gz)
members=$(tar -tzf "$sdist")
for f in go.mod go.sum LICENSE README.md setup.py pyproject.toml capi/exports.go torchbridge/version.go \
  api/neoflow.pb.go internal/testops/ops.json pyext/neoflow/_proto/neoflow_pb2.py pyext/neoflow/_launch.c pyext/neoflow/_launch_calls.c pyext/neoflow/_launch.h; do
  grep -q "^neoflow-[^/]*/$f\$" <<<"$members" || { echo "$(basename "$sdist") lacks $f"; exit 1; }
done
if grep -q "_test\.go$" <<<"$members"; then echo "$(basename "$sdist") holds Go tests"; exit 1; fi
echo "$(basename "$sdist"): $(wc -l <<<"$members") files, $(du -k "$sdist" | cut -f1) KB"

echo "== building the sdist without Go fails at once, naming Go"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if run_without_go "$PY" -m pip wheel -q --no-deps -w "$tmp" "$sdist" >"$tmp/log" 2>&1; then
  echo "the sdist built without Go"; exit 1
fi
want="needs Go $(sed -n 's/^go //p' go.mod) or newer"
grep -q "$want" "$tmp/log" || { cat "$tmp/log"; echo "the failure does not say '$want'"; exit 1; }
grep -q "The wheel needs neither" "$tmp/log" || { cat "$tmp/log"; echo "the failure does not point to the wheel"; exit 1; }
echo "ok: $(grep -o "neoflow: building from source needs.*" "$tmp/log" | head -1)"

echo "== pip wheel of the sdist, with Go"
env -u NEOFLOW_CUDA_INCLUDE -u CC NEOFLOW_BUILD_CUDA=1 "$PY" -m pip wheel -q --no-deps -w "$tmp/wheel" "$sdist"
whl=$(ls "$tmp"/wheel/neoflow-*.whl)
"$PY" - "$whl" <<'EOF'
import sys, zipfile

names = zipfile.ZipFile(sys.argv[1]).namelist()
missing = [lib for lib in ("neoflow/libneoflow.so", "neoflow/libneoflow_cuda.so") if lib not in names]
if missing:
    sys.exit(f"{sys.argv[1]} lacks {', '.join(missing)}")
EOF
env_dir=$(fresh_env 3.11)
"$UV" pip install -q -p "$env_dir/bin/python" "$whl"
run_without_go "$env_dir/bin/python" "$PWD/tests/smoke/smoke.py"
rm -rf "$env_dir"
