#!/usr/bin/env bash
# Ranks started by hand around a FileStore, as a bare-metal user might: a directory that does not
# exist is refused (not created), a directory reused by a second job with the same job id fails at
# once naming the stale keys (it used to fail in shm_open, far from the cause), and a fresh
# TUTTI_JOB_ID makes the same directory work again.
set -uo pipefail
check=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0

# run_job NAME STORE [VAR=VALUE...]: two ranks; their exit codes in $work/NAME.status.
run_job() {
  local name=$1 store=$2; shift 2
  local pids=()
  for r in 0 1; do
    env TUTTI_RANK=$r TUTTI_SIZE=2 TUTTI_STORE="$store" TUTTI_TIMEOUT=20 "$@" \
      timeout 60 "$check" --counts 1,1000 --dtypes float32 --ops sum >"$work/$name.$r.out" 2>&1 &
    pids+=($!)
  done
  : >"$work/$name.status"
  for r in 0 1; do wait "${pids[$r]}"; echo $? >>"$work/$name.status"; cat "$work/$name.$r.out"; done
}

run_job missing "file:$work/nowhere"
grep -q "file store directory '$work/nowhere' does not exist; create it first" "$work/missing.0.out" ||
  { echo "FAIL: a missing directory was not refused clearly"; fail=1; }
[ ! -e "$work/nowhere" ] || { echo "FAIL: the missing directory was created"; fail=1; }

mkdir "$work/store"
run_job first "file:$work/store"
[ "$(sort -u "$work/first.status")" = 0 ] || { echo "FAIL: the first job failed"; fail=1; }

start=$(date +%s)
run_job reused "file:$work/store"
elapsed=$(( $(date +%s) - start ))
for r in 0 1; do
  grep -q "stale keys from an earlier job in $work/store" "$work/reused.$r.out" ||
    { echo "FAIL: rank $r of the reused job does not name the stale keys"; fail=1; }
  grep -q "shm_open" "$work/reused.$r.out" && { echo "FAIL: rank $r still fails in shm_open"; fail=1; }
done
grep -qx 0 "$work/reused.status" && { echo "FAIL: a rank of the reused job succeeded"; fail=1; }
[ "$elapsed" -lt 15 ] || { echo "FAIL: the reused job took ${elapsed} s to fail instead of failing at once"; fail=1; }

run_job renamed "file:$work/store" TUTTI_JOB_ID=second-job-$$
[ "$(sort -u "$work/renamed.status")" = 0 ] || { echo "FAIL: a fresh TUTTI_JOB_ID in the same directory failed"; fail=1; }
[ $fail = 0 ] && echo "file store reuse OK"
exit $fail
