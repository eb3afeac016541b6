#!/usr/bin/env bash
# run_ranks.sh TUTTIRUN NP PATH CHECK ARGS...: runs the device check on NP ranks as on a GPU host
# with a single device: the stand-in host has one (TUTTI_FAKE_DEVICES, default 1) and NCCL refuses
# two ranks on one device of one host, so each rank is told it is its own NCCL host
# (NCCL_HOSTID=h$TUTTI_RANK), as tests/gpu's checks do with --pretend-hosts. For the hierarchical
# path the ranks are spread over two fake tutti hosts (TUTTI_HOST: the first half and the second),
# so that NCCL's on-host steps and the host ring across hosts both run.
set -euo pipefail
tuttirun=$1 np=$2 path=$3
shift 3
if [ "$path" = hier ] && [ "$np" -ge 2 ]; then
  # Each rank picks its fake host from its rank (tuttirun sets TUTTI_RANK).
  exec "$tuttirun" -np "$np" -- bash -c \
    'export TUTTI_HOST=fakehost$(( TUTTI_RANK * 2 / '"$np"' )) NCCL_HOSTID=h$TUTTI_RANK; exec "$@"' _ "$@"
fi
exec "$tuttirun" -np "$np" -- bash -c 'export NCCL_HOSTID=h$TUTTI_RANK; exec "$@"' _ "$@"
