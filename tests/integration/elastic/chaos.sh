#!/usr/bin/env bash
# Elastic chaos under the real tuttirun (docs/ELASTIC.md "Chaos"):
#   chaos.sh RUNS SEED TUTTIRUN PROGRAM...     PROGRAM: chaos_check, or python3 chaos_check.py
# Each run starts 4-6 ranks with a random --min-np (2 .. np-1) and, once every rank stepped, hits
# it with one of: a kill -9, a SIGSTOP (tuttirun --hang-timeout ends it), two kills 0-30 ms apart
# (the second lands in the first one's shrink or state sync), a kill and a stop, a kill whose
# recovery's state sync kills another rank (CHAOS_SYNC_VICTIM), or a kill while the job grows by
# 2 ranks (growkill: the discovery script lists 2 more slots; a running member or a newcomer is
# killed 0-150 ms after tuttirun published the new membership, before or after it formed), or a
# running member that dies at the commit that learns of the growth (growabandon: it never meets
# the new membership, which tuttirun must abandon; CHAOS_REGROUP_VICTIM).
# Victims are random ranks, rank 0 included. A run passes when it ends either with every survivor printing DONE with the same
# members (the ranks not hit), steps and total, and tuttirun exiting 0; or, when fewer than
# --min-np ranks are left, with tuttirun exiting non-zero, every survivor saying it stopped below
# --min-np and none finishing. Any "FAIL:" (a wrong answer), a hang past its bound or another end
# fails the run. Prints one line per run and the recovery times (median and max per kind of fault).
set -u
runs=$1 seed=$2 tuttirun=$3
shift 3
program=("$@")
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
RANDOM=$seed
hang=2
steps=${CHAOS_STEPS:-1500} step_ms=${CHAOS_STEP_MS:-2}
failed=0
: > "$dir/recoveries"

# Waits until FILE has N lines matching PATTERN, at most SECONDS, while process JOB lives.
wait_lines() {
  local file=$1 pattern=$2 n=$3 seconds=$4 job=$5 waited=0
  local seen
  while true; do
    seen=$(grep -c "$pattern" "$file" 2>/dev/null)
    [ "${seen:-0}" -lt "$n" ] || return 0
    kill -0 "$job" 2>/dev/null || return 1
    sleep 0.05
    waited=$((waited + 1))
    [ $waited -le $((seconds * 20)) ] || return 1
  done
}

