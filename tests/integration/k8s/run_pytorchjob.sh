#!/usr/bin/env bash
# A PyTorchJob manifest is executable truth: run each pod's `pytorch` container exactly as the
# YAML says, on network-namespace pods, with the env training-operator v1.9 would give it.
#
#   run_pytorchjob.sh CASE K MANIFEST PREFIX [run|kill] [BACKEND] [VENV_PYTHON PACKAGE_DIR]
#
# K: this case's subnet 198.18.K.0/24 (unique per case). PREFIX: a `cmake --install` tree; the
# images' /usr/local is mapped onto it, the examples the worker image copies from the source tree
# onto this source tree (pytorchjob_plan.py). BACKEND (default gloo): the value given to the
# trainer's --backend in place of the manifest's `tutti` while this build has no tutti Python
# package; with `tutti` the manifest's own value runs. VENV_PYTHON and PACKAGE_DIR, for a manifest
# whose image runs Python from a venv (tutti-worker-torch2's /opt/torch2, PyPI's torch 2.x): a
# Python in a venv with torch 2.x (CMake's TUTTI_TORCH2_PYTHON_EXECUTABLE), whose venv stands for
# the image's, and the folder that holds this build's tutti package for that torch
# (TUTTI_TORCH2_PYTHON_BUILD_DIR), which the image has in the venv's site-packages.
# The trainer is the script the command runs: examples/fashion_mnist/train.py (pytorchjob.yaml:
# DDP, a checkpoint file) or examples/fsdp/train_fsdp.py (pytorchjob-fsdp.yaml: fully_shard, a
# torch.distributed.checkpoint directory); the checks below read that script's output lines.
# What stands in for the cluster, and nothing more:
# - pods: one network namespace per pod (../pods/pods.sh), `<job>-master-0` and `<job>-worker-<i>`,
#   each under its own hostname; every container gets `env -i` with the manifest's env, then the
#   operator's (PET_*, MASTER_ADDR/PORT, WORLD_SIZE, RANK, ...), then HOSTNAME;
# - cluster DNS (the operator's Service per pod): the pod names in /etc/hosts, in a private mount
#   namespace over a throwaway overlay of /etc;
# - the PVC: one directory per claim, shared by the pods (ReadWriteMany);
# - the image: Debian's /usr/bin/python3 with python3-torch is this machine's; Debian's python looks
#   in /usr/local/lib/python3.11/dist-packages, so PYTHONPATH names PREFIX's lib/python3*/dist-packages.
#   A pod whose command runs the image's venv runs VENV_PYTHON's venv instead, with PYTHONPATH
#   naming PACKAGE_DIR only (that package links this build's libtutti, where the image's links
#   /usr/local/lib's). Each container's /tmp is a directory of its own (TMPDIR); no bytecode is
#   written (uid 1000 cannot write the image's /usr/local, and here it would land in the source tree).
# The only change to the command: the trainer's arguments get `--max-steps N --log-every 5
# --checkpoint-every 10` appended (a few steps; train.py also `--no-eval`), and --backend as above.
# The ranks' lines are read as torchrun prints them: prefixed `[default<local rank>]:` when its
# command has --tee (pytorchjob.yaml), as the process wrote them when not (pytorchjob-fsdp.yaml).
# run: both containers exit 0; every rank, in its own pod, reports the same step count and the
# same weights checksum; rank 0 (in the master) logged its steps and the checkpoint is on the PVC
# (train.py: rank 0's file; train_fsdp.py: a directory with every rank's shard); nothing is left in
# any pod.
# kill: kill -9 of the worker's training process (torchrun's child) once a checkpoint is on the PVC:
# both containers (torchrun) exit non-zero, so restartPolicy OnFailure restarts them and
# runPolicy.backoffLimit counts it, and nothing is left in any pod. Then the restart: both
# containers run again, as the kubelet would start them, resume from the PVC's checkpoint and
# finish 20 steps later with equal weights on every rank.
# elastic (a manifest with an elasticPolicy: torchrun's elastic agents, PET_NNODES=MIN:MAX): once a
# checkpoint is on the PVC, the last pod is lost (everything in it killed, the namespace deleted).
# The other pods' torchruns must restart their workers into a round without it, which resumes from
# the checkpoint; once that round has saved a checkpoint of its own, the pod is made again (same
# name) and its container started, as the operator recreates a pod: the running agents must take
# it in (a round with every pod, resumed from the checkpoint), and every container exits 0 with the
# final round's ranks on equal weights. Prints the time from the loss to the first resumed step,
# and from the new pod's start to the first step with it.
# master (elastic): the same loss, of worker 0, the pod that serves the rendezvous store. The
# others' torchruns then fail; the pod is made again under its name with a new address (its
# Service's name follows it), and every container is restarted (restartPolicy OnFailure): all meet
# at the name again, resume from the checkpoint and finish.
# Exits 77 (ctest SKIPPED) only where namespaces cannot be made or a pod's Python lacks torch.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PODS_DIR=$(cd "$HERE/../pods" && pwd)
SOURCE=$(cd "$HERE/../../.." && pwd)
CASE=$1 K=$2 MANIFEST=$3 PREFIX=$4 MODE=${5:-run} BACKEND=${6:-gloo}
VENV_PYTHON=${7:-} PACKAGE_DIR=${8:-}
PY=/usr/bin/python3
case $MODE in run | kill | elastic | master) ;; *) echo "FAIL [$CASE]: mode '$MODE' is not run, kill, elastic or master" >&2; exit 1 ;; esac
if [ -n "$VENV_PYTHON" ] && [ -z "$PACKAGE_DIR" ]; then
  echo "FAIL [$CASE]: VENV_PYTHON $VENV_PYTHON given without PACKAGE_DIR (tutti's package for it)" >&2
  exit 1
