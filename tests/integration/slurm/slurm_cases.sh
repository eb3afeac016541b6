#!/usr/bin/env bash
# tutti under a real Slurm (Debian's slurmctld, slurmd and munged, one host, started and stopped by
# slurm.sh): srun's PMI-2 and PMIx, salloc and sbatch with tuttirun, mpirun and mpiexec.hydra
# inside, concurrent job steps, a task killed, a task that ends before init.
#   slurm_cases.sh CASE tuttirun=P check=P demo=P
# Each case checks the results (collectives_check: every collective, dtype and op at several counts;
# 0 failed) and that nothing is left: no job in the queue, no process of the job.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CASE=$1
shift
TUTTIRUN= CHECK= DEMO=
for arg in "$@"; do
  case $arg in
    tuttirun=*) TUTTIRUN=${arg#*=} ;;
    check=*) CHECK=${arg#*=} ;;
    demo=*) DEMO=${arg#*=} ;;
    *) echo "slurm_cases.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
# shellcheck source=slurm.sh
source "$HERE/slurm.sh"
slurm_private_world
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-slurm-$CASE.XXXXXX")
chmod 755 "$WORK"
note() { echo "[$CASE] $*"; }
fail() {
  echo "FAIL [$CASE]: $*" >&2
  for f in "$WORK"/out "$WORK"/err; do [ -s "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }; done
  [ -n "$SLURM_DIR" ] && tail -n 15 "$SLURM_DIR/log/slurmctld.log" "$SLURM_DIR/log/slurmd.log" >&2
  exit 1
}
cleanup() {
  slurm_down
  rm -rf "$WORK"
}
trap cleanup EXIT
# The job's processes: those whose environment holds this case's mark. Every job is started with
# it (run, and the two started in the background) and Slurm and tuttirun hand the environment on,
# so other tests' ranks running beside this one (the same programs) are never counted.
MARK="TUTTI_SLURM_CASE=$$.$RANDOM"
job_pids() { grep -lsaF -- "$MARK" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 || true; }
expect_nothing_left() {
  slurm_wait_idle || fail "jobs are left in the queue: $(squeue -h 2>&1)"
  for _ in $(seq 1 50); do [ -z "$(job_pids)" ] && return 0; sleep 0.1; done
  fail "processes of the job are left: $(ps -o pid=,args= -p "$(job_pids | tr '\n' ',' | sed 's/,$//')")"
}
# run SECONDS CMD...: stdout and stderr to $WORK/out and $WORK/err; RC its status.
run() {
  local limit=$1
  shift
  timeout -k 5 "$limit" env "$MARK" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
  RC=$?
  [ "$RC" -eq 124 ] && fail "timed out after ${limit}s: $*"
  return 0
}
expect_checks() {  # expect_checks N: collectives_check of N ranks passed
  grep -qE "collectives_check: $1 ranks?, [0-9]+ checks per rank, 0 failed" "$WORK/out" ||
    fail "no passing collectives_check of $1 ranks in the output"
}

# kill_rank_and_wait LAUNCHER_PID RANK WHAT: once the 4 ranks wrote $WORK/pids/*.pid and ran a
# second, kill -9 of rank RANK; waits (12 s at most) for the launcher WHAT to end. RC: its status,
# TOOK: seconds from the kill to its end. Fails if it does not end, exits 0, or takes over 2 s.
kill_rank_and_wait() {
  local launcher=$1 rank=$2 what=$3 killed_at ended_at
  for _ in $(seq 1 300); do [ "$(ls "$WORK/pids" | wc -l)" -ge 4 ] && break; sleep 0.1; done
  [ "$(ls "$WORK/pids" | wc -l)" -ge 4 ] || fail "the 4 ranks never started"
  sleep 1
  # The leftover check below finds the job's processes by their mark: they must carry it.
  grep -qsaF -- "$MARK" "/proc/$(cat "$WORK/pids/$rank.pid")/environ" ||
    fail "rank $rank's process does not carry the case's mark ($MARK): the leftover check would miss it"
  killed_at=$(date +%s.%N)
  kill -9 "$(cat "$WORK/pids/$rank.pid")"
  for _ in $(seq 1 600); do kill -0 "$launcher" 2>/dev/null || break; sleep 0.02; done
  ended_at=$(date +%s.%N)
  kill -0 "$launcher" 2>/dev/null && fail "$what still runs 12 s after rank $rank was killed"
  wait "$launcher"
  RC=$?
  TOOK=$(awk -v s="$killed_at" -v e="$ended_at" 'BEGIN { printf "%.2f", e - s }')
  note "$what exited $RC, $TOOK s after kill -9 of rank $rank"
  [ "$RC" -ne 0 ] || fail "$what exited 0 although rank $rank was killed"
  awk -v t="$TOOK" 'BEGIN { exit !(t <= 2.0) }' || fail "$what took $TOOK s to end (at most 2 s)"
}

slurm_up "$WORK/slurm" || fail "the Slurm daemons did not start"
note "Slurm up: $(sinfo -h -N -o '%N %c CPUs %T')"
# The tasks' transport between ranks of one host is shared memory; small counts keep it quick.
COUNTS=(--counts 0,1,N-1,1000 --dtypes float32,int64 --ops sum,max)

case $CASE in
  slurm_srun)
    # PMI-2 (Slurm's plugin answers PMI-1's wire protocol) and PMIx (Open MPI's direct launch:
    # tutti's MPI bootstrap), each at 1, 3 and 4 tasks.
    for mpi in pmi2 pmix; do
      for n in 1 3 4; do
        run 120 srun --mpi=$mpi -n $n "$CHECK" "${COUNTS[@]}"
        [ "$RC" -eq 0 ] || fail "srun --mpi=$mpi -n $n exited $RC"
        expect_checks $n
        note "srun --mpi=$mpi -n $n: $(grep -c 'collectives_check' "$WORK/out") line(s), 0 failed"
      done
    done
    # No --mpi: the tasks know their rank but have no way to meet; said, with what to do.
    run 60 srun -n 2 "$DEMO"
    [ "$RC" -ne 0 ] || fail "srun -n 2 without --mpi succeeded"
    grep -q "has no rendezvous store" "$WORK/err" || fail "no clear message without --mpi"
    expect_nothing_left
    ;;

  slurm_batch)
    # sbatch -n 4: tuttirun (ranks as tasks of the allocation), srun, Open MPI's mpirun and
    # MPICH's mpiexec.hydra inside one batch script; a plain program there is refused with what to
    # type. Each line's exit status is printed.
    hydra=$(command -v mpiexec.hydra || true)
    cat >"$WORK/job.sh" <<JOB
