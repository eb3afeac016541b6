#!/usr/bin/env bash
# Strangers with a wrong job token knock on the store port and on rank 0's data port while the job
# is forming. Both must be refused, and the job must still complete correctly.
set -uo pipefail
tuttirun=$1 check=$2 intruder=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Rank 2 starts the intruder, then joins late so that ranks 0 and 1 are still accepting connections.
TUTTI_TRANSPORT=tcp "$tuttirun" -np 3 -- sh -c '
  if [ "$TUTTI_RANK" = 2 ]; then "$1" || exit 1; fi
  exec "$0" --counts 1,1000 --dtypes float32 --ops sum' "$check" "$intruder" >"$out" 2>&1
status=$?
cat "$out"
fail=0
[ "$status" -eq 0 ] || { echo "FAIL: job exited with $status"; fail=1; }
grep -q "refused by the store" "$out" || { echo "FAIL: the store did not refuse the wrong token"; fail=1; }
grep -q "refused by rank 0's data port" "$out" || { echo "FAIL: rank 0 did not refuse the wrong token"; fail=1; }
grep -q "0 failed" "$out" || { echo "FAIL: the job did not report a clean sweep"; fail=1; }
exit $fail