fi

# shellcheck source=tests/integration/pods/pods.sh
source "$PODS_DIR/pods.sh"
if [ -z "${TUTTI_K8S_INSIDE:-}" ]; then
  pods_check_possible
  "$PY" -c 'import yaml' 2>/dev/null ||
    pods_skip "Debian's /usr/bin/python3 lacks yaml (python3-yaml; make deps)"
  unshare --mount --propagation private true 2>/dev/null ||
    pods_skip "cannot make a mount namespace (unshare --mount needs CAP_SYS_ADMIN)"
  exec unshare --mount --propagation private env TUTTI_K8S_INSIDE=1 bash "$0" "$@"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-k8s-$CASE.XXXXXX")
fail() {
  echo "FAIL [$CASE]: $*" >&2
  for f in "$WORK"/out.*; do
    [ -s "$f" ] && { echo "--- $f" >&2; tail -n 40 "$f" >&2; }
  done
  exit 1
}
note() { echo "[$CASE] $*"; }

CONTAINER_PIDS=()
pods_user_stop() {
  local p
  for p in ${CONTAINER_PIDS[@]+"${CONTAINER_PIDS[@]}"}; do kill -9 "$p" 2>/dev/null || true; done
}
pods_user_cleanup() { pods_private_etc_down "$WORK"; }
trap 'set +e; pods_on_exit' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The venv that stands for the image's: VENV_PYTHON's own (sys.prefix).
PLAN_ARGS=()
if [ -n "$VENV_PYTHON" ]; then
  [ -x "$VENV_PYTHON" ] || pods_skip "no torch 2.x Python at $VENV_PYTHON (scripts/install-torch2.sh; make deps)"
  venv=$("$VENV_PYTHON" -c 'import sys; print(sys.prefix)') || fail "$VENV_PYTHON does not run"
  PLAN_ARGS=(--venv "$venv")
fi
"$PY" "$HERE/pytorchjob_plan.py" ${PLAN_ARGS[@]+"${PLAN_ARGS[@]}"} "$MANIFEST" "$PREFIX" "$SOURCE" \
  "$WORK/pvc" >"$WORK/plan.sh" || fail "pytorchjob_plan.py could not read $MANIFEST"
# shellcheck source=/dev/null
source "$WORK/plan.sh"
for claim in "${PVCS[@]}"; do mkdir -p "$WORK/pvc/$claim"; done

