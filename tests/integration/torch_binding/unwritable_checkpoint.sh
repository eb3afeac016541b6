#!/usr/bin/env bash
# A checkpoint folder where no file can be written: every rank stops before the first step with
# rank 0's message naming the folder, exit status 1 (no training, no "rank 0 shut down" from the
# peers). It used to train until the first save, where rank 0 failed and the others reported only
# that it had gone.
set -uo pipefail
tuttirun=$1 trainer=$2
work=$(mktemp -d)
folder="$work/read-only"
mkdir "$folder"
# Permission bits do not stop root: make the folder immutable then (needs a file system with
# attributes; skip where there is none).
if [ "$(id -u)" -eq 0 ]; then
  chattr +i "$folder" 2>/dev/null || { echo "skip: chattr +i unsupported here"; rm -rf "$work"; exit 77; }
  trap 'chattr -i "$folder"; rm -rf "$work"' EXIT
else
  chmod 555 "$folder"
  trap 'chmod 755 "$folder"; rm -rf "$work"' EXIT
fi
started=$(date +%s)
"$tuttirun" -np 2 -- "$trainer" --model mlp --batch-size 32 --checkpoint "$folder/fmnist.ckpt" \
  --checkpoint-every 10 --log-every 1 --max-steps 30 >"$work/out" 2>&1
status=$?
took=$(( $(date +%s) - started ))
cat "$work/out"
fail=0
[ "$status" -ne 0 ] || { echo "FAIL: the job succeeded"; fail=1; }
for rank in 0 1; do
  grep -q "^\[$rank\] fashion_mnist: error: .*--checkpoint $folder/fmnist.ckpt: no file can be written in its folder $folder" "$work/out" ||
    { echo "FAIL: rank $rank does not name the unwritable folder"; fail=1; }
done
if grep -q "step 1 " "$work/out"; then echo "FAIL: it trained before refusing"; fail=1; fi
if grep -qiE "shut down|died|terminate" "$work/out"; then echo "FAIL: a rank reported another's end"; fail=1; fi
[ "$took" -lt 60 ] || { echo "FAIL: took $took s"; fail=1; }
[ "$fail" -eq 0 ] && echo "ok: unwritable checkpoint folder refused at start on every rank"
exit $fail