for run in $(seq 1 "$runs"); do
  np=$((4 + RANDOM % 3))
  min_np=$((2 + RANDOM % (np - 2)))
  kinds=(${CHAOS_KINDS:-kill stop kill2 killstop killsync growkill growabandon})
  kind=${kinds[$((RANDOM % ${#kinds[@]}))]}
  # Victims: distinct random ranks.
  victims=()
  while [ ${#victims[@]} -lt 2 ]; do
    v=$((RANDOM % np))
    [[ " ${victims[*]} " == *" $v "* ]] || victims+=("$v")
  done
  [ "$kind" = growkill ] && victims[0]=$((RANDOM % (np + 2)))
  grow=0
  case $kind in growkill | growabandon) grow=1 ;; esac
  hit=(${victims[0]})
  case $kind in kill2 | killstop | killsync) hit+=(${victims[1]}) ;; esac
  out=$dir/run$run
  env_sync=()
  [ "$kind" = killsync ] && env_sync=(CHAOS_SYNC_VICTIM=${victims[1]})
  [ "$kind" = growabandon ] && env_sync=(CHAOS_REGROUP_VICTIM=${victims[0]})
  hosts=(-np $np)
  if [ $grow = 1 ]; then
    # The script lists np slots for its first 4 runs, then 2 more.
    hosts=(--host-discovery-script "$here/hosts_later.sh" --max-np $((np + 2))
      --discovery-interval 0.3 --blacklist-after 10)
    export HOSTS_COUNT_FILE=$dir/count$run HOSTS_BEFORE=localhost:$np HOSTS_SWITCH_AT=4
    export HOSTS_AFTER=localhost:$((np + 2))
  fi
  env "${env_sync[@]}" TUTTI_TIMEOUT=20 timeout -s KILL 120 "$tuttirun" "${hosts[@]}" \
    --min-np $min_np --hang-timeout $hang -- "${program[@]}" $steps $step_ms > "$out" 2>&1 &
  job=$!
  if ! wait_lines "$out" '^\[[0-9]*\] started' $np 60 $job; then
    kill -9 $job 2>/dev/null
    wait $job 2>/dev/null
    echo "FAIL: run $run: the ranks did not all start"; cat "$out"; failed=$((failed + 1)); continue
  fi
  if [ "$kind" = growabandon ]; then
    : # the victim ends itself
  elif [ "$kind" = growkill ]; then
    wait_lines "$out" '^tuttirun: membership 1:' 1 20 $job || true
    sleep "0.$((RANDOM % 15))"
    wait_lines "$out" "^\[${victims[0]}\] pid " 1 5 $job || true
  else
    sleep "0.$((RANDOM % 5))"
  fi
  pid_of() { sed -n "s/^\[[0-9]*\] pid $1 \([0-9]*\)$/\1/p" "$out" | head -1; }
  first=$(pid_of ${victims[0]})
  hit_at=$(date +%s.%N)
  case $kind in
    kill | killsync | growkill) kill -9 "$first" ;;
    stop) kill -STOP "$first" ;;
    kill2 | killstop)
      kill -9 "$first"
      sleep "0.0$((RANDOM % 3))"
      second=$(pid_of ${victims[1]})
      if [ $kind = kill2 ]; then kill -9 "$second"; else kill -STOP "$second"; fi
      ;;
  esac
  wait $job
  rc=$?
  took=$(awk -v a="$hit_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  left=$((np - ${#hit[@]}))
  done_lines=$(grep -c "DONE members=" "$out")
  stopped_lines=$(grep -c "stopped: .*fewer than the job's --min-np" "$out")
  verdict=ok why=""
  if grep -q "FAIL:" "$out"; then
    verdict=FAIL why="a wrong answer"
  elif [ $grow = 1 ] && [ "$kind" = growabandon ] && ! grep -q "membership 1 abandoned" "$out"; then
    verdict=FAIL why="tuttirun did not abandon the membership its member never met in"
  elif [ $grow = 1 ]; then
    # Who is in at the end depends on when the kill landed; all must agree, without the victim.
    finals=$(grep -o "DONE members=.*" "$out" | sort -u)
    members=$(echo "$finals" | sed -n 's/DONE members=\([0-9,]*\) .*/\1/p')
    if [ $rc -ne 0 ] || [ "$(echo "$finals" | wc -l)" -ne 1 ] ||
      [ "$done_lines" -ne "$(echo "$members" | tr ',' '\n' | wc -l)" ] ||
      [[ ",$members," == *",${victims[0]},"* ]] || ! echo "$finals" | grep -q " steps=$steps "; then
      verdict=FAIL why="want every survivor DONE alike without member ${victims[0]}, exit 0: rc $rc, $done_lines DONE"
    fi
  elif [ $left -ge $min_np ]; then
    expect=$(for r in $(seq 0 $((np - 1))); do [[ " ${hit[*]} " == *" $r "* ]] || echo $r; done |
      paste -sd,)
    agreed=$(grep -o "DONE members=.*" "$out" | sort -u | wc -l)
    if [ $rc -ne 0 ] || [ "$done_lines" -ne $left ] || [ "$agreed" -ne 1 ] ||
      ! grep -q "DONE members=$expect steps=$steps " "$out"; then
      verdict=FAIL why="want $left survivors DONE as members $expect and exit 0: rc $rc, $done_lines DONE"
    fi
  else
    if [ $rc -eq 0 ] || [ "$done_lines" -ne 0 ] || [ "$stopped_lines" -lt 1 ]; then
      verdict=FAIL why="want a clear stop below --min-np: rc $rc, $done_lines DONE, $stopped_lines said so"
    fi
  fi
  # A kill is recovered from within seconds, a stop within --hang-timeout and seconds.
  bound=$([ "$kind" = stop ] || [ "$kind" = killstop ] && echo $((hang + 8)) || echo 8)
  slowest=$(sed -n 's/^\[[0-9]*\] recovery [0-9]* \([0-9.]*\) .*/\1/p' "$out" | sort -g | tail -1)
  if [ -n "$slowest" ] && awk -v s="$slowest" -v b="$bound" 'BEGIN { exit !(s > b) }'; then
    verdict=FAIL why="a recovery took ${slowest}s (bound ${bound}s)"
  fi
  sed -n "s/^\[[0-9]*\] recovery [0-9]* \([0-9.]*\) .*/$kind \1/p" "$out" >> "$dir/recoveries"
  abandoned=$(grep -q "abandoned:" "$out" && echo ", a membership abandoned")
  echo "$verdict: run $run: np $np --min-np $min_np $kind ranks ${hit[*]}: rc $rc," \
    "$done_lines DONE, $stopped_lines stopped$abandoned, ended ${took}s after the hit${why:+: $why}"
  if [ $verdict = FAIL ]; then
    failed=$((failed + 1))
    sed 's/^/    /' "$out" | tail -40
  fi
done
echo "recovery seconds (from the survivors' last step to their reset), per kind of fault:"
for kind in kill stop kill2 killstop killsync growkill growabandon; do
  times=$(awk -v k=$kind '$1 == k { print $2 }' "$dir/recoveries" | sort -g)
  [ -n "$times" ] || continue
  n=$(echo "$times" | wc -l)
  echo "  $kind: $n recoveries, median $(echo "$times" | sed -n "$(((n + 1) / 2))p") s, max $(echo "$times" | tail -1) s"
done
echo "chaos: $((runs - failed)) of $runs runs ended right"
[ $failed -eq 0 ]
