#!/usr/bin/env bash
# Connections that never finish a handshake (silent, HTTP, half a Hello) sit on the store port and
# on the data ports of ranks 0 and 1 while the job forms. Handshakes run side by side, so the job
# must finish correctly and well within its deadline: one after another, 8 of them would cost
# rank 0 more than the 60 s init deadline (they cost 13 s for one idle socket before).
set -uo pipefail
tuttirun=$1 check=$2 intruder=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
# The last rank starts the intruder and joins only once its connections are open, so ranks 0 and 1
# accept their real peers behind the intruder's connections.
TUTTI_TRANSPORT=tcp TUTTI_TIMEOUT=60 "$tuttirun" -np 3 -- sh -c '
  if [ "$TUTTI_RANK" = 2 ]; then
    "$1" "$2/connected" & intruder=$!
    for i in $(seq 1 300); do [ -e "$2/connected" ] && break; kill -0 $intruder 2>/dev/null || break; sleep 0.1; done
    [ -e "$2/connected" ] || { echo "intruder never connected"; exit 1; }
    "$0" --counts 1,1000 --dtypes float32 --ops sum; status=$?
    kill $intruder; wait $intruder
    exit $status
  fi
  exec "$0" --counts 1,1000 --dtypes float32 --ops sum' "$check" "$intruder" "$work" >"$work/out" 2>&1
status=$?
elapsed=$(( $(date +%s) - start ))
cat "$work/out"
echo "job took ${elapsed} s"
fail=0
[ "$status" -eq 0 ] || { echo "FAIL: job exited with $status"; fail=1; }
grep -q "idle_intruder: holding 24 connections" "$work/out" || { echo "FAIL: the intruder did not open its connections"; fail=1; }
grep -q "0 failed" "$work/out" || { echo "FAIL: the job did not report a clean sweep"; fail=1; }
[ "$elapsed" -lt 30 ] || { echo "FAIL: the job took ${elapsed} s; strangers held it up"; fail=1; }
exit $fail
