#!/usr/bin/env bash
# Four ranks on two pretend hosts (TUTTI_HOST): peers on the same "host" use shared memory, the
# others TCP, inside one job; the full correctness sweep must pass.
set -euo pipefail
tuttirun=$1 check=$2
exec "$tuttirun" -np 4 -- sh -c 'TUTTI_HOST=host$((TUTTI_RANK / 2)) exec "$0" --counts 0,1,N-1,1000,70001' "$check"
