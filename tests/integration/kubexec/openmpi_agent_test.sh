#!/bin/sh
# Real Open MPI mpirun with kubexec as its plm_rsh_agent, against the stand-in kubectl (which runs
# orted locally): proves Open MPI's orted command line survives kubexec's join + sh -c.
# Usage: openmpi_agent_test.sh KUBEXEC FAKE_KUBECTL. Exits 77 (skipped) without Open MPI 4.
kubexec=$1
export KUBEXEC_KUBECTL=$2
command -v mpirun >/dev/null 2>&1 || { echo "skip: no mpirun"; exit 77; }
mpirun --version 2>/dev/null | grep -q 'Open MPI) 4' || { echo "skip: not Open MPI 4"; exit 77; }
# Each stand-in pod gets its own TMPDIR, like a pod's own /tmp: with one shared /tmp the two orteds
# (same host name, same uid) share a session directory and about 1 run in 5 hung under load.
FAKE_KUBECTL_TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/kubexec-openmpi.XXXXXX") || exit 1
export FAKE_KUBECTL_TMPDIR
trap 'rm -rf "$FAKE_KUBECTL_TMPDIR"' EXIT
out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe --mca plm_rsh_agent "$kubexec" \
  --mca plm_rsh_no_tree_spawn 1 --host job-worker-0:1,job-worker-1:1 -np 2 \
  sh -c 'echo "rank=$OMPI_COMM_WORLD_RANK"' 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: mpirun exited $rc"; exit 1; }
for r in 0 1; do
  echo "$out" | grep -qx "rank=$r" || { echo "FAIL: no output from rank $r"; exit 1; }
done
echo "PASS"
