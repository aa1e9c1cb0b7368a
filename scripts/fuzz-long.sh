#!/usr/bin/env bash
# The long run of the property suite (issue 30): CHUNKS chunks of
# PER_CHUNK generated programs each (tests/python/test_fuzz.py's
# test_generated_programs, each chunk with its own Hypothesis seed, so a
# failure in one chunk does not end the run), then the Go property test
# over GO_PROGRAMS programs under every schedule family. Every chunk runs
# under a time limit, so a hang shows as a failed chunk. Prints one line per
# chunk and the totals; logs go to $OUT (default a temp directory).
#
#   bash scripts/fuzz-long.sh              # 20 x 1000 programs + 1000 in Go
#   CHUNKS=2 PER_CHUNK=100 GO_PROGRAMS=20 bash scripts/fuzz-long.sh
#   SEED_OFFSET=10 CHUNKS=10 ...    # chunks with seeds 11-20 (two runs side by side)
#
# Runs against the installed wheel (scripts/build-wheel.sh), like pytest in
# scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
set +e # a failing chunk is counted, not the end of the run
CHUNKS=${CHUNKS:-20}
PER_CHUNK=${PER_CHUNK:-1000}
GO_PROGRAMS=${GO_PROGRAMS:-1000}
CHUNK_LIMIT=${CHUNK_LIMIT:-3600}
SEED_OFFSET=${SEED_OFFSET:-0} # chunk k uses Hypothesis seed k + SEED_OFFSET
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
start=$(date +%s)
passed=0
failed=0
for c in $(seq 1 "$CHUNKS"); do
  k=$((c + SEED_OFFSET))
  log="$OUT/chunk-$k.log"
  t0=$(date +%s)
  (cd tests/python && NEOFLOW_FUZZ_EXAMPLES=$PER_CHUNK timeout "$CHUNK_LIMIT" "$PY" -m pytest -q -p no:cacheprovider \
    "test_fuzz.py::test_generated_programs" --hypothesis-seed="$k" --hypothesis-show-statistics) >"$log" 2>&1
  rc=$?
  n=$(grep -o '[0-9]* passing' "$log" | head -1 | cut -d' ' -f1)
  if [ "$rc" = 0 ]; then
    passed=$((passed + ${n:-0}))
    echo "chunk $k (seed $k): ${n:-?} programs passed in $(($(date +%s) - t0)) s"
  else
    failed=$((failed + 1))
    passed=$((passed + ${n:-0}))
    echo "chunk $k (seed $k): FAILED (rc $rc) after ${n:-?} programs; see $log"
    grep -E "^E  |Falsifying|prog=" "$log" | head -20
  fi
done
echo "python: $passed programs passed, $failed failed chunks, in $(($(date +%s) - start)) s"
t0=$(date +%s)
if NEOFLOW_FUZZ_PROGRAMS=$GO_PROGRAMS go test ./tests/go/ -run TestRandomProgramsEverySchedule -timeout 0 -v >"$OUT/go.log" 2>&1; then
  echo "go: $(grep -o '[0-9]* programs accepted of [0-9]* generated' "$OUT/go.log"), every schedule family, in $(($(date +%s) - t0)) s"
else
  failed=$((failed + 1))
  echo "go: FAILED; see $OUT/go.log"
  grep -E "FAIL|panic|interpreter says|does not lower" "$OUT/go.log" | head -20
fi
echo "logs in $OUT"
[ "$failed" = 0 ]
