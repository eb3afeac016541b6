#!/usr/bin/env bash
# Shared memory that scales with the host. Each case runs in a private mount namespace whose
# /dev/shm is a fresh tmpfs of a chosen size, so the limit is real (as a pod's /dev/shm is) and
# nothing outside the test is touched.
#
#   shm_scale.sh big TUTTIRUN CHECK      128 ranks on one host in a 2 GiB /dev/shm: a small
#                                        allreduce completes (results checked; a hang is cut at
#                                        120 s), and /dev/shm's use, sampled, stays under 2 GiB.
#                                        The time is printed, not asserted: it measured 4.5 s
#                                        idle and 17-22 s beside a second `make test`,
#                                        and speed belongs in a benchmark.
#   shm_scale.sh rings TUTTIRUN CHECK    8 ranks in a 16 MiB /dev/shm: the rings do not fit;
#                                        every rank fails promptly with the clear error.
#   shm_scale.sh window TUTTIRUN CHECK   4 ranks in a 24 MiB /dev/shm: the rings fit, the world's
#                                        window does not; every rank fails with rank 0's error.
#   shm_scale.sh splits TUTTIRUN COMMS   8 ranks in a 128 MiB /dev/shm run 64 communicators: the
#                                        windows of splits that no longer fit are left out with a
#                                        warning, and every result is still exact.
# Exits 77 (ctest SKIPPED) when a mount namespace cannot be made (not root).
set -uo pipefail
mode=$1 tuttirun=$2 program=$3

if [ -z "${TUTTI_SHM_SCALE_INSIDE:-}" ]; then
  if ! unshare --mount --propagation private true 2>/dev/null; then
    echo "SKIP: cannot make a mount namespace (unshare --mount needs root / CAP_SYS_ADMIN)" >&2
    exit 77
  fi
  exec unshare --mount --propagation private env TUTTI_SHM_SCALE_INSIDE=1 "$0" "$@"
fi

case $mode in
  big) size=2g ;;
  rings) size=16m ;;
  window) size=24m ;;
  splits) size=128m ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
mount -t tmpfs -o "size=$size,mode=1777" tmpfs /dev/shm || { echo "FAIL: cannot mount a tmpfs on /dev/shm"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2"; fail=1; fi; }

used_bytes() { stat -f -c '%b %f %S' /dev/shm | awk '{ printf "%.0f\n", ($1 - $2) * $3 }'; }

# Samples /dev/shm's use every 20 ms into $work/peak until killed.
sample_peak() {
  local peak=0 used
  while :; do
    used=$(used_bytes)
    [ "$used" -gt "$peak" ] && { peak=$used; echo "$peak" >"$work/peak"; }
    sleep 0.02
  done
}

case $mode in
  big)
    echo 0 >"$work/peak"
    sample_peak &
    sampler=$!
    start=$(date +%s.%N)
    timeout 120 "$tuttirun" -np 128 -- "$program" --counts 1,1000 --dtypes float32 --ops sum \
      --collectives allreduce >"$work/out" 2>&1
    status=$?
    end=$(date +%s.%N)
    kill "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
    tail -5 "$work/out"
    elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    peak=$(cat "$work/peak")
    echo "128 ranks: exit $status after $elapsed s; /dev/shm peak $((peak / 1048576)) MiB"
    check '[ "$status" -eq 0 ]' "128 ranks on one host exited with $status (124: hung)"
    check '[ "$peak" -lt $((2 << 30)) ]' "/dev/shm peaked at $peak bytes (must stay under 2 GiB)"
    check '[ "$peak" -gt 0 ]' "no /dev/shm use was seen at all: did the ranks use shared memory?"
    ;;
  rings | window)
    np=8; [ "$mode" = window ] && np=4
    start=$(date +%s)
    TUTTI_TIMEOUT=30 timeout 120 "$tuttirun" -np "$np" -- "$program" --counts 1000 \
      --dtypes float32 --ops sum --collectives allreduce >"$work/out" 2>&1
    status=$?
    took=$(($(date +%s) - start))
    cat "$work/out"
    check '[ "$status" -ne 0 ] && [ "$status" -ne 124 ]' "$np ranks in a $size /dev/shm exited with $status (0: no error; 124: hung)"
    check '[ "$took" -lt 20 ]' "the failure took $took s: peers must not wait for the timeout"
    check 'grep -q "/dev/shm has .* free of" "$work/out"' "no error names /dev/shm's free space"
    check 'grep -q "needs [0-9.]* [KMG]i\{0,1\}B" "$work/out"' "no error names the size asked for"
    if [ "$mode" = rings ]; then
      check 'grep -q "receive rings" "$work/out"' "the error does not say the rings did not fit"
      check 'grep -q "TUTTI_SHM_RING_BUDGET" "$work/out"' "the error does not name TUTTI_SHM_RING_BUDGET"
    else
      check 'grep -q "shared-memory window of 4 ranks" "$work/out"' "the error does not say the window did not fit"
      check 'grep -q "TUTTI_SHM_WINDOW_BUDGET" "$work/out"' "the error does not name TUTTI_SHM_WINDOW_BUDGET"
    fi
    ;;
  splits)
    TUTTI_TIMEOUT=60 timeout 240 "$tuttirun" -np 8 -- "$program" many >"$work/out" 2>&1
    status=$?
    grep -v "^\[.\] ok:" "$work/out" | head -20
    check '[ "$status" -eq 0 ]' "64 communicators in a $size /dev/shm exited with $status"
    check 'grep -q "goes on without a shared-memory window" "$work/out"' "no split reported that its window was left out"
    check 'grep -q "ok: 64 communicators on 8 ranks all work" "$work/out"' "the communicators did not all report ok"
    check '! grep -q "FAIL:" "$work/out"' "a result was wrong"
    ;;
esac
leftover=$(ls /dev/shm)
check '[ -z "$leftover" ]' "segments left in /dev/shm: $leftover"
exit $fail
