# checks.sh: the assertions and the command runner of the pod cases, sourced by pods_cases.sh and
# ssh_pods.sh after they set CASE and WORK. Output of the last run() is in $WORK/out and $WORK/err;
# a script may define fail_details to print more when a check fails.

# The command run() (or a case) has in the background; stopped first when the script is stopped.
RUN_PID=
pods_user_stop() {
  [ -n "$RUN_PID" ] && kill -0 "$RUN_PID" 2>/dev/null || return 0
  kill -TERM "$RUN_PID" 2>/dev/null  # timeout passes it on to tuttirun/mpirun, which stop the ranks
  for _ in $(seq 1 50); do
    kill -0 "$RUN_PID" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL "$RUN_PID" 2>/dev/null
  return 0
}

fail() {
  echo "FAIL [$CASE]: $*" >&2
  for f in out err; do
    [ -s "$WORK/$f" ] || continue
    echo "--- $f (last 40 lines)" >&2
    tail -n 40 "$WORK/$f" >&2
  done
  if declare -F fail_details >/dev/null; then fail_details >&2; fi
  exit 1
}
note() { echo "[$CASE] $*"; }
# show FILE REGEX: the matching lines, for the log.
show() { grep -E -- "$2" "$WORK/$1" | head -n 5 | sed "s/^/[$CASE] $1: /"; }

# run SECONDS CMD...: runs CMD under timeout with stdout/stderr to $WORK/out, $WORK/err, no stdin;
# RC holds its status, ELAPSED its wall seconds. In the background with `wait`, so that a signal
# to this script runs its trap (and stops CMD) at once rather than after CMD.
run() {
  local limit=$1
  shift
  local start=$SECONDS
  timeout -k 5 "$limit" "$@" >"$WORK/out" 2>"$WORK/err" </dev/null &
  RUN_PID=$!
  wait "$RUN_PID"
  RC=$?
  RUN_PID=
  ELAPSED=$((SECONDS - start))
  [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ] && [ "$ELAPSED" -ge "$limit" ] && fail "timed out after ${limit}s: $*"
  return 0
}
expect_rc() { [ "$RC" -eq "$1" ] || fail "exit code $RC, expected $1"; }
expect_fail() { [ "$RC" -ne 0 ] || fail "exit code 0, expected a failure"; }
expect_out() { grep -qE -- "$1" "$WORK/out" || fail "stdout lacks /$1/"; }
expect_err() { grep -qE -- "$1" "$WORK/err" || fail "stderr lacks /$1/"; }
