#!/usr/bin/env bash
# tutti-bench --baseline, end to end: real mpirun (Open MPI) and real tuttirun start the ranks; the
# output must carry the baseline's columns and a ratio, every value of both sides must validate
# (#wrong 0), and the CSV must hold one row per size with a positive ratio. Asking for a peer this
# build lacks, or for MPI outside mpirun, must fail with a message that says what to do.
#
#   baseline_cases.sh TUTTIRUN TUTTI_BENCH MPIRUN|"" CASE
set -u
TUTTIRUN=$1
BENCH=$2
MPIRUN=$3
CASE=$4
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-baseline-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "FAIL ($CASE): $*" >&2
  echo "--- stdout" >&2; cat "$WORK/out" >&2 2>/dev/null
  echo "--- stderr" >&2; cat "$WORK/err" >&2 2>/dev/null
  exit 1
}

# Small sizes, two rounds of two iterations: this checks the plumbing, never the speed.
SWEEP=(allreduce -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 --rounds 2 -d float,int32 -o sum,max)
ROWS=$((5 * 2 * 2))  # 8, 64, 512, 4K, 32K x 2 types x 2 ops

mpirun_cmd() {
  local np=$1
  shift
  local root_flags=()
  [ "$(id -u)" -eq 0 ] && root_flags=(--allow-run-as-root)
  # --oversubscribe: this machine may have fewer cores than ranks; tutti's own env goes with -x.
  timeout 60 "$MPIRUN" "${root_flags[@]}" --oversubscribe --bind-to none -np "$np" "$@"
}