#!/bin/sh
"$TUTTIRUN" "$CHECK" ${COUNTS[*]}; echo "tuttirun rc=\$?"
srun --mpi=pmi2 "$CHECK" ${COUNTS[*]}; echo "srun rc=\$?"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun "$CHECK" ${COUNTS[*]}; echo "mpirun rc=\$?"
if [ -n "$hydra" ]; then "$hydra" "$CHECK" ${COUNTS[*]}; echo "hydra rc=\$?"; fi
"$DEMO"; echo "plain rc=\$?"
JOB
    chmod +x "$WORK/job.sh"
    run 60 sbatch --parsable -n 4 -o "$WORK/job.out" -e "$WORK/job.out" "$WORK/job.sh"
    [ "$RC" -eq 0 ] || fail "sbatch exited $RC"
    job=$(cat "$WORK/out")
    for _ in $(seq 1 1800); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.1; done
    [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && [ -s "$WORK/job.out" ] || fail "batch job $job did not end within 180 s"
    cp "$WORK/job.out" "$WORK/out"
    grep -E " rc=" "$WORK/out"
    for launcher in tuttirun srun mpirun ${hydra:+hydra}; do
      grep -qx "$launcher rc=0" "$WORK/out" || fail "$launcher inside the batch job did not exit 0"
    done
    [ "$(grep -cE 'collectives_check: 4 ranks, [0-9]+ checks per rank, 0 failed' "$WORK/out")" -ge 3 ] ||
      fail "not every launcher ran 4 ranks with 0 failed"
    grep -q "plain rc=1" "$WORK/out" || fail "a plain program in the batch script did not fail"
    grep -q "not a task of a Slurm job step.*Start the 4 ranks as tasks of the allocation" "$WORK/out" ||
      fail "a plain program in the batch script did not say what to run"
    expect_nothing_left
    ;;

  slurm_salloc)
    # tuttirun in an allocation: its size and hosts from Slurm, ranks as tasks (steps) of it.
    run 120 salloc -n 4 "$TUTTIRUN" "$CHECK" "${COUNTS[@]}"
    [ "$RC" -eq 0 ] || fail "salloc -n 4 tuttirun exited $RC"
    expect_checks 4
    note "salloc -n 4 tuttirun: 4 ranks, 0 failed"
    # kill -9 of one rank: tuttirun exits non-zero within 2 s naming it; nothing is left.
    mkdir -p "$WORK/pids"
    env "$MARK" salloc -n 4 "$TUTTIRUN" "$CHECK" --loop-seconds 120 --pid-dir "$WORK/pids" >"$WORK/out" 2>"$WORK/err" </dev/null &
    kill_rank_and_wait $! 2 "salloc tuttirun"
    grep -qE "rank 2 on [^ ]+ .*(status 137|signal 9|SIGKILL)" "$WORK/err" || fail "tuttirun did not name rank 2"
    expect_nothing_left
    ;;

  slurm_steps)
    # Two job steps of one allocation at once on one host: two worlds whose shared-memory names must
    # not meet (the job id has the step in it). 20 pairs.
    cat >"$WORK/pairs.sh" <<PAIRS
