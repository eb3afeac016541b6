#!/usr/bin/env bash
# The manifests are executable truth: run an MPIJob's or TrainJob's launcher exactly as the YAML
# says, on network-namespace pods, with the hostfile and env the operator would give it.
#
#   run_manifest.sh CASE K MANIFEST PREFIX [run|kill|elastic]
#
# K: this case's subnet 198.18.K.0/24 (unique per case). PREFIX: a `cmake --install` tree; the
# images' /usr/local paths in the YAML are mapped onto it (job_plan.py), nothing else is changed.
# What stands in for the cluster, and nothing more:
# - pods: one network namespace per pod (../pods/pods.sh) with its own hostname, the launcher too;
# - cluster DNS: the hostfile's names in /etc/hosts, and /etc/mpi/hostfile as the operator writes
#   it (job_plan.py), both in a private mount namespace over a throwaway overlay of /etc;
# - kubexec style: `kubectl exec` is ../pods/kubectl (ip netns exec into the pod);
# - ssh style: each worker runs a real sshd on the worker's readinessProbe port, the operator's
#   Secret is a key made here, and the launcher image's ssh_config.d/tutti.conf is written to the
#   overlay's /etc/ssh/ssh_config.d (with that key). The test runs as root where the image runs as
#   uid 1000, so mpirun gets OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM) added.
# run: the job must exit 0, tutti-bench's check must report 0 wrong elements, ranks must have run in
# the worker pods slot by slot, and nothing may be left in any pod.
# kill: (with the bench's -n raised so the job is still running) kill -9 of the rank in worker 1:
# the launcher must exit non-zero naming that rank, and nothing may be left in any pod.
# elastic (a launcher running `tuttirun --pods-selector`, the ranks train_elastic.py): the worker
# pods carry mpi-operator's labels, which the stand-in kubectl's `get pods -l` lists. Once every rank
# trains, the last worker pod is lost (everything in it killed, the namespace deleted): the others
# must go on; then the pod is made again under its name, and tuttirun must find it and start a rank
# there, which the others take in. The launcher must exit 0 with every rank of the last membership
# on equal weights, and nothing may be left in any pod. The ranks' Python finds tutti in PREFIX (the
# image has it on Debian's path).
# Exits 77 (ctest SKIPPED) only where namespaces cannot be made.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PODS_DIR=$(cd "$HERE/../pods" && pwd)
CASE=$1 K=$2 MANIFEST=$3 PREFIX=$4 MODE=${5:-run}

# shellcheck source=tests/integration/pods/pods.sh
source "$PODS_DIR/pods.sh"
# shellcheck source=bench_checks.sh
source "$HERE/bench_checks.sh"
if [ -z "${TUTTI_K8S_INSIDE:-}" ]; then
  pods_check_possible
  unshare --mount --propagation private true 2>/dev/null ||
    pods_skip "cannot make a mount namespace (unshare --mount needs CAP_SYS_ADMIN)"
  exec unshare --mount --propagation private env TUTTI_K8S_INSIDE=1 bash "$0" "$@"
fi

fail() {
  echo "FAIL [$CASE]: $*" >&2
  for f in "$WORK"/out "$WORK"/err "$WORK"/sshd.*.log; do
    [ -s "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
  done
  exit 1
}
note() { echo "[$CASE] $*"; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-k8s-$CASE.XXXXXX")
ALL_PODS=()
# The sshd listeners this script started in the pods (sshd rewrites its process title, but the
# config path stays in it).
is_our_sshd() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "-f $WORK/sshd_config."; }
sshd_pids() {
  local ns p
  for ns in ${ALL_PODS[@]+"${ALL_PODS[@]}"}; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do is_our_sshd "$p" && echo "$p"; done
  done
  return 0
}
LAUNCHER_PID=
pods_user_stop() {
  if [ -n "$LAUNCHER_PID" ]; then kill -9 "$LAUNCHER_PID" 2>/dev/null || true; fi
  # The workers' sshds (the worker containers' own processes), before pods_down looks for leftovers.
  local p
  for p in $(sshd_pids); do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 1 50); do [ -z "$(sshd_pids)" ] && break; sleep 0.05; done
}
pods_user_cleanup() { pods_private_etc_down "$WORK"; }
trap 'set +e; pods_on_exit' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

