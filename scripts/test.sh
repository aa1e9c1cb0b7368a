#!/usr/bin/env bash
# Sets up everything from nothing and runs every test: formatting and lint,
# go vet (also of the CUDA build), the Go tests, the release wheel with both
# libraries (scripts/build-wheel.sh) and the Python tests on it; then the
# distributions as users install them: the wheel in fresh environments of
# Python 3.10, 3.12 and 3.13 without Go, on the oldest supported PyTorch,
# and the sdist. Runs as any user; writes only to the repository, the
# virtual environment, the user's caches and temporary directories.
#
#   bash scripts/test.sh            # everything (CI)
#   bash scripts/test.sh --quick    # day-to-day: lint, the Go tests but the two
#                                   # packages that compile hundreds of kernels
#                                   # (kernels, autotune), the wheel, the core
#                                   # Python tests; a few minutes
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  *) echo "usage: bash scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
source scripts/env.sh

echo "== gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted"; exit 1; fi
go vet ./...
# Errors go through github.com/pkg/errors (wrapping keeps the context).
stray=$(git ls-files '*.go' | grep -v -e '_test.go$' -e '^api/' | xargs grep -l -e 'fmt.Errorf' -e '^	"errors"$' || true)
if [ -n "$stray" ]; then echo "use github.com/pkg/errors, not fmt.Errorf or the errors package: $stray"; exit 1; fi
go mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
CGO_CFLAGS="-I$NEOFLOW_CUDA_INCLUDE" go vet -tags cuda ./...

echo "== ruff, and the Python package's limits (scripts/pycheck.py: modules, functions, import cycles)"
"$PY" -m ruff check pyext tests bench examples workloads scripts docs
"$PY" -m ruff format --check pyext tests bench examples workloads scripts docs
"$PY" scripts/pycheck.py pyext/neoflow

echo "== the docs site (mkdocs build --strict: a broken link or reference fails)"
site=$(mktemp -d)
"$PY" -m mkdocs build --strict -q -d "$site"
rm -rf "$site"

if [ $quick = 1 ]; then
  echo "== go test -short (but ./kernels and ./autotune)"
  go test -short $(go list ./... | grep -v -e '/neoflow/kernels$' -e '/neoflow/autotune$')
  NEOFLOW_CHECK=1 go test -count=1 ./tests/go
  echo "== build and install the wheel"
  bash scripts/build-wheel.sh
  echo "== pytest (the core files)"
  cd tests/python
  exec "$PY" -m pytest -q -p no:cacheprovider test_ops.py test_grad.py test_errors.py test_bad_input.py test_cli.py \
    test_install.py test_dsl.py test_readme.py test_backend.py
fi

echo "== go test"
# The kernels and autotune packages compile hundreds of kernels; on a slow
# two-core machine they can pass go test's default 10-minute limit.
go test -timeout 30m ./...
echo "== the op table and generated programs with the IR verified after every pass (NEOFLOW_CHECK=1)"
NEOFLOW_CHECK=1 go test -count=1 ./tests/go ./core/fuse

echo "== build and install the wheel (CPU-only and CUDA libraries)"
bash scripts/build-wheel.sh

echo "== the GPU check script on the wheel, without a GPU (its GPU tests skip here)"
gpu_out=$(mktemp -d)
PYTHON="$PY" OUT=$gpu_out bash scripts/gpu-check.sh tests --cpu-ok >/dev/null || {
  echo "scripts/gpu-check.sh tests --cpu-ok failed (logs in $gpu_out)"
  exit 1
}
rm -rf "$gpu_out"

echo "== the wheel in fresh environments, the oldest PyTorch, the sdist"
bash scripts/smoke-wheel.sh
bash scripts/test-oldest-torch.sh
bash scripts/check-sdist.sh

echo "== pytest"
# Run from tests/ so that `import neoflow` finds the installed package, not pyext/.
# env.sh installed the public models' packages: their test must run, not skip.
cd tests/python && NEOFLOW_REQUIRE_ZOO=1 "$PY" -m pytest -q -p no:cacheprovider .
