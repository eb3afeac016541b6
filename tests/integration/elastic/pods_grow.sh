#!/usr/bin/env bash
# Pods added to a running job (elastic grow, on the pods harness): 2 pods (network namespaces,
# one slot each) under tuttirun --host-discovery-script --exec kubexec --max-np 4, every rank
# running grow_check. Once both run, two more pods are created and the discovery script starts
# listing them: tuttirun starts a rank in each, the running ranks regroup with them at their next
# commit, and all 4 end with the same total, which counts 2 ranks a step before the join and 4
# after. Prints the time from the pods' listing to the first step of 4 ranks.
#   pods_grow.sh K tuttirun=P kubexec=P check=P [selector | blacklist]
# selector: discovery through tuttirun --pods-selector app=grw (the test kubectl's `get pods -l`
# lists the pods as they are made) instead of a script reading a hosts file.
# blacklist: the ranks started in the new pods fail at once (grow_check fail): each new pod is
# blacklisted after its one failure and gets no second rank, and the 2 first ranks end alone with
# 2 per step, tuttirun exiting 0.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PODS_DIR=$HERE/../pods
CASE=pods_grow
# shellcheck source=../pods/pods.sh
source "$PODS_DIR/pods.sh"
pods_case_setup pods-grow "$@"
SELECTOR=0 BLACKLIST=0 fail_arg=()
case "${CASE_WORDS[*]}" in
  "") ;;
  selector) SELECTOR=1 ;;
  blacklist) BLACKLIST=1 fail_arg=(fail) CASE=pods_blacklist ;;
  *) echo "pods_grow.sh: unknown argument '${CASE_WORDS[*]}'" >&2; exit 2 ;;
esac

pods_up grw 2 "$K"
printf 'grw-worker-0:1\ngrw-worker-1:1\n' > "$WORK/hosts"
steps=400
if [ "$SELECTOR" -eq 1 ]; then
  discovery=(--pods-selector app=grw)
else
  discovery=(--host-discovery-script "cat $WORK/hosts")
fi
TUTTI_TIMEOUT=30 timeout -k 5 200 "$TUTTIRUN" "${discovery[@]}" \
  --discovery-interval 0.2 --max-np 4 --exec kubexec --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR" \
  --probe-timeout 20 -- "$CHECK" $steps 20 "${fail_arg[@]}" >"$WORK/out" 2>"$WORK/err" </dev/null &
launcher=$!
RUN_PID=$launcher
# Let both ranks run a while first (200 of the steps take about 4 s).
sleep 3
for i in 2 3; do
  pod_add "grw-worker-$i" "$K" "$i" || fail "pod grw-worker-$i could not be made"
  pod_link_wait "grw-worker-$i" eth0 "tp${K}h${i}" || fail "pod grw-worker-$i's link never came up"
done
listed_at=$(date +%s.%N)
printf 'grw-worker-0:1\ngrw-worker-1:1\ngrw-worker-2:1\ngrw-worker-3:1\n' > "$WORK/hosts.new"
mv "$WORK/hosts.new" "$WORK/hosts"
wait $launcher
RC=$?
cat "$WORK/out" "$WORK/err"
[ "$RC" -eq 0 ] || fail "tuttirun exited $RC"
if [ "$BLACKLIST" -eq 1 ]; then
  for i in 2 3; do
    grep -q "host grw-worker-$i blacklisted after 1 failure" "$WORK/err" ||
      fail "pod grw-worker-$i was not blacklisted"
  done
  [ "$(grep -c "failing on purpose" "$WORK/err" "$WORK/out" | awk -F: '{ n += $NF } END { print n }')" -eq 2 ] ||
    fail "not exactly one failing rank per new pod (a blacklisted pod got another)"
  [ "$(grep -c "DONE member" "$WORK/out")" -eq 2 ] || fail "not the 2 first ranks finished"
  totals=$(grep "DONE member" "$WORK/out" | awk '{print $NF}' | sort -u)
  [ "$totals" = $((2 * steps)) ] || fail "totals $totals, want $((2 * steps)) (2 ranks every step)"
  echo "[$CASE] ok: both new pods blacklisted after their rank failed; the 2 ranks ended with $totals"
  exit 0
fi
# With --pods-selector the two pods may show up one discovery apart: 3 ranks, then 4.
grep -qE "tuttirun: membership [12]: 4 ranks" "$WORK/err" || fail "tuttirun never grew the job to 4 ranks"
[ "$(grep -c "DONE member" "$WORK/out")" -eq 4 ] || fail "not 4 ranks finished"
grep "DONE member" "$WORK/out" | grep -qv " of 4 " && fail "a rank did not end in a world of 4"
totals=$(grep "DONE member" "$WORK/out" | awk '{print $NF}' | sort -u)
[ "$(echo "$totals" | wc -l)" -eq 1 ] || fail "ranks ended with different totals: $totals"
at=$(sed -nE 's/.*reset: 4 ranks from step ([0-9]+) at .*/\1/p' "$WORK/out" | head -1)
reset_at=$(sed -nE 's/.*reset: 4 ranks from step [0-9]+ at ([0-9.]+)$/\1/p' "$WORK/out" | head -1)
# What the total must be: 2 ranks a step until the first reset, then each reset's size.
want=$(sed -nE 's/.*reset: ([0-9]+) ranks from step ([0-9]+) at .*/\1 \2/p' "$WORK/out" |
  awk -v steps=$steps 'BEGIN { size = 2; from = 0 }
    { total += size * ($2 - from); size = $1; from = $2 }
    END { print total + size * (steps - from) }')
[ -n "$at" ] || fail "rank 0 never saw the reset to 4 ranks"
[ "$totals" -eq "$want" ] || fail "total $totals, want $want (2 ranks a step until the resets, then their sizes)"
for i in 2 3; do
  ip netns list | grep -q "^grw-worker-$i" || fail "pod grw-worker-$i is gone"
done
grep -q FAIL "$WORK/out" && fail "a rank printed FAIL"
if [ "$SELECTOR" -eq 1 ]; then
  # Each pod is listed as soon as its network is up, before both are: no single listing moment.
  echo "[$CASE] ok: grew from 2 to 4 pods (by label) at step $at of $steps; every rank's total is $totals"
else
  took=$(awk -v a="$listed_at" -v b="$reset_at" 'BEGIN { printf "%.3f", b - a }')
  echo "[$CASE] ok: grew from 2 to 4 pods at step $at of $steps, $took s after the pods were listed; every rank's total is $totals"
fi
