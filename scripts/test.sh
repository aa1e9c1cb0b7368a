#!/usr/bin/env bash
# Sets up everything from nothing and runs every test: formatting and lint,
# go vet, the Go tests, then `pip install .` and the Python tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

echo "== gofmt, go vet"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted"; exit 1; fi
go vet ./...

echo "== ruff"
"$PY" -m ruff check pyext tests/python bench examples workloads
"$PY" -m ruff format --check pyext tests/python bench examples workloads

echo "== go test"
go test ./...

echo "== pip install ."
"$PY" -m pip install -q .

echo "== pytest"
# Run from tests/ so that `import neoflow` finds the installed package, not pyext/.
cd tests/python && "$PY" -m pytest -q -p no:cacheprovider .