#!/bin/sh
ok=0
for i in \$(seq 1 20); do
  srun --exact --mpi=pmi2 -n 2 "$CHECK" --counts 1,1000 --dtypes float32 --ops sum >"$WORK/a.\$i" 2>&1 &
  a=\$!
  srun --exact --mpi=pmi2 -n 2 "$CHECK" --counts 1,1000 --dtypes float32 --ops sum >"$WORK/b.\$i" 2>&1 &
  b=\$!
  wait \$a; ra=\$?
  wait \$b; rb=\$?
  if [ \$ra -eq 0 ] && [ \$rb -eq 0 ]; then ok=\$((ok + 1)); else echo "pair \$i: exit \$ra and \$rb"; cat "$WORK/a.\$i" "$WORK/b.\$i"; fi
done
echo "pairs ok: \$ok of 20"
PAIRS
    chmod +x "$WORK/pairs.sh"
    run 400 salloc -n 4 "$WORK/pairs.sh"
    grep -E "pairs ok|pair [0-9]+:" "$WORK/out" | head -n 5
    grep -q "pairs ok: 20 of 20" "$WORK/out" || fail "not every pair of concurrent steps passed"
    expect_nothing_left
    ;;

  slurm_kill)
    # kill -9 of a task: srun exits non-zero, the other tasks end within 2 s naming it.
    mkdir -p "$WORK/pids"
    env "$MARK" srun --mpi=pmi2 -n 4 "$CHECK" --loop-seconds 120 --pid-dir "$WORK/pids" >"$WORK/out" 2>"$WORK/err" </dev/null &
    kill_rank_and_wait $! 1 srun
    grep -qE "rank 1\b|peer 1\b|task 1\b" "$WORK/err" || fail "nothing names task 1"
    expect_nothing_left
    ;;

  slurm_early_exit)
    # A task that ends before init: with -K the step ends at once; without it the others wait out
    # TUTTI_TIMEOUT in PMI's barrier, and the message says what ends that wait.
    early=(sh -c '[ "$SLURM_PROCID" = 1 ] && exit 3; exec "$0" --counts 1' "$CHECK")
    start=$SECONDS
    run 60 srun -K --mpi=pmi2 -n 3 "${early[@]}"
    note "srun -K: exit $RC after $((SECONDS - start)) s"
    [ "$RC" -ne 0 ] || fail "srun -K succeeded although task 1 exited 3"
    [ $((SECONDS - start)) -le 5 ] || fail "srun -K took $((SECONDS - start)) s"
    start=$SECONDS
    run 60 env TUTTI_TIMEOUT=3 srun --mpi=pmi2 -n 3 "${early[@]}"
    note "srun without -K, TUTTI_TIMEOUT=3: exit $RC after $((SECONDS - start)) s"
    [ "$RC" -ne 0 ] || fail "srun succeeded although task 1 exited 3"
    grep -q "srun -K (--kill-on-bad-exit) ends the step" "$WORK/err" || fail "the wait's message does not say what ends it"
    expect_nothing_left
    ;;

  *)
    echo "slurm_cases.sh: unknown case $CASE" >&2
    exit 2
    ;;
esac
note PASS
