#!/usr/bin/env bash
# kill -9 one rank while every rank has engine handles pending. Expect: every surviving rank's
# pending handles fail promptly (well before any timeout) with an error naming the killed rank,
# tuttirun exits non-zero, and no process of the job remains.
set -uo pipefail
tuttirun=$1 check=$2 transport=$3
shift 3  # the rest: more arguments for the check (--unbounded-waits)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
job="enginekill-$transport-$$"
victim=1

TUTTI_TRANSPORT=$transport "$tuttirun" -np 3 --job-id "$job" --grace 20 -- \
  "$check" kill --pid-dir "$work" "$@" >"$work/out" 2>&1 &
launcher=$!
for _ in $(seq 1 300); do
  [ "$(ls "$work"/*.pid 2>/dev/null | wc -l)" -eq 3 ] && break
  sleep 0.1
done
[ "$(ls "$work"/*.pid 2>/dev/null | wc -l)" -eq 3 ] || { echo "ranks did not start"; cat "$work/out"; exit 1; }
sleep 1
kill -9 "$(cat "$work/$victim.pid")"
start=$(date +%s)
for _ in $(seq 1 300); do
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$launcher" 2>/dev/null; then
  echo "FAIL: tuttirun still running 30 s after the kill"; kill -9 "$launcher"; cat "$work/out"; exit 1
fi
wait "$launcher"; status=$?
elapsed=$(( $(date +%s) - start ))
cat "$work/out"
echo "--- tuttirun exited with $status after ${elapsed}s"
fail=0
[ "$status" -ne 0 ] || { echo "FAIL: tuttirun exited 0"; fail=1; }
[ "$elapsed" -le 15 ] || { echo "FAIL: the job took ${elapsed}s to end after the kill"; fail=1; }
for r in 0 2; do
  grep -E "^\[$r\] rank $r: engine error .*rank $victim" "$work/out" >/dev/null ||
    { echo "FAIL: rank $r's pending handles did not fail naming rank $victim"; fail=1; }
done
for f in "$work"/*.pid; do
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then echo "FAIL: process $pid ($(basename "$f")) still alive"; fail=1; kill -9 "$pid"; fi
done
if ls /dev/shm/tutti-"$job"-* >/dev/null 2>&1; then echo "FAIL: shared-memory segments left"; fail=1; fi
exit $fail
