#!/usr/bin/env bash
# TorchState (elastic_state_check) under the real tuttirun:
#   elastic_state.sh die TUTTIRUN CHECK    3 ranks, member 1 dies at step 10 of 40 (commits every 4):
#                                          the 2 survivors end matching their replays
#   elastic_state.sh grow TUTTIRUN CHECK   2 ranks, then the discovery script lists 4 slots: 2 join
#                                          and get the model and momentum; all 4 match their replays
set -u
mode=$1 tuttirun=$2 check=$3
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
discover=$(cd "$(dirname "$0")/../elastic" && pwd)/hosts_later.sh
export HOSTS_COUNT_FILE=$dir/count
fail() { echo "FAIL: $*"; exit 1; }
case $mode in
  die)
    want=2
    TUTTI_TIMEOUT=20 timeout 100 "$tuttirun" -np 3 --min-np 2 -- "$check" 40 4 die:1:10 >"$dir/out" 2>&1 ;;
  grow)
    want=4
    HOSTS_AFTER=localhost:4 TUTTI_TIMEOUT=20 timeout 100 "$tuttirun" --host-discovery-script "$discover" --max-np 4 \
      --discovery-interval 0.2 -- "$check" 300 5 sleep:10 >"$dir/out" 2>&1 ;;
  *) fail "unknown mode $mode" ;;
esac
rc=$?
cat "$dir/out"
[ $rc -eq 0 ] || fail "tuttirun exited $rc"
grep -q "reset: $want ranks" "$dir/out" || fail "rank 0 never reset to $want ranks"
n=$(grep -c "DONE member .* of $want steps .* replay ok" "$dir/out")
[ "$n" -eq "$want" ] || fail "$n ranks finished matching their replay, want $want"
echo "OK: $mode: $want ranks ended matching their replays"
