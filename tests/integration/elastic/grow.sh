#!/usr/bin/env bash
# Elastic growth under the real tuttirun (docs/ELASTIC.md):
#   grow.sh grow TUTTIRUN GROW_CHECK       2 ranks, then the discovery script lists 4 slots: two
#                                          ranks join; every rank ends with the same total, which
#                                          counts 2 ranks a step before the join and 4 after
#   grow.sh blacklist TUTTIRUN GROW_CHECK  the joiner fails at once: its host is blacklisted, the
#                                          membership goes on without it, the job succeeds
#   grow.sh below TUTTIRUN GROW_CHECK      3 ranks, --min-np 3: member 2 dies at step 60; the 2
#                                          survivors wait (no step with 2 ranks) until tuttirun starts
#                                          a rank on the free slot, then all 3 go on: the total is
#                                          exactly 3 per step
#   grow.sh below_timeout TUTTIRUN GROW_CHECK   the same, but the dead rank's host is blacklisted
#                                          (--blacklist-after 1): no rank comes, and after
#                                          --elastic-timeout 2 the job stops, exit status not 0
set -u
mode=$1 tuttirun=$2 check=$3
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
steps=250
# The discovery script lists 2 slots for its first 3 runs (the start and two polls), then $MORE.
discover=$(cd "$(dirname "$0")" && pwd)/hosts_later.sh
export HOSTS_COUNT_FILE=$dir/count
case $mode in
  grow) more=4 args=() ;;
  blacklist) more=3 args=(fail) ;;
  below | below_timeout) more=3 args=(die:2:60) ;;
  *) echo "FAIL: unknown mode $mode"; exit 1 ;;
esac
if [ "$mode" = below_timeout ]; then
  started=$(date +%s)
  HOSTS_SWITCH_AT=0 HOSTS_AFTER=localhost:3 TUTTI_TIMEOUT=20 timeout 100 "$tuttirun" \
    --host-discovery-script "$discover" -np 3 \
    --min-np 3 --max-np 3 --elastic-timeout 2 --discovery-interval 0.2 -- \
    "$check" 150 20 "${args[@]}" > "$dir/out" 2>&1
  rc=$?
  took=$(($(date +%s) - started))
  # The survivors' own "FAIL: member ..." (their wait ran out) is what this case wants.
  sed 's/FAIL: member/(expected) failed: member/' "$dir/out"
  fail() { echo "FAIL: $*"; exit 1; }
  [ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "tuttirun exited $rc, want a failure of its own"
  [ $took -le 30 ] || fail "took $took s with --elastic-timeout 2"
  grep -q "no hosts brought the job back to --min-np 3 within 2s" "$dir/out" ||
    grep -q "no ranks joined within 2 s" "$dir/out" || fail "nobody said the wait ran out"
  grep -q "DONE member" "$dir/out" && fail "a rank finished below --min-np"
  echo "OK: no rank came; the job stopped after the elastic timeout ($took s)"
  exit 0
fi
if [ "$mode" = below ]; then
  # The script lists 3 slots from the start; the host is not blacklisted for one death.
  HOSTS_SWITCH_AT=0 HOSTS_AFTER=localhost:3 TUTTI_TIMEOUT=20 timeout 100 "$tuttirun" \
    --host-discovery-script "$discover" -np 3 \
    --min-np 3 --max-np 3 --blacklist-after 3 --elastic-timeout 30 --discovery-interval 0.2 -- \
    "$check" 150 20 "${args[@]}" > "$dir/out" 2>&1
else
  HOSTS_AFTER=localhost:$more TUTTI_TIMEOUT=20 timeout 100 "$tuttirun" --host-discovery-script "$discover" \
    --max-np 4 --discovery-interval 0.2 -- "$check" $steps 20 "${args[@]}" > "$dir/out" 2>&1
fi
rc=$?
cat "$dir/out"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc -eq 0 ] || fail "tuttirun exited $rc"
done_lines=$(grep -c "DONE member" "$dir/out")
totals=$(grep "DONE member" "$dir/out" | awk '{print $NF}' | sort -u)
[ "$(echo "$totals" | wc -l)" -eq 1 ] || fail "ranks ended with different totals: $totals"
case $mode in
  grow)
    [ "$done_lines" -eq 4 ] || fail "$done_lines ranks finished, not 4"
    grep -q "tuttirun: membership 1: 4 ranks" "$dir/out" || fail "tuttirun never grew the job to 4"
    at=$(sed -nE 's/.*reset: 4 ranks from step ([0-9]+) at .*/\1/p' "$dir/out" | head -1)
    [ -n "$at" ] || fail "rank 0 never saw the reset to 4 ranks"
    want=$((2 * at + 4 * (steps - at)))
    [ "$totals" -eq "$want" ] || fail "total $totals, want $want (2 ranks for $at steps, then 4)"
    grep "DONE member" "$dir/out" | grep -qv " of 4 " && fail "a rank did not end in a world of 4"
    echo "OK: grew from 2 to 4 ranks at step $at; every rank's total is $totals" ;;
  below)
    [ "$done_lines" -eq 3 ] || fail "$done_lines ranks finished, not 3"
    grep -q "fewer than --min-np 3: waiting up to 30s" "$dir/out" || fail "tuttirun did not say it waits"
    grep -q "tuttirun: 3 ranks again (--min-np 3)" "$dir/out" || fail "tuttirun did not say the job is back"
    grep -q "reset: 3 ranks from step" "$dir/out" || fail "rank 0 never reset to the 3 ranks"
    grep "DONE member" "$dir/out" | grep -qv " of 3 " && fail "a rank did not end in a world of 3"
    [ "$totals" -eq $((3 * 150)) ] || fail "total $totals, want $((3 * 150)): a step ran with fewer than 3 ranks"
    echo "OK: member 2 died; the 2 survivors waited for a new rank and all 3 ended with total $totals" ;;
  blacklist)
    [ "$done_lines" -eq 2 ] || fail "$done_lines ranks finished, not the 2 first"
    grep -q "blacklisted after 1 failure" "$dir/out" || fail "the failing host was not blacklisted"
    [ "$totals" -eq $((2 * steps)) ] || fail "total $totals, want $((2 * steps))"
    [ "$(grep -c "failing on purpose" "$dir/out")" -eq 1 ] || fail "not exactly one joiner started"
    echo "OK: the failing joiner's host was blacklisted; the 2 ranks went on" ;;
esac
