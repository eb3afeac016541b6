#!/usr/bin/env bash
# The runs behind docs/PERFORMANCE.md's "Targets, re-measured" table: every row of the first
# round's targets in one sitting, each tutti/peer pair interleaved in one run (A B A B per size,
# ratio = median of the per-round ratios), float32 sum, every value of both sides checked (-c 1).
#
#   bench/targets.sh BUILD_DIR OUT_DIR
#
# Writes OUT_DIR/{shm_np2,shm_np4,tcp_mpi_np2,tcp_mpi_np4,tcp_gloo_np2,tcp_gloo_np4}.txt, each
# starting with the load average when it began, and prints "file size ratio" lines.
set -uo pipefail
build=${1:?usage: bench/targets.sh BUILD_DIR OUT_DIR}
out=${2:?usage: bench/targets.sh BUILD_DIR OUT_DIR}
B=$(cd "$build/bin" && pwd)
mkdir -p "$out"
M="mpirun --allow-run-as-root --bind-to none --oversubscribe"
for np in 2 4; do
  f=$out/shm_np$np.txt
  uptime >"$f"
  $M -np $np --mca btl self,vader "$B/tutti-bench" allreduce --baseline mpi -b 8 -e 8 -n 200 -w 20 --rounds 7 -c 1 >>"$f" 2>&1
  $M -np $np --mca btl self,vader "$B/tutti-bench" allreduce --baseline mpi -b 4K -e 16M -f 16 -n 20 -w 3 --rounds 7 -c 1 >>"$f" 2>&1
  $M -np $np --mca btl self,vader "$B/tutti-bench" allreduce --baseline mpi -b 64M -e 256M -f 4 -n 3 -w 1 --rounds 3 -c 1 >>"$f" 2>&1
done
for np in 2 4; do
  f=$out/tcp_mpi_np$np.txt
  uptime >"$f"
  $M -np $np --mca btl tcp,self --mca btl_tcp_if_include lo -x TUTTI_TRANSPORT=tcp "$B/tutti-bench" allreduce \
    --baseline mpi -b 1M -e 64M -f 4 -n 5 -w 1 --rounds 5 -c 1 >>"$f" 2>&1
  f=$out/tcp_gloo_np$np.txt
  uptime >"$f"
  TUTTI_TRANSPORT=tcp "$B/tuttirun" -np $np --no-tag-output -- "$B/tutti-bench" allreduce --baseline gloo \
    -b 1M -e 64M -f 4 -n 5 -w 1 --rounds 5 -c 1 >>"$f" 2>&1
done
# Columns of the nccl-tests rows: 1 size, 11 in-place busbw, 15 baseline busbw, 18 ratio.
for f in "$out"/*.txt; do
  grep -E '^ +[0-9]+ ' "$f" | awk -v f="$(basename "$f" .txt)" '{print f, $1, $18}'
done
