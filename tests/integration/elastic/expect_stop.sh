#!/usr/bin/env bash
# expect_stop.sh N LINE SAID -- COMMAND...: a job that must fail, clearly: COMMAND exits non-zero,
# N lines of its output contain LINE (each survivor says why it stopped), and one contains SAID
# (tuttirun says why it stops the job). Its own "FAIL:" lines (a rank that went on) pass through.
set -u
want=$1 line=$2 said=$3
shift 4
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" > "$out" 2>&1
rc=$?
cat "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc -ne 0 ] || fail "the job exited 0; want a failure"
got=$(grep -c -- "$line" "$out")
[ "$got" -eq "$want" ] || fail "$got line(s) with '$line', want $want"
grep -q -- "$said" "$out" || fail "nobody said '$said'"
echo "OK: the job stopped as it should (exit $rc)"
