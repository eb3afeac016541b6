#!/usr/bin/env bash
# A world of 4 where rank 3 never starts: the other ranks must fail after TUTTI_TIMEOUT with a message
# naming rank 3, not hang. Ranks are started by hand around a FileStore, as a bare-metal user might.
set -uo pipefail
check=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/store"
pids=()
for r in 0 1 2; do
  TUTTI_RANK=$r TUTTI_SIZE=4 TUTTI_STORE="file:$work/store" TUTTI_JOB_ID=missing-$$ TUTTI_TIMEOUT=3 \
    timeout 60 "$check" >"$work/$r.out" 2>&1 &
  pids+=($!)
done
fail=0
for r in 0 1 2; do
  wait "${pids[$r]}"; status=$?
  cat "$work/$r.out"
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] || { echo "FAIL: rank $r exited with $status (124 = hung)"; fail=1; }
  grep -q "rank 3 of 4" "$work/$r.out" || { echo "FAIL: rank $r's error does not name the missing rank 3"; fail=1; }
done
exit $fail
