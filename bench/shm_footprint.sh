#!/usr/bin/env bash
# /dev/shm footprint and start-up time of one host's ranks as their number grows: for each -np,
# launches tuttirun with one small checked allreduce (collectives_check) and reports the seconds
# from launch to exit and the peak of /dev/shm's use above what it was before (sampled every
# 20 ms), medians over ROUNDS runs.
#
#   bench/shm_footprint.sh BUILD_DIR [ROUNDS] [NP...]      (defaults: 3 rounds, np 8 16 32 64 128)
#
# /dev/shm must be empty of other jobs' segments while it runs, or their growth is counted too.
set -uo pipefail
[ $# -ge 1 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$1
rounds=${2:-3}
shift $(($# >= 2 ? 2 : 1))
nps=("$@")
[ ${#nps[@]} -gt 0 ] || nps=(8 16 32 64 128)
used() { stat -f -c '%b %f %S' /dev/shm | awk '{ printf "%.0f\n", ($1 - $2) * $3 }'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%5s %10s %14s %12s\n' np seconds "peak /dev/shm" "per rank"
for np in "${nps[@]}"; do
  times=() peaks=()
  for ((r = 0; r < rounds; ++r)); do
    base=$(used)
    echo 0 >"$tmp/peak"
    (peak=0; while :; do u=$(($(used) - base)); [ "$u" -gt "$peak" ] && { peak=$u; echo "$peak" >"$tmp/peak"; }; sleep 0.02; done) &
    sampler=$!
    start=$(date +%s.%N)
    "$build/bin/tuttirun" -np "$np" -- "$build/bin/collectives_check" --counts 1,1000 \
      --dtypes float32 --ops sum --collectives allreduce >/dev/null 2>&1 || echo "np $np: run failed" >&2
    end=$(date +%s.%N)
    kill "$sampler"; wait "$sampler" 2>/dev/null
    times+=("$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')")
    peaks+=("$(cat "$tmp/peak")")
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  t=$(median "${times[@]}") p=$(median "${peaks[@]}")
  printf '%5d %10.2f %11.0f MiB %8.1f MiB\n' "$np" "$t" "$((p / 1048576))" \
    "$(awk -v p="$p" -v n="$np" 'BEGIN { print p / n / 1048576 }')"
done
