#!/usr/bin/env bash
# Allreduce on a communicator made from the world against the world itself, same ranks and sizes:
# `--comm split:1` (a split in which every rank takes one color) and `--comm dup`, interleaved
# with `--comm world` run by run (W S D, S D W, D W S, ...), and the median over rounds of each size's
# in-place busbw ratio (split/world, dup/world).
#
#   bench/comm_ratio.sh BUILD_DIR OUT_DIR [ROUNDS]
#
# Cases: shm np2, shm np4, tcp np2 (TUTTI_TRANSPORT), sizes 8 B to 16 MiB. Writes the CSVs and
# prints one table per case.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$1
out=$2
rounds=${3:-7}
mkdir -p "$out"
cases=("shm 2" "shm 4" "tcp 2")
for c in "${cases[@]}"; do
  read -r transport np <<<"$c"
  for ((r = 0; r < rounds; ++r)); do
    # The order rotates round by round: whichever kind always ran last measured ~10-20% slower
    # over tcp (the machine's state drifts within a round), which a fixed order takes for a cost.
    kinds=(world split:1 dup)
    for ((k = 0; k < 3; ++k)); do
      kind=${kinds[$(((k + r) % 3))]}
      TUTTI_TRANSPORT=$transport "$build/bin/tuttirun" -np "$np" -- "$build/bin/tutti-bench" \
        allreduce -b 8 -e 16M -f 8 -n 40 -w 5 --comm "$kind" \
        --csv "$out/$transport-np$np-r$r-${kind/:/}.csv" >/dev/null 2>&1 ||
        echo "run failed: $transport np$np $kind round $r" >&2
    done
  done
  python3 - "$out" "$transport" "$np" "$rounds" <<'PY'
import csv, statistics, sys
out, transport, np_, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def load(kind, r):
    try:
        with open(f"{out}/{transport}-np{np_}-r{r}-{kind}.csv") as f:
            return {int(row["size"]): float(row["inplace_busbw_gbps"] or 0) or float(row["inplace_time_us"]) for row in csv.DictReader(f)}
    except OSError:
        return {}
def times(kind, r):
    try:
        with open(f"{out}/{transport}-np{np_}-r{r}-{kind}.csv") as f:
            return {int(row["size"]): float(row["inplace_time_us"]) for row in csv.DictReader(f)}
    except OSError:
        return {}
print(f"\n{transport} np{np_}, {rounds} rounds: median in-place time ratio world/other (>1: other faster)")
print(f"{'size':>10} {'world us':>10} {'split:1':>8} {'dup':>8}")
sizes = sorted(times("world", 0))
for size in sizes:
    w = [times("world", r).get(size) for r in range(rounds)]
    line = f"{size:>10} {statistics.median([x for x in w if x]):>10.2f}"
    for kind in ("split1", "dup"):
        ratios = [times("world", r)[size] / times(kind, r)[size]
                  for r in range(rounds) if size in times(kind, r) and size in times("world", r)]
        line += f" {statistics.median(ratios):>8.2f}" if ratios else f" {'-':>8}"
    print(line)
PY
done
