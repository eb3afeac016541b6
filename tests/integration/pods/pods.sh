# shellcheck shell=bash
# pods.sh: Kubernetes-like worker "pods" as Linux network namespaces, for the integration tests.
# Sourced by the case scripts (bash). Each pod is a netns PREFIX-worker-I with its own address on a
# bridge; processes in a pod share this machine's filesystem and PIDs, as containers of one image
# on one node would, but reach each other only over the network, through their own interfaces.
#
#   pods_up PREFIX N K   create PREFIX-worker-0 .. PREFIX-worker-(N-1) on subnet 198.18.K.0/24:
#                        bridge tpb<K> = 198.18.K.1 on the host side, pod I = 198.18.K.(10+I) on its
#                        eth0, lo up, default route via 198.18.K.1. K (1..254) must be unique per test
#                        case, so a leftover of one case never collides with another.
#                        Exits 77 (ctest SKIPPED) with the reason when namespaces cannot be made.
#   pod_add NAME K I     one more pod (also used for a pod that appears late)
#   pod_ip K I           the address of pod I
#   pods_down            remove every pod and the bridge made here, kill what still runs in them;
#                        runs on EXIT/INT/TERM (trap set by pods_up, between the case script's
#                        pods_user_stop and pods_user_cleanup, if defined). Prints any leftover.
#   pods_pids            PIDs running in any pod made here (empty when none)
#   pods_isolate K N     isolate the bridge ports of pods 0..N-1 of subnet K: each pod's eth0
#                        still reaches the host (198.18.K.1), no longer the other pods
#   pods_data_net_up K   a second bridge tpd<K> on 198.19.K.0/24 that the host is not on
#   pod_add_data NAME K I IF  pod I's interface IF on that bridge, address 198.19.K.(10+I)
#   pod_data_ip K I      that address
#
# All traffic stays in 198.18.0.0/15 (RFC 2544 benchmarking range) and on loopback.
#
# Every script that uses pods runs in a network and mount namespace of its own: pods_check_possible
# re-executes it there (unshare --net --mount), with loopback up and a private /run/netns. Its
# bridges, addresses and pod namespaces are then seen by nobody else, so two test runs on one
# machine (two trees' `make test` side by side) never meet, although each case uses fixed pod
# names and a fixed subnet; and whatever a killed run leaves goes with its last process. The
# script's side of the bridges ("the host") is that namespace.

PODS_NAMES=()     # namespaces this script created (removed by pods_down)
PODS_BRIDGES=()   # bridges this script created
PODS_DOWN_DONE=0
PODS_LABELS_DIR=${PODS_LABELS_DIR:-/run/tutti-pods/labels}  # read by the test kubectl too
PODS_LABELS=${PODS_LABELS:-}

pods_skip() {
  echo "SKIP: $*" >&2
  exit 77
}

# Re-executes the calling script (this shell's own command line) in a new network and mount
# namespace, once; there, brings loopback up and mounts a tmpfs on /run/netns, so that `ip netns`
# names are this run's only. Anything the script did before this call is done again: call it first.
pods_private_world() {
  if [ -n "${TUTTI_PODS_WORLD:-}" ]; then
    [ "$TUTTI_PODS_WORLD" = "$$" ] || return 0  # a child script of a run already in its own world
    ip link set lo up || pods_skip "cannot bring loopback up in the test's network namespace"
    mkdir -p /run/netns
    mount -t tmpfs -o mode=0755 tutti-pods-netns /run/netns ||
      pods_skip "cannot mount a private /run/netns in the test's mount namespace"
    # The pods' labels (pod_link_wait, the test kubectl's `get pods -l`): this world's only.
    mkdir -p /run/tutti-pods
    mount -t tmpfs -o mode=0755 tutti-pods-labels /run/tutti-pods ||
      pods_skip "cannot mount a private /run/tutti-pods in the test's mount namespace"
    TUTTI_PODS_WORLD=inside
    return 0
  fi
  unshare --net --mount --propagation private true 2>/dev/null ||
    pods_skip "cannot make a network and mount namespace (unshare --net --mount needs CAP_SYS_ADMIN)"
  local -a argv
  mapfile -d '' argv </proc/$$/cmdline
  # exec keeps the pid, so the script finds itself ($$) as the one to set the namespace up.
  exec unshare --net --mount --propagation private env TUTTI_PODS_WORLD=$$ "${argv[@]}"
}

