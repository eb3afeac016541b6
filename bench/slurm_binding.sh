#!/usr/bin/env bash
# Small allreduces under srun's CPU bindings: tutti-bench under `srun --mpi=pmi2 -n NP
# --cpu-bind=cores|none` on a one-host Slurm cluster this script starts (tests/integration/slurm/
# slurm.sh, with task/affinity so that --cpu-bind binds, the node declared with this machine's
# CPUs) and stops, the bindings alternating round by round, 8 B to 64 KiB, float32 sum, in place.
# Prints per size the median time bound and unbound and their ratio (unbound's time / bound's:
# below 0.9, the binding costs tutti more than 10%), and what each task was bound to.
#
#   bench/slurm_binding.sh BUILD_DIR OUT_DIR [ROUNDS] [NP]      (default 7 rounds, 2 ranks)
#
# Needs root (slurmd starts the tasks; network and mount namespaces of its own) and Debian's Slurm
# and munge (make deps). BINDING_ITERS (default 2000) sets the iterations per round.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd) || exit 2
mkdir -p "$2" && out=$(cd "$2" && pwd) || exit 2
rounds=${3:-7}
np=${4:-2}
iters=${BINDING_ITERS:-2000}
bench=$build/bin/tutti-bench
[ -x "$bench" ] || { echo "slurm_binding.sh: $bench not built" >&2; exit 2; }
# shellcheck source=../tests/integration/slurm/slurm.sh
source "$HERE/../tests/integration/slurm/slurm.sh"
slurm_private_world
dir=$(mktemp -d "${TMPDIR:-/tmp}/tutti-slurm-bench.XXXXXX")
trap 'slurm_down' EXIT
export SLURM_TASK_PLUGIN=task/affinity SLURM_NODE_CPUS=$(nproc)
slurm_up "$dir" || exit 1
bindings=(cores none)
for ((r = 0; r < rounds; ++r)); do
  for ((k = 0; k < ${#bindings[@]}; ++k)); do
    b=${bindings[$(((k + r) % ${#bindings[@]}))]}
    srun --mpi=pmi2 -n "$np" --cpu-bind="$b,verbose" "$bench" allreduce -b 8 -e 64K -f 8 \
      -n "$iters" -w $((iters / 10 + 1)) --csv "$out/np$np-$b-r$r.csv" >"$out/np$np-$b-r$r.txt" 2>&1 ||
      { echo "run failed: np$np --cpu-bind=$b round $r:" >&2; tail -n 5 "$out/np$np-$b-r$r.txt" >&2; }
  done
done
echo "# srun --cpu-bind (task/affinity), $np ranks, $rounds rounds, medians ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
grep -h "cpu-bind" "$out/np$np-cores-r0.txt" | sed 's/^/#   /' | head -n "$np"
python3 - "$out" "$np" <<'PY'
import csv, glob, os, statistics, sys
out, np = sys.argv[1], sys.argv[2]
runs = {}  # binding -> size -> [us]
for b in ("cores", "none"):
    for path in sorted(glob.glob(os.path.join(out, f"np{np}-{b}-r*.csv"))):
        for row in csv.DictReader(open(path)):
            if row["type"] not in ("float", "float32") or row["redop"] != "sum":
                continue
            runs.setdefault(b, {}).setdefault(int(row["size"]), []).append(float(row["inplace_time_us"]))
if set(runs) != {"cores", "none"}:
    sys.exit("slurm_binding.sh: no results for one of the bindings (see the run logs)")
print(f"# {'bytes':>8} {'cores us':>9} {'none us':>9} {'none/cores':>10}")
for size in sorted(runs["none"]):
    c, n = statistics.median(runs["cores"][size]), statistics.median(runs["none"][size])
    print(f"  {size:>8} {c:>9.2f} {n:>9.2f} {n / c:>9.2f}x")
PY
