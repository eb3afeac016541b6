#!/usr/bin/env bash
# kill -9 one rank of a running job, then check how the job ended. The one script of every
# kill-a-rank test (kill_rank_*, engine_kill_rank_*, device_kill_*): what they share (start the
# ranks, wait for their pids, kill, wait for tuttirun, no process left) is here once, and the
# options say what differs.
#
#   kill_rank.sh TUTTIRUN CHECK TRANSPORT [OPTION...] [-- CHECK_ARG...]
#
# TRANSPORT is TUTTI_TRANSPORT for the ranks; `-` leaves the caller's environment as it is.
# Without options it is collectives_check's test: 4 ranks in a 120 s allreduce loop, rank 2 killed;
# tuttirun exits non-zero within 30 s naming rank 2 and SIGKILL, every survivor's error names
# rank 2, no process and no shared-memory segment of the job remains.
#   --np N             ranks (4)
#   --victim R         the rank killed (2)
#   --job NAME         job id NAME-TRANSPORT-PID, whose /dev/shm segments must all be gone
#                      (killtest)
#   --no-job           tuttirun picks the job id; no segment check
#   --min-np N         tuttirun --min-np N: the survivors go on, so tuttirun must exit 0
#                      (otherwise it must exit non-zero)
#   --within S         the job must end within S s of the kill (always within 30 s)
#   --pid-env VAR      the ranks find the pid folder in the environment variable VAR
# What the output must hold (giving any of these four replaces both defaults, the SIGKILL line
# and the survivors' naming of the victim):
#   --output-has ERE   some line matches ERE
#   --rank-says R ERE  some line of rank R matches ^[R]ERE
#   --survivors-say ERE  every rank but the victim: some line matches ^[r]ERE
#   --lines N ERE      exactly N lines match ERE
# In an ERE, %v stands for the victim and %r for the rank whose line it is. After `--`, the
# check's arguments (default: --loop-seconds 120 --pid-dir %w), %w standing for the folder where
# each rank writes <rank>.pid.
set -uo pipefail
usage() { echo "FAIL: usage: kill_rank.sh TUTTIRUN CHECK TRANSPORT [OPTION...] [-- CHECK_ARG...]: $1"; exit 2; }
[ $# -ge 3 ] || usage "three arguments needed"
tuttirun=$1 check=$2 transport=$3
shift 3
np=4 victim=2 job_name=killtest min_np="" within="" pid_env=""
has=() says=() survivors_say=() lines=() expectations_given=0
check_args=(--loop-seconds 120 --pid-dir %w)
while [ $# -gt 0 ]; do
  case $1 in
    --np) [ $# -ge 2 ] || usage "$1 needs a value"; np=$2; shift 2 ;;
    --victim) [ $# -ge 2 ] || usage "$1 needs a value"; victim=$2; shift 2 ;;
    --job) [ $# -ge 2 ] || usage "$1 needs a value"; job_name=$2; shift 2 ;;
    --no-job) job_name=""; shift ;;
    --min-np) [ $# -ge 2 ] || usage "$1 needs a value"; min_np=$2; shift 2 ;;
    --within) [ $# -ge 2 ] || usage "$1 needs a value"; within=$2; shift 2 ;;
    --pid-env) [ $# -ge 2 ] || usage "$1 needs a value"; pid_env=$2; shift 2 ;;
    --output-has) [ $# -ge 2 ] || usage "$1 needs a value"; has+=("$2"); expectations_given=1; shift 2 ;;
    --rank-says) [ $# -ge 3 ] || usage "$1 needs a rank and a value"; says+=("$2" "$3"); expectations_given=1; shift 3 ;;
    --survivors-say) [ $# -ge 2 ] || usage "$1 needs a value"; survivors_say+=("$2"); expectations_given=1; shift 2 ;;
    --lines) [ $# -ge 3 ] || usage "$1 needs a count and a value"; lines+=("$2" "$3"); expectations_given=1; shift 3 ;;
    --) shift; check_args=("$@"); break ;;
    *) usage "unknown option $1" ;;
  esac
