#!/usr/bin/env bash
# A truncated checkpoint: the trainer says so and falls back to PATH.prev. Garbage in both: a
# clear error naming the files, exit status 1 on every rank (no crash, no hang).
set -uo pipefail
tuttirun=$1 trainer=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ckpt="$work/ckpt"
run() { "$tuttirun" -np 2 -- "$trainer" --model mlp --batch-size 32 --checkpoint "$ckpt" \
          --checkpoint-every 10 --log-every 10 "$@" >"$work/out" 2>&1; }
fail=0
run --max-steps 20 || { echo "FAIL: first run"; cat "$work/out"; exit 1; }
[ -f "$ckpt" ] && [ -f "$ckpt.prev" ] || { echo "FAIL: no checkpoint and .prev"; exit 1; }
truncate -s 1000 "$ckpt"
run --max-steps 30; status=$?
cat "$work/out"
[ "$status" -eq 0 ] || { echo "FAIL: the fall back run exited $status"; fail=1; }
grep -q "checkpoint $ckpt is unusable: $ckpt: truncated checkpoint" "$work/out" ||
  { echo "FAIL: no message about the truncated checkpoint"; fail=1; }
grep -q "resuming from $ckpt.prev at epoch 0 step 10" "$work/out" ||
  { echo "FAIL: did not fall back to .prev (step 10)"; fail=1; }
head -c 5000 /dev/urandom >"$ckpt"
head -c 100 /dev/urandom >"$ckpt.prev"
run --max-steps 40; status=$?
cat "$work/out"
[ "$status" -eq 1 ] || { echo "FAIL: garbage checkpoints gave exit status $status, want 1"; fail=1; }
grep -q "fashion_mnist: error: no usable checkpoint at $ckpt or $ckpt.prev" "$work/out" ||
  { echo "FAIL: no clear error for garbage checkpoints"; fail=1; }
grep -q "not a tutti checkpoint" "$work/out" || { echo "FAIL: the reason is missing"; fail=1; }
[ "$fail" -eq 0 ] && echo "ok: corrupt checkpoints"
exit $fail
