#!/usr/bin/env bash
# Kubeflow jobs of containers: the manifests of examples/k8s run as the operators would run them,
# with the images build.sh made (tutti-launcher:test, tutti-worker:test), one podman container per
# pod, each joined to a network-namespace pod of ../pods/pods.sh. Nothing in the containers is
# stood in; what stands in for the cluster, and nothing more:
# - pods and cluster DNS: each container in its pod's network namespace, under the pod's hostname,
#   with the hostfile's names (and the Services' names) in its /etc/hosts (--add-host);
# - the operator: its hostfile mounted at /etc/mpi/hostfile, its env added to the launcher's, its ssh
#   Secret (a key pair made here) at sshAuthMountPath, /dev/shm sized as the manifests' volume;
# - the API server, for `kubectl exec` (kubexec style): an sshd outside the containers that runs
#   `podman exec -i POD CMD` (apiserver_exec), reached by the launcher image's kubectl, which is the
#   stand-in ./kubectl (build.sh built it in).
#
#   containers.sh CASE K SOURCE STATE
# CASE: mpijob_ssh, mpijob_kubexec, mpijob_mpirun (the MPIJob manifest of that style: the job must
# exit 0 with tutti-bench's check at 0 wrong elements and every rank in its worker container, slot by
# slot); mpijob_kill (mpijob-ssh.yaml, kill -9 of a rank in worker 1: the launcher container must
# exit non-zero within 2 s naming it); pytorchjob (pytorchjob.yaml: torchrun with backend tutti in
# the Master and Worker containers, one short epoch of train.py, equal weights everywhere). After
# each: no container, pod, cgroup, shared-memory mount or /dev/shm file of the job is left.
# K: the subnet 198.18.K.0/24. Exits 77 (ctest SKIPPED) where build.sh skipped (no podman) or
# network namespaces cannot be made.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CASE=$1 K=$2 SOURCE=$3 STATE=$4
PODS_DIR=$SOURCE/tests/integration/pods
K8S_DIR=$SOURCE/tests/integration/k8s
# shellcheck source=../pods/pods.sh
source "$PODS_DIR/pods.sh"
# shellcheck source=../../../scripts/podman.sh
source "$SOURCE/scripts/podman.sh"
# shellcheck source=../k8s/bench_checks.sh
source "$K8S_DIR/bench_checks.sh"
[ -f "$STATE/images.ok" ] || pods_skip "the images were not built (images_build skipped or failed; see its output)"
pods_check_possible
podman_private "$STATE"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-images-$CASE.XXXXXX")
chmod 755 "$WORK"
CONTAINERS=()
APISERVER_PID=
note() { echo "[$CASE] $*"; }
fail() {
  echo "FAIL [$CASE]: $*" >&2
  for f in "$WORK"/out "$WORK"/err "$WORK"/apiserver.log; do
    [ -s "$f" ] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }
  done
  local c
  for c in ${CONTAINERS[@]+"${CONTAINERS[@]}"}; do
    echo "--- podman logs $c" >&2
    podman logs "$c" 2>&1 | tail -n 10 >&2
  done
  exit 1
}
containers_down() {
  [ ${#CONTAINERS[@]} -gt 0 ] && podman rm -f -t 0 "${CONTAINERS[@]}" >/dev/null 2>&1
  [ -n "$APISERVER_PID" ] && kill "$APISERVER_PID" 2>/dev/null
  return 0
}
pods_user_stop() { containers_down; }
pods_user_cleanup() { rm -rf "$WORK"; }
trap 'set +e; pods_on_exit' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

case $CASE in
  mpijob_ssh | mpijob_kill) MANIFEST=examples/k8s/mpijob-ssh.yaml ;;
  mpijob_kubexec) MANIFEST=examples/k8s/mpijob-kubexec.yaml ;;
  mpijob_mpirun) MANIFEST=examples/k8s/mpijob-mpirun.yaml ;;
  pytorchjob) MANIFEST=examples/k8s/pytorchjob.yaml ;;
  *) echo "containers.sh: unknown case $CASE" >&2; exit 2 ;;
esac