# The trainer, and what its output looks like (regular expressions). TRAINER: the script's name;
# START_LINE: rank 0's first line; step_line S: rank 0's log line for step S; RESUMED_AT: what
# follows `resuming from CKPT ` in rank 0's line after loading, up to the step; TRAIN_ARGS: what the
# runs append besides --max-steps.
TRAINER=
for w in "${ARGV_0[@]}"; do
  case ${w##*/} in train.py | train_fsdp.py) TRAINER=${w##*/} && break ;; esac
done
TRAIN_ARGS=(--log-every 5 --checkpoint-every 10)
case $TRAINER in
  train.py)
    TRAIN_ARGS+=(--no-eval)
    step_line() { echo "epoch 0 step $1 \\("; }
    RESUMED_AT="at epoch 0 step"
    ;;
  train_fsdp.py)
    step_line() { echo "step $1 loss "; }
    RESUMED_AT="at step"
    ;;
  *) fail "the master's command runs neither train.py nor train_fsdp.py: $(printf '%q ' "${ARGV_0[@]}")" ;;
esac
START_LINE="${TRAINER//./\\.}: $WORLD ranks, backend $BACKEND,"
# torchrun --tee (before the script: torchrun's option) prefixes each process's lines with
# `[default<local rank>]:`; without it, the lines are the process's own. OUT0: the prefix of rank 0
# (the master's local rank 0), OUTANY: of any rank.
OUT0="" OUTANY=""
for w in "${ARGV_0[@]}"; do
  case $w in
    */"$TRAINER") break ;;
    --tee | --tee=* | -t) OUT0='\[default0\]:' OUTANY='\[default[0-9]+\]:' ;;
  esac
done
note "PyTorchJob $JOB: ${#PODS[@]} pods x $NPROC processes of $TRAINER, backend $BACKEND"

# Each pod's Python path for tutti's package, as its image has it: a venv image's package is in
# the venv (here PACKAGE_DIR); Debian's python3 finds it in cmake --install's
# lib/python3*/dist-packages. Its Python must import torch and torchrun (else: skipped), and
# tutti.torch for backend tutti (else: failed); each Python and path is tried once.
DIST_PACKAGES=
for d in "$PREFIX"/lib/python3*/dist-packages; do
  [ -d "$d" ] && DIST_PACKAGES=${DIST_PACKAGES:+$DIST_PACKAGES:}$d