/usr/bin/python3 "$HERE/job_plan.py" "$MANIFEST" "$PREFIX" >"$WORK/plan.sh" || fail "job_plan.py could not read $MANIFEST"
# shellcheck source=/dev/null
source "$WORK/plan.sh"
STYLE=ssh
for kv in "${LAUNCHER_ENV[@]}"; do
  case $kv in OMPI_MCA_plm_rsh_agent=*kubexec | PRTE_MCA_plm_ssh_agent=*kubexec) STYLE=kubexec ;; esac
done
for w in "${LAUNCHER_ARGV[@]}"; do
  [ "$w" = -- ] && break
  [ "$w" = --pods-selector ] && STYLE=kubexec  # tuttirun --pods-selector execs through kubexec
done
MPIRUN=0
for w in "${LAUNCHER_ARGV[@]}"; do
  [ "$w" = -- ] && break
  [ "$w" = --mpirun ] && MPIRUN=1
done
if [ $MPIRUN = 1 ]; then
  command -v mpirun >/dev/null 2>&1 || pods_skip "no mpirun on PATH (Debian package openmpi-bin; make deps installs it)"
fi
note "$KIND $JOB ($MPI_IMPLEMENTATION): ${#WORKER_PODS[@]} workers x $SLOTS slots$([ -n "$LAUNCHER_HOST" ] && echo ' and the launcher'), $STYLE style$([ $MPIRUN = 1 ] && echo ', --mpirun')"

pods_private_etc "$WORK" || fail "cannot mount a private /etc (tmpfs + overlay)"

# The pods: the launcher is pod 0 of the subnet, workers 1..N.
pods_bridge_up "$K" || fail "bridge setup failed"
LAUNCHER_POD="$JOB-launcher"
ALL_PODS=("$LAUNCHER_POD" "${WORKER_PODS[@]}")
for i in "${!ALL_PODS[@]}"; do
  pod_add "${ALL_PODS[$i]}" "$K" "$i" || fail "cannot make pod ${ALL_PODS[$i]}"
done
# The labels mpi-operator gives worker pods (what a --pods-selector lists).
WORKER_LABELS="training.kubeflow.org/job-name=$JOB,training.kubeflow.org/job-role=worker"
for i in "${!ALL_PODS[@]}"; do
  labels=''
  [ "$i" -gt 0 ] && labels=$WORKER_LABELS
  PODS_LABELS=$labels pod_link_wait "${ALL_PODS[$i]}" eth0 "tp${K}h${i}" ||
    fail "${ALL_PODS[$i]}'s link never came up"
done

# Cluster DNS for the hostfile's names, and the operator's hostfile.
{
  echo "$ORIGINAL_HOSTS"
  for i in "${!WORKER_PODS[@]}"; do
    echo "$(pod_ip "$K" $((i + 1))) ${WORKER_HOSTS[$i]} ${WORKER_PODS[$i]}"
  done
  # runLauncherAsWorker: the launcher's own name heads the hostfile.
  echo "$(pod_ip "$K" 0) ${LAUNCHER_HOST:+$LAUNCHER_HOST }$LAUNCHER_POD"
} >/etc/hosts
mkdir -p /etc/mpi
printf '%s' "$HOSTFILE" >/etc/mpi/hostfile
note "hostfile: $(tr '\n' ';' </etc/mpi/hostfile)"

# in_pod POD CMD...: CMD in POD's network namespace, under POD's own hostname.
in_pod() {
  local pod=$1
  shift
  ip netns exec "$pod" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$pod" "$@"
}

LAUNCHER_PATH="$PREFIX/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
EXTRA_ENV=()
if [ "$STYLE" = kubexec ]; then
  # The stand-in kubectl first on PATH, where the launcher image has the real one.
  LAUNCHER_PATH="$PODS_DIR:$LAUNCHER_PATH"
else
  [ -x "${WORKER_ARGV[0]}" ] || pods_skip "no ${WORKER_ARGV[0]} here (the worker's sshd; Debian package openssh-server)"
  command -v ssh-keygen >/dev/null || pods_skip "no ssh-keygen (openssh-client)"
  ssh-keygen -q -t ed25519 -N '' -f "$WORK/host_key" || fail "ssh-keygen (host key)"
  ssh-keygen -q -t ed25519 -N '' -f "$WORK/id" || fail "ssh-keygen (the operator's key pair)"
  cp "$WORK/id.pub" "$WORK/authorized_keys"
  mkdir -p /run/sshd
  for i in "${!WORKER_PODS[@]}"; do
    pod=${WORKER_PODS[$i]}
    cat >"$WORK/sshd_config.$i" <<CONF