# Refuses to go on unless network namespaces can be created here; exits 77 with the reason. Moves
# the script into a network and mount namespace of its own first (pods_private_world).
pods_check_possible() {
  command -v ip >/dev/null 2>&1 || pods_skip "the 'ip' command (iproute2) is not installed"
  [ "$(id -u)" -eq 0 ] || pods_skip "network-namespace pods need root (ip netns add); run ctest as root"
  pods_private_world
  local probe="tutti-pods-probe-$$"
  local why
  if ! why=$(ip netns add "$probe" 2>&1); then
    pods_skip "cannot create a network namespace (ip netns add: ${why:-no message}); the container needs CAP_SYS_ADMIN"
  fi
  ip netns del "$probe" 2>/dev/null
  if ! why=$(ip link add "tpprobe$$" type bridge 2>&1); then
    pods_skip "cannot create a bridge (ip link add type bridge: ${why:-no message}); the container needs CAP_NET_ADMIN"
  fi
  ip link del "tpprobe$$" 2>/dev/null
  return 0
}

pod_ip() { echo "198.18.$1.$((10 + $2))"; }

# pods_case_setup NAME "$@" for a case script called as `SCRIPT K tuttirun=P kubexec=P check=P
# [WORD...]`: sets K, TUTTIRUN, KUBEXEC, CHECK, CASE_WORDS (the other arguments), WORK (a temporary
# folder removed at exit), HOST_ADDR (the host's address on subnet K), the test kubectl for kubexec
# and PATH, and sources checks.sh. Exits 77 where pods cannot be made.
pods_case_setup() {
  local name=$1 arg
  shift
  K=$1
  shift
  TUTTIRUN='' KUBEXEC='' CHECK=''
  CASE_WORDS=()
  for arg in "$@"; do
    case $arg in
      tuttirun=*) TUTTIRUN=${arg#*=} ;;
      kubexec=*) KUBEXEC=${arg#*=} ;;
      check=*) CHECK=${arg#*=} ;;
      *=*) echo "$name: unknown argument '$arg'" >&2; exit 2 ;;
      *) CASE_WORDS+=("$arg") ;;
    esac
  done
  pods_check_possible
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-$name.XXXXXX")
  pods_user_cleanup() { rm -rf "$WORK"; }
  trap pods_user_cleanup EXIT
  export PATH="$PODS_DIR:$PATH"
  export KUBEXEC_KUBECTL="$PODS_DIR/kubectl"
  export KUBEXEC_TIMEOUT=20
  HOST_ADDR="198.18.$K.1"
  # shellcheck source=checks.sh
  source "$PODS_DIR/checks.sh"
}

# pod_names PREFIX N: PREFIX-worker-0,...,PREFIX-worker-(N-1)
pod_names() {
  local i names=
  for ((i = 0; i < $2; i++)); do names+="${names:+,}$1-worker-$i"; done
  echo "$names"
}