done
PYPATHS=()
declare -A TRIED=()
for i in "${!PODS[@]}"; do
  venv_i="VENV_$i" argv_i="ARGV_${i}[0]"
  if [ -n "${!venv_i}" ]; then PYPATHS[i]=$PACKAGE_DIR; else PYPATHS[i]=$DIST_PACKAGES; fi
  python=${!argv_i}
  [ -z "${TRIED["$python:${PYPATHS[i]}"]:-}" ] || continue
  TRIED["$python:${PYPATHS[i]}"]=1
  rc=0
  why=$(env -i PATH=/usr/local/bin:/usr/bin:/bin ${PYPATHS[i]:+PYTHONPATH=${PYPATHS[i]}} "$python" -c '
import sys
try:
    import torch, torch.distributed.run
except ImportError as e:
    print(e)
    sys.exit(3)
if sys.argv[1] == "tutti":
    import tutti.torch' "$BACKEND" 2>&1) || rc=$?
  [ "$rc" -ne 3 ] || pods_skip "${PODS[$i]}'s $python cannot import torch and torch.distributed.run" \
    "($why; Debian's: python3-torch; a venv: scripts/install-torch2.sh; make deps)"
  [ "$rc" -eq 0 ] || fail "backend $BACKEND: ${PODS[$i]}'s $python (PYTHONPATH=${PYPATHS[i]}) cannot" \
    "import tutti.torch: $(printf '%s' "$why" | tail -n 1)"
done

pods_private_etc "$WORK" || fail "cannot mount a private /etc (tmpfs + overlay)"

pods_bridge_up "$K" || fail "bridge setup failed"
for i in "${!PODS[@]}"; do pod_add "${PODS[$i]}" "$K" "$i" || fail "cannot make pod ${PODS[$i]}"; done
for i in "${!PODS[@]}"; do
  pod_link_wait "${PODS[$i]}" eth0 "tp${K}h${i}" || fail "${PODS[$i]}'s link never came up"
done
# The operator's headless Service per pod: <pod> and <pod>.<job>... resolve to the pod.
{
  echo "$ORIGINAL_HOSTS"
  for i in "${!PODS[@]}"; do
    echo "$(pod_ip "$K" "$i") ${PODS[$i]} ${PODS[$i]}.$NAMESPACE.svc ${PODS[$i]}.$NAMESPACE.svc.cluster.local"
  done
} >/etc/hosts

# argv_for I EXTRA...: pod I's command with --backend set and EXTRA appended to the trainer's args.
argv_for() {
  local i=$1
  shift
  local -n words="ARGV_$i"
  ARGV=("${words[@]}")
  local j found=0
  for j in "${!ARGV[@]}"; do
    if [ "${ARGV[$j]}" = --backend ]; then ARGV[j + 1]=$BACKEND found=1; fi
  done
  [ $found = 1 ] || fail "pod ${PODS[$i]}'s $TRAINER gets no --backend"
  ARGV+=("$@")
}

# start_pod I OUT EXTRA...: pod I's container, as the kubelet starts it: its env and nothing else,
# in its pod, under its hostname, output to OUT; CONTAINER_PIDS[I] is its pid.
CONTAINER_PIDS=()
start_pod() {
  local i=$1 out=$2
  shift 2
  argv_for "$i" "$@"
  local -n env="ENV_$i"
  mkdir -p "$WORK/tmp.$i" "$WORK/home.$i"
  # shellcheck disable=SC2016 # $0 and $@ are the inner shell's
  ip netns exec "${PODS[$i]}" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "${PODS[$i]}" \
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$WORK/home.$i" TMPDIR="$WORK/tmp.$i" PYTHONDONTWRITEBYTECODE=1 \
    ${PYPATHS[i]:+PYTHONPATH=${PYPATHS[i]}} "${env[@]}" "${ARGV[@]}" >"$out" 2>&1 </dev/null &
  CONTAINER_PIDS[i]=$!
}

# start_pods EXTRA...: every pod's container, output to $WORK/out.<i>.<attempt>.
ATTEMPT=0
start_pods() {
  ATTEMPT=$((ATTEMPT + 1))
  CONTAINER_PIDS=()
  local i
  for i in "${!PODS[@]}"; do start_pod "$i" "$WORK/out.$i.$ATTEMPT" "$@"; done
  note "attempt $ATTEMPT: $(printf '%q ' "${ARGV[@]}")"
}

# wait_pods SECONDS: waits for every container; RCS[i] = its exit status (fails past SECONDS).
wait_pods() {
  local deadline=$(($(date +%s) + $1)) i
  RCS=()
  for i in "${!CONTAINER_PIDS[@]}"; do
    while kill -0 "${CONTAINER_PIDS[$i]}" 2>/dev/null; do
      [ "$(date +%s)" -lt "$deadline" ] || fail "pod ${PODS[$i]}'s container still runs after $1 s"
      sleep 0.2
    done
    set +e
    wait "${CONTAINER_PIDS[$i]}"
    RCS[i]=$?
    set -e
  done
  CONTAINER_PIDS=()
}

leftovers() {
  local ns
  for ns in "${PODS[@]}"; do ip netns pids "$ns" 2>/dev/null; done
  return 0
}
expect_no_leftovers() { pods_expect_no_leftovers leftovers; }

# check_finished STEPS: every rank ran in its pod (node rank i holds ranks i*NPROC..) and reports
# STEPS steps and the same weights checksum; rank 0 logged step STEPS.
check_finished() {
  local steps=$1 i r line sum first=
  for i in "${!PODS[@]}"; do
    for ((r = i * NPROC; r < (i + 1) * NPROC; r++)); do
      line=$(grep -E "^${OUTANY}rank $r: [0-9]+ steps, weights checksum [0-9a-f]+$" \
        "$WORK/out.$i.$ATTEMPT" || true)
      [ -n "$line" ] || fail "rank $r did not finish in pod ${PODS[$i]}"
      echo "  ${PODS[$i]}: rank ${line#*rank }"
      [[ $line == *": $steps steps, "* ]] || fail "rank $r ran other than $steps steps: $line"
      sum=${line##* }
      first=${first:-$sum}
      [ "$sum" = "$first" ] || fail "rank $r's weights ($sum) differ from rank 0's ($first)"
    done
  done
  grep -qE "^${OUT0}$START_LINE" "$WORK/out.0.$ATTEMPT" ||
    fail "rank 0 did not report $WORLD ranks on backend $BACKEND"
  grep -qE "^${OUT0}$(step_line "$steps")" "$WORK/out.0.$ATTEMPT" || fail "rank 0 did not log step $steps"
  local total=0
  for i in "${!PODS[@]}"; do total=$((total + $(grep -cE "^${OUTANY}rank [0-9]+: " "$WORK/out.$i.$ATTEMPT"))); done
  [ "$total" -eq "$WORLD" ] || fail "$total ranks finished, the job has $WORLD"
}

# check_checkpoint STEP: the checkpoint rank 0 said it saved at STEP is on the PVC, whole: train.py's
# file; train_fsdp.py's directory with its metadata and one shard per rank, and no unfinished save
# beside it.
check_checkpoint() {
  grep -qxE "${OUT0}checkpoint saved at step $1" "$WORK/out.0.$ATTEMPT" ||
    fail "rank 0 saved no checkpoint at step $1"
  if [ "$TRAINER" = train.py ]; then
    [ -s "$CKPT" ] || fail "no checkpoint at $CKPT (the PVC)"
    return 0
  fi
  [ -d "$CKPT" ] || fail "no checkpoint directory at $CKPT (the PVC)"
  [ -s "$CKPT/.metadata" ] || fail "the checkpoint $CKPT has no .metadata"
  local shards
  shards=$(find "$CKPT" -maxdepth 1 -name '*.distcp' | wc -l)
  [ "$shards" -eq "$WORLD" ] || fail "the checkpoint $CKPT has $shards shard files, the job has $WORLD ranks"
  [ ! -e "$CKPT.tmp" ] || fail "an unfinished save ($CKPT.tmp) is left beside $CKPT"
}

CKPT=$(printf '%s\n' "${ARGV_0[@]}" | grep -A1 -x -- --checkpoint | tail -1)
case $CKPT in "$WORK/pvc/"*) ;; *) fail "the master's --checkpoint ($CKPT) is not on a PVC" ;; esac
STARTED=$(date +%s)
# poll SECONDS WHAT COMMAND...: until COMMAND succeeds (every 0.1 s); fails naming WHAT past SECONDS.
poll() {
  local deadline=$(($(date +%s) + $1)) what=$2
  shift 2
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || fail "$what: not within the time allowed"
    sleep 0.1
  done
}
# after_line FIRST THEN FILE...: whether some file has a line matching THEN after one matching FIRST
# (the n-th such FIRST, n = ${NTH:-1}).
after_line() {
  local first=$1 then=$2 f
  shift 2
  for f in "$@"; do
    [ -f "$f" ] || continue
    awk -v a="$first" -v b="$then" -v nth="${NTH:-1}" '$0 ~ a { n++ } n >= nth && $0 ~ b { found = 1 } END { exit !found }' "$f" && return 0
  done
  return 1
}
seconds_since() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }

