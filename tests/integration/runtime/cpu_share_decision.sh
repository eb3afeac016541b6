#!/usr/bin/env bash
# Every rank announces its CPUs and machine at init, and the cost model counts the ranks of
# pretend hosts on this one machine as sharing its CPUs: the decision table of 4 ranks on 2
# pretend hosts says how many ranks share a CPU (and how many leaders), worked out here from what
# the kernel says (affinity, a cgroup CPU quota, the online CPUs), and the sweep stays correct.
set -euo pipefail
src=$1 build=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
read -r want_ranks want_leaders < <(python3 - <<'PY'
import math, os
usable = len(os.sched_getaffinity(0))
def quota():  # cgroup v2's cpu.max, else v1's cfs quota and period; None for no limit
    try:
        q, p = open("/sys/fs/cgroup/cpu.max").read().split()
    except (OSError, ValueError):
        try:
            q = open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read().strip()
            p = open("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read().strip()
        except OSError:
            return None
    try:
        q, p = int(q), int(p)
    except ValueError:
        return None
    return math.ceil(q / p) if q > 0 and p > 0 else None
limit = quota()
if limit:
    usable = min(usable, limit)
online = os.sysconf("SC_NPROCESSORS_ONLN")
cpus = min(online, 2 * usable)  # two pretend hosts, each with this process's CPUs
print("%.2g %.2g" % (max(1.0, 4 / cpus), max(1.0, 2 / cpus)))
PY
)
TUTTI_LOG_LEVEL=debug "$src/tests/integration/runtime/placed_hosts.sh" "$build/bin/tuttirun" \
  "$build/bin/collectives_check" 2,2 --counts 1,1000 --collectives allreduce --dtypes float32 \
  --ops sum 2>&1 | tee "$dir/run.log" >/dev/null
line=$(grep -m1 "allreduce decision table: 4 ranks on 2 host(s)" "$dir/run.log") || {
  echo "no decision table for 4 ranks on 2 hosts in the log:"; cat "$dir/run.log"; exit 1; }
echo "$line"
want="ranks per CPU $want_ranks (leaders $want_leaders)"
[[ "$line" == *"$want"* ]] || { echo "expected '$want' in the decision table"; exit 1; }
# (`! cmd` never stops a set -e script: say it.)
if grep -E "(^|[^0-9])[1-9][0-9]* failed|FAIL" "$dir/run.log"; then echo "a failure in the run's log"; exit 1; fi
echo "cpu share OK"