done
if [ $expectations_given -eq 0 ]; then
  has=('rank %v .*signal 9')
  survivors_say=('.*rank %v')
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The check's arguments and the patterns with their placeholders filled in.
args=()
for a in "${check_args[@]}"; do args+=("${a//%w/$work}"); done
env_for_ranks=()
[ "$transport" = - ] || env_for_ranks+=("TUTTI_TRANSPORT=$transport")
[ -z "$pid_env" ] || env_for_ranks+=("$pid_env=$work")
launch=(-np "$np")
job=""
if [ -n "$job_name" ]; then
  job="$job_name-$transport-$$"
  [ "$transport" = - ] && job="$job_name-$$"
  launch+=(--job-id "$job")
fi
[ -z "$min_np" ] || launch+=(--min-np "$min_np")

env "${env_for_ranks[@]}" "$tuttirun" "${launch[@]}" --grace 20 -- "$check" "${args[@]}" >"$work/out" 2>&1 &
launcher=$!

pids() { ls "$work"/*.pid 2>/dev/null | wc -l; }
for _ in $(seq 1 300); do
  [ "$(pids)" -eq "$np" ] && break
  sleep 0.1
done
if [ "$(pids)" -ne "$np" ]; then
  echo "FAIL: ranks did not start ($(pids) of $np wrote their pid in 30 s)"
  kill -9 "$launcher" 2>/dev/null; cat "$work/out"; exit 1
fi
# Every rank is in its collective (or its loop of them) by now.
sleep 1
kill -9 "$(cat "$work/$victim.pid")"
start=$(date +%s)

for _ in $(seq 1 300); do
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$launcher" 2>/dev/null; then
  echo "FAIL: tuttirun still running 30 s after the kill"; kill -9 "$launcher"; cat "$work/out"; exit 1
fi
wait "$launcher"; status=$?
elapsed=$(( $(date +%s) - start ))
cat "$work/out"
echo "--- tuttirun exited with $status after ${elapsed}s"

fail=0
if [ -n "$min_np" ]; then
  [ "$status" -eq 0 ] || { echo "FAIL: tuttirun exited $status (the survivors should go on)"; fail=1; }
else
  [ "$status" -ne 0 ] || { echo "FAIL: tuttirun exited 0"; fail=1; }
fi
if [ -n "$within" ] && [ "$elapsed" -gt "$within" ]; then
  echo "FAIL: the job took ${elapsed}s to end after the kill, more than ${within}s"; fail=1
fi
for pattern in "${has[@]}"; do
  pattern=${pattern//%v/$victim}
  grep -qE -- "$pattern" "$work/out" || { echo "FAIL: no line of the output matches '$pattern'"; fail=1; }
done
expect_rank() {  # RANK ERE: a line of RANK's output matches ^[RANK]ERE
  local pattern=${2//%v/$victim}
  pattern="^\\[$1\\]${pattern//%r/$1}"
  grep -qE -- "$pattern" "$work/out" || { echo "FAIL: rank $1 printed no line matching '$pattern'"; fail=1; }
}
for ((i = 0; i < ${#says[@]}; i += 2)); do expect_rank "${says[i]}" "${says[i + 1]}"; done
for pattern in "${survivors_say[@]}"; do
  for ((r = 0; r < np; ++r)); do
    [ "$r" -eq "$victim" ] || expect_rank "$r" "$pattern"
  done
done
for ((i = 0; i < ${#lines[@]}; i += 2)); do
  want=${lines[i]} pattern=${lines[i + 1]//%v/$victim}
  n=$(grep -cE -- "$pattern" "$work/out")
  [ "$n" -eq "$want" ] || { echo "FAIL: $n lines match '$pattern', want $want"; fail=1; }
done
for f in "$work"/*.pid; do
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then echo "FAIL: process $pid ($(basename "$f")) still alive"; fail=1; kill -9 "$pid"; fi
done
if [ -n "$job" ] && ls /dev/shm/tutti-"$job"-* >/dev/null 2>&1; then
  echo "FAIL: shared-memory segments left:"; ls /dev/shm/tutti-"$job"-*; fail=1
fi
[ $fail -eq 0 ] && echo "PASS: kill of rank $victim"
exit $fail