# pods_wait_pid_files DIR N PID: waits up to 60 s for N files DIR/*.pid (ranks that wrote their
# pids) while process PID (the launcher) lives; fails (status 1) unless all N are there.
pods_wait_pid_files() {
  local dir=$1 n=$2 pid=$3
  for _ in $(seq 1 600); do
    [ "$(ls "$dir"/*.pid 2>/dev/null | wc -l)" -eq "$n" ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  [ "$(ls "$dir"/*.pid 2>/dev/null | wc -l)" -eq "$n" ]
}

# Removes one namespace after killing every process still in it.
pods_kill_and_delete() {
  local ns=$1
  local pids
  pids=$(ip netns pids "$ns" 2>/dev/null)
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill -9 $pids 2>/dev/null
    for _ in $(seq 1 50); do
      [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  ip netns del "$ns" 2>/dev/null
  rm -f "$PODS_LABELS_DIR/$ns"
}

# pods_private_etc DIR: /etc in this mount namespace only (the caller runs under unshare -m), an
# overlay whose upper layer is a tmpfs under DIR that dies with us, so that the pods' names can go
# into /etc/hosts. Sets ORIGINAL_HOSTS to /etc/hosts as it was.
pods_private_etc() {
  ORIGINAL_HOSTS=$(cat /etc/hosts)
  mkdir -p "$1/overlay"
  mount -t tmpfs tmpfs "$1/overlay" || return 1
  mkdir -p "$1/overlay/upper" "$1/overlay/work"
  mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/overlay/upper,workdir=$1/overlay/work" /etc
}
# pods_private_etc_down DIR: undoes pods_private_etc and removes DIR (for pods_user_cleanup).
pods_private_etc_down() {
  umount /etc 2>/dev/null || true
  umount "$1/overlay" 2>/dev/null || true
  rm -rf "$1"
}

# pods_expect_no_leftovers FN: waits up to 10 s for FN (which prints the pids of the job still in
# the pods) to print nothing, else fails naming what is left (the caller's `fail`).
pods_expect_no_leftovers() {
  for _ in $(seq 1 100); do
    [ -z "$("$1")" ] && return 0
    sleep 0.1
  done
  fail "processes of the job remain in the pods: $(ps -o pid=,args= -p "$("$1" | tr '\n' ',' | sed 's/,$//')")"
}

# pods_bridge_mac KIND K: a locally administered address of its own for bridge KIND (0: tpbK,
# 1: tpdK) of subnet K.
pods_bridge_mac() { printf '02:70:75:%02x:%02x:01' "$1" "$2"; }

pods_bridge_up() {
  local k=$1 br="tpb$1"
  if ip link show "$br" >/dev/null 2>&1; then
    # A leftover of an earlier, killed run of the same case: start clean.
    ip link del "$br" 2>/dev/null
  fi
  # A fixed address: a bridge whose address was never set takes its lowest port's, so a pod
  # deleted (a lost worker, a shrink) can move it, and the other pods' ARP entries for the host then
  # name an address nobody has: tuttirun's store and the ranks' heartbeats to it are unreachable
  # from them until those entries are probed again (seconds).
  ip link add "$br" address "$(pods_bridge_mac 0 "$k")" type bridge ||
    { echo "pods: cannot create bridge $br" >&2; return 1; }
  PODS_BRIDGES+=("$br")
  ip addr add "198.18.$k.1/24" dev "$br" || return 1
  ip link set "$br" up || return 1
}

pod_add() {
  local name=$1 k=$2 i=$3
  local host_if="tp${k}h${i}" pod_if="tp${k}p${i}"
  if ip netns list | awk '{print $1}' | grep -qxF "$name"; then
    echo "pods: removing a leftover namespace $name" >&2
    pods_kill_and_delete "$name"
  fi
  ip link del "$host_if" 2>/dev/null
  ip netns add "$name" || { echo "pods: ip netns add $name failed" >&2; return 1; }
  PODS_NAMES+=("$name")
  ip link add "$host_if" type veth peer name "$pod_if" || return 1
  ip link set "$host_if" master "tpb$k" || return 1
  ip link set "$host_if" up || return 1
  # The host's address on the bridge must not move as pods come and go (see pods_bridge_up).
  if [ "$(ip -br link show "tpb$k" | awk '{ print $3 }')" != "$(pods_bridge_mac 0 "$k")" ]; then
    echo "pods: bridge tpb$k changed its address when $name joined" >&2
    return 1
  fi
  ip link set "$pod_if" netns "$name" || return 1
  ip -n "$name" link set "$pod_if" name eth0 || return 1
  ip -n "$name" addr add "$(pod_ip "$k" "$i")/24" dev eth0 || return 1
  ip -n "$name" link set lo up || return 1
  ip -n "$name" link set eth0 up || return 1
  ip -n "$name" route add default via "198.18.$k.1" || return 1
}

pods_isolate() {
  local k=$1 n=$2 i
  for ((i = 0; i < n; i++)); do
    bridge link set dev "tp${k}h${i}" isolated on || { echo "pods: cannot isolate tp${k}h${i}" >&2; return 1; }
  done
}

pod_data_ip() { echo "198.19.$1.$((10 + $2))"; }

pods_data_net_up() {
  local k=$1 br="tpd$1"
  ip link del "$br" 2>/dev/null  # a leftover of an earlier, killed run
  ip link add "$br" address "$(pods_bridge_mac 1 "$k")" type bridge ||
    { echo "pods: cannot create bridge $br" >&2; return 1; }
  PODS_BRIDGES+=("$br")
  ip link set "$br" up
}

pod_add_data() {
  local name=$1 k=$2 i=$3 ifname=$4
  local host_if="td${k}h${i}" pod_if="td${k}p${i}"
  ip link del "$host_if" 2>/dev/null
  ip link add "$host_if" type veth peer name "$pod_if" || return 1
  ip link set "$host_if" master "tpd$k" || return 1
  ip link set "$host_if" up || return 1
  ip link set "$pod_if" netns "$name" || return 1
  ip -n "$name" link set "$pod_if" name "$ifname" || return 1
  ip -n "$name" addr add "$(pod_data_ip "$k" "$i")/24" dev "$ifname" || return 1
  ip -n "$name" link set "$ifname" up || return 1
  pod_link_wait "$name" "$ifname" "$host_if" || { echo "pods: $name's $ifname never came up" >&2; return 1; }
}

# Links come up asynchronously: waits (up to 5 s) until pod NAME's interface IF has carrier and its
# bridge port HOST_IF forwards. Fails when it never does.
pod_link_wait() {
  local name=$1 ifname=$2 host_if=$3
  for _ in $(seq 1 100); do
    if ip -n "$name" -o link show "$ifname" 2>/dev/null | grep -q LOWER_UP &&
      bridge link show dev "$host_if" 2>/dev/null | grep -q 'state forwarding'; then
      # Running now: its labels, for the test kubectl's `get pods -l`: app=<the name before
      # -worker-N>, and PODS_LABELS (k=v,k=v) when set.
      mkdir -p "$PODS_LABELS_DIR"
      {
        echo "app=${name%-worker-*}"
        local pair
        for pair in ${PODS_LABELS//,/ }; do echo "$pair"; done
      } > "$PODS_LABELS_DIR/$name"
      return 0
    fi
    sleep 0.05
  done
  return 1
}

pods_up() {
  local prefix=$1 n=$2 k=$3
  if [ "$k" -lt 1 ] || [ "$k" -gt 254 ]; then
    echo "pods_up: subnet index $k outside 1..254" >&2
    exit 1
  fi
  pods_check_possible
  trap pods_on_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  pods_bridge_up "$k" || { echo "pods_up: bridge setup failed" >&2; exit 1; }
  local i
  for ((i = 0; i < n; i++)); do
    pod_add "$prefix-worker-$i" "$k" "$i" || { echo "pods_up: pod $prefix-worker-$i failed" >&2; exit 1; }
  done
  for ((i = 0; i < n; i++)); do
    pod_link_wait "$prefix-worker-$i" eth0 "tp${k}h${i}" ||
      { echo "pods_up: $prefix-worker-$i's link never came up" >&2; exit 1; }
  done
}

# The EXIT trap: the case script's pods_user_stop (stop what it started on the host side), the
# pods, then its pods_user_cleanup (files); each only if the script defines it.
pods_on_exit() {
  if declare -F pods_user_stop >/dev/null; then pods_user_stop; fi
  pods_down
  if declare -F pods_user_cleanup >/dev/null; then pods_user_cleanup; fi
}

pods_pids() {
  local ns
  for ns in "${PODS_NAMES[@]}"; do
    ip netns pids "$ns" 2>/dev/null
  done
}

pods_down() {
  [ "$PODS_DOWN_DONE" -eq 1 ] && return 0
  PODS_DOWN_DONE=1
  local ns br left
  for ns in "${PODS_NAMES[@]}"; do
    left=$(ip netns pids "$ns" 2>/dev/null)
    if [ -n "$left" ]; then
      echo "pods_down: processes left in $ns (killing them):" >&2
      # shellcheck disable=SC2086
      ps -o pid=,args= -p "$(echo $left | tr ' ' ',')" >&2 2>/dev/null
    fi
    pods_kill_and_delete "$ns"
    if ip netns list | awk '{print $1}' | grep -qxF "$ns"; then
      echo "pods_down: namespace $ns could not be removed" >&2
    fi
  done
  for br in "${PODS_BRIDGES[@]}"; do
    ip link del "$br" 2>/dev/null
    if ip link show "$br" >/dev/null 2>&1; then echo "pods_down: bridge $br could not be removed" >&2; fi
  done
  return 0
}