ListenAddress $(pod_ip "$K" $((i + 1)))
Port $SSH_PORT
HostKey $WORK/host_key
AuthorizedKeysFile $WORK/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
CONF
    in_pod "$pod" "${WORKER_ARGV[0]}" -D -e -f "$WORK/sshd_config.$i" 2>"$WORK/sshd.$i.log" &
  done
  # What docker/Dockerfile (the launcher target) writes to /etc/ssh/ssh_config.d/tutti.conf, plus the key the
  # operator's Secret would put at sshAuthMountPath.
  port=$(sed -n 's/.*\(Port [0-9]*\).*/\1/p' "$HERE/../../../docker/Dockerfile" | head -1)
  [ "$port" = "Port $SSH_PORT" ] || fail "the launcher image's ssh client uses '$port', the workers' sshd listens on $SSH_PORT"
  mkdir -p /etc/ssh/ssh_config.d
  printf '%s\n' 'Host *' "  Port $SSH_PORT" '  StrictHostKeyChecking no' '  UserKnownHostsFile /dev/null' \
    '  LogLevel ERROR' "  IdentityFile $WORK/id" >/etc/ssh/ssh_config.d/tutti.conf
  [ $MPIRUN = 1 ] && EXTRA_ENV+=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
fi

ARGV=("${LAUNCHER_ARGV[@]}")
if [ "$MODE" = elastic ]; then
  # A run short enough for a test, slow enough for a pod to be lost and made again mid-run.
  for i in "${!ARGV[@]}"; do
    if [ "${ARGV[$i]}" = --steps ]; then ARGV[i + 1]=300; fi
  done
  ARGV+=(--step-delay 0.05 --log-every 10)
  for d in "$PREFIX"/lib/python3*/dist-packages; do EXTRA_ENV+=("PYTHONPATH=$d"); done
fi
if [ "$MODE" = kill ]; then
  # Long enough to be killed mid-run: the bench's -n only.
  for i in "${!ARGV[@]}"; do
    if [ "${ARGV[$i]}" = -n ]; then ARGV[i + 1]=100000; fi
  done
fi
# The launcher container: its env and nothing else (env -i), in its pod, under its hostname.
LAUNCH=(ip netns exec "$LAUNCHER_POD" unshare --uts -- sh -c 'hostname "$0" && exec "$@"' "$LAUNCHER_POD"
  env -i PATH="$LAUNCHER_PATH" HOME="$WORK" "${LAUNCHER_ENV[@]}" ${EXTRA_ENV[@]+"${EXTRA_ENV[@]}"} "${ARGV[@]}")

# Processes in any pod other than the sshd listeners this script started (the worker containers'
# own process): what a job must not leave.
job_leftovers() {
  local p ns
  for ns in "${ALL_PODS[@]}"; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do
      is_our_sshd "$p" && continue
      echo "$p"
    done
  done
}
expect_no_leftovers() { pods_expect_no_leftovers job_leftovers; }
rank_pids_in() {
  local p
  for p in $(ip netns pids "$1" 2>/dev/null); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = tutti-bench ] && echo "$p"
  done
  return 0
}

# launcher_end SECONDS WHAT: waits for the background launcher to exit (fails after SECONDS, WHAT
# saying since when); RC is its exit status.
launcher_end() {
  local i
  for ((i = 0; i < $1 * 10; i++)); do
    kill -0 "$LAUNCHER_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$LAUNCHER_PID" 2>/dev/null && fail "the launcher still runs $1 s after $2"
  set +e
  wait "$LAUNCHER_PID"
  RC=$?
  set -e
  LAUNCHER_PID=
  note "launcher exited $RC after $(($(date +%s) - START)) s"
}

