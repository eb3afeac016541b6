#!/usr/bin/env bash
# kill -9 of rank 1 mid-training under tuttirun --restarts 1. Expect: the job restarts, resumes
# from the last checkpoint saved before the kill ("resuming from PATH at epoch E step S"),
# finishes with identical weights, and no step up to S is run twice.
set -uo pipefail
tuttirun=$1 trainer=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tuttirun" -np 2 --restarts 1 -- "$trainer" --model mlp --batch-size 32 --max-steps 120 \
  --checkpoint "$work/ckpt" --checkpoint-every 10 --log-every 1 --sleep-ms 30 \
  --pid-dir "$work" >"$work/out" 2>&1 &
launcher=$!
for _ in $(seq 1 600); do
  grep -q "checkpoint saved at step 40" "$work/out" && break
  sleep 0.1
done
grep -q "checkpoint saved at step 40" "$work/out" || { echo "FAIL: no checkpoint at step 40"; cat "$work/out"; kill -9 $launcher; exit 1; }
victim=$(cat "$work/1.pid")
kill -9 "$victim"
echo "killed rank 1 (pid $victim)"
wait $launcher; status=$?
cat "$work/out"
fail=0
[ "$status" -eq 0 ] || { echo "FAIL: tuttirun exited $status"; fail=1; }
# The last checkpoint before the restart, and where the second run says it resumed.
resume_line=$(grep -E "resuming from .*ckpt at epoch 0 step [0-9]+" "$work/out" | head -1)
[ -n "$resume_line" ] || { echo "FAIL: no 'resuming from' line"; exit 1; }
resumed_at=$(echo "$resume_line" | sed -E 's/.*step ([0-9]+).*/\1/')
before_kill=$(awk '/resuming from/ {exit} /checkpoint saved at step/ {s=$NF} END {print s}' "$work/out")
[ "$resumed_at" = "$before_kill" ] ||
  { echo "FAIL: resumed at step $resumed_at, the last checkpoint before the kill was $before_kill"; fail=1; }
[ "$resumed_at" -ge 40 ] || { echo "FAIL: resumed at step $resumed_at < 40"; fail=1; }
# Steps logged after the resume all come after the checkpoint; steps up to it ran once.
after=$(awk '/resuming from/ {on=1} on && $2=="step" {print $3}' "$work/out")
first_after=$(echo "$after" | head -1)
[ "$first_after" = "$((resumed_at + 1))" ] || { echo "FAIL: first step after resume is '$first_after'"; fail=1; }
dups=$(grep -oE "^\[0\] step [0-9]+ " "$work/out" | awk -v s="$resumed_at" '$3 <= s' | sort | uniq -d)
[ -z "$dups" ] || { echo "FAIL: steps up to $resumed_at ran twice: $dups"; fail=1; }
grep -q "^\[0\] step 120 " "$work/out" || { echo "FAIL: did not reach step 120"; fail=1; }
grep -q "weights identical on all 2 ranks" "$work/out" || { echo "FAIL: no weights check"; fail=1; }
[ "$fail" -eq 0 ] && echo "ok: killed, resumed at step $resumed_at, finished"
exit $fail
