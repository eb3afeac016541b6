#!/bin/sh
# Runs one rank on a pretend host: maps TUTTI_RANK onto TUTTI_LAYOUT (ranks per host, e.g. "2 2"
# or "3,1"; ranks fill the hosts in order) and execs the command with TUTTI_HOST=host<index>, so
# ranks of one pretend host share memory and the others talk TCP. Used as the rank command under
# tuttirun by bench/hier_runs.sh, bench/tune.sh and the placed-hosts integration tests.
#   TUTTI_LAYOUT=2,2 tuttirun -np 4 -- scripts/on_pretend_host.sh PROGRAM [ARGS...]
set -eu
: "${TUTTI_LAYOUT:?on_pretend_host.sh: set TUTTI_LAYOUT to the ranks per host, e.g. 2,2}"
: "${TUTTI_RANK:?on_pretend_host.sh: TUTTI_RANK is not set; run it under tuttirun}"
[ "$#" -gt 0 ] || { echo "usage: on_pretend_host.sh PROGRAM [ARGS...]" >&2; exit 2; }
r=$TUTTI_RANK h=0
for n in $(echo "$TUTTI_LAYOUT" | tr ',' ' '); do
  [ "$r" -lt "$n" ] && break
  r=$((r - n)) h=$((h + 1))
done
TUTTI_HOST=host$h exec "$@"
