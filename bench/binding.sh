#!/usr/bin/env bash
# Small allreduces under mpirun's bindings, against Open MPI in the same run: tutti-bench with
# `--baseline mpi` under `mpirun -np NP --bind-to core|socket|none` (Open MPI binds to a core at
# 2 ranks by default, to a socket above), the bindings interleaved round by round, 8 B to 32 KiB,
# float32 sum, in place. Prints per binding and size the median time of tutti and of Open MPI, their
# ratio (Open MPI's time / tutti's: above 1, tutti is faster), and each binding's time against no
# binding's.
#
#   bench/binding.sh BUILD_DIR OUT_DIR [ROUNDS] [NP]
#
# Needs Open MPI's mpirun.openmpi and a build with the MPI baseline. Writes one CSV per run.
# BINDING_ITERS (default 2000) sets each side's iterations per round of tutti-bench.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$1
out=$2
rounds=${3:-7}
np=${4:-2}
iters=${BINDING_ITERS:-2000}
mpirun=$(command -v mpirun.openmpi) || { echo "binding.sh: mpirun.openmpi not found" >&2; exit 2; }
bench=$build/bin/tutti-bench
[ -x "$bench" ] || { echo "binding.sh: $bench not built" >&2; exit 2; }
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bindings=(core socket none)
# More ranks than CPUs: Open MPI refuses to bind unless told that overloading a core is meant.
overload=""
[ "$np" -gt "$(nproc)" ] && overload=":overload-allowed"
for ((r = 0; r < rounds; ++r)); do
  # The order rotates round by round, so no binding always runs first.
  for ((k = 0; k < ${#bindings[@]}; ++k)); do
    b=${bindings[$(((k + r) % ${#bindings[@]}))]}
    bind=$b
    [ "$b" = none ] || bind+=$overload
    "$mpirun" -np "$np" --oversubscribe --bind-to "$bind" "$bench" allreduce -b 8 -e 64K -f 8 \
      -n "$iters" -w $((iters / 10 + 1)) --baseline mpi --csv "$out/np$np-$b-r$r.csv" >/dev/null 2>&1 ||
      echo "run failed: np$np --bind-to $b round $r" >&2
  done
done
python3 - "$out" "$np" "${bindings[@]}" <<'EOF'
import csv, glob, os, statistics, sys
out, np, bindings = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = {}  # binding -> size -> ([tutti us], [mpi us])
for b in bindings:
    for path in sorted(glob.glob(os.path.join(out, f"np{np}-{b}-r*.csv"))):
        for row in csv.DictReader(open(path)):
            if row["type"] not in ("float", "float32") or row["redop"] != "sum" or not row["baseline_time_us"]:
                continue
            t, m = runs.setdefault(b, {}).setdefault(int(row["size"]), ([], []))
            t.append(float(row["inplace_time_us"]))
            m.append(float(row["baseline_time_us"]))
print(f"{np} ranks, median of each binding's rounds (in place, float32 sum)")
print(f"{'binding':8} {'size':>8} {'tutti us':>9} {'ompi us':>9} {'ompi/tutti':>10} {'vs none':>8}")
none = runs.get("none", {})
for b in bindings:
    for size, (t, m) in sorted(runs.get(b, {}).items()):
        mt, mm = statistics.median(t), statistics.median(m)
        base = statistics.median(none[size][0]) if size in none else None
        vs = f"{mt / base:8.2f}" if base else f"{'-':>8}"
        print(f"{b:8} {size:8d} {mt:9.3f} {mm:9.3f} {mm / mt:10.2f} {vs}")
EOF
