#!/usr/bin/env bash
# The runs behind docs/PERFORMANCE.md's "second round" tables, float32 sum, every value checked
# (-c 1), each pair interleaved in one run (A B A B per size; ratio = median of the per-round
# ratios):
#   shm   tutti against Open MPI (vader), 2 and 4 ranks, in place and out of place, at 8 B, 1-16 MiB
#         and 64-256 MiB. The vCPU state of the run is named by Open MPI's own 1 MiB busbw in it.
#   oop   tutti out of place against tutti in place (--baseline inplace): shm 2 and 4 ranks, and
#         every algorithm over TCP on loopback at 2 and 3 ranks.
#
#   bench/round2.sh BUILD OUT [shm|oop]...     (default: shm oop)
#
# Writes OUT/<part>-<case>.csv and .txt and prints the tables (bench/ratio_table.py).
set -uo pipefail
build=${1:?usage: bench/round2.sh BUILD OUT [shm|oop]...}
out=${2:?usage: bench/round2.sh BUILD OUT [shm|oop]...}
shift 2
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(shm oop)
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "$build/bin" && pwd)
mkdir -p "$out"
M=(mpirun --allow-run-as-root --bind-to none --oversubscribe)

# run NAME CMD...: one tutti-bench run whose --csv goes to OUT/NAME.csv, text to OUT/NAME.txt.
run() {
  local name=$1
  shift
  uptime >"$out/$name.txt"
  "$@" --csv "$out/$name.csv" >>"$out/$name.txt" 2>&1 || echo "round2.sh: $name failed (see $out/$name.txt)" >&2
}

shm() {
  local np
  for np in 2 4; do
    run "shm-np$np-small" "${M[@]}" -np $np --mca btl self,vader "$B/tutti-bench" allreduce \
      --baseline mpi -b 8 -e 8 -n 200 -w 20 --rounds 7 -c 1
    run "shm-np$np-mid" "${M[@]}" -np $np --mca btl self,vader "$B/tutti-bench" allreduce \
      --baseline mpi -b 1M -e 16M -f 4 -n 20 -w 5 --rounds 7 -c 1
    run "shm-np$np-large" "${M[@]}" -np $np --mca btl self,vader "$B/tutti-bench" allreduce \
      --baseline mpi -b 64M -e 256M -f 4 -n 3 -w 1 --rounds 5 -c 1
  done
  for np in 2 4; do
    # The state of the vCPUs during the run: Open MPI's in-place 1 MiB busbw (GB/s).
    awk -F, -v np=$np 'NR > 1 && $1 == 1048576 { print "# shm np" np ": Open MPI 1 MiB busbw " $18 " GB/s" }' \
      "$out/shm-np$np-mid.csv"
    echo "## shm np$np, in place"
    python3 "$HERE/ratio_table.py" --merge "$out/shm-np$np-"*.csv
    echo "## shm np$np, out of place"
    python3 "$HERE/ratio_table.py" --merge --oop "$out/shm-np$np-"*.csv
  done
}

oop() {
  local np algo
  for np in 2 4; do
    run "oop-shm-np$np" "$B/tuttirun" -np $np --no-tag-output -- "$B/tutti-bench" allreduce \
      --baseline inplace -b 256K -e 256M -f 4 -n 5 -w 2 --rounds 7 -c 1
  done
  for np in 2 3; do
    for algo in ring tree hd; do
      run "oop-tcp-$algo-np$np" env TUTTI_TRANSPORT=tcp TUTTI_ALGO=$algo "$B/tuttirun" -np $np \
        --no-tag-output -- "$B/tutti-bench" allreduce --baseline inplace -b 256K -e 64M -f 4 -n 5 \
        -w 2 --rounds 7 -c 1
    done
  done
  echo "## out of place / in place (tutti against itself; the in-place table is the noise)"
  python3 "$HERE/ratio_table.py" --oop "$out"/oop-*.csv
  python3 "$HERE/ratio_table.py" "$out"/oop-*.csv
}

for p in "${parts[@]}"; do
  case $p in
    shm | oop) "$p" ;;
    *) echo "round2.sh: unknown part '$p' (shm, oop)" >&2; exit 2 ;;
  esac
done
