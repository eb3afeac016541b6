#!/usr/bin/env bash
# Ranks on pretend hosts (TUTTI_HOST) in a given layout, e.g. "2,2" (2 hosts x 2 ranks), "3,1" or
# "2,2,3": ranks fill the hosts in order, peers on one "host" use shared memory, the others TCP.
# Usage: placed_hosts.sh TUTTIRUN CHECK LAYOUT [collectives_check args...]
set -euo pipefail
tuttirun=$1 check=$2 layout=$3
shift 3
np=0
for n in ${layout//,/ }; do np=$((np + n)); done
export TUTTI_LAYOUT="${layout//,/ }"
exec "$tuttirun" -np "$np" -- "$(cd "$(dirname "$0")/../../../scripts" && pwd)/on_pretend_host.sh" \
  "$check" "$@"
