#!/usr/bin/env python3
"""Which allreduce algorithm won each size, beside the one the cost model picks.

    bench/algo_winners.py OUT NP RUNS ALGO...

Reads OUT/algo-<ALGO>-np<NP>-run<I>.csv (tutti-bench --csv, one whole run per algorithm and run,
the runs alternating: bench/pods_tcp.sh --peers algos) and the decision table that rank 0 of the
auto run logs at TUTTI_LOG_LEVEL=debug (OUT/algo-auto-np<NP>-run1.txt; and algo-auto-tuned-...
for auto with a tuning file). Prints per size the median in-place time of every algorithm over the
runs, the fastest, and per auto run the model's pick and what the pick costs against the fastest
(pick time / fastest time; 1.00 when the model chose the winner). A size
the decision table lacks gets the pick of the nearest smaller size in the table, as the runtime's
step between its rows would. Exits 1 when a run reported wrong values, 2 when files are missing.
"""
import csv
import os
import re
import statistics
import sys


def in_place_times(path):
    with open(path) as f:
        rows = list(csv.DictReader(f))
    if any(int(r["wrong"] or 0) > 0 or int(r["inplace_wrong"] or 0) > 0 for r in rows):
        raise ValueError(f"{path}: wrong values")
    return {int(r["size"]): float(r["inplace_time_us"]) for r in rows}


def decision_table(path, ranks):
    """{bytes: pick} from the first 'allreduce decision table' for `ranks` ranks in a debug log
    (hier logs its leaders' table after it; tuned predictions carry a '*')."""
    picks, inside = {}, False
    with open(path, errors="replace") as f:
        for line in f:
            if f"allreduce decision table: {ranks} ranks on" in line and not picks:
                inside = True
                continue
            if inside:
                if re.match(r"\s+bytes\s", line):
                    continue
                m = re.match(r"\s+(\d+)\s+[\d.*\s]+?\s([a-z]+)\s*$", line)
                if not m:
                    break
                picks[int(m.group(1))] = m.group(2)
    return picks


def pick_for(picks, size):
    smaller = [b for b in picks if b <= size]
    return picks[max(smaller)] if smaller else picks[min(picks)]


def main():
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    out, np_, runs, algos = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    times = {}
    for algo in algos:
        for i in range(1, runs + 1):
            path = os.path.join(out, f"algo-{algo}-np{np_}-run{i}.csv")
            if not os.path.exists(path):
                print(f"algo_winners.py: {path} is missing", file=sys.stderr)
                return 2
            try:
                for size, t in in_place_times(path).items():
                    times.setdefault(size, {}).setdefault(algo, []).append(t)
            except ValueError as e:
                print(f"algo_winners.py: {e}", file=sys.stderr)
                return 1
    if all(a.startswith("auto") for a in algos):
        print("algo_winners.py: name at least one algorithm besides auto to compare with",
              file=sys.stderr)
        return 2
    # One pick column per auto run (auto: the built-in constants; auto-tuned: the tuning file).
    autos = [a for a in algos if a.startswith("auto")]
    picks = {}
    for a in autos:
        log = os.path.join(out, f"algo-{a}-np{np_}-run1.txt")
        picks[a] = decision_table(log, np_) if os.path.exists(log) else {}
    flat = [a for a in algos if not a.startswith("auto")]
    print(f"== np{np_}: in-place us, medians of {runs} runs; pick = the cost model's choice "
          f"(x / fastest: what the pick costs)")
    heads = [f"{a} pick | x / fastest" for a in autos]
    print("| size | " + " | ".join(algos) + " | fastest | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * (len(algos) + 1 + 2 * len(autos)))
    for size in sorted(times):
        med = {a: statistics.median(times[size][a]) for a in algos if a in times[size]}
        fastest = min((a for a in flat if a in med), key=lambda a: med[a])
        cells = " | ".join(f"{med[a]:.1f}" if a in med else "-" for a in algos)
        chosen = []
        for a in autos:
            pick = pick_for(picks[a], size) if picks[a] else "?"
            cost = f"{med[pick] / med[fastest]:.2f}" if pick in med else "?"
            chosen.append(f"{pick} | {cost}")
        print(f"| {size} | {cells} | {fastest} | " + " | ".join(chosen) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
