#!/usr/bin/env bash
# tutti-bench --device cuda --baseline nccl on a host without a GPU (a CUDA-built tutti-bench): every
# rank stops within seconds with exit 1 and a message naming the CUDA call that failed and what to
# do; no hang, no crash. Skipped (77) where a GPU is.
set -u
tuttirun=$1 bench=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: this host has a GPU; the no-device error cannot be seen"
  exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
timeout 60 "$tuttirun" -np 2 -- "$bench" allreduce --device cuda --baseline nccl -b 8 -e 1M >"$out" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
cat "$out"
[ "$rc" -ne 124 ] || fail "tutti-bench --device cuda hung (killed after 60 s)"
[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
[ "$took" -le 20 ] || fail "took ${took} s to fail"
grep -q '\[0\].*--device cuda: cuda[A-Za-z]* failed: ' "$out" || fail "rank 0 does not name the CUDA call"
grep -q '\[1\].*--device cuda: cuda[A-Za-z]* failed: ' "$out" || fail "rank 1 does not name the CUDA call"
grep -q 'or use --device host' "$out" || fail "the message does not say what to do"
echo "PASS: bench --device cuda without a GPU fails in ${took} s with the CUDA error"
