#!/usr/bin/env bash
# examples/fashion_mnist/train_jax.py for one epoch on 2 ranks under tuttirun: rank 0's test
# accuracy must reach 80%, and both ranks must end with the same weights checksum.
#   jax_fmnist_check.sh TUTTIRUN PYTHON TRAIN_JAX_PY
set -euo pipefail
tuttirun=$1 python=$2 script=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
timeout 540 "$tuttirun" -np 2 -- "$python" "$script" --epochs 1 --log-every 200 2>&1 | tee "$out" ||
  status=$?
[ "$status" -eq 0 ] || { echo "FAIL: train_jax.py exited $status"; exit 1; }
accuracy=$(grep -oE '^\[0\] epoch 0: test accuracy [0-9.]+%' "$out" | grep -oE '[0-9.]+%$' | tr -d %)
[ -n "$accuracy" ] || { echo "FAIL: rank 0 reported no test accuracy"; exit 1; }
awk -v a="$accuracy" 'BEGIN { exit !(a >= 80) }' ||
  { echo "FAIL: test accuracy $accuracy% is under 80%"; exit 1; }
sums=$(grep -oE '^\[[01]\] rank [01]: [0-9]+ steps, weights checksum [0-9a-f]+$' "$out" |
  awk '{print $NF}' | sort -u)
[ "$(grep -cE '^\[[01]\] rank [01]: ' "$out")" -eq 2 ] || { echo "FAIL: not both ranks finished"; exit 1; }
[ "$(echo "$sums" | wc -l)" -eq 1 ] || { echo "FAIL: the ranks' weights differ: $sums"; exit 1; }
echo "PASS: test accuracy $accuracy% after one epoch on 2 ranks, equal weights ($sums)"
