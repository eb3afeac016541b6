#!/usr/bin/env bash
# kill -9 of a rank while the others wait for it in a device allreduce (the host-memory stand-in
# for the device runtime). Expect: the survivors fail well before the 60 s deadline naming the
# killed rank (the device wait watches the host connections), tuttirun exits non-zero, and no
# process of the job remains.
set -uo pipefail
tuttirun=$1 check=$2 np=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
victim=1
# A host with a GPU per rank (the stand-in's TUTTI_FAKE_DEVICES; each rank takes its local rank's).
DEVICE_CHECK_PID_DIR=$work TUTTI_FAKE_DEVICES=8 "$tuttirun" -np "$np" --grace 20 -- "$check" kill >"$work/out" 2>&1 &
launcher=$!
for _ in $(seq 1 300); do
  [ "$(ls "$work"/*.pid 2>/dev/null | wc -l)" -eq "$np" ] && break
  sleep 0.1
done
[ "$(ls "$work"/*.pid 2>/dev/null | wc -l)" -eq "$np" ] || { echo "FAIL: ranks did not start"; cat "$work/out"; exit 1; }
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
grep -E "^\[0\] ok: kill: failed after" "$work/out" >/dev/null ||
  { echo "FAIL: rank 0's device allreduce did not fail naming rank $victim"; fail=1; }
for f in "$work"/*.pid; do
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then echo "FAIL: process $pid ($(basename "$f")) still alive"; fail=1; kill -9 "$pid"; fi
done
[ $fail -eq 0 ] && echo "PASS: device kill"
exit $fail
