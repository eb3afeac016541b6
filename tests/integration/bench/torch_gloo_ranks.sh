#!/usr/bin/env bash
# bench/torch_gloo_bench.py --rank R --master ADDR:PORT, one process per rank as pods start them,
# here two processes on loopback: rank 0 prints the table (and the CSV) with #wrong 0, rank 1
# prints nothing, for the size sweep and for --case. Bad --rank/--master are usage errors (exit 2).
# Skipped (77) when /usr/bin/python3 has no torch: torch is not a tutti dependency.
#
#   torch_gloo_ranks.sh SCRIPT
set -u
SCRIPT=$1
PY=/usr/bin/python3
if ! "$PY" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "SKIP: $PY cannot import torch with gloo (apt-get install python3-torch runs this test)" >&2
  exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-torch-gloo-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "$WORK"/*; do echo "--- $f" >&2; cat "$f" >&2; done
  exit 1
}

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run_ranks NAME ARGS...: both ranks of -np 2, each its own process, at once.
run_ranks() {
  local name=$1
  shift
  local port
  port=$(free_port)
  local pids=()
  for r in 0 1; do
    timeout 120 "$PY" "$SCRIPT" -np 2 --rank "$r" --master "127.0.0.1:$port" "$@" \
      >"$WORK/$name.out$r" 2>"$WORK/$name.err$r" &
    pids+=($!)
  done
  for r in 0 1; do
    wait "${pids[$r]}" || fail "$name: rank $r exited $?"
  done
  [ ! -s "$WORK/$name.out1" ] || fail "$name: rank 1 printed something"
}

run_ranks sweep -b 1M -e 4M -n 2 -w 1 --csv "$WORK/r.csv"
rows=$(awk '!/^#/ && NF == 9 && $9 == 0' "$WORK/sweep.out0" | wc -l)
[ "$rows" -eq 2 ] || fail "sweep: $rows rows with #wrong 0, expected 2 (1M, 4M)"
[ "$(grep -c '^[0-9]' "$WORK/r.csv")" -eq 2 ] || fail "sweep: the CSV lacks its 2 rows"
# (Python's csv module ends its lines with CRLF.)
header=size,count,type,redop,root,nranks,time_us,algbw_gbps,busbw_gbps,wrong
[ "$(head -n1 "$WORK/r.csv" | tr -d '\r')" = "$header" ] ||
  fail "sweep: the CSV header is not tutti-bench's"

run_ranks case --case 4x64K -n 2 --rounds 2
grep -qE '^  \(a\) all_reduce per tensor +[0-9.]+$' "$WORK/case.out0" || fail "case: no (a) row"
grep -qE '^  \(c\) one flat all_reduce +[0-9.]+$' "$WORK/case.out0" || fail "case: no (c) row"

for bad in "--rank 0" "--master 127.0.0.1:1" "--rank 2 --master 127.0.0.1:1" \
  "--rank 0 --master 127.0.0.1"; do
  # shellcheck disable=SC2086
  "$PY" "$SCRIPT" -np 2 $bad >"$WORK/bad.out" 2>"$WORK/bad.err"
  rc=$?
  [ "$rc" -eq 2 ] || fail "'$bad': exit $rc, expected 2"
  grep -q 'error:' "$WORK/bad.err" || fail "'$bad': no usage error"
done
echo PASS