# The container of pod NAME (index I of the subnet), detached, as its own user, from IMAGE.
# run_pod NAME I IMAGE [podman-run options...] -- ARGV...
ADD_HOSTS=()
run_pod() {
  local name=$1 i=$2 image=$3
  shift 3
  local opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  shift
  CONTAINERS+=("$name")
  podman run -d --name "$name" --hostname "$name" --network "ns:/run/netns/$name" \
    "${ADD_HOSTS[@]}" --shm-size 256m "${opts[@]}" "$image" "$@" >/dev/null ||
    fail "cannot start the container of pod $name"
}
# The processes of the pods' containers before the job (their first process and what it started:
# sshd, a shell's sleep), once they stopped changing; every other process of a pod's network
# namespace after the job is one the job left.
pod_pids() {
  local c
  for c in "${CONTAINERS[@]}"; do ip netns pids "$c" 2>/dev/null; done | sort
}
BEFORE=
pods_settled() {
  local now
  for _ in $(seq 1 50); do
    now=$(pod_pids)
    [ -n "$now" ] && [ "$now" = "$BEFORE" ] && return 0
    BEFORE=$now
    sleep 0.2
  done
  fail "the pods' containers never settled: $(ps -o pid=,args= -p "$(tr '\n' ',' <<<"$BEFORE" | sed 's/,$//')")"
}
job_leftovers() { comm -13 <(echo "$BEFORE") <(pod_pids); }
# After the containers are removed: none of them, none of their cgroups, shm mounts or /dev/shm
# files, no pod.
expect_nothing_left() {
  local ids=$1 left id
  containers_down
  left=$(podman ps -a --format '{{.Names}}')
  [ -z "$left" ] || fail "containers left: $left"
  for id in $ids; do
    grep -q "$id" /proc/self/mountinfo && fail "a mount of container ${id:0:12} is left (its /dev/shm?)"
    left=$(find /sys/fs/cgroup -maxdepth 4 -type d -name "*$id*" 2>/dev/null | head -n 3)
    [ -z "$left" ] || fail "cgroups of container ${id:0:12} are left: $left"
  done
  # A test running beside this one on the host may be setting up a job of its own: its segment
  # lives until its ranks have mapped it, and one of them maps it meanwhile. A file of this job
  # stays, and nothing maps it once the containers are gone.
  left=$(find /dev/shm -newer "$WORK/started" -name 'tutti*' 2>/dev/null)
  if [ -n "$left" ]; then
    sleep 2
    left=$(for f in $left; do
      [ -e "$f" ] && ! grep -qsF "$f" /proc/[0-9]*/maps && echo "$f"
    done | head -n 3)
  fi
  [ -z "$left" ] || fail "/dev/shm files of the job are left: $left"
  CONTAINERS=()
  pods_down
  left=$(ip netns list)
  [ -z "$left" ] || fail "pods (network namespaces) are left: $left"
}
touch "$WORK/started"

