#!/usr/bin/env bash
# Every rank of the shm allreduce uses the same stores on every call (ShmStoreTuner learns from
# rank 0's times only). Ranks that tuned alone settled on different combinations and each timed
# the slowest rank's instead of its own.
#   shm_stores_agree.sh TUTTIRUN TUTTI_BENCH NP
set -euo pipefail
tuttirun=$1 bench=$2 np=$3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
TUTTI_ALGO=shm TUTTI_LOG_LEVEL=trace "$tuttirun" -np "$np" -- "$bench" allreduce -b 256K -e 16M -f 2 \
  -n 12 -w 2 -c 1 >"$log" 2>&1 || { cat "$log"; echo "shm_stores_agree: the run failed"; exit 1; }
grep -q 'Out of bounds values : 0 OK' "$log" || { cat "$log"; echo "shm_stores_agree: wrong values"; exit 1; }
# "[R] tutti rank R trace: shm allreduce, tuned call T (B bytes, P): window W, output O"
calls=$(grep -o 'tutti rank [0-9]* trace: shm allreduce, tuned call .*' "$log" | sed 's/^tutti rank [0-9]* trace: //')
lines=$(grep -c 'trace: shm allreduce, tuned call' "$log" || true)
[ "$lines" -ge $((np * 100)) ] || { echo "shm_stores_agree: only $lines tuned-call lines logged by $np ranks"; exit 1; }
# Each call once per rank, and the same line from every rank.
odd=$(sort <<<"$calls" | uniq -c | awk -v np="$np" '$1 != np' | head -5)
[ -z "$odd" ] || { echo "shm_stores_agree: ranks chose differently:"; echo "$odd"; exit 1; }
kinds=$(sed 's/.*: window/window/' <<<"$calls" | sort -u | wc -l)
[ "$kinds" -ge 2 ] || { echo "shm_stores_agree: only one combination ever tried"; exit 1; }
echo "shm stores agree: $((lines / np)) tuned calls, $kinds combinations, $np ranks"
