#!/usr/bin/env bash
# Start-up at scale: the wall time from the launcher's start until every rank ran its first
# allreduce and ended, tuttirun against Open MPI's mpirun --oversubscribe, both starting the same
# program (bench/startup/first_allreduce.c: tutti-first-allreduce and mpi-first-allreduce), the two
# alternating round by round (which goes first alternates too). Prints per world size the median
# seconds of each, their ratio (Open MPI's / tutti's: above 1, tutti starts faster) and the
# largest memory of any rank of each: its PSS after the first allreduce (shared memory counted once
# among the processes that map it) and its peak RSS (which counts a shared segment in full in every
# rank that maps it).
#
#   bench/startup.sh BUILD_DIR [ROUNDS] [NP...]        (default 5 rounds; 64 and 128 ranks)
#
# Needs mpirun.openmpi and a build with MPI (mpi-first-allreduce). One machine: every rank is a
# process here, so at 128 ranks on a few CPUs it measures how each launcher starts and wires up
# that many processes, not a cluster's network.
set -uo pipefail
[ $# -ge 1 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$1
rounds=${2:-5}
shift $(($# < 2 ? $# : 2))
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(64 128)
B=$(cd "$build/bin" 2>/dev/null && pwd) || { echo "startup.sh: no $build/bin" >&2; exit 2; }
for p in tuttirun tutti-first-allreduce mpi-first-allreduce; do
  [ -x "$B/$p" ] || { echo "startup.sh: $B/$p not built (mpi-first-allreduce needs a build with MPI)" >&2; exit 2; }
done
mpirun=$(command -v mpirun.openmpi) || { echo "startup.sh: mpirun.openmpi not found" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$(mktemp -d "${TMPDIR:-/tmp}/tutti-startup.XXXXXX")
trap 'rm -rf "$out"' EXIT

# run NAME NP: appends "seconds rss_kib" to $out/NAME.NP, or fails naming the run.
run() {
  local name=$1 np=$2 start end line
  start=$(date +%s.%N)
  if [ "$name" = tutti ]; then
    line=$("$B/tuttirun" -np "$np" --no-tag-output -- "$B/tutti-first-allreduce" 2>"$out/err")
  else
    line=$("$mpirun" --oversubscribe -np "$np" "$B/mpi-first-allreduce" 2>"$out/err")
  fi || { echo "startup.sh: $name at $np ranks failed:" >&2; tail -n 5 "$out/err" >&2; exit 1; }
  end=$(date +%s.%N)
  local rss pss
  rss=$(grep -oE 'peak RSS of a rank [0-9]+' <<<"$line" | grep -oE '[0-9]+$')
  pss=$(grep -oE 'PSS of a rank -?[0-9]+' <<<"$line" | grep -oE '[-0-9]+$')
  echo "$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f", e - s }') ${rss:-0} ${pss:-0}" >>"$out/$name.$np"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "# start-up to the first allreduce, $rounds rounds, medians ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
printf '# %6s %9s %9s %7s %10s %10s %10s %10s\n' ranks "tutti s" "mpirun s" ratio \
  "tutti PSS" "mpi PSS" "tutti RSS" "mpi RSS"
for np in "${sizes[@]}"; do
  for ((r = 0; r < rounds; ++r)); do
    if ((r % 2 == 0)); then run tutti "$np"; run mpi "$np"; else run mpi "$np"; run tutti "$np"; fi
  done
  t=$(cut -d' ' -f1 "$out/tutti.$np" | median)
  m=$(cut -d' ' -f1 "$out/mpi.$np" | median)
  tr=$(cut -d' ' -f2 "$out/tutti.$np" | median)
  mr=$(cut -d' ' -f2 "$out/mpi.$np" | median)
  tp=$(cut -d' ' -f3 "$out/tutti.$np" | median)
  mp=$(cut -d' ' -f3 "$out/mpi.$np" | median)
  awk -v np="$np" -v t="$t" -v m="$m" -v tr="$tr" -v mr="$mr" -v tp="$tp" -v mp="$mp" \
    'BEGIN { printf "  %6d %9.2f %9.2f %6.2fx %6.1f MiB %6.1f MiB %6.1f MiB %6.1f MiB\n", np, t, m, m / t, tp / 1024, mp / 1024, tr / 1024, mr / 1024 }'
done
