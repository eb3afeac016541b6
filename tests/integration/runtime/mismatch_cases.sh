#!/usr/bin/env bash
# Ranks that disagree on a collective call (count, dtype, op, root, which collective, a call skipped)
# must all fail with TUTTI_ERR_MISMATCH, promptly: never a wrong result returned as success, never a
# wait until the collective timeout. Runs every case at 2, 3 and 4 ranks under the real tuttirun
# for one transport and allreduce algorithm:
#   mismatch_cases.sh TUTTIRUN MISMATCH_CHECK TRANSPORT ALGO
set -uo pipefail
tuttirun=$1 check=$2 transport=$3 algo=$4
fail=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# case NAME NP ARGS...: every rank must report the mismatch.
expect_mismatch() {
  local name=$1 np=$2
  shift 2
  # A collective timeout far below ctest's: a rank that waits for it reports TUTTI_ERR_TIMEOUT,
  # which fails the case, instead of hanging the test.
  TUTTI_TRANSPORT=$transport TUTTI_ALGO=$algo TUTTI_COLLECTIVE_TIMEOUT=30 \
    timeout 120 "$tuttirun" -np "$np" --grace 20 -- "$check" "$@" >"$out" 2>&1
  local reported
  reported=$(grep -c "mismatch reported: TUTTI_ERR_MISMATCH" "$out")
  if [ "$reported" -ne "$np" ] || grep -q "WRONG\|other error" "$out"; then
    echo "FAIL: $name at np $np ($transport, $algo): $reported of $np ranks reported the mismatch"
    cat "$out"
    fail=1
  else
    echo "ok: $name at np $np: $(grep -m1 -o 'collective mismatch:.*' "$out" | cut -c1-200)"
  fi
}

for np in 2 3 4; do
  expect_mismatch count "$np" --call allreduce:1000:float32:sum --rank 1=allreduce:10:float32:sum
  expect_mismatch count_large "$np" --call allreduce:1000003:float32:sum --rank 1=allreduce:10:float32:sum
  expect_mismatch count_after_warmup "$np" --warmup 3 --call allreduce:10:float32:sum \
    --rank "$((np - 1))=allreduce:11:float32:sum"
  expect_mismatch dtype "$np" --call allreduce:1000:float32:sum --rank 1=allreduce:1000:int32:sum
  expect_mismatch op "$np" --call allreduce:1000:float32:sum --rank 1=allreduce:1000:float32:max
  expect_mismatch allreduce_vs_broadcast "$np" --call allreduce:1000:float32:sum --rank 1=broadcast:1000:float32:0
  expect_mismatch broadcast_vs_allreduce "$np" --call broadcast:1000:float32:0 --rank 0=allreduce:1000:float32:sum
  expect_mismatch allgather_vs_reduce_scatter "$np" --call allgather:100:float32:sum \
    --rank 1=reduce_scatter:100:float32:sum
  expect_mismatch barrier_vs_allreduce "$np" --call barrier --rank 0=allreduce:2:float32:sum
  # Every rank believes itself the root.
  roots=()
  for ((r = 0; r < np; r++)); do roots+=(--rank "$r=broadcast:1000:float32:$r"); done
  expect_mismatch root "$np" --call broadcast:1000:float32:0 "${roots[@]}"
  # A count of 0 moves nothing, yet it is a call the others must match.
  expect_mismatch count_zero "$np" --call allreduce:1000:float32:sum --rank 1=allreduce:0:float32:sum \
    --then barrier
done
exit $fail
