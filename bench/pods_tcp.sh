#!/usr/bin/env bash
# pods_tcp.sh: tutti's allreduce over TCP between "pods" (network namespaces, one rank each, veth
# into a bridge: not loopback), against what users run there instead:
#   mpi    Open MPI's tcp BTL, interleaved in the same processes (tutti-bench --baseline mpi under
#          mpirun, which starts its daemons in the pods through kubexec);
#   gloo   Gloo ring_chunked, interleaved (tutti-bench --baseline gloo under tuttirun --pods);
#   torch  PyTorch's gloo backend (bench/torch_gloo_bench.py, one rank per pod), in whole runs
#          alternating with tutti's own (two programs cannot be interleaved call by call).
#   engine not a peer: `tutti-bench engine` (the engine against per-tensor calls and one flat call,
#          interleaved) under tuttirun --pods; ENGINE_FLAGS (default "--case 256x16K --steps 20
#          --rounds 5") are its flags.
#   torch-engine  the same gradient sync in PyTorch's gloo (torch_gloo_bench.py --case, (a) one
#          all_reduce per tensor and (c) one flat buffer), whole runs alternating with tutti-bench
#          engine's; CASE (default resnet50), STEPS (5) and ROUNDS (3) set both; TORCH_PYTHON (default
#          /usr/bin/python3, Debian's torch) picks the torch.
#   algos  not a peer: tutti alone with each of ALGOS (default "hier ring tree hd auto") in whole runs
#          alternating, auto with its decision table in the log; bench/algo_winners.py then names the
#          fastest per size beside the cost model's pick. "auto-tuned" in ALGOS runs auto with
#          TUTTI_TUNE_FILE=OUT/tune-np<N>.json, which the tune peer writes.
#   iperf  not a peer: iperf3 between pod 0 (client) and pod 1 (server), one TCP stream for
#          IPERF_SECONDS (default 5), then two streams both ways at once (--bidir): the link's
#          own bandwidth, which busbw is compared with; once per congestion control of
#          IPERF_CONGESTION (default "system cubic"). Needs 2 pods or more.
#   startup  not a peer of the allreduce: start-up to the first allreduce between the pods, as
#          bench/startup.sh times it on one host: tuttirun --pods through kubexec starting
#          tutti-first-allreduce against mpirun through kubexec starting mpi-first-allreduce (the
#          same hostfile's slots), STARTUP_ROUNDS (default 3) rounds a run, which goes first
#          alternating; prints the median seconds of each and mpirun's / tuttirun's (above 1,
#          tutti starts faster).
#   tune   not a peer: fits the cost model's lines on these pods (tutti-bench allreduce --tune, one
#          run per algorithm of hier ring tree hd; TUNE_FLAGS, default "-b 8 -e 64M -f 8 -n 3 -w 1
#          -c 0") into OUT/tune-np<N>.json, as bench/tune.sh does on pretend hosts.
#
#   bench/pods_tcp.sh BUILD OUT [--np "2 4"] [--slots S] [--peers "mpi gloo torch"] [--runs 2]
#                     [-- BENCH_FLAGS]
#
# --slots S puts S ranks in each pod (np/S pods; default 1). With S > 1 tutti keeps its default
# transport (shared memory inside a pod, TCP between pods) and Open MPI gets vader as well as tcp.
# Writes OUT/<peer>-np<N>-run<I>.txt and .csv (torch: OUT/torch-np<N>-run<I>.csv and
# OUT/tutti-for-torch-np<N>-run<I>.csv) and prints the median ratio per size. Needs root (ip netns);
# pods are made on subnet 198.18.251.0/24 and removed on exit. Every other address stays unused.
# GLOO_OOP=0 times Gloo in place only: its out-of-place form (gloo::allreduce, what PyTorch calls)
# took 0.3-0.6 s for 1 MiB with 4 or more ranks on this 2-vCPU machine (docs/PERFORMANCE.md).
# BENCH_ENV="TUTTI_X=V ..." gives tutti's ranks more settings (every launcher), e.g. to compare
# TUTTI_TCP_BUFFER_BYTES=4M (fixed socket buffers) against the default (the autotuning).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=${1:?usage: bench/pods_tcp.sh BUILD OUT [--np "2 4"] [--peers "mpi gloo torch"] [--runs N] [-- FLAGS]}
OUT=${2:?usage: bench/pods_tcp.sh BUILD OUT ...}
shift 2
NPS="2 4"
SLOTS=1
PEERS="mpi gloo torch"
RUNS=2
FLAGS=(-b 1M -e 64M -f 4 -n 10 -w 3 --rounds 5 -c 1)
while [ $# -gt 0 ]; do
  case $1 in
    --np) NPS=$2; shift 2 ;;
    --slots) SLOTS=$2; shift 2 ;;
    --peers) PEERS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --) shift; FLAGS=("$@"); break ;;
    *) echo "pods_tcp.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
