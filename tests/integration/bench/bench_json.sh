#!/usr/bin/env bash
# tutti-bench under tuttirun: exit 0, one row per size in nccl-tests' format, and a JSON file with
# the same rows; usage errors exit 2.
set -u
TUTTIRUN=$1
BENCH=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-bench-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; cat "$WORK/out" >&2 2>/dev/null; exit 1; }

"$TUTTIRUN" -np 2 --no-tag-output -- "$BENCH" allreduce -b 1K -e 16K -f 2 -n 3 -w 1 -d float,int32 -o sum,max \
  --json "$WORK/r.json" >"$WORK/out" 2>"$WORK/err" || fail "exit $?: $(cat "$WORK/err")"
rows=$(grep -cvE '^#' "$WORK/out")
[ "$rows" -eq 20 ] || fail "$rows rows, expected 5 sizes x 2 types x 2 ops = 20"
grep -qE '^# nThread 1 nGpus 1 minBytes 1024 maxBytes 16384 step: 2\(factor\) warmup iters: 1 iters: 3' \
  "$WORK/out" || fail "header"
[ "$(grep -c '^#  Rank ' "$WORK/out")" -eq 2 ] || fail "rank list"
grep -qE '^ +1024 +256 +float +sum +-1 ' "$WORK/out" || fail "first row"
grep -qE '^ +16384 +4096 +int32 +max +-1 ' "$WORK/out" || fail "last row"
grep -q '^# Out of bounds values : 0 OK$' "$WORK/out" || fail "footer"
grep -q '^# Avg bus bandwidth    : ' "$WORK/out" || fail "avg busbw"
python3 - "$WORK/r.json" <<'PY' || fail "json"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["collective"] == "allreduce" and doc["nranks"] == 2, doc
assert len(doc["rows"]) == 20 and doc["out_of_bounds"] == 0
for row in doc["rows"]:
    for side in ("out_of_place", "in_place"):
        assert row[side]["wrong"] == 0 and row[side]["time_us"] > 0, row
PY

# -r beyond the job: every rank says so (rank 0 prints), exit 2.
"$TUTTIRUN" -np 2 -- "$BENCH" broadcast -r 5 -b 8 -e 8 >"$WORK/out" 2>"$WORK/err"
rc=$?
[ "$rc" -eq 2 ] || fail "-r 5 with 2 ranks exited $rc"
grep -q 'not a rank' "$WORK/err" || fail "no message for -r 5"
"$BENCH" allreduce -d nope >"$WORK/out" 2>"$WORK/err"
[ $? -eq 2 ] || fail "bad -d did not exit 2"
echo PASS
