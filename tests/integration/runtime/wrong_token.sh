#!/usr/bin/env bash
# Strangers with a wrong job token knock on the store port and on rank 0's data port while the job
# is forming. Both must be refused, and the job must still complete correctly.
set -uo pipefail
tuttirun=$1 check=$2 intruder=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Rank 2 starts the intruder and joins only once the intruder's connection to rank 0 is open, so
# rank 0 must deal with the stranger while it accepts its real peers.
TUTTI_TRANSPORT=tcp "$tuttirun" -np 3 -- sh -c '
  if [ "$TUTTI_RANK" = 2 ]; then
    "$1" "$2/connected" & intruder=$!
    for i in $(seq 1 300); do [ -e "$2/connected" ] && break; kill -0 $intruder 2>/dev/null || break; sleep 0.1; done
    "$0" --counts 1,1000 --dtypes float32 --ops sum; status=$?
    wait $intruder || exit 1
    exit $status
  fi
  exec "$0" --counts 1,1000 --dtypes float32 --ops sum' "$check" "$intruder" "$work" >"$work/out" 2>&1
status=$?
cat "$work/out"
fail=0
[ "$status" -eq 0 ] || { echo "FAIL: job exited with $status"; fail=1; }
grep -q "refused by the store" "$work/out" || { echo "FAIL: the store did not refuse the wrong token"; fail=1; }
grep -q "refused by rank 0's data port" "$work/out" || { echo "FAIL: rank 0 did not refuse the wrong token"; fail=1; }
grep -q "0 failed" "$work/out" || { echo "FAIL: the job did not report a clean sweep"; fail=1; }
exit $fail
