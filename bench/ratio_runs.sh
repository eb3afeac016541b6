#!/usr/bin/env bash
# The runs behind docs/PERFORMANCE.md's ratio table: tutti against Open MPI (shm np2, shm np4,
# tcp np2) and Gloo ring_chunked (tcp np2), each pair interleaved in one run, at 8 B, 4 KiB, 1 MiB,
# 64 MiB and 256 MiB, with iteration counts per size group so every group takes seconds.
#
#   bench/ratio_runs.sh BUILD_DIR OUT_DIR
#
# Writes OUT_DIR/<run>-<group>.{txt,csv} and OUT_DIR/commands.log (every command with the load
# average when it started), then prints the table (bench/ratio_table.py). Runs hold an exclusive
# flock on ${TUTTI_BENCH_LOCK:-/tmp/tutti-bench.lock}, so two benches on this 2-vCPU machine that
# use the same lock never overlap.
set -uo pipefail
[ $# -eq 2 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
bench="$build/bin/tutti-bench"
tuttirun="$build/bin/tuttirun"
mkdir -p "$out"
lock=${TUTTI_BENCH_LOCK:-/tmp/tutti-bench.lock}

mpirun=(mpirun --bind-to none --oversubscribe)
[ "$(id -u)" -eq 0 ] && mpirun+=(--allow-run-as-root)
shm=(--mca btl self,vader)
tcp=(--mca btl tcp,self --mca btl_tcp_if_include lo -x TUTTI_TRANSPORT=tcp)
groups=(
  "small:-b 8 -e 8 -n 200 -w 20 --rounds 11"
  "mid:-b 4K -e 1M -f 256 -n 50 -w 10 --rounds 11"
  "large:-b 64M -e 256M -f 4 -n 3 -w 1 --rounds 5"
)
failed=0
for group in "${groups[@]}"; do
  name=${group%%:*}
  read -r -a flags <<<"${group#*:}"
  for run in mpi-shm-np2 mpi-shm-np4 mpi-tcp-np2 gloo-tcp-np2; do
    case $run in
      mpi-shm-np2) cmd=("${mpirun[@]}" -np 2 "${shm[@]}" "$bench" allreduce --baseline mpi) ;;
      mpi-shm-np4) cmd=("${mpirun[@]}" -np 4 "${shm[@]}" "$bench" allreduce --baseline mpi) ;;
      mpi-tcp-np2) cmd=("${mpirun[@]}" -np 2 "${tcp[@]}" "$bench" allreduce --baseline mpi) ;;
      gloo-tcp-np2)
        cmd=(env TUTTI_TRANSPORT=tcp "$tuttirun" -np 2 --no-tag-output -- "$bench" allreduce
             --baseline gloo) ;;
    esac
    full=("${cmd[@]}" "${flags[@]}" --csv "$out/$run-$name.csv")
    if flock "$lock" bash -c 'echo "load $(cut -d" " -f1-3 /proc/loadavg): $0 $*" >>"'"$out"'/commands.log"
                             exec "$0" "$@"' "${full[@]}" >"$out/$run-$name.txt" 2>&1; then
      grep -v '^#' "$out/$run-$name.txt"
    else
      echo "$run $name FAILED (see $out/$run-$name.txt)" >&2
      failed=1
    fi
  done
done
python3 "$here/ratio_table.py" --merge "$out"/mpi-shm-np2-*.csv "$out"/mpi-shm-np4-*.csv \
  "$out"/mpi-tcp-np2-*.csv "$out"/gloo-tcp-np2-*.csv
exit $failed