BUILD=$(cd "$BUILD" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BENCH=$BUILD/bin/tutti-bench
TUTTIRUN=$BUILD/bin/tuttirun
KUBEXEC=$BUILD/bin/kubexec
HOSTFILE=$BUILD/bin/tutti-hostfile
for b in "$BENCH" "$TUTTIRUN" "$KUBEXEC" "$HOSTFILE"; do
  [ -x "$b" ] || { echo "pods_tcp.sh: $b is missing; build first (make build)" >&2; exit 2; }
done
K=251
SUBNET="198.18.$K.0/24"
HOST_ADDR="198.18.$K.1"
PREFIX=tcpbench
export PATH="$ROOT/tests/integration/pods:$PATH"
export KUBEXEC_KUBECTL="$ROOT/tests/integration/pods/kubectl"  # the pods' kubectl stand-in
# shellcheck source=../tests/integration/pods/pods.sh
source "$ROOT/tests/integration/pods/pods.sh"
fail() {
  echo "pods_tcp.sh: $*" >&2
  exit 1
}

# The pods that hold np ranks, SLOTS each.
pod_names() {
  local i names=
  for ((i = 0; i < $1 / SLOTS; i++)); do names+="${names:+,}$PREFIX-worker-$i"; done
  echo "$names"
}

[[ $SLOTS =~ ^[1-9][0-9]*$ ]] || fail "--slots '$SLOTS': give a number of ranks per pod, 1 or more"
# On exit (an error, or ^C), the launchers still running on this side go first: timeout passes
# the TERM to its tuttirun or mpirun, whose ranks then stop; pods_up's trap then removes the pods.
pods_user_stop() { pkill -TERM -P $$ 2>/dev/null; }

MAX_NP=0
for np in $NPS; do
  [ $((np % SLOTS)) -eq 0 ] || fail "--np $np is not a multiple of --slots $SLOTS"
  [ "$np" -gt "$MAX_NP" ] && MAX_NP=$np
done
pods_up "$PREFIX" $((MAX_NP / SLOTS)) "$K"

# tutti on the pods' eth0 in every run, whatever launched it: TCP only with one rank per pod, the
# default transports (shared memory inside a pod) with more.
read -r -a EXTRA_ENV <<<"${BENCH_ENV:-}"
TUTTI_ENV=(TUTTI_SOCKET_IFNAME=eth0 "${EXTRA_ENV[@]}")
MPI_BTL=tcp,self
if [ "$SLOTS" -eq 1 ]; then
  TUTTI_ENV=(TUTTI_TRANSPORT=tcp "${TUTTI_ENV[@]}")
else
  MPI_BTL=vader,tcp,self
fi
MPI_ENV=()
for v in "${TUTTI_ENV[@]}"; do MPI_ENV+=(-x "$v"); done

run_mpi() {  # np run
  local np=$1 i=$2 hostfile="$OUT/hostfile-np$1"
  "$HOSTFILE" --pods "$(pod_names "$np")" --slots "$SLOTS" --format openmpi -o "$hostfile" ||
    fail "tutti-hostfile failed"
  timeout 900 mpirun --allow-run-as-root --hostfile "$hostfile" -np "$np" --bind-to none \
    --mca plm_rsh_agent "$KUBEXEC" --mca plm_rsh_no_tree_spawn 1 --mca mpi_yield_when_idle 1 \
    --mca btl "$MPI_BTL" --mca btl_tcp_if_include "$SUBNET" --mca oob_tcp_if_include "$SUBNET" \
    "${MPI_ENV[@]}" \
    "$BENCH" allreduce --baseline mpi "${FLAGS[@]}" --csv "$OUT/mpi-np$np-run$i.csv" \
    >"$OUT/mpi-np$np-run$i.txt" 2>&1 || fail "mpi np$np run $i failed: see $OUT/mpi-np$np-run$i.txt"
}

run_gloo() {  # np run
  local np=$1 i=$2
  timeout 900 "$TUTTIRUN" --pods "$(pod_names "$np")" --slots "$SLOTS" --exec kubexec --kubexec "$KUBEXEC" \
    --store-addr "$HOST_ADDR" --no-tag-output -- \
    env "${TUTTI_ENV[@]}" GLOO_SOCKET_IFNAME=eth0 \
    "$BENCH" allreduce --baseline gloo --baseline-oop "${GLOO_OOP:-1}" "${FLAGS[@]}" --csv "$OUT/gloo-np$np-run$i.csv" \
    >"$OUT/gloo-np$np-run$i.txt" 2>&1 || fail "gloo np$np run $i failed: see $OUT/gloo-np$np-run$i.txt"
}

# torch: SLOTS ranks per pod, rank 0's pod hosts the rendezvous; then tutti alone, same sizes.
run_torch() {  # np run
  local np=$1 i=$2 r pids=()
  local master
  master="$(pod_ip "$K" 0):29650"
  for ((r = np - 1; r >= 0; r--)); do
    ip netns exec "$PREFIX-worker-$((r / SLOTS))" env GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 \
      timeout 900 /usr/bin/python3 \
      "$HERE/torch_gloo_bench.py" -np "$np" --rank "$r" --master "$master" \
      -b "${TORCH_B:-1M}" -e "${TORCH_E:-64M}" -f 4 -n 10 -w 3 -c 1 \
      --csv "$OUT/torch-np$np-run$i.csv" >"$OUT/torch-np$np-run$i.rank$r.txt" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "torch np$np run $i failed: see $OUT/torch-np$np-run$i.rank*.txt"; done
  timeout 900 "$TUTTIRUN" --pods "$(pod_names "$np")" --slots "$SLOTS" --exec kubexec --kubexec "$KUBEXEC" \
    --store-addr "$HOST_ADDR" --no-tag-output -- env "${TUTTI_ENV[@]}" \
    "$BENCH" allreduce -b "${TORCH_B:-1M}" -e "${TORCH_E:-64M}" -f 4 -n 10 -w 3 -c 1 \
    --csv "$OUT/tutti-for-torch-np$np-run$i.csv" >"$OUT/tutti-for-torch-np$np-run$i.txt" 2>&1 ||
    fail "tutti np$np (torch pair) run $i failed"
}

run_algos() {  # np run
  local np=$1 i=$2 algo log tune
  for algo in ${ALGOS:-hier ring tree hd auto}; do
    log=error tune=
    [[ $algo == auto* ]] && log=debug  # rank 0 logs the cost model's decision table
    if [ "$algo" = auto-tuned ]; then
      tune=$OUT/tune-np$np.json
      [ -f "$tune" ] || fail "auto-tuned needs $tune: run --peers tune first (same OUT)"
    fi
    timeout 900 "$TUTTIRUN" --pods "$(pod_names "$np")" --slots "$SLOTS" --exec kubexec \
      --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR" --no-tag-output -- \
      env "${TUTTI_ENV[@]}" TUTTI_ALGO="${algo%-tuned}" TUTTI_LOG_LEVEL=$log TUTTI_TUNE_FILE="$tune" \
      "$BENCH" allreduce "${FLAGS[@]}" --csv "$OUT/algo-$algo-np$np-run$i.csv" \
      >"$OUT/algo-$algo-np$np-run$i.txt" 2>&1 ||
      fail "algo $algo np$np run $i failed: see $OUT/algo-$algo-np$np-run$i.txt"
  done
}

run_tune() {  # np run
  local np=$1 i=$2 algo flags
  read -r -a flags <<<"${TUNE_FLAGS:--b 8 -e 64M -f 8 -n 3 -w 1 -c 0}"
  for algo in hier ring tree hd; do
    timeout 900 "$TUTTIRUN" --pods "$(pod_names "$np")" --slots "$SLOTS" --exec kubexec \
      --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR" --no-tag-output -- \
      env "${TUTTI_ENV[@]}" TUTTI_ALGO="$algo" TUTTI_LOG_LEVEL=error \
      "$BENCH" allreduce --tune "$OUT/tune-np$np.json" "${flags[@]}" \
      >"$OUT/tune-$algo-np$np-run$i.txt" 2>&1 ||
      fail "tune $algo np$np run $i failed: see $OUT/tune-$algo-np$np-run$i.txt"
  done
}

# PyTorch gloo's gradient sync (rank 0's pod hosts the rendezvous), then tutti-bench engine's.
run_torch-engine() {  # np run
  local np=$1 i=$2 r pids=() master
  master="$(pod_ip "$K" 0):29651"
  for ((r = np - 1; r >= 0; r--)); do
    ip netns exec "$PREFIX-worker-$((r / SLOTS))" env GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 \
      timeout 900 "${TORCH_PYTHON:-/usr/bin/python3}" "$HERE/torch_gloo_bench.py" -np "$np" \
      --rank "$r" --master "$master" --case "${CASE:-resnet50}" -n "${STEPS:-5}" \
      --rounds "${ROUNDS:-3}" >"$OUT/torch-engine-np$np-run$i.rank$r.txt" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do
    wait "$p" || fail "torch-engine np$np run $i failed: see $OUT/torch-engine-np$np-run$i.rank*.txt"
  done
  timeout 900 "$TUTTIRUN" --pods "$(pod_names "$np")" --slots "$SLOTS" --exec kubexec \
    --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR" --no-tag-output -- env "${TUTTI_ENV[@]}" \
    "$BENCH" engine --case "${CASE:-resnet50}" --steps "${STEPS:-5}" --rounds "${ROUNDS:-3}" \
    >"$OUT/tutti-engine-np$np-run$i.txt" 2>&1 ||
    fail "tutti engine np$np (torch-engine pair) run $i failed: see $OUT/tutti-engine-np$np-run$i.txt"
}

# iperf3 between the first two pods: one stream pod 0 -> pod 1, then both ways at once, once per
# congestion control in IPERF_CONGESTION (default "system cubic": the kernel's, then iperf3 -C
# cubic, which tutti's TUTTI_TCP_CONGESTION=auto uses where the kernel's is bbr). Prints Gbit/s
# and GB/s and the retransmits, from iperf3's JSON.
run_iperf() {  # np run
  local np=$1 i=$2 secs=${IPERF_SECONDS:-5} server mode cc extra
  command -v iperf3 >/dev/null || fail "iperf needs iperf3 (scripts/install-deps.sh installs it)"
  [ $((np / SLOTS)) -ge 2 ] || fail "iperf needs 2 pods or more (--np $np --slots $SLOTS)"
  for cc in ${IPERF_CONGESTION:-system cubic}; do
    for mode in one-stream bidir; do
      extra=()
      [ "$mode" = bidir ] && extra=(--bidir)
      [ "$cc" = system ] || extra+=(-C "$cc")
      ip netns exec "$PREFIX-worker-1" timeout $((secs + 30)) iperf3 -s -1 -p 5299 >/dev/null 2>&1 &
      server=$!
      sleep 0.5  # the server listens
      ip netns exec "$PREFIX-worker-0" timeout $((secs + 30)) iperf3 -c "$(pod_ip "$K" 1)" -p 5299 \
        -t "$secs" -J "${extra[@]}" >"$OUT/iperf-$mode-$cc-np$np-run$i.json" 2>&1 ||
        fail "iperf3 $mode $cc np$np run $i failed: see $OUT/iperf-$mode-$cc-np$np-run$i.json"
      wait "$server" 2>/dev/null || true
    done
  done
  /usr/bin/python3 - "$OUT" "$np" "$i" ${IPERF_CONGESTION:-system cubic} >"$OUT/iperf-np$np-run$i.txt" <<'PY'
import json, sys
out, np, i = sys.argv[1:4]
for cc in sys.argv[4:]:
    for mode in ("one-stream", "bidir"):
        with open(f"{out}/iperf-{mode}-{cc}-np{np}-run{i}.json") as f:
            r = json.load(f)
        end = r["end"]
        sent = end["sum_sent"]
        algo = end.get("sender_tcp_congestion", cc)
        line = f"iperf3 {mode} ({algo}): {sent['bits_per_second'] / 1e9:.1f} Gbit/s ({sent['bits_per_second'] / 8e9:.2f} GB/s) pod 0 -> pod 1, {sent.get('retransmits', 0)} retransmits"
        if mode == "bidir" and "sum_sent_bidir_reverse" in end:
            back = end["sum_sent_bidir_reverse"]
            line += f"; {back['bits_per_second'] / 8e9:.2f} GB/s back at the same time"
        print(line)
PY
}

# One start-up to the first allreduce: appends "NAME SECONDS" to OUT/startup-np<N>-run<I>.txt.
startup_one() {  # name np run
  local name=$1 np=$2 i=$3 start end
  start=$(date +%s.%N)
  if [ "$name" = tutti ]; then
    timeout 300 "$TUTTIRUN" --pods "$(pod_names "$np")" --slots "$SLOTS" --exec kubexec \
      --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR" --no-tag-output -- env "${TUTTI_ENV[@]}" \
      "$BUILD/bin/tutti-first-allreduce" >"$OUT/startup-last.txt" 2>&1
  else
    # Yielding as run_mpi does: the hostfile's slots hide that the pods share a few CPUs, and a
    # spinning rank would then hold one that another still needs for its start.
    timeout 300 mpirun --allow-run-as-root --hostfile "$OUT/hostfile-np$np" -np "$np" \
      --mca plm_rsh_agent "$KUBEXEC" --mca plm_rsh_no_tree_spawn 1 --mca mpi_yield_when_idle 1 \
      --mca btl "$MPI_BTL" --mca btl_tcp_if_include "$SUBNET" --mca oob_tcp_if_include "$SUBNET" \
      "$BUILD/bin/mpi-first-allreduce" >"$OUT/startup-last.txt" 2>&1
  fi || fail "startup: $name np$np run $i failed: see $OUT/startup-last.txt"
  end=$(date +%s.%N)
  awk -v n="$name" -v s="$start" -v e="$end" 'BEGIN { printf "%s %.3f\n", n, e - s }' \
    >>"$OUT/startup-np$np-run$i.txt"
}

run_startup() {  # np run
  local np=$1 i=$2 r p
  for p in tutti-first-allreduce mpi-first-allreduce; do
    [ -x "$BUILD/bin/$p" ] || fail "startup: $BUILD/bin/$p is not built (the MPI one needs a build with MPI)"
  done
  "$HOSTFILE" --pods "$(pod_names "$np")" --slots "$SLOTS" --format openmpi \
    -o "$OUT/hostfile-np$np" || fail "tutti-hostfile failed"
  : >"$OUT/startup-np$np-run$i.txt"
  for ((r = 0; r < ${STARTUP_ROUNDS:-3}; ++r)); do
    if (((r + i) % 2 == 0)); then
      startup_one tutti "$np" "$i"
      startup_one mpi "$np" "$i"
    else
      startup_one mpi "$np" "$i"
      startup_one tutti "$np" "$i"
    fi
  done
}

run_engine() {  # np run
  local np=$1 i=$2 flags
  read -r -a flags <<<"${ENGINE_FLAGS:---case 256x16K --steps 20 --rounds 5}"
  timeout 900 "$TUTTIRUN" --pods "$(pod_names "$np")" --slots "$SLOTS" --exec kubexec --kubexec "$KUBEXEC" \
    --store-addr "$HOST_ADDR" --no-tag-output -- env "${TUTTI_ENV[@]}" \
    "$BENCH" engine "${flags[@]}" >"$OUT/engine-np$np-run$i.txt" 2>&1 ||
    fail "engine np$np run $i failed: see $OUT/engine-np$np-run$i.txt"
}

for ((i = 1; i <= RUNS; i++)); do
  for np in $NPS; do
    for peer in $PEERS; do
      echo "== $peer np$np run $i"
      "run_$peer" "$np" "$i"
    done
  done
done

for np in $NPS; do
  for peer in $PEERS; do
    if [ "$peer" = tune ]; then
      echo "== tune np$np: $OUT/tune-np$np.json"
      grep -h '^# Tuned' "$OUT/tune-"*"-np$np-run"*.txt || true
    elif [ "$peer" = algos ]; then
      python3 "$HERE/algo_winners.py" "$OUT" "$np" "$RUNS" ${ALGOS:-hier ring tree hd auto} || true
    elif [ "$peer" = torch-engine ]; then
      for ((i = 1; i <= RUNS; i++)); do
        echo "== torch-engine np$np run $i: PyTorch gloo, then tutti"
        grep -v '^#' "$OUT/torch-engine-np$np-run$i.rank0.txt"
        grep -E '^ *\(|^# \(b\)/' "$OUT/tutti-engine-np$np-run$i.txt"
        # The target's ratio: tutti's engine against PyTorch gloo's flat buffer, steps/s.
        awk '/^ *\(c\)/ { c = $NF } END { print c }' "$OUT/torch-engine-np$np-run$i.rank0.txt" |
          awk -v b="$(awk '/^ *\(b\) engine/ { print $NF }' "$OUT/tutti-engine-np$np-run$i.txt")" \
            '{ if (b + 0 > 0 && $1 + 0 > 0) printf "# tutti (b) / PyTorch gloo (c) %.2fx\n", b / $1 }'
      done
    elif [ "$peer" = iperf ]; then
      for ((i = 1; i <= RUNS; i++)); do
        echo "== iperf3 np$np run $i"
        cat "$OUT/iperf-np$np-run$i.txt"
      done
    elif [ "$peer" = startup ]; then
      echo "== start-up to the first allreduce, np$np in $((np / SLOTS)) pods of $SLOTS, medians of $RUNS run(s)"
      cat "$OUT/startup-np$np-run"*.txt | python3 -c '
import statistics, sys
runs = {}
for line in sys.stdin:
    name, seconds = line.split()
    runs.setdefault(name, []).append(float(seconds))
t, m, n = statistics.median(runs["tutti"]), statistics.median(runs["mpi"]), len(runs["tutti"])
print(f"  tuttirun {t:.2f} s, mpirun {m:.2f} s ({n} each): mpirun / tuttirun {m / t:.2f}x")'
    elif [ "$peer" = engine ]; then
      for ((i = 1; i <= RUNS; i++)); do
        echo "== engine np$np run $i"
        grep -v '^#.*mode' "$OUT/engine-np$np-run$i.txt"
      done
    elif [ "$peer" = torch ]; then
      t=() p=()
      for ((i = 1; i <= RUNS; i++)); do
        t+=("$OUT/tutti-for-torch-np$np-run$i.csv")
        p+=("$OUT/torch-np$np-run$i.csv")
      done
      echo "== tutti / PyTorch gloo, np$np (alternating runs)"
      /usr/bin/python3 "$HERE/torch_gloo_bench.py" --ratio "$(IFS=,; echo "${t[*]}")" "$(IFS=,; echo "${p[*]}")"
    else
      echo "== tutti / $peer, np$np (interleaved), in place"
      python3 "$HERE/ratio_table.py" "$OUT/$peer-np$np-run"*.csv || true
      echo "== tutti / $peer, np$np (interleaved), out of place"
      python3 "$HERE/ratio_table.py" --oop "$OUT/$peer-np$np-run"*.csv || true
    fi
  done
done
