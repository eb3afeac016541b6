#!/usr/bin/env bash
# The device collectives' correctness sweep on this host's GPUs, one rank per GPU, for one
# TUTTI_DEVICE_ALLREDUCE path: sweep.sh TUTTIRUN CHECK PATH (auto|nccl|ring|hier). Exits 77 (a
# ctest skip) with the reason where there is no CUDA device. hier fakes two hosts (TUTTI_HOST by
# rank parity) so that its cross-host step runs on one machine.
set -uo pipefail
tuttirun=$1 check=$2 path=$3
if ! gpus=$("$check" --probe); then
  echo "$gpus"
  exit 77
fi
np=$gpus
if [ "$path" = hier ] && [ "$np" -lt 2 ]; then
  echo "SKIP: the hierarchical path needs 2 GPUs, this host has $np"
  exit 77
fi
export TUTTI_DEVICE_ALLREDUCE=$path
if [ "$path" = hier ]; then
  exec "$tuttirun" -np "$np" -- sh -c 'TUTTI_HOST=gpu-host-$((TUTTI_RANK % 2)) exec "$0"' "$check"
fi
exec "$tuttirun" -np "$np" -- "$check"
