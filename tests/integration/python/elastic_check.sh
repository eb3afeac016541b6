#!/usr/bin/env bash
# tutti.elastic from Python (elastic_test.py) under the real tuttirun:
#   elastic_check.sh die TUTTIRUN PYTHON SCRIPT    3 ranks, rank 1 dies at step 20 of 60: the 2
#                                                  survivors end with 3*20 + 2*40 = 140
#   elastic_check.sh grow TUTTIRUN PYTHON SCRIPT   2 ranks, then the discovery script lists 4 slots:
#                                                  2 join; all 4 end with the same total
#   elastic_check.sh below TUTTIRUN PYTHON SCRIPT  3 ranks, --min-np 3: member 2 dies at step 60; the
#                                                  2 survivors wait for the rank tuttirun adds, and
#                                                  all 3 end with exactly 3 per step (450)
#   elastic_check.sh torch-die|torch-grow TUTTIRUN PYTHON torch_elastic_test.py   the same two with
#                                                  a torch model (tutti.torch.elastic.TorchState):
#                                                  every rank that finishes matches its replay and
#                                                  they all end on the same weights
#   elastic_check.sh torch2-die TUTTIRUN VENV_PYTHON torch_elastic_test.py CORE_DIR TORCH2_DIR
#                                                  torch-die on PyPI's torch 2.x: the core package
#                                                  (CORE_DIR/tutti) with the torch 2.x build's
#                                                  tutti.torch (TORCH2_DIR/tutti/torch), as pip
#                                                  install . lays them out in one package
set -u
mode=$1 tuttirun=$2 python=$3 script=$4
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
discover=$(cd "$(dirname "$0")/../elastic" && pwd)/hosts_later.sh
export HOSTS_COUNT_FILE=$dir/count
if [ "$mode" = torch2-die ]; then
  mkdir -p "$dir/pkg" && cp -r "$5/tutti" "$dir/pkg/" && rm -rf "$dir/pkg/tutti/torch" &&
    cp -r "$6/tutti/torch" "$dir/pkg/tutti/" || { echo "FAIL: cannot lay out the package"; exit 1; }
  export PYTHONPATH=$dir/pkg
  mode=torch-die
fi
fail() { echo "FAIL: $*"; exit 1; }
case $mode in
  die)
    TUTTI_TIMEOUT=20 timeout 100 "$tuttirun" -np 3 --min-np 2 -- "$python" "$script" 60 10 die:1:20 \
      > "$dir/out" 2>&1
    rc=$?
    cat "$dir/out"
    [ $rc -eq 0 ] || fail "tuttirun exited $rc"
    [ "$(grep -c "DONE member .* of 2 steps 60 total 140$" "$dir/out")" -eq 2 ] ||
      fail "not both survivors ended with 60 steps and total 140 in a world of 2"
    echo "OK: rank 1 died at step 20; the 2 survivors redid it and ended with total 140" ;;
  grow)
    steps=200
    HOSTS_AFTER=localhost:4 TUTTI_TIMEOUT=20 timeout 100 "$tuttirun" --host-discovery-script "$discover" --max-np 4 \
      --discovery-interval 0.2 -- "$python" "$script" $steps 20 > "$dir/out" 2>&1
    rc=$?
    cat "$dir/out"
    [ $rc -eq 0 ] || fail "tuttirun exited $rc"
    [ "$(grep -c "DONE member" "$dir/out")" -eq 4 ] || fail "not 4 ranks finished"
    totals=$(grep "DONE member" "$dir/out" | awk '{print $NF}' | sort -u)
    [ "$(echo "$totals" | wc -l)" -eq 1 ] || fail "ranks ended with different totals: $totals"
    at=$(sed -nE 's/.*reset: 4 ranks from step ([0-9]+) at .*/\1/p' "$dir/out" | head -1)
    [ -n "$at" ] || fail "rank 0 never saw the reset to 4 ranks"
    [ "$totals" -eq $((2 * at + 4 * (steps - at))) ] ||
      fail "total $totals, want 2 ranks for $at steps, then 4"
    echo "OK: grew from 2 to 4 ranks at step $at; every rank's total is $totals" ;;
  below)
    HOSTS_SWITCH_AT=0 HOSTS_AFTER=localhost:3 TUTTI_TIMEOUT=20 timeout 100 "$tuttirun" \
      --host-discovery-script "$discover" -np 3 --min-np 3 \
      --max-np 3 --blacklist-after 3 --elastic-timeout 30 --discovery-interval 0.2 -- \
      "$python" "$script" 150 20 die:2:60 > "$dir/out" 2>&1
    rc=$?
    cat "$dir/out"
    [ $rc -eq 0 ] || fail "tuttirun exited $rc"
    [ "$(grep -c "DONE member .* of 3 steps 150 total 450$" "$dir/out")" -eq 3 ] ||
      fail "not 3 ranks ended with 150 steps and total 450 in a world of 3"
    echo "OK: member 2 died; the survivors waited for a new rank; all 3 ended with total 450" ;;
  torch-die | torch-grow)
    if [ "$mode" = torch-die ]; then
      want=2
      TUTTI_TIMEOUT=20 timeout 100 "$tuttirun" -np 3 --min-np 2 -- "$python" "$script" 40 4 die:1:10 \
        > "$dir/out" 2>&1
    else
      want=4
      HOSTS_AFTER=localhost:4 TUTTI_TIMEOUT=20 timeout 100 "$tuttirun" --host-discovery-script "$discover" --max-np 4 \
        --discovery-interval 0.2 -- "$python" "$script" 60 5 grow:4:20 > "$dir/out" 2>&1
    fi
    rc=$?
    cat "$dir/out"
    [ $rc -eq 0 ] || fail "tuttirun exited $rc"
    grep -q "reset: $want ranks" "$dir/out" || fail "rank 0 never reset to $want ranks"
    [ "$(grep -c "DONE member .* of $want steps .* replay ok" "$dir/out")" -eq "$want" ] ||
      fail "not $want ranks finished matching their replay"
    sums=$(grep "DONE member" "$dir/out" | sed -E 's/.* checksum ([0-9a-f]+) .*/\1/' | sort -u)
    [ "$(echo "$sums" | wc -l)" -eq 1 ] || fail "ranks ended on different weights: $sums"
    echo "OK: $mode: $want ranks ended on weights $sums, each matching its replay" ;;
  *) fail "unknown mode $mode" ;;
esac