if [ "$MODE" = elastic ] || [ "$MODE" = master ]; then
  [ -n "$ELASTIC" ] || fail "mode $MODE needs a manifest with an elasticPolicy"
  [ "$TRAINER" = train.py ] || fail "mode $MODE runs train.py"
  N=${#PODS[@]}
  [ "$NPROC" -eq 1 ] || fail "mode $MODE counts ranks as pods: give --nproc_per_node 1"
  VICTIM=$((N - 1))
  [ "$MODE" = master ] && VICTIM=0
  # elastic: enough steps that the 2-pod round still trains when the pod comes back; master: no
  # mid-run join, so fewer.
  STEPS=300
  [ "$MODE" = master ] && STEPS=120
  RUN_ARGS=("${TRAIN_ARGS[@]}" --max-steps "$STEPS" --step-delay 0.1)
  ranks_line() { echo "train.py: $1 ranks, backend $BACKEND,"; }
  step_any='epoch [0-9]+ step [0-9]+ \('
  start_pods "${RUN_ARGS[@]}"
  poll 180 "a round of $N pods and a checkpoint" after_line "$(ranks_line "$N")" "checkpoint saved at step" "$WORK"/out.*.1
  saved=$(cat "$WORK"/out.*.1 | grep -oE "checkpoint saved at step [0-9]+" | tail -1 | grep -oE '[0-9]+$')
  note "$N pods training, checkpoint at step $saved; losing pod ${PODS[$VICTIM]}"
  lost_at=$(date +%s.%N)
  pods_kill_and_delete "${PODS[$VICTIM]}"
  wait "${CONTAINER_PIDS[$VICTIM]}" 2>/dev/null || true
  unset "CONTAINER_PIDS[$VICTIM]"
  others=()
  for i in "${!PODS[@]}"; do [ "$i" -eq "$VICTIM" ] || others+=("$WORK/out.$i.1"); done
  if [ "$MODE" = elastic ]; then
    # The others regroup without it and resume from the checkpoint.
    poll 180 "the other $((N - 1)) pods regrouping and training" \
      after_line "$(ranks_line $((N - 1)))" "$step_any" "${others[@]}"
    regroup=$(seconds_since "$lost_at")
    resumed=$(cat "${others[@]}" | grep -oE "resuming from $CKPT at epoch [0-9]+ step [0-9]+" | tail -1 | grep -oE '[0-9]+$')
    [ -n "$resumed" ] && [ "$resumed" -ge "$saved" ] || fail "the $((N - 1)) pods did not resume from the step-$saved checkpoint (resumed: ${resumed:-none})"
    note "$((N - 1)) pods went on from step $resumed; first step $regroup s after the loss"
    poll 120 "a checkpoint of the $((N - 1))-pod round" \
      after_line "$(ranks_line $((N - 1)))" "checkpoint saved at step" "${others[@]}"
    # The operator makes the pod again, under its name and address; the kubelet starts its container.
    pod_add "${PODS[$VICTIM]}" "$K" "$VICTIM" || fail "cannot make ${PODS[$VICTIM]} again"
    pod_link_wait "${PODS[$VICTIM]}" eth0 "tp${K}h${VICTIM}" || fail "${PODS[$VICTIM]}'s link never came up"
    added_at=$(date +%s.%N)
    start_pod "$VICTIM" "$WORK/out.$VICTIM.2" "${RUN_ARGS[@]}"
    finals=("${others[@]}" "$WORK/out.$VICTIM.2")
    NTH=2 poll 180 "a round with the new pod" after_line "$(ranks_line "$N")" "$step_any" "${finals[@]}" "$WORK/out.$VICTIM.1"
    grow=$(seconds_since "$added_at")
    note "$N pods again; first step with the new pod $grow s after its container started"
    wait_pods 240
    note "containers exited ${RCS[*]}"
    for i in "${!RCS[@]}"; do [ "${RCS[$i]}" -eq 0 ] || fail "pod ${PODS[$i]}'s container exited ${RCS[$i]}"; done
  else
    # The others' torchruns lose the rendezvous store with worker 0 and fail; then the pod comes
    # back under its name with a new address, and every container is restarted.
    wait_pods 180
    note "the other containers exited ${RCS[*]} after losing the rendezvous host"
    for i in "${!RCS[@]}"; do [ "${RCS[$i]}" -ne 0 ] || fail "pod ${PODS[$i]}'s container exited 0 without its rendezvous host"; done
    pod_add "${PODS[0]}" "$K" 9 || fail "cannot make ${PODS[0]} again"
    pod_link_wait "${PODS[0]}" eth0 "tp${K}h9" || fail "${PODS[0]}'s link never came up"
    sed -i "s/^$(pod_ip "$K" 0) ${PODS[0]} /$(pod_ip "$K" 9) ${PODS[0]} /" /etc/hosts
    grep -q "^$(pod_ip "$K" 9) ${PODS[0]} " /etc/hosts || fail "${PODS[0]}'s name does not follow it"
    note "${PODS[0]} is back at $(pod_ip "$K" 9); restarting every container"
    back_at=$(date +%s.%N)
    ATTEMPT=1
    start_pods "${RUN_ARGS[@]}"
    finals=("$WORK"/out.*.2)
    poll 180 "every pod training again" after_line "$(ranks_line "$N")" "$step_any" "${finals[@]}"
    resumed=$(cat "${finals[@]}" | grep -oE "resuming from $CKPT at epoch [0-9]+ step [0-9]+" | tail -1 | grep -oE '[0-9]+$')
    [ -n "$resumed" ] && [ "$resumed" -ge "$saved" ] || fail "the job did not resume from the step-$saved checkpoint (resumed: ${resumed:-none})"
    note "resumed at step $resumed; first step $(seconds_since "$back_at") s after the restart"
    wait_pods 240
    for i in "${!RCS[@]}"; do [ "${RCS[$i]}" -eq 0 ] || fail "restarted pod ${PODS[$i]}'s container exited ${RCS[$i]}"; done
  fi
  # The last round's ranks (one per pod) ran to the end on equal weights.
  sums=$(cat "${finals[@]}" | grep -oE "rank [0-9]+: $STEPS steps, weights checksum [0-9a-f]+" | sort -u)
  [ "$(echo "$sums" | grep -c .)" -eq "$N" ] || fail "$(echo "$sums" | grep -c .) ranks finished $STEPS steps, want $N: $sums"
  [ "$(echo "$sums" | awk '{ print $NF }' | sort -u | wc -l)" -eq 1 ] || fail "the ranks ended on different weights: $sums"
  note "$N ranks finished $STEPS steps on weights $(echo "$sums" | awk 'NR == 1 { print $NF }')"
  expect_no_leftovers
  note PASS
  exit 0
fi

if [ "$MODE" = run ]; then
  start_pods --max-steps 20 "${TRAIN_ARGS[@]}"
  wait_pods 200
  note "containers exited ${RCS[*]} after $(($(date +%s) - STARTED)) s"
  for i in "${!PODS[@]}"; do [ "${RCS[$i]}" -eq 0 ] || fail "pod ${PODS[$i]}'s container exited ${RCS[$i]}"; done
  check_finished 20
  check_checkpoint 20
  note "$WORLD ranks in ${#PODS[@]} pods, 20 steps, equal weights; checkpoint on the PVC"
  expect_no_leftovers
else
  start_pods --max-steps 100000 "${TRAIN_ARGS[@]}"
  victim=
  deadline=$(($(date +%s) + 240))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if grep -qE "^${OUT0}checkpoint saved at step" "$WORK/out.0.$ATTEMPT"; then
      # The worker's training process: the child of torchrun running the trainer.
      for p in $(ip netns pids "${PODS[1]}" 2>/dev/null); do
        args=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null || true)
        [[ $args == *"/$TRAINER "* && $args != *torch.distributed.run* ]] && victim=$p
      done
      [ -n "$victim" ] && break
    fi
    for p in "${CONTAINER_PIDS[@]}"; do kill -0 "$p" 2>/dev/null || fail "a container ended before the kill"; done
    sleep 0.1
  done
  [ -n "$victim" ] || fail "no checkpoint and training process within 240 s"
  saved=$(grep -oE "^${OUT0}checkpoint saved at step [0-9]+" "$WORK/out.0.$ATTEMPT" | tail -1 | grep -oE '[0-9]+$')
  note "checkpoint at step $saved; killing the training process $victim in ${PODS[1]} with SIGKILL"
  kill -9 "$victim"
  wait_pods 90
  note "containers exited ${RCS[*]} after $(($(date +%s) - STARTED)) s"
  for i in "${!PODS[@]}"; do
    [ "${RCS[$i]}" -ne 0 ] || fail "pod ${PODS[$i]}'s container exited 0 although a rank was killed"
  done
  grep -E 'exitcode *: *-9|Signal 9' "$WORK/out.1.$ATTEMPT" | head -2 || true
  grep -qE 'exitcode *: *-9' "$WORK/out.1.$ATTEMPT" || fail "the worker's torchrun did not report its rank killed by signal 9"
  expect_no_leftovers
  note "both containers failed, nothing left in the pods: restartPolicy OnFailure restarts them"
  # The kubelet restarts both containers; the trainer resumes from the PVC.
  STARTED=$(date +%s)
  start_pods --max-steps $((saved + 20)) "${TRAIN_ARGS[@]}"
  wait_pods 200
  note "restarted containers exited ${RCS[*]} after $(($(date +%s) - STARTED)) s"
  for i in "${!PODS[@]}"; do [ "${RCS[$i]}" -eq 0 ] || fail "restarted pod ${PODS[$i]}'s container exited ${RCS[$i]}"; done
  resumed=$(grep -oE "^${OUT0}resuming from $CKPT $RESUMED_AT [0-9]+" "$WORK/out.0.$ATTEMPT" | grep -oE '[0-9]+$' || true)
  [ -n "$resumed" ] || fail "the restarted master did not resume from $CKPT"
  [ "$resumed" -ge "$saved" ] || fail "resumed at step $resumed, before the checkpoint of step $saved"
  note "resumed at step $resumed"
  check_finished $((saved + 20))
  check_checkpoint $((saved + 20))
  expect_no_leftovers
fi
note PASS
