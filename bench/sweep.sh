#!/usr/bin/env bash
# The allreduce sweep behind `make bench`: tutti against every peer this build has, each pair
# interleaved in one run (tutti-bench --baseline), then one plot of busbw and ratio vs size.
#
#   bench/sweep.sh BUILD_DIR OUT_DIR [tutti-bench flags...]
#
# Default flags: -b 4 -e 64M -f 4 -n 10 -w 3 --rounds 5 -c 1 (float sum). Writes, per run,
# OUT_DIR/<run>.txt (nccl-tests-style text) and OUT_DIR/<run>.csv, then OUT_DIR/allreduce.svg and
# .png. Runs:
#   mpi-shm-np2, mpi-shm-np4   mpirun --mca btl self,vader; tutti picks its transport (shm)
#   mpi-tcp-np2                mpirun --mca btl tcp,self --mca btl_tcp_if_include lo;
#                              tutti with TUTTI_TRANSPORT=tcp
#   gloo-tcp-np2               tuttirun; Gloo ring_chunked over tcp, tutti with TUTTI_TRANSPORT=tcp
# A run whose peer is missing (not built, no mpirun) is skipped with a note, never an error. Each
# run holds an exclusive flock on ${TUTTI_BENCH_LOCK:-/tmp/tutti-bench.lock} (as ratio_runs.sh).
set -uo pipefail

[ $# -ge 2 ] || { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$1
out=$2
shift 2
flags=("$@")
[ ${#flags[@]} -gt 0 ] || flags=(-b 4 -e 64M -f 4 -n 10 -w 3 --rounds 5 -c 1)
bench="$build/bin/tutti-bench"
tuttirun="$build/bin/tuttirun"
here=$(cd "$(dirname "$0")" && pwd)
for exe in "$bench" "$tuttirun"; do
  [ -x "$exe" ] || { echo "sweep.sh: $exe not found; build first (make build)" >&2; exit 1; }
done
mkdir -p "$out"
lock=${TUTTI_BENCH_LOCK:-/tmp/tutti-bench.lock}

mpirun_flags=(--bind-to none --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun_flags+=(--allow-run-as-root)

# "built without" in a usage error means the peer is not in this build: skip, say so.
csvs=()
failed=0
run() {
  local name=$1
  shift
  echo "== $name: $*"
  # One bench at a time on this 2-vCPU machine: runs holding the same lock never overlap.
  if flock "$lock" "$@" "${flags[@]}" --csv "$out/$name.csv" >"$out/$name.txt" \
    2>"$out/$name.err"; then
    cat "$out/$name.txt"
    csvs+=("$out/$name.csv")
  elif grep -q "built without" "$out/$name.err"; then
    echo "   skipped: $(head -n1 "$out/$name.err")"
  else
    echo "   FAILED: see $out/$name.err" >&2
    cat "$out/$name.err" >&2
    failed=1
  fi
}

if command -v mpirun >/dev/null 2>&1; then
  run mpi-shm-np2 mpirun "${mpirun_flags[@]}" -np 2 --mca btl self,vader "$bench" allreduce --baseline mpi
  run mpi-shm-np4 mpirun "${mpirun_flags[@]}" -np 4 --mca btl self,vader "$bench" allreduce --baseline mpi
  run mpi-tcp-np2 mpirun "${mpirun_flags[@]}" -np 2 --mca btl tcp,self --mca btl_tcp_if_include lo \
    -x TUTTI_TRANSPORT=tcp "$bench" allreduce --baseline mpi
else
  echo "== mpi runs skipped: no mpirun (apt-get install openmpi-bin, or scripts/install-deps.sh)"
fi
run gloo-tcp-np2 env TUTTI_TRANSPORT=tcp "$tuttirun" -np 2 --no-tag-output -- "$bench" allreduce --baseline gloo

if [ ${#csvs[@]} -eq 0 ]; then
  # No peer at all: still draw tutti's own curve.
  run tutti-np2 "$tuttirun" -np 2 --no-tag-output -- "$bench" allreduce
fi
if [ ${#csvs[@]} -gt 0 ] && command -v gnuplot >/dev/null 2>&1; then
  bash "$here/plot.sh" --title "tutti-bench allreduce vs peers" "$out/allreduce.svg" "${csvs[@]}"
  bash "$here/plot.sh" --title "tutti-bench allreduce vs peers" "$out/allreduce.png" "${csvs[@]}"
else
  echo "sweep.sh: no plot (gnuplot missing or no results); install gnuplot-nox" >&2
fi
exit $failed
