#!/usr/bin/env bash
# kill -9 of a rank while the others wait for it in a device allreduce (the host-memory stand-in
# for the device runtime). Expect: the survivors fail well before the 60 s deadline naming the
# killed rank (the device wait watches the host connections), tuttirun exits non-zero, and no
# process of the job remains.
set -uo pipefail
# With a 4th argument `shrink`, under --min-np np-1: the survivors then shrink and reduce device
# buffers on the shrunk communicator (a fresh NCCL communicator), and tuttirun exits 0.
tuttirun=$1 check=$2 np=$3 shrink=${4:-}
mode=kill extra=()
[ "$shrink" = shrink ] && mode=kill_shrink extra=(--min-np $((np - 1)))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
victim=1
# A host with a GPU per rank (the stand-in's TUTTI_FAKE_DEVICES; each rank takes its local rank's).
DEVICE_CHECK_PID_DIR=$work TUTTI_FAKE_DEVICES=8 "$tuttirun" -np "$np" "${extra[@]}" --grace 20 -- "$check" $mode >"$work/out" 2>&1 &
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
if [ "$mode" = kill_shrink ]; then
  [ "$status" -eq 0 ] || { echo "FAIL: tuttirun exited $status (the survivors should go on)"; fail=1; }
  n=$(grep -cE "ok: shrink: rank [0-9]+ of $((np - 1)) after the shrink" "$work/out")
  [ "$n" -eq $((np - 1)) ] || { echo "FAIL: $n survivors reduced device buffers after the shrink, want $((np - 1))"; fail=1; }
else
  [ "$status" -ne 0 ] || { echo "FAIL: tuttirun exited 0"; fail=1; }
fi
[ "$elapsed" -le 15 ] || { echo "FAIL: the job took ${elapsed}s to end after the kill"; fail=1; }
grep -E "^\[0\] ok: kill: failed after" "$work/out" >/dev/null ||
  { echo "FAIL: rank 0's device allreduce did not fail naming rank $victim"; fail=1; }
for f in "$work"/*.pid; do
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then echo "FAIL: process $pid ($(basename "$f")) still alive"; fail=1; kill -9 "$pid"; fi
done
[ $fail -eq 0 ] && echo "PASS: device kill"
exit $fail