START=$(date +%s)
if [ "$MODE" = elastic ]; then
  "${LAUNCH[@]}" >"$WORK/out" 2>"$WORK/err" </dev/null &
  LAUNCHER_PID=$!
  n=${#WORKER_PODS[@]}
  last=$((n - 1))
  victim_pod=${WORKER_PODS[$last]}
  wait_for() {  # wait_for SECONDS WHAT PATTERN FILE
    local i
    for ((i = 0; i < $1 * 10; i++)); do
      grep -qE "$3" "$4" && return 0
      kill -0 "$LAUNCHER_PID" 2>/dev/null || fail "the launcher ended while waiting for $2"
      sleep 0.1
    done
    fail "no $2 within $1 s"
  }
  wait_for 120 "$n ranks training" "train_elastic.py: $n ranks" "$WORK/out"
  wait_for 60 "a commit" "step (1[0-9]|[2-9][0-9]) loss" "$WORK/out"
  note "$n ranks train; losing pod $victim_pod"
  lost_at=$(date +%s.%N)
  pods_kill_and_delete "$victim_pod"
  wait_for 60 "the others going on" "train_elastic.py: $((n - 1)) ranks from step" "$WORK/out"
  note "the other $((n - 1)) went on after $(awk -v s="$lost_at" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }') s"
  grep -q "ranks go on (--min-np" "$WORK/err" || fail "tuttirun did not say the others go on"
  # The operator makes the pod again under its name (its labels too); tuttirun must find it.
  pod_add "$victim_pod" "$K" "$n" || fail "cannot make $victim_pod again"
  PODS_LABELS=$WORKER_LABELS pod_link_wait "$victim_pod" eth0 "tp${K}h${n}" || fail "$victim_pod's link never came up"
  added_at=$(date +%s.%N)
  wait_for 120 "a rank in the new pod" "train_elastic.py: $n ranks from step" "$WORK/out"
  note "$n ranks again $(awk -v s="$added_at" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }') s after the pod came back"
  launcher_end 120 "the pod came back"
  [ "$RC" -eq 0 ] || fail "the launcher exited $RC"
  grep -qE "membership [0-9]+: $n ranks; joining: member [0-9]+ on $victim_pod" "$WORK/err" ||
    fail "tuttirun did not start a rank in the new $victim_pod"
  sums=$(grep -oE "rank [0-9]+: 300 steps, weights checksum [0-9a-f]+" "$WORK/out" | sort -u)
  [ "$(grep -c . <<<"$sums")" -eq "$n" ] || fail "$(grep -c . <<<"$sums") ranks finished 300 steps, want $n: $sums"
  [ "$(awk '{ print $NF }' <<<"$sums" | sort -u | wc -l)" -eq 1 ] || fail "the ranks ended on different weights: $sums"
  note "$n ranks finished 300 steps on weights $(awk 'NR == 1 { print $NF }' <<<"$sums")"
  expect_no_leftovers
elif [ "$MODE" = run ]; then
  set +e
  timeout -k 5 150 "${LAUNCH[@]}" >"$WORK/out" 2>"$WORK/err" </dev/null
  RC=$?
  set -e
  note "launcher exited $RC after $(($(date +%s) - START)) s"
  [ "$RC" -eq 0 ] || fail "the launcher exited $RC"
  # The pods that run ranks, in hostfile order (runLauncherAsWorker: the launcher's first).
  RANK_PODS=("${WORKER_PODS[@]}")
  [ -n "$LAUNCHER_HOST" ] && RANK_PODS=("$LAUNCHER_POD" "${WORKER_PODS[@]}")
  expect_bench_in_pods "$WORK/out" "$SLOTS" "${RANK_PODS[@]}"
  expect_no_leftovers
else
  "${LAUNCH[@]}" >"$WORK/out" 2>"$WORK/err" </dev/null &
  LAUNCHER_PID=$!
  victim_pod=${WORKER_PODS[1]}
  victim=
  for _ in $(seq 1 300); do
    victim=$(rank_pids_in "$victim_pod" | head -1)
    ready=1
    for pod in "${WORKER_PODS[@]}"; do [ -n "$(rank_pids_in "$pod")" ] || ready=0; done
    # Every rank has joined once rank 0 printed the last rank's header line.
    [ -n "$victim" ] && [ $ready = 1 ] && grep -qE "^(\[0\] )?#  Rank +$((${#WORKER_PODS[@]} * SLOTS - 1)) " "$WORK/out" && break
    kill -0 "$LAUNCHER_PID" 2>/dev/null || fail "the launcher ended before every rank was running"
    sleep 0.1
  done
  [ -n "$victim" ] || fail "no rank ever ran in $victim_pod"
  note "killing rank pid $victim in $victim_pod with SIGKILL"
  kill -9 "$victim"
  launcher_end 60 "a rank was killed"
  [ "$RC" -ne 0 ] || fail "the launcher exited 0 although a rank was killed"
  grep -E "rank [0-9]+ on $victim_pod" "$WORK/err" | head -2
  grep -qE "rank [0-9]+ on ${victim_pod}[^ ]* \(pid [0-9]+\).*(status 137|signal 9|SIGKILL)" "$WORK/err" ||
    fail "the launcher did not name the killed rank in $victim_pod"
  expect_no_leftovers
fi
note PASS
