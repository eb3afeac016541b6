# shellcheck shell=bash
# slurm.sh: a one-host Slurm cluster for the tests: munged, slurmctld and slurmd of Debian's Slurm,
# started by the test in a private folder and stopped after, leaving nothing. Sourced by the case
# scripts, which first move into network and mount namespaces of their own (slurm_private_world),
# so that Slurm's ports and munge's socket are this run's only.
#
#   slurm_up DIR      start munged, slurmctld and slurmd with all state and logs under DIR; exports
#                     SLURM_CONF (what srun, sbatch, salloc, squeue read). The node is declared with
#                     8 CPUs whatever the machine has (SlurmdParameters=config_overrides) and its
#                     partition oversubscribes 4 times, so that 4 tasks run on 2 real CPUs.
#                     SLURM_TASK_PLUGIN (default task/none) and SLURM_NODE_CPUS (default 8) change
#                     those two for a benchmark of srun --cpu-bind (task/affinity binds the tasks,
#                     to CPUs that must exist: declare $(nproc)).
#                     Exits 77 (ctest SKIPPED) with the reason where the packages are not installed.
#   slurm_down        stop them and remove DIR; the caller runs it on EXIT. Prints what was
#                     still running after 5 s (and kills it)
#   slurm_wait_idle   wait until no job is left in the queue (10 s)
#
# Debian: slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge libpmi2-0 (make deps).

SLURM_DIR=
SLURM_PIDS=()
SLURM_NODE=$(hostname -s)

slurm_skip() {
  echo "SKIP: $*" >&2
  exit 77
}

# Re-executes the calling script in new network and mount namespaces, once, with loopback up.
slurm_private_world() {
  [ -n "${TUTTI_SLURM_WORLD:-}" ] && return 0
  [ "$(id -u)" -eq 0 ] || slurm_skip "the Slurm tests run slurmd as root (it starts tasks as their users)"
  unshare --net --mount --propagation private true 2>/dev/null ||
    slurm_skip "cannot make a network and mount namespace (unshare --net --mount needs CAP_SYS_ADMIN)"
  local -a argv
  mapfile -d '' argv </proc/$$/cmdline
  # Slurm's daemons resolve their listening address with AI_ADDRCONFIG, which finds nothing where
  # loopback is the only interface: a veth pair with an address of the test range gives them one.
  exec unshare --net --mount --propagation private env TUTTI_SLURM_WORLD=1 \
    sh -c 'ip link set lo up && ip link add slurm0 type veth peer name slurm1 &&
      ip addr add 198.18.253.1/24 dev slurm0 && ip link set slurm1 up &&
      ip link set slurm0 up && exec "$@"' sh "${argv[@]}"
}

slurm_up() {
  local dir=$1 p
  for p in munged slurmctld slurmd srun sbatch salloc; do
    command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] ||
      slurm_skip "no $p (Debian: slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge; make deps installs them)"
  done
  SLURM_DIR=$dir
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
  # munged refuses a socket folder others may write to, and a key others may read.
  chmod 755 "$dir" "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 600 "$dir/munge/munge.key"
  /usr/sbin/munged --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" --force 2>"$dir/log/munged.err" ||
    { cat "$dir/log/munged.err" >&2; echo "slurm_up: munged did not start" >&2; return 1; }
  SLURM_PIDS+=("$(cat "$dir/munge/munged.pid")")
  cat >"$dir/slurm.conf" <<CONF
ClusterName=tutti
SlurmctldHost=$SLURM_NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=${SLURM_TASK_PLUGIN:-task/none}
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
MessageTimeout=10
KillWait=2
InactiveLimit=0
NodeName=$SLURM_NODE NodeAddr=127.0.0.1 CPUs=${SLURM_NODE_CPUS:-8} State=UNKNOWN
PartitionName=debug Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  export SLURM_CONF=$dir/slurm.conf
  /usr/sbin/slurmctld -c -f "$SLURM_CONF" 2>"$dir/log/slurmctld.err" ||
    { cat "$dir/log/slurmctld.err" >&2; echo "slurm_up: slurmctld did not start" >&2; return 1; }
  /usr/sbin/slurmd -f "$SLURM_CONF" 2>"$dir/log/slurmd.err" ||
    { cat "$dir/log/slurmd.err" >&2; echo "slurm_up: slurmd did not start" >&2; return 1; }
  for _ in $(seq 1 100); do
    [ -s "$dir/slurmctld.pid" ] && [ -s "$dir/slurmd.pid" ] &&
      sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)' && break
    sleep 0.1
  done
  SLURM_PIDS+=("$(cat "$dir/slurmctld.pid" 2>/dev/null)" "$(cat "$dir/slurmd.pid" 2>/dev/null)")
  sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)' || {
    echo "slurm_up: the node never became idle: $(sinfo -h -N -o '%T %E' 2>&1)" >&2
    tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2
    return 1
  }
}

slurm_wait_idle() {
  for _ in $(seq 1 100); do
    [ -z "$(squeue -h 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  echo "slurm: jobs still queued: $(squeue -h 2>&1)" >&2
  return 1
}

slurm_down() {
  [ -n "$SLURM_DIR" ] || return 0
  local p left=
  # slurmd and slurmctld first (they end the job steps and their tasks), munged last.
  for p in "${SLURM_PIDS[@]:1}" "${SLURM_PIDS[0]}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null
  done
  for _ in $(seq 1 50); do
    left=
    for p in "${SLURM_PIDS[@]}"; do [ -n "$p" ] && kill -0 "$p" 2>/dev/null && left="$left $p"; done
    [ -z "$left" ] && break
    sleep 0.1
  done
  if [ -n "$left" ]; then
    echo "slurm_down: still running after 5 s (killing):$left" >&2
    # shellcheck disable=SC2086
    kill -9 $left 2>/dev/null
  fi
  rm -rf "$SLURM_DIR"
  SLURM_DIR=
}
