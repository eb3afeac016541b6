# shellcheck shell=bash
# bench_checks.sh: what a job of the example manifests (a tutti-bench allreduce sweep with -c 1)
# must have printed, for run_manifest.sh (pods) and ../images/containers.sh (containers). Uses the
# caller's fail and note.
#
#   expect_bench_in_pods OUT SLOTS POD...   tutti-bench's check found 0 wrong elements and printed
#                                           result rows; rank r ran in pod r / SLOTS; no more ranks
#                                           than the pods' slots

expect_bench_in_pods() {
  local out=$1 slots=$2
  shift 2
  local pods=("$@") total r pod
  grep -qE '^(\[0\] )?# Out of bounds values : 0 OK' "$out" || fail "tutti-bench's check did not report 0 wrong elements"
  grep -qE '^(\[0\] )? +[0-9]+ +[0-9]+ +float +sum' "$out" || fail "no result rows"
  total=$((${#pods[@]} * slots))
  for ((r = 0; r < total; r++)); do
    pod=${pods[$((r / slots))]}
    grep -qE "^(\[0\] )?#  Rank +$r Group +0 Pid +[0-9]+ on +$pod device" "$out" ||
      fail "rank $r did not run in pod $pod: $(grep -E "#  Rank +$r " "$out")"
  done
  if grep -qE "#  Rank +$total " "$out"; then fail "more than $total ranks ran"; fi
  grep -E '#  Rank +[0-9]+ Group|Out of bounds' "$out"
  note "$total ranks in ${#pods[@]} pods, allreduce results checked: 0 wrong"
}
