#!/usr/bin/env bash
# Ranks in a real cgroup cpuset (as a container runtime or Slurm's task/cgroup confines a job):
# 2 ranks under tuttirun, confined to 1 CPU and then to 2. The window's waits must yield at once
# on 1 CPU (a spinning waiter would take the CPU from the rank it waits for) and spin on 2, which
# each rank learns from the masks of both, not from its own count alone.
#   cpuset_spin.sh TUTTIRUN CHECK
# Exits 77 (ctest SKIPPED) with the reason where no cpuset can be made here (not root, no cpuset
# controller, fewer than 2 CPUs).
set -uo pipefail
tuttirun=$1 check=$2

skip() {
  echo "SKIP: $*" >&2
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

[ "$(id -u)" -eq 0 ] || skip "making a cgroup needs root"
mapfile -t cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)), sep="\n")')
[ "${#cpus[@]}" -ge 2 ] || skip "${#cpus[@]} usable CPU; the cases need 2"

# cgroup v1's cpuset hierarchy, else v2's unified one with the cpuset controller.
group=""
if [ -w /sys/fs/cgroup/cpuset/cpuset.cpus ]; then
  group=/sys/fs/cgroup/cpuset/tutti-cpuset-spin-$$
  mkdir "$group" || skip "cannot make $group"
  cat /sys/fs/cgroup/cpuset/cpuset.mems >"$group/cpuset.mems"
elif grep -qw cpuset /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
  # Only where the machine already hands cpuset to child groups: the test changes nothing of the
  # host's own cgroup setup.
  group=/sys/fs/cgroup/tutti-cpuset-spin-$$
  mkdir "$group" || skip "cannot make $group"
else
  skip "no writable cpuset controller (cgroup v1 cpuset, or v2 with cpuset in the root's subtree_control)"
fi
# Whatever happens, the group goes: its processes have ended by then.
trap 'rmdir "$group" 2>/dev/null' EXIT

run_in() {
  local set=$1 expect=$2 out
  echo "$set" >"$group/cpuset.cpus" || fail "cannot set cpuset.cpus to $set"
  out=$(sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$group" \
    env TUTTI_LOG_LEVEL=debug TUTTI_TRANSPORT=shm timeout 120 "$tuttirun" -np 2 -- "$check" \
    --counts 1,1001 --dtypes float32 --ops sum 2>&1) || fail "the job in cpuset $set failed: $out"
  local line
  line=$(grep -m1 'shared-memory window' <<<"$out")
  [ -n "$line" ] || fail "cpuset $set: no window line in the debug log: $out"
  grep -q -- "$expect" <<<"$line" || fail "cpuset $set: expected '$expect', got: $line"
  echo "cpuset $set: $line"
}

run_in "${cpus[0]}" "2 ranks, 1 CPU between them: its waits yield at once"
run_in "${cpus[0]},${cpus[1]}" "2 ranks, 2 CPUs between them: its waits spin"
echo PASS
