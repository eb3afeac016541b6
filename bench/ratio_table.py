#!/usr/bin/env python3
"""Markdown table of tutti-bench --baseline results, one column per run, one row per size.

    bench/ratio_table.py [-t TYPE] [-o OP] [--merge] [--oop] RUN.csv [RUN.csv ...]

Each cell reads "ratio (tutti / peer)" where the pair is busbw in GB/s from 1 MiB up, and the time
per call in us below (where busbw rounds to zero in the CSV). A run is named by its file name without
.csv; with --merge, CSVs of one run in parts (mpi-shm-np2-small.csv, mpi-shm-np2-mid.csv) become
one column named by the part before the last '-'. Rows of one dtype and op only (default float sum).
In place against the peer in place; with --oop, out of place against the peer out of place.
"""
import argparse
import csv
import os
import sys
from collections import OrderedDict


def size_text(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} B"


def cell(row, oop=False):
    # In place: tutti's in-place column against the peer in place; --oop: tutti's out-of-place
    # column against the peer out of place.
    ours, theirs, key = ("", "oop_baseline_", "oop_ratio") if oop else \
        ("inplace_", "baseline_", "ratio")
    if not row.get(key):
        return "n/a"
    ratio = float(row[key])
    if int(row["size"]) < (1 << 20):
        return f"**{ratio:.2f}x** ({float(row[ours + 'time_us']):.2f} / " \
               f"{float(row[theirs + 'time_us']):.2f} us)"
    return f"**{ratio:.2f}x** ({float(row[ours + 'busbw_gbps']):.2f} / " \
           f"{float(row[theirs + 'busbw_gbps']):.2f} GB/s)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-t", "--type", default="float")
    ap.add_argument("-o", "--op", default="sum")
    ap.add_argument("--merge", action="store_true",
                    help="merge files whose names differ only after the last '-'")
    ap.add_argument("--oop", action="store_true",
                    help="out of place: tutti's out-of-place column against the peer's")
    ap.add_argument("csvs", nargs="+")
    args = ap.parse_args()

    runs = OrderedDict()  # run name -> {size: row}
    for path in args.csvs:
        name = os.path.basename(path)
        name = name[:-4] if name.endswith(".csv") else name
        if args.merge and "-" in name:
            name = name.rsplit("-", 1)[0]
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            if not reader.fieldnames or "ratio" not in reader.fieldnames:
                sys.exit(f"ratio_table.py: {path} is not a tutti-bench --csv file")
            for row in reader:
                if row["type"] == args.type and row["redop"] == args.op:
                    runs.setdefault(name, {})[int(row["size"])] = row
    sizes = sorted({s for rows in runs.values() for s in rows})
    print("| size | " + " | ".join(runs) + " |")
    print("|---|" + "---|" * len(runs))
    for s in sizes:
        cells = [cell(rows[s], args.oop) if s in rows else "" for rows in runs.values()]
        print(f"| {size_text(s)} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