if [ "$CASE" = pytorchjob ]; then
  /usr/bin/python3 "$K8S_DIR/pytorchjob_plan.py" "$SOURCE/$MANIFEST" - "$SOURCE" "$WORK/pvc" >"$WORK/plan.sh" ||
    fail "pytorchjob_plan.py could not read $MANIFEST"
  # shellcheck source=/dev/null
  source "$WORK/plan.sh"
  note "PyTorchJob $JOB: ${#PODS[@]} pods x $NPROC processes, $WORLD ranks"
  pods_bridge_up "$K" || fail "bridge setup failed"
  for i in "${!PODS[@]}"; do
    pod_add "${PODS[$i]}" "$K" "$i" || fail "cannot make pod ${PODS[$i]}"
    ADD_HOSTS+=(--add-host "${PODS[$i]}:$(pod_ip "$K" "$i")")
  done
  for i in "${!PODS[@]}"; do pod_link_wait "${PODS[$i]}" eth0 "tp${K}h${i}" || fail "${PODS[$i]}'s link never came up"; done
  # Each claim a folder the pods' user owns (a ReadWriteMany volume).
  mounts=()
  for claim in "${PVCS[@]}"; do
    mkdir -p "$WORK/pvc/$claim"
    chown 1000:1000 "$WORK/pvc/$claim"
  done
  for i in "${!PODS[@]}"; do
    argv_name="ARGV_$i[@]" env_name="ENV_$i[@]" mounts_name="MOUNTS_$i[@]"
    envs=()
    for kv in "${!env_name}"; do envs+=(-e "$kv"); done
    mounts=()
    for m in ${!mounts_name+"${!mounts_name}"}; do mounts+=(-v "$m"); done
    # The one change to the command: one short epoch (--epochs 1 --max-steps 20), as a test can wait for.
    argv=("${!argv_name}")
    for j in "${!argv[@]}"; do [ "${argv[$j]}" = --epochs ] && argv[j + 1]=1; done
    argv+=(--max-steps 20 --log-every 10)
    run_pod "${PODS[$i]}" "$i" tutti-worker:test -e "HOSTNAME=${PODS[$i]}" "${envs[@]}" ${mounts[@]+"${mounts[@]}"} -- "${argv[@]}"
  done
  start=$SECONDS
  for c in "${CONTAINERS[@]}"; do
    rc=$(timeout 600 podman wait "$c") || fail "$c did not end within 600 s"
    podman logs "$c" >"$WORK/$c.log" 2>&1
    [ "$rc" -eq 0 ] || { cp "$WORK/$c.log" "$WORK/err"; fail "pod $c exited $rc"; }
  done
  note "every pod exited 0 after $((SECONDS - start)) s"
  cat "$WORK"/*.log >"$WORK/out"
  grep -E "backend tutti|checksum" "$WORK/out" | head -n 8
  grep -q "backend tutti" "$WORK/out" || fail "train.py did not say it runs on backend tutti"
  sums=$(grep -oE "rank [0-9]+: [0-9]+ steps, weights checksum [0-9a-f]+" "$WORK/out" | sort -u)
  [ "$(grep -c . <<<"$sums")" -eq "$WORLD" ] || fail "$(grep -c . <<<"$sums") ranks reported weights, want $WORLD: $sums"
  [ "$(awk '{ print $NF }' <<<"$sums" | sort -u | wc -l)" -eq 1 ] || fail "the ranks ended on different weights: $sums"
  ids=$(podman inspect --format '{{.Id}}' "${CONTAINERS[@]}")
  expect_nothing_left "$ids"
  note PASS
  exit 0
fi

/usr/bin/python3 "$K8S_DIR/job_plan.py" "$SOURCE/$MANIFEST" - >"$WORK/plan.sh" || fail "job_plan.py could not read $MANIFEST"
# shellcheck source=/dev/null
source "$WORK/plan.sh"
STYLE=ssh
for kv in "${LAUNCHER_ENV[@]}"; do
  case $kv in OMPI_MCA_plm_rsh_agent=*kubexec | PRTE_MCA_plm_ssh_agent=*kubexec) STYLE=kubexec ;; esac
done
note "$KIND $JOB: ${#WORKER_PODS[@]} workers x $SLOTS slots, $STYLE style"

pods_bridge_up "$K" || fail "bridge setup failed"
LAUNCHER_POD="$JOB-launcher"
ALL_PODS=("$LAUNCHER_POD" "${WORKER_PODS[@]}")
for i in "${!ALL_PODS[@]}"; do pod_add "${ALL_PODS[$i]}" "$K" "$i" || fail "cannot make pod ${ALL_PODS[$i]}"; done
for i in "${!ALL_PODS[@]}"; do pod_link_wait "${ALL_PODS[$i]}" eth0 "tp${K}h${i}" || fail "${ALL_PODS[$i]}'s link never came up"; done
for i in "${!WORKER_PODS[@]}"; do
  ADD_HOSTS+=(--add-host "${WORKER_HOSTS[$i]}:$(pod_ip "$K" $((i + 1)))" --add-host "${WORKER_PODS[$i]}:$(pod_ip "$K" $((i + 1)))")
done
ADD_HOSTS+=(--add-host "$LAUNCHER_POD:$(pod_ip "$K" 0)")
printf '%s' "$HOSTFILE" >"$WORK/hostfile"
note "hostfile: $(tr '\n' ';' <"$WORK/hostfile")"

# The operator's ssh Secret at sshAuthMountPath (/home/tutti/.ssh), owned by the pods' user.
mkdir -p "$WORK/ssh"
ssh-keygen -q -t ecdsa -N '' -f "$WORK/ssh/id_rsa" -C operator || fail "ssh-keygen"
cp "$WORK/ssh/id_rsa.pub" "$WORK/ssh/authorized_keys"
chown -R 1000:1000 "$WORK/ssh"
chmod 700 "$WORK/ssh"
SECRET=(-v "$WORK/ssh:/home/tutti/.ssh:ro")

for i in "${!WORKER_PODS[@]}"; do
  run_pod "${WORKER_PODS[$i]}" $((i + 1)) tutti-worker:test "${SECRET[@]}" -- "${WORKER_ARGV[@]}"
done
pods_settled

LAUNCHER_OPTS=("${SECRET[@]}" -v "$WORK/hostfile:/etc/mpi/hostfile:ro")
for kv in "${LAUNCHER_ENV[@]}"; do LAUNCHER_OPTS+=(-e "$kv"); done
if [ "$STYLE" = kubexec ]; then
  # The API server: an sshd on the bridge (this test's side of the pods), whose one command execs
  # into the named container; its key and address mounted where the stand-in kubectl looks.
  mkdir -p "$WORK/api" /run/sshd
  ssh-keygen -q -t ed25519 -N '' -f "$WORK/api/host_key" || fail "ssh-keygen"
  ssh-keygen -q -t ed25519 -N '' -f "$WORK/api/client_key" || fail "ssh-keygen"
  cp "$WORK/api/client_key.pub" "$WORK/api/authorized_keys"
  cat >"$WORK/api/exec" <<EXEC
#!/bin/sh
exec env CONTAINERS_CONF=$CONTAINERS_CONF CONTAINERS_STORAGE_CONF=$CONTAINERS_STORAGE_CONF bash $HERE/apiserver_exec
EXEC
  chmod 755 "$WORK/api/exec"
  cat >"$WORK/api/sshd_config" <<CONF
ListenAddress 198.18.$K.1
Port 2300
HostKey $WORK/api/host_key
AuthorizedKeysFile $WORK/api/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
ForceCommand $WORK/api/exec
CONF
  /usr/sbin/sshd -D -e -f "$WORK/api/sshd_config" 2>"$WORK/apiserver.log" &
  APISERVER_PID=$!
  mkdir -p "$WORK/apiclient"
  cp "$WORK/api/client_key" "$WORK/apiclient/key"
  cat >"$WORK/apiclient/ssh_config" <<CONF
Host apiserver
  HostName 198.18.$K.1
  Port 2300
  User root
  IdentityFile /run/tutti-apiserver/key
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
CONF
  chown -R 1000:1000 "$WORK/apiclient"
  chmod 600 "$WORK/apiclient/key"
  LAUNCHER_OPTS+=(-v "$WORK/apiclient:/run/tutti-apiserver:ro")
fi

ARGV=("${LAUNCHER_ARGV[@]}")
if [ "$CASE" = mpijob_kill ]; then
  # Long enough to be killed mid-run: the bench's -n only.
  for i in "${!ARGV[@]}"; do [ "${ARGV[$i]}" = -n ] && ARGV[i + 1]=100000; done
fi
CONTAINERS+=("$LAUNCHER_POD")
START=$SECONDS
podman run --name "$LAUNCHER_POD" --hostname "$LAUNCHER_POD" --network "ns:/run/netns/$LAUNCHER_POD" \
  "${ADD_HOSTS[@]}" "${LAUNCHER_OPTS[@]}" tutti-launcher:test "${ARGV[@]}" \
  >"$WORK/out" 2>"$WORK/err" </dev/null &
LAUNCHER_PID=$!
rank_pids_in() {
  local p
  for p in $(ip netns pids "$1" 2>/dev/null); do
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = tutti-bench ] && echo "$p"
  done
  return 0
}

if [ "$CASE" = mpijob_kill ]; then
  victim_pod=${WORKER_PODS[1]}
  victim=
  last=$((${#WORKER_PODS[@]} * SLOTS - 1))
  for _ in $(seq 1 600); do
    victim=$(rank_pids_in "$victim_pod" | head -n 1)
    [ -n "$victim" ] && grep -qE "^(\[0\] )?#  Rank +$last " "$WORK/out" && break
    kill -0 "$LAUNCHER_PID" 2>/dev/null || fail "the launcher ended before every rank was running"
    sleep 0.1
  done
  [ -n "$victim" ] || fail "no rank ever ran in $victim_pod"
  note "killing rank pid $victim in container $victim_pod with SIGKILL"
  killed_at=$(date +%s.%N)
  kill -9 "$victim"
  for _ in $(seq 1 600); do kill -0 "$LAUNCHER_PID" 2>/dev/null || break; sleep 0.02; done
  ended_at=$(date +%s.%N)
  kill -0 "$LAUNCHER_PID" 2>/dev/null && fail "the launcher container still runs 12 s after a rank was killed"
  wait "$LAUNCHER_PID"
  RC=$?
  took=$(awk -v s="$killed_at" -v e="$ended_at" 'BEGIN { printf "%.2f", e - s }')
  note "launcher container exited $RC, $took s after the kill"
  [ "$RC" -ne 0 ] || fail "the launcher exited 0 although a rank was killed"
  grep -E "rank [0-9]+ on $victim_pod" "$WORK/err" | head -n 2
  grep -qE "rank [0-9]+ on ${victim_pod}[^ ]* \(pid [0-9]+\).*(status 137|signal 9|SIGKILL)" "$WORK/err" ||
    fail "the launcher did not name the killed rank in $victim_pod"
  awk -v t="$took" 'BEGIN { exit !(t <= 2.0) }' || fail "the launcher container took $took s to exit after the kill (at most 2 s)"
else
  for _ in $(seq 1 1800); do kill -0 "$LAUNCHER_PID" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$LAUNCHER_PID" 2>/dev/null && fail "the launcher container still runs after 180 s"
  wait "$LAUNCHER_PID"
  RC=$?
  note "launcher container exited $RC after $((SECONDS - START)) s"
  [ "$RC" -eq 0 ] || fail "the launcher exited $RC"
  expect_bench_in_pods "$WORK/out" "$SLOTS" "${WORKER_PODS[@]}"
fi
pods_expect_no_leftovers job_leftovers
ids=$(podman inspect --format '{{.Id}}' "${CONTAINERS[@]}")
expect_nothing_left "$ids"
note PASS
