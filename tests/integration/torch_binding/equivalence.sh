#!/usr/bin/env bash
# 2 ranks x batch B and 1 rank x batch 2B see the same samples at every step (the shards split
# one permutation round-robin), so after k steps their weights must agree to 1e-5.
set -euo pipefail
tuttirun=$1 trainer=$2 check=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
common=(--model mlp --max-steps 30 --lr 0.05 --momentum 0.9 --log-every 10)
"$tuttirun" -np 1 -- "$trainer" "${common[@]}" --batch-size 64 --seed 5 --weights-out "$work/one.bin"
"$tuttirun" -np 2 -- "$trainer" "${common[@]}" --batch-size 32 --seed 5 --weights-out "$work/two.bin"
"$check" compare "$work/one.bin" "$work/two.bin" 1e-5
# And the check can fail: other data (another seed) gives other weights.
"$tuttirun" -np 1 -- "$trainer" "${common[@]}" --batch-size 64 --seed 6 --weights-out "$work/other.bin"
if "$check" compare "$work/one.bin" "$work/other.bin" 1e-5; then
  echo "FAIL: the comparison accepts weights trained on other data"; exit 1
fi
echo "ok: equivalence"
