#!/usr/bin/env bash
# DistributedOptimizer's performance target: its steps/s (bench/torch_optimizer_bench.cc) against
# PyTorch gloo with one all_reduce per tensor (bench/torch_gloo_bench.py --case resnet50, column
# (a)), on ResNet-50's 161 parameter sizes. Whole runs alternate (gloo, tutti, gloo, tutti, ...)
# ROUNDS times per rank count; prints each pair's ratio and the median.
#
#   bash bench/torch_optimizer_ratio.sh [BUILD_DIR] [ROUNDS] [NP...]     (defaults: build 3 2 4)
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
shift $(( $# > 2 ? 2 : $# ))
nps=("$@")
[ ${#nps[@]} -gt 0 ] || nps=(2 4)
here=$(cd "$(dirname "$0")" && pwd)
for np in "${nps[@]}"; do
  ratios=()
  for r in $(seq 1 "$rounds"); do
    gloo=$(/usr/bin/python3 "$here/torch_gloo_bench.py" -np "$np" --case resnet50 -n 5 --rounds 3 |
           awk '/all_reduce per tensor/ {print $NF}')
    ours=$("$build/bin/tuttirun" -np "$np" -- "$build/bin/torch_optimizer_bench" --steps 5 --rounds 3 |
           awk '/DistributedOptimizer/ {print $NF}')
    ratio=$(awk -v a="$ours" -v b="$gloo" 'BEGIN {printf "%.2f", a / b}')
    echo "np $np round $r: tutti DistributedOptimizer $ours steps/s, gloo per-tensor $gloo steps/s, ratio $ratio"
    ratios+=("$ratio")
  done
  median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}')
  echo "np $np: median ratio ${median}x over $rounds rounds"
done
