#!/usr/bin/env bash
# kill -9 tuttirun under a running job.
#  calls:   the ranks run as children of a shell (so the kernel's parent-death signal, which kills
#           tuttirun's direct children, does not reach them) and call an allreduce every 100 ms.
#           Each rank's next call must fail within 1 s of the kill with TUTTI_ERR_ABORTED, and the
#           rank must then exit by itself: the library never ends the process.
#  compute: the ranks are tuttirun's own children and never call tutti again; they must be gone
#           within the grace period (orphan prevention is the launcher's).
set -uo pipefail
tuttirun=$1 check=$2 mode=$3
work=$(mktemp -d)
pids() { cat "$work"/*.pid 2>/dev/null; }
# Waits up to $1 tenths of a second for every rank process to be gone.
wait_gone() {
  for _ in $(seq 1 "$1"); do
    alive=0
    for p in $(pids); do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive -eq 0 ] && return
    sleep 0.1
  done
}
cleanup() { for p in $(pids); do kill -9 "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
np=3
if [ "$mode" = calls ]; then
  "$tuttirun" -np $np --grace 5 -- sh -c "\"$check\" calls \"$work\"; exit \$?" >"$work/out" 2>&1 &
else
  "$tuttirun" -np $np --grace 5 -- "$check" compute "$work" >"$work/out" 2>&1 &
fi
launcher=$!
for _ in $(seq 1 300); do
  [ "$(ls "$work"/*.pid 2>/dev/null | wc -l)" -eq $np ] && break
  sleep 0.1
done
[ "$(ls "$work"/*.pid 2>/dev/null | wc -l)" -eq $np ] || { echo "FAIL: ranks did not start"; cat "$work/out"; exit 1; }
sleep 0.5
touch "$work/killed"
kill -9 "$launcher"
fail=0
if [ "$mode" = calls ]; then
  for _ in $(seq 1 100); do
    [ "$(ls "$work"/*.result 2>/dev/null | wc -l)" -eq $np ] && break
    sleep 0.1
  done
  for r in $(seq 0 $((np - 1))); do
    if [ ! -f "$work/$r.result" ]; then echo "FAIL: rank $r reported nothing within 10 s"; fail=1; continue; fi
    read -r code after what <"$work/$r.result"
    echo "rank $r: code $code after ${after}s: $what"
    [ "$code" = 10 ] || { echo "FAIL: rank $r failed with code $code, not TUTTI_ERR_ABORTED (10)"; fail=1; }
    awk -v a="$after" 'BEGIN { exit !(a >= 0 && a < 1.0) }' || { echo "FAIL: rank $r failed ${after}s after the kill"; fail=1; }
    case "$what" in *"launcher is gone"*) ;; *) echo "FAIL: rank $r's error does not say the launcher is gone"; fail=1 ;; esac
  done
  # The ranks leave by themselves after reporting (exit 0), not killed by the library.
  wait_gone 100
  for p in $(pids); do kill -0 "$p" 2>/dev/null && { echo "FAIL: rank pid $p still running 10 s after reporting"; fail=1; }; done
else
  wait_gone 50
  for p in $(pids); do kill -0 "$p" 2>/dev/null && { echo "FAIL: computing rank pid $p outlived tuttirun by 5 s"; fail=1; }; done
fi
[ $fail -eq 0 ] && echo "launcher gone ($mode) OK"
exit $fail
