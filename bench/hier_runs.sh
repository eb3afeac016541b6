#!/usr/bin/env bash
# Hierarchical vs flat allreduce on pretend hosts, interleaved in one run: per round, one short
# tutti-bench sweep per algorithm (TUTTI_ALGO=hier, ring, tree, hd, auto) back to back on the same
# placement, so every round's runs saw the same machine; prints, per size, the median over rounds
# of time(x) / time(hier) (> 1: hier is faster) and the median times.
# Usage: bench/hier_runs.sh BUILD OUT LAYOUT [ROUNDS] [tutti-bench flags]
#   e.g. bench/hier_runs.sh build /tmp/hier 2,2 5 -b 8 -e 16M -f 16 -n 5 -w 2 -c 1
set -euo pipefail
build=$1 out=$2 layout=$3 rounds=${4:-5}
shift $(($# < 4 ? $# : 4))
flags=("$@")
[ ${#flags[@]} -eq 0 ] && flags=(-b 8 -e 16M -f 16 -n 5 -w 2 -c 1)
mkdir -p "$out"
scripts=$(cd "$(dirname "$0")/../scripts" && pwd)
np=0
for n in ${layout//,/ }; do np=$((np + n)); done
export TUTTI_LAYOUT="${layout//,/ }" TUTTI_LOG_LEVEL=${TUTTI_LOG_LEVEL:-error}
algos="hier ring tree hd auto"
for round in $(seq 1 "$rounds"); do
  for algo in $algos; do
    TUTTI_ALGO=$algo "$build/bin/tuttirun" -np "$np" --no-tag-output -- \
      "$scripts/on_pretend_host.sh" "$build/bin/tutti-bench" allreduce \
      --csv "$out/$algo-$round.csv" "${flags[@]}" > "$out/$algo-$round.txt"
  done
done
python3 - "$out" "$rounds" $algos <<'PY'
import csv, statistics, sys
out, rounds, algos = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def times(algo, r):
    with open(f"{out}/{algo}-{r}.csv") as f:
        rows = list(csv.DictReader(f))
    assert all(int(x["inplace_wrong"]) <= 0 and int(x["wrong"]) <= 0 for x in rows), f"{algo}-{r} wrong"
    return {int(x["size"]): float(x["inplace_time_us"]) for x in rows}
data = {a: [times(a, r) for r in range(1, rounds + 1)] for a in algos}
sizes = sorted(data["hier"][0])
flat = [a for a in algos if a != "hier"]
print("| size | hier us | " + " | ".join(f"{a} / hier" for a in flat) + " |")
print("|---|---|" + "---|" * len(flat))
for s in sizes:
    h = statistics.median(data["hier"][r][s] for r in range(rounds))
    cells = []
    for a in flat:
        ratio = statistics.median(data[a][r][s] / data["hier"][r][s] for r in range(rounds))
        cells.append(f"{ratio:.2f}x ({statistics.median(data[a][r][s] for r in range(rounds)):.0f} us)")
    print(f"| {s} | {h:.0f} | " + " | ".join(cells) + " |")
PY
