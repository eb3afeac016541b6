#!/usr/bin/env bash
# One tuttirun integration case: launcher_cases.sh TUTTIRUN PROBE CASE. Exits non-zero with a
# message on the first failed check.
set -u
TUTTIRUN=$1
PROBE=$2
CASE=$3

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tuttirun-test.XXXXXX")
MARK="tuttirun-mark-$$-$RANDOM"
cleanup() {
  # Only ever processes carrying this run's unique marker.
  pkill -9 -f "$MARK" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL [$CASE]: $*" >&2
  echo "--- stdout (first 40 lines)" >&2; head -n 40 "$WORK/out" >&2 2>/dev/null
  echo "--- stderr (first 40 lines)" >&2; head -n 40 "$WORK/err" >&2 2>/dev/null
  exit 1
}

# run ARGS...: runs tuttirun with stdout/stderr to files; RC holds its exit code.
run() {
  "$TUTTIRUN" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
  RC=$?
}
expect_rc() { [ "$RC" -eq "$1" ] || fail "exit code $RC, expected $1"; }
expect_out() { grep -qE -- "$1" "$WORK/out" || fail "stdout lacks /$1/"; }
expect_err() { grep -qE -- "$1" "$WORK/err" || fail "stderr lacks /$1/"; }

# No process carrying the marker may be left once tuttirun has returned. SIGKILLed processes leave
# the process table asynchronously, so allow the kernel a moment (bounded) before failing.
expect_no_leftovers() {
  for _ in $(seq 1 100); do
    pgrep -f "$MARK" >/dev/null || return 0
    sleep 0.05
  done
  fail "processes of the job outlived tuttirun: $(pgrep -af "$MARK" | head -5)"
}

# wait_for_files PREFIX N: until PREFIX.0 .. PREFIX.N-1 exist (each rank touched its file).
wait_for_files() {
  for _ in $(seq 1 400); do
    local n
    n=$(ls "$1".* 2>/dev/null | wc -l)
    [ "$n" -ge "$2" ] && return 0
    sleep 0.05
  done
  fail "ranks never started (only $(ls "$1".* 2>/dev/null | wc -l) of $2 ready files)"
}

# check_lines FILE NP N TAGGED: every rank's N lines, whole, in order, and nothing else.
check_lines() {
  local file=$1 np=$2 n=$3 tagged=$4
  local total
  total=$(wc -l <"$file")
  [ "$total" -eq $((np * n)) ] || fail "$file has $total lines, expected $((np * n))"
  awk -v np="$np" -v n="$n" -v tagged="$tagged" '
    {
      if (tagged) {
        if (!match($0, /^\[[0-9]+\] line [0-9]+ of rank [0-9]+$/)) { print "bad line: " $0; bad = 1; exit 1 }
        tag = substr($1, 2, length($1) - 2); i = $3; r = $6
        if (tag != r) { print "tag " tag " on a line of rank " r; bad = 1; exit 1 }
      } else {
        if (!match($0, /^line [0-9]+ of rank [0-9]+$/)) { print "bad line: " $0; bad = 1; exit 1 }
        i = $2; r = $5
      }
      if (i != next_i[r] + 0) { print "rank " r ": line " i " where " next_i[r] + 0 " was due"; bad = 1; exit 1 }
      next_i[r] = i + 1
    }
    END {
      if (bad) exit 1
      for (r = 0; r < np; r++) if (next_i[r] + 0 != n) { print "rank " r " has " next_i[r] + 0 " lines"; exit 1 }
    }' "$file" >"$WORK/awk" 2>&1 || fail "$(cat "$WORK/awk")"
}

