#!/usr/bin/env bash
# Fits the cost model's lines on this machine: runs tutti-bench allreduce --tune FILE once per
# algorithm (TUTTI_ALGO=x) on the given placement and merges each fitted alpha + bytes * beta into
# FILE; point TUTTI_TUNE_FILE at it to make auto use the fitted lines for that placement.
# Usage: bench/tune.sh BUILD FILE LAYOUT [tutti-bench flags]
#   LAYOUT: ranks per pretend host (TUTTI_HOST), e.g. 4 (one host), 2,2 (2 hosts x 2), 3,1
#   default flags: -b 8 -e 16M -f 8 -n 5 -w 2 -c 0 (short: the machine is shared)
set -euo pipefail
build=$1 file=$2 layout=$3
shift 3
flags=("$@")
[ ${#flags[@]} -eq 0 ] && flags=(-b 8 -e 16M -f 8 -n 5 -w 2 -c 0)
np=0 hosts=0
for n in ${layout//,/ }; do np=$((np + n)) hosts=$((hosts + 1)); done
algos="ring tree hd"
[ "$hosts" -eq 1 ] && [ "${TUTTI_TRANSPORT:-auto}" != tcp ] && algos="$algos shm"
[ "$hosts" -gt 1 ] && [ "$np" -gt "$hosts" ] && algos="$algos hier"
export TUTTI_LOG_LEVEL=${TUTTI_LOG_LEVEL:-error}
export TUTTI_LAYOUT="${layout//,/ }"
scripts=$(cd "$(dirname "$0")/../scripts" && pwd)
for algo in $algos; do
  TUTTI_ALGO=$algo "$build/bin/tuttirun" -np "$np" --no-tag-output -- \
    "$scripts/on_pretend_host.sh" "$build/bin/tutti-bench" allreduce --tune "$file" "${flags[@]}" \
    | grep '^# Tuned'
done