# The run's text output and CSV agree with each other and with the baseline's name. With a second
# argument the peer's out-of-place #wrong must be N/A (inplace runs in place on the receive buffer
# instead, so it leaves no out-of-place result to check).
check_results() {
  local name=$1
  local oop_wrong=0 oop_csv_wrong=0
  if [ $# -ge 2 ]; then
    oop_wrong=N/A
    oop_csv_wrong=
  fi
  grep -q '^# Out of bounds values : 0 OK$' "$WORK/out" || fail "not every value validated"
  grep -qE "^# Baseline $name: " "$WORK/out" || fail "no '# Baseline $name:' header line"
  grep -qE "^#.*baseline: $name" "$WORK/out" || fail "no baseline column title"
  grep -qE "^#.*$name out of place" "$WORK/out" || fail "no out-of-place baseline column title"
  grep -qE '^# +size .*#wrong +ratio$' "$WORK/out" || fail "no ratio column"
  local rows
  rows=$(grep -cvE '^#' "$WORK/out")
  [ "$rows" -eq "$ROWS" ] || fail "$rows rows, expected $ROWS"
  # Every row: nccl-tests' 13 fields, then the baseline's time algbw busbw #wrong ratio in place
  # (against tutti's in-place column), then the same out of place.
  # (The text prints ratios with two decimals, so a loaded machine's 0.004 shows as 0.00: the CSV
  # below, with six significant digits, is where they must be positive.)
  awk -v oop="$oop_wrong" '!/^#/ && (NF != 23 || $17 != 0 || $22 != oop || $13 != 0 || $9 != 0 || $18 !~ /^[0-9]+[.][0-9]+$/ || $23 !~ /^[0-9]+[.][0-9]+$/) { bad = 1; print "bad row: " $0 }
       END { exit bad }' "$WORK/out" >&2 || fail "a row lacks a ratio or has a wrong value"
  python3 - "$WORK/r.csv" "$name" "$ROWS" "$oop_csv_wrong" <<'PY' || fail "csv"
import csv, sys
path, name, rows, oop_wrong = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
table = list(csv.DictReader(open(path)))
assert len(table) == rows, f"{len(table)} csv rows, expected {rows}"
for row in table:
    assert row["baseline"] == name, row
    assert float(row["ratio"]) > 0, row
    # Times, not bandwidths: 8 B in a few ms rounds to 0 GB/s.
    assert float(row["baseline_time_us"]) > 0 and float(row["inplace_time_us"]) > 0, row
    assert float(row["oop_ratio"]) > 0 and float(row["oop_baseline_time_us"]) > 0, row
    assert row["wrong"] == row["inplace_wrong"] == row["baseline_wrong"] == "0", row
    assert row["oop_baseline_wrong"] == oop_wrong, row
PY
}

# A Gloo set-up that must fail (exit status $1): on every rank, before Gloo's own 120 s timeout,
# and without leaving its rendezvous directory under $WORK/tmp.
expect_gloo_refused() {
  [ "$1" -ne 0 ] || fail "exited 0"
  [ "$1" -ne 124 ] || fail "hung until the test's timeout"
  local left
  left=$(find "$WORK/tmp" -mindepth 1 -name 'tutti-bench-gloo*' | head -n1)
  [ -z "$left" ] || fail "left behind: $left"
}

case "$CASE" in
  mpi_shm_np2)
    mpirun_cmd 2 --mca btl self,vader "$BENCH" "${SWEEP[@]}" --baseline mpi --csv "$WORK/r.csv" \
      >"$WORK/out" 2>"$WORK/err" || fail "exit $?"
    check_results mpi
    ;;
  mpi_tcp_np2)
    # Both sides over loopback TCP: Open MPI's tcp BTL and tutti's tcp transport.
    mpirun_cmd 2 --mca btl tcp,self --mca btl_tcp_if_include lo -x TUTTI_TRANSPORT=tcp \
      "$BENCH" "${SWEEP[@]}" --baseline mpi --csv "$WORK/r.csv" >"$WORK/out" 2>"$WORK/err" ||
      fail "exit $?"
    check_results mpi
    ;;
  mpi_shm_np3)
    mpirun_cmd 3 --mca btl self,vader "$BENCH" "${SWEEP[@]}" --baseline mpi --csv "$WORK/r.csv" \
      >"$WORK/out" 2>"$WORK/err" || fail "exit $?"
    check_results mpi
    ;;
  gloo_np2 | gloo_np3)
    np=${CASE#gloo_np}
    mkdir "$WORK/tmp"
    TMPDIR="$WORK/tmp" timeout 60 "$TUTTIRUN" -np "$np" --no-tag-output -- "$BENCH" "${SWEEP[@]}" \
      --baseline gloo --csv "$WORK/r.csv" >"$WORK/out" 2>"$WORK/err" || fail "exit $?"
    check_results gloo
    # Gloo's rendezvous directory (under TMPDIR) must not outlive the run.
    left=$(find "$WORK/tmp" -mindepth 1 -name 'tutti-bench-gloo*' | head -n1)
    [ -z "$left" ] || fail "left behind: $left"
    ;;
  gloo_ifname_lo)
    # GLOO_SOCKET_IFNAME picks Gloo's interface, as for ranks in pods (there eth0); on one host lo
    # must work, and the header must say which interface and address Gloo uses.
    mkdir "$WORK/tmp"
    GLOO_SOCKET_IFNAME=lo TMPDIR="$WORK/tmp" timeout 60 "$TUTTIRUN" -np 2 --no-tag-output -- \
      "$BENCH" "${SWEEP[@]}" --baseline gloo --csv "$WORK/r.csv" >"$WORK/out" 2>"$WORK/err" ||
      fail "exit $?"
    check_results gloo
    grep -qE '^# Baseline gloo: .*interface lo .*127[.]0[.]0[.]1' "$WORK/out" ||
      fail "the header does not name interface lo and its address"
    ;;
  gloo_ifname_missing)
    # An interface this host lacks: every rank stops at once (not after Gloo's 120 s timeout) with
    # an error that names the interface and the variable to fix.
    mkdir "$WORK/tmp"
    GLOO_SOCKET_IFNAME=tuttinosuch0 TMPDIR="$WORK/tmp" timeout 60 "$TUTTIRUN" -np 2 \
      --no-tag-output -- "$BENCH" allreduce -b 8 -e 8 --baseline gloo >"$WORK/out" 2>"$WORK/err"
    expect_gloo_refused $?
    grep -q "tuttinosuch0" "$WORK/err" || fail "the error does not name the interface"
    grep -q "GLOO_SOCKET_IFNAME" "$WORK/err" || fail "the error does not name GLOO_SOCKET_IFNAME"
    ;;
  gloo_unshared_tmpdir)
    # Rank 1 sees another TMPDIR than rank 0 (its own tmpfs over the same path, in a mount
    # namespace of its own), as ranks on hosts without a shared filesystem would: every rank must
    # stop with an error that names rank 1 and says to point TMPDIR at a shared directory.
    if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
      echo "SKIP: needs root and unshare -m (a mount namespace for rank 1)" >&2
      exit 77
    fi
    mkdir "$WORK/tmp"
    # shellcheck disable=SC2016
    TMPDIR="$WORK/tmp" timeout 60 "$TUTTIRUN" -np 2 --no-tag-output -- sh -c '
      if [ "$TUTTI_RANK" = 1 ]; then
        exec unshare -m sh -c "mount -t tmpfs tmpfs \"\$TMPDIR\" && exec \"\$@\"" sh "$@"
      fi
      exec "$@"' sh "$BENCH" allreduce -b 8 -e 8 --baseline gloo >"$WORK/out" 2>"$WORK/err"
    expect_gloo_refused $?
    grep -q "rank 1 cannot see" "$WORK/err" || fail "the error does not name rank 1"
    grep -q "TMPDIR" "$WORK/err" || fail "the error does not say to set TMPDIR"
    ;;
  inplace_np3)
    # tutti against its own in-place allreduce: no outside peer, any launcher, any build.
    timeout 60 "$TUTTIRUN" -np 3 --no-tag-output -- "$BENCH" "${SWEEP[@]}" --baseline inplace \
      --csv "$WORK/r.csv" >"$WORK/out" 2>"$WORK/err" || fail "exit $?"
    check_results inplace oop-unchecked
    grep -qE "^# Baseline inplace: tutti's own in-place allreduce" "$WORK/out" ||
      fail "the header does not say what inplace runs"
    ;;
  mpi_under_tuttirun)
    # tuttirun starts no MPI job: the MPI baseline must refuse and point at mpirun.
    timeout 60 "$TUTTIRUN" -np 2 --no-tag-output -- "$BENCH" allreduce -b 8 -e 8 --baseline mpi \
      >"$WORK/out" 2>"$WORK/err"
    rc=$?
    [ "$rc" -ne 0 ] || fail "--baseline mpi under tuttirun exited 0"
    grep -q "mpirun" "$WORK/err" || fail "the error does not mention mpirun"
    ;;
  missing_mpi | missing_gloo)
    # This build lacks the peer: a usage error (exit 2) before any rank starts, saying how to get it.
    peer=${CASE#missing_}
    "$BENCH" allreduce -b 8 -e 8 --baseline "$peer" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "exit $rc, expected 2"
    grep -q "built without" "$WORK/err" || fail "no 'built without' in the error"
    grep -q "install-deps.sh" "$WORK/err" || fail "the error does not say how to install $peer"
    ;;
  unknown_baseline)
    "$BENCH" allreduce --baseline rccl >"$WORK/out" 2>"$WORK/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "exit $rc, expected 2"
    grep -q "'rccl'" "$WORK/err" || fail "the error does not name the unknown peer"
    "$BENCH" allgather --baseline gloo >"$WORK/out" 2>"$WORK/err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "allgather --baseline: exit $rc, expected 2"
    ;;
  *)
    echo "unknown case $CASE" >&2
    exit 2
    ;;
esac
echo PASS