case "$CASE" in
  all_succeed_tagged)
    run -np 4 -- "$PROBE" lines 10000 marker "$MARK"
    expect_rc 0
    check_lines "$WORK/out" 4 10000 1
    [ -s "$WORK/err" ] && fail "unexpected stderr"
    expect_no_leftovers
    ;;
  untagged_and_stderr)
    run -np 3 --no-tag-output -- "$PROBE" errlines 5000 lines 3000 marker "$MARK"
    expect_rc 0
    check_lines "$WORK/out" 3 3000 0
    cp "$WORK/err" "$WORK/err_lines"
    check_lines "$WORK/err_lines" 3 5000 0
    ;;
  partial_lines)
    run -np 2 -- "$PROBE" partial "no-newline-" on 1 partial "more" marker "$MARK"
    expect_rc 0
    expect_out '^\[0\] no-newline-$'
    expect_out '^\[1\] no-newline-more$'
    [ "$(wc -l <"$WORK/out")" -eq 2 ] || fail "expected exactly 2 lines"
    ;;
  rank_env)
    unset TUTTI_JOB_TOKEN
    export TUTTI_RANK=99 FORWARDED=fwd
    # The job id is this run's own: two test runs on one machine must not share a job id (tuttirun
    # claims it on the host, and its /dev/shm segments go by it).
    job="job-env-test-$$"
    run -np 3 --timeout 17 --job-id "$job" -x FORWARDED -x SETHERE=v1 -- "$PROBE" env show FORWARDED show SETHERE
    expect_rc 0
    for r in 0 1 2; do
      for kv in TUTTI_RANK=$r TUTTI_SIZE=3 TUTTI_LOCAL_RANK=$r TUTTI_LOCAL_SIZE=3 TUTTI_CROSS_RANK=0 \
                TUTTI_CROSS_SIZE=1 "TUTTI_JOB_ID=$job" TUTTI_LAUNCHER=tuttirun TUTTI_RESTART_COUNT=0 \
                TUTTI_TIMEOUT=17 STDIN=eof FORWARDED=fwd SETHERE=v1; do
        expect_out "^\[$r\] $kv\$"
      done
      expect_out "^\[$r\] TUTTI_STORE=127\.0\.0\.1:[0-9]+\$"
      expect_out "^\[$r\] TUTTI_JOB_TOKEN=[0-9a-f]{32}\$"
    done
    [ "$(grep -oE 'TUTTI_JOB_TOKEN=.*' "$WORK/out" | sort -u | wc -l)" -eq 1 ] || fail "ranks got different tokens"
    [ "$(grep -oE 'TUTTI_STORE=.*' "$WORK/out" | sort -u | wc -l)" -eq 1 ] || fail "ranks got different stores"
    run -np 2 -- "$PROBE" env
    t1=$(grep -oE 'TUTTI_JOB_ID=.*' "$WORK/out" | sort -u)
    echo "$t1" | grep -qE '^TUTTI_JOB_ID=tuttirun-[0-9a-f]+$' || fail "default job id '$t1'"
    ;;
  inherited_token)
    export TUTTI_JOB_TOKEN=0123456789abcdef0123456789abcdef
    run -np 2 -- "$PROBE" env
    expect_rc 0
    [ "$(grep -c "TUTTI_JOB_TOKEN=$TUTTI_JOB_TOKEN\$" "$WORK/out")" -eq 2 ] || fail "inherited token not used"
    ;;
  exit_code)
    run -np 4 --grace 1 -- "$PROBE" on 2 exit 3 sleep 60 marker "$MARK"
    expect_rc 3
    expect_err '^tuttirun: rank 2 \(pid [0-9]+\) exited with status 3$'
    expect_err 'SIGTERM'
    expect_err '^tuttirun: 4 of 4 ranks failed: rank 2 \(pid [0-9]+\) exited with status 3'
    expect_no_leftovers
    # A failure after others finished cleanly: only that rank is reported.
    run -np 3 -- "$PROBE" on 1 sleep 0.3 on 1 exit 5 marker "$MARK"
    expect_rc 5
    expect_err '^tuttirun: 1 of 3 ranks failed: rank 1 \(pid [0-9]+\) exited with status 5$'
    ;;
  killed_by_signal)
    run -np 3 --grace 1 -- "$PROBE" on 1 kill 9 sleep 60 marker "$MARK"
    expect_rc 137
    expect_err '^tuttirun: rank 1 \(pid [0-9]+\) was killed by signal 9 \(SIGKILL\)$'
    expect_no_leftovers
    run -np 2 --grace 1 -- "$PROBE" on 0 kill 11 sleep 60 marker "$MARK"
    expect_rc 139
    expect_err 'rank 0 \(pid [0-9]+\) was killed by signal 11 \(SIGSEGV\)'
    expect_no_leftovers
    ;;
  ignores_sigterm)
    start=$(date +%s)
    run -np 3 --grace 1 -- "$PROBE" ignore-term on 0 exit 1 lines 2 sleep 60 marker "$MARK"
    elapsed=$(( $(date +%s) - start ))
    expect_rc 1
    expect_err '^tuttirun: rank 0 \(pid [0-9]+\) exited with status 1$'
    expect_err 'ignored SIGTERM .*sending SIGKILL'
    expect_err 'was killed by signal 9 \(SIGKILL\) sent by tuttirun'
    # Output written before the kill is not lost.
    expect_out '^\[1\] line 1 of rank 1$'
    expect_out '^\[2\] line 1 of rank 2$'
    [ "$elapsed" -lt 30 ] || fail "took ${elapsed}s; SIGKILL should follow 2 grace periods"
    expect_no_leftovers
    ;;
  grandchildren_killed)
    run -np 2 -- "$PROBE" grandchild 60 lines 1 marker "$MARK"
    expect_rc 0
    expect_no_leftovers
    ;;
  sigint_to_tuttirun | sigterm_to_tuttirun)
    sig=INT; code=130
    [ "$CASE" = sigterm_to_tuttirun ] && { sig=TERM; code=143; }
    "$TUTTIRUN" -np 3 --grace 1 -- "$PROBE" touch "$WORK/ready" lines 1 sleep 60 marker "$MARK" \
      >"$WORK/out" 2>"$WORK/err" </dev/null &
    pid=$!
    wait_for_files "$WORK/ready" 3
    kill -$sig $pid
    wait $pid
    RC=$?
    expect_rc $code
    expect_err "received SIG$sig"
    expect_out '^\[2\] line 0 of rank 2$'
    expect_no_leftovers
    ;;
  tuttirun_sigkilled)
    "$TUTTIRUN" -np 3 -- "$PROBE" touch "$WORK/ready" sleep 60 marker "$MARK" \
      >"$WORK/out" 2>"$WORK/err" </dev/null &
    pid=$!
    wait_for_files "$WORK/ready" 3
    kill -9 $pid
    wait $pid
    # PR_SET_PDEATHSIG takes the ranks down with tuttirun.
    expect_no_leftovers
    ;;
  shm_leftovers_removed)
    job="shmtest-$$-$RANDOM"
    run -np 2 --job-id "$job" -- "$PROBE" shm "tutti-$job-leak" shm "tutti-other$job-keep" marker "$MARK"
    expect_rc 0
    [ -e "/dev/shm/tutti-$job-leak" ] && fail "/dev/shm/tutti-$job-leak was not removed"
    [ -e "/dev/shm/tutti-other$job-keep" ] || fail "removed a segment of another job"
    rm -f "/dev/shm/tutti-other$job-keep"
    ;;
  bad_options)
    for args in "-np 0 $PROBE" "-np -2 $PROBE" "-np x $PROBE" "$PROBE" "-np 2" "-np 2 --bogus $PROBE" \
                "-np 2 --grace never $PROBE" "-np 2 --timeout x $PROBE" "-np 2 --job-id a/b $PROBE"; do
      # shellcheck disable=SC2086
      run $args
      [ "$RC" -eq 2 ] || fail "'tuttirun $args' exited $RC, expected 2"
      grep -q '^tuttirun: ' "$WORK/err" || fail "'tuttirun $args' printed no error"
      grep -q 'tuttirun --help' "$WORK/err" || fail "'tuttirun $args' does not point to --help"
    done
    # A bad setting tuttirun reads itself is refused before any rank starts, once, naming it.
    TUTTI_LOG_LEVEL=chatty run -np 2 -- "$PROBE" touch "$WORK/ran"
    expect_rc 2
    expect_err "^tuttirun: TUTTI_LOG_LEVEL='chatty' is not one of error\|warn\|info\|debug\|trace; no rank was started$"
    [ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "more than the one line about TUTTI_LOG_LEVEL"
    [ ! -e "$WORK/ran.0" ] || fail "a rank ran with a bad TUTTI_LOG_LEVEL"
    TUTTI_LOG_LEVEL=DEBUG run -np 1 -- true
    expect_rc 0
    # Every setting the ranks would read is checked the same way: a bad TUTTI_ALGO fails here.
    TUTTI_ALGO=rnig run -np 2 -- "$PROBE" touch "$WORK/ran"
    expect_rc 2
    expect_err "^tuttirun: TUTTI_ALGO='rnig' is not one of auto\|ring\|tree\|hd\|shm\|hier; no rank was started$"
    [ ! -e "$WORK/ran.0" ] || fail "a rank ran with a bad TUTTI_ALGO"
    # A misspelt name is not silently ignored: tuttirun names the setting meant, once, and the
    # job runs (the ranks, started by tuttirun, stay quiet about it).
    TUTTI_ALOG=ring run -np 2 -- "$PROBE" touch "$WORK/ran"
    expect_rc 0
    expect_err "TUTTI_ALOG is not a tutti setting and is ignored; did you mean TUTTI_ALGO\?"
    [ "$(grep -c TUTTI_ALOG "$WORK/err")" -eq 1 ] || fail "TUTTI_ALOG named more than once: $(cat "$WORK/err")"
    run --help
    expect_rc 0
    expect_out 'Usage: tuttirun -np N'
    # Readable in a terminal: within 100 columns, values named, examples to copy.
    awk 'length($0) > 100 { print "too wide: " $0; bad = 1 } END { exit bad }' "$WORK/out" ||
      fail "tuttirun --help has lines wider than 100 columns"
    expect_out '^  -n,--np N +Number of ranks'
    expect_out '^  --hostfile,--machinefile FILE'
    expect_out '^Examples:$'
    ! grep -q ' TEXT' "$WORK/out" || fail "tuttirun --help still shows a value as TEXT"
    run --version
    expect_rc 0
    expect_out '^tuttirun \(tutti\) '
    ;;
  missing_program)
    run -np 2 -- no-such-program-tutti-xyz
    expect_rc 127
    expect_err 'no-such-program-tutti-xyz: command not found'
    run -np 2 -- "$WORK/absent"
    expect_rc 127
    expect_err "cannot run '$WORK/absent'"
    printf '#!/bin/sh\n' >"$WORK/noexec"
    chmod 644 "$WORK/noexec"
    run -np 2 -- "$WORK/noexec"
    expect_rc 127
    expect_err 'not executable'
    ;;
  np_sizes)
    for np in 1 2 3 7 8; do
      run -np "$np" -- "$PROBE" lines 100 marker "$MARK"
      expect_rc 0
      check_lines "$WORK/out" "$np" 100 1
    done
    expect_no_leftovers
    ;;
  remote_kubexec_env)
    # --pods through kubexec and a stand-in kubectl that runs "in the pod" right here: slots fill
    # pods in order, each rank learns its pod as TUTTI_HOST, and the agent passes output through.
    export KUBEXEC_KUBECTL="$(dirname "$0")/local_kubectl.sh"
    run --pods job-worker-0,job-worker-1 --slots 2 --store-addr 127.0.0.1 -- \
      sh -c 'echo "r=$TUTTI_RANK host=$TUTTI_HOST local=$TUTTI_LOCAL_RANK/$TUTTI_LOCAL_SIZE cross=$TUTTI_CROSS_RANK/$TUTTI_CROSS_SIZE restart=$TUTTI_RESTART_COUNT launcher=$TUTTI_LAUNCHER"'
    expect_rc 0
    expect_out '^\[0\] r=0 host=job-worker-0 local=0/2 cross=0/2 restart=0 launcher=tuttirun$'
    expect_out '^\[1\] r=1 host=job-worker-0 local=1/2 cross=0/2'
    expect_out '^\[2\] r=2 host=job-worker-1 local=0/2 cross=1/2'
    expect_out '^\[3\] r=3 host=job-worker-1 local=1/2 cross=1/2'
    [ "$(wc -l <"$WORK/out")" -eq 4 ] || fail "expected 4 lines"
    # Only TUTTI_* and -x variables travel; the rest comes from the "pod".
    TUTTI_LOG_LEVEL=warn NOT_FORWARDED=leak run --pods p0 --store-addr 127.0.0.1 -x SENT=yes -- \
      sh -c 'echo "level=$TUTTI_LOG_LEVEL sent=$SENT not=${NOT_FORWARDED:-unset}"'
    expect_rc 0
    expect_out 'level=warn sent=yes not=unset'
    run --pods p0 --store-addr 127.0.0.1 -- "$PROBE" lines 50 marker "$MARK"
    expect_rc 0
    check_lines "$WORK/out" 1 50 1
    ;;
  remote_kubexec_failure)
    export KUBEXEC_KUBECTL="$(dirname "$0")/local_kubectl.sh"
    # Rank 2 dies by SIGKILL in pod job-worker-1: tuttirun names the rank and the pod, stops the
    # others through their agents, and nothing of the job remains.
    run --pods job-worker-0,job-worker-1 --slots 2 --store-addr 127.0.0.1 --grace 1 -- \
      "$PROBE" on 2 kill 9 grandchild 60 sleep 60 marker "$MARK"
    [ "$RC" -ne 0 ] || fail "tuttirun succeeded although rank 2 was killed"
    expect_err 'rank 2 on job-worker-1 \(pid [0-9]+\) exited with status 137'
    expect_err 'rank 2 on job-worker-1 was killed by signal 9'
    # The ranks tuttirun stopped read as local ones do, though their agents exited 143.
    expect_err 'rank 0 on job-worker-0 \(pid [0-9]+\) was killed by signal 15 \(SIGTERM\) sent by tuttirun'
    expect_err 'rank 3 on job-worker-1 \(pid [0-9]+\) was killed by signal 15 \(SIGTERM\) sent by tuttirun'
    expect_no_leftovers
    # A pod that never answers: no rank starts, exit 3, the pod and kubectl's reason are named.
    LOCAL_KUBECTL_MISSING=job-worker-1 run --pods job-worker-0,job-worker-1 --probe-timeout 2 \
      --store-addr 127.0.0.1 -- touch "$WORK/ran"
    expect_rc 3
    expect_err 'never became reachable within 2s through kubexec: job-worker-1 \(Error from server \(NotFound\): pods "job-worker-1" not found\)'
    expect_err 'kubectl get pods.*KUBEXEC_NAMESPACE'
    [ ! -e "$WORK/ran" ] || fail "a rank ran although a pod was unreachable"
    # tuttirun missing on the host: refused at once (not after the probe timeout), with the fix.
    run --pods job-worker-0 --remote-tuttirun /nonexistent/tuttirun --probe-timeout 60 \
      --store-addr 127.0.0.1 -- touch "$WORK/ran"
    expect_rc 3
    expect_err '^tuttirun: job-worker-0 cannot run ranks: .*/nonexistent/tuttirun: not found'
    expect_err 'pass --remote-tuttirun'
    [ ! -e "$WORK/ran" ] || fail "a rank ran although tuttirun is missing on the host"
    ;;
  remote_ssh)
    # ssh is a stand-in that runs the command on this machine (local_ssh.sh); the hosts are names.
    SSH="$(dirname "$0")/local_ssh.sh"
    # A host that refuses ssh: no rank starts, exit 3, and the advice is about ssh, not kubexec.
    LOCAL_SSH_DOWN=node-b run -H node-a,node-b --exec ssh --ssh "$SSH" --probe-timeout 2 \
      --store-addr 127.0.0.1 -- touch "$WORK/ran"
    expect_rc 3
    expect_err 'never became reachable within 2s through ssh: node-b \(ssh: connect to host node-b port 22: Connection refused\)'
    expect_err 'ssh to each of them works without a password.*BatchMode=yes'
    ! grep -qE 'KUBEXEC|kubectl' "$WORK/err" || fail "the advice for ssh names kubexec's settings"
    [ ! -e "$WORK/ran" ] || fail "a rank ran although a host was unreachable"
    # Rank 1 fails; tuttirun stops rank 0 through its ssh session's agent, and the summary says so
    # as it does for a local rank.
    run -H node-a,node-b --exec ssh --ssh "$SSH" --store-addr 127.0.0.1 --grace 1 -- \
      "$PROBE" on 1 exit 3 sleep 60 marker "$MARK"
    expect_rc 3
    expect_err '^tuttirun: rank 1 on node-b \(pid [0-9]+\) exited with status 3$'
    expect_err '^tuttirun: 2 of 2 ranks failed: .*rank 0 on node-a \(pid [0-9]+\) was killed by signal 15 \(SIGTERM\) sent by tuttirun'
    expect_no_leftovers
    ;;
  restarts_and_output_dir)
    export KUBEXEC_KUBECTL="$(dirname "$0")/local_kubectl.sh"
    # Fails on attempts 0 and 1, succeeds on attempt 2; --output-dir keeps the last attempt's
    # output per rank, untagged.
    run --pods p0 --slots 2 --store-addr 127.0.0.1 --restarts 2 --restart-backoff 0.2 \
      --output-dir "$WORK/logs" -- sh -c 'echo "attempt $TUTTI_RESTART_COUNT"; echo oops >&2; [ "$TUTTI_RESTART_COUNT" = 2 ]'
    expect_rc 0
    expect_err 'attempt 1 of 3 failed \(exit 1\); relaunching the whole job in 0.2s \(TUTTI_RESTART_COUNT=1\)'
    expect_err 'attempt 2 of 3 failed'
    [ "$(cat "$WORK/logs/rank.1/stdout")" = "attempt 2" ] || fail "rank.1/stdout: $(cat "$WORK/logs/rank.1/stdout")"
    [ "$(cat "$WORK/logs/rank.0/stderr")" = "oops" ] || fail "rank.0/stderr: $(cat "$WORK/logs/rank.0/stderr")"
    # An --output-dir that cannot be made: one "tuttirun:" prefix, not two.
    run -np 1 --output-dir /proc/no-such-dir/logs -- true
    expect_rc 1
    expect_err '^tuttirun: --output-dir: cannot create /proc/no-such-dir'
    grep -q 'tuttirun: tuttirun:' "$WORK/err" && fail "doubled prefix: $(cat "$WORK/err")"
    # Untagged output is the rank's own bytes: no newline added after a last line without one.
    run -np 1 --no-tag-output -- printf 'abc'
    expect_rc 0
    [ "$(od -An -c "$WORK/out" | tr -d ' ')" = "abc" ] || fail "untagged output: '$(od -An -c "$WORK/out")'"
    # Out of restarts: the last failure's status.
    run -np 1 --restarts 1 --restart-backoff 0 -- sh -c 'exit 7'
    expect_rc 7
    expect_err 'attempt 1 of 2 failed'
    ;;
  dry_run_and_hosts)
    printf 'a slots=2\nb:1 # mpich style\n\nc\n' >"$WORK/hosts"
    run --hostfile "$WORK/hosts" --dry-run -- prog
    expect_rc 0
    expect_out 'dry run: 4 ranks on 3 hosts via ssh'
    expect_out '^rank 2 host b local_rank 0/1 cross_rank 1/3$'
    run -H localhost:3 --dry-run prog
    expect_out 'via local; store at 127.0.0.1'
    run -H localhost:3 -- sh -c 'echo "$TUTTI_RANK/$TUTTI_SIZE"'
    expect_rc 0
    expect_out '^\[2\] 2/3$'
    run --hostfile "$WORK/hosts" -np 9 -- prog
    expect_rc 2
    expect_err '-np 9 asks for more ranks than the 4 slot'
    printf 'good slots=1\nbad slots=0\n' >"$WORK/badhosts"
    run --hostfile "$WORK/badhosts" -- prog
    expect_rc 2
    expect_err "$WORK/badhosts:2"
    run --pods 'a;reboot' -- prog
    expect_rc 2
    run -H remote-host --exec local -- prog
    expect_rc 2
    expect_err '--exec local starts ranks on this host only'
    ;;
  rank_agent_stdin)
    # The agent alone: a request on stdin, then stdin closes (tuttirun gone, stream dead): the rank
    # and what it started are stopped, SIGTERM first.
    # Version 2: the rank's own bytes (argv, env, cwd, host) are base64.
    b64() { printf %s "$1" | base64 -w0; }
    req='{"tutti_rank_request":2,"rank":5,"host":"'"$(b64 h)"'","argv":["'"$(b64 sh)"'","'"$(b64 -c)"'","'"$(b64 'trap "echo got-term; exit 3" TERM; sleep 30 & wait')"'"],"env":[["'"$(b64 M)"'","'"$(b64 "$MARK")"'"]],"cwd":"'"$(b64 /)"'","grace":2}'
    { echo "$req"; sleep 1; } | "$TUTTIRUN" --rank-agent >"$WORK/out" 2>"$WORK/err"
    RC=$?
    expect_rc 3
    expect_out got-term
    # Garbage instead of a request: a clear refusal, status 125.
    echo 'not json' | "$TUTTIRUN" --rank-agent >"$WORK/out" 2>"$WORK/err"
    RC=$?
    expect_rc 125
    expect_err 'malformed rank request'
    # A request from another tuttirun version: named as such.
    echo '{"tutti_rank_request":1,"rank":0,"host":"h","argv":["p"],"env":[],"cwd":"","grace":1}' |
      "$TUTTIRUN" --rank-agent >"$WORK/out" 2>"$WORK/err"
    RC=$?
    expect_rc 125
    expect_err 'another version than the launcher'
    ;;
  *)
    echo "unknown case $CASE" >&2
    exit 2
    ;;
esac
echo "PASS [$CASE]"
