#!/usr/bin/env bash
# tuttirun --exec ssh across network-namespace "hosts", each running a real OpenSSH sshd (the MPIJob
# v2beta1 style). Nothing is stood in: real sshd, real ssh client, real tuttirun, ranks and TCP.
#   ssh_pods.sh K tuttirun=P check=P probe=P [train=P [backends=tutti,gloo] [pythonpath=DIR]]
# K is the subnet index (198.18.K.0/24). Exits 77 (ctest SKIPPED) without root/netns or sshd.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
K=$1
shift
TUTTIRUN= CHECK= PROBE= TRAIN= BACKENDS=gloo PY_PATH=
for arg in "$@"; do
  case $arg in
    tuttirun=*) TUTTIRUN=${arg#*=} ;;
    check=*) CHECK=${arg#*=} ;;
    probe=*) PROBE=${arg#*=} ;;
    train=*) TRAIN=${arg#*=} ;;
    backends=*) BACKENDS=${arg#*=} ;;
    pythonpath=*) PY_PATH=${arg#*=} ;;
    *) echo "ssh_pods.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
CASE=tuttirun_pods_ssh
# shellcheck source=pods.sh
source "$HERE/pods.sh"
pods_check_possible
[ -x /usr/sbin/sshd ] || pods_skip "no /usr/sbin/sshd (Debian package openssh-server; make deps installs it)"
command -v ssh >/dev/null || pods_skip "no ssh client (openssh-client)"
command -v ssh-keygen >/dev/null || pods_skip "no ssh-keygen"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-pods-ssh.XXXXXX")
chmod 700 "$WORK"
SSHD_PIDS=()
# The sshds are the test's own servers, not leftovers of a job: stop them before pods_down looks.
pods_user_cleanup() {
  [ ${#SSHD_PIDS[@]} -gt 0 ] && kill "${SSHD_PIDS[@]}" 2>/dev/null
  rm -rf "$WORK"
}
trap pods_user_cleanup EXIT

fail_details() {
  for log in "$WORK"/sshd.*.log; do
    [ -s "$log" ] && { echo "--- $log"; tail -n 10 "$log"; }
  done
}
# shellcheck source=checks.sh
source "$HERE/checks.sh"

pods_up sshp 2 "$K"
HOST0=$(pod_ip "$K" 0)
HOST1=$(pod_ip "$K" 1)

# Keys and configs of this test only: a host key for the sshds, a client key authorized for root.
ssh-keygen -q -t ed25519 -N '' -f "$WORK/host_key" || fail "ssh-keygen (host key)"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/client_key" || fail "ssh-keygen (client key)"
cp "$WORK/client_key.pub" "$WORK/authorized_keys"
mkdir -p /run/sshd  # sshd's privilege separation directory
for i in 0 1; do
  addr=$(pod_ip "$K" "$i")
  cat >"$WORK/sshd_config.$i" <<CONF
ListenAddress $addr
Port 22
HostKey $WORK/host_key
AuthorizedKeysFile $WORK/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PidFile none
AcceptEnv none
CONF
  ip netns exec "sshp-worker-$i" /usr/sbin/sshd -D -e -f "$WORK/sshd_config.$i" 2>"$WORK/sshd.$i.log" &
  SSHD_PIDS+=($!)
done
cat >"$WORK/ssh_config" <<CONF
Host *
  User root
  IdentityFile $WORK/client_key
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
CONF
# The user's ssh configuration, as ~/.ssh/config would give it; tuttirun adds its own options.
cat >"$WORK/ssh" <<WRAP
#!/bin/sh
exec ssh -F "$WORK/ssh_config" "\$@"
WRAP
chmod +x "$WORK/ssh"

# Processes in the pods other than the sshds: what a finished job must not leave.
job_leftovers() {
  local sshd_list=" ${SSHD_PIDS[*]} " p
  for p in $(pods_pids); do
    case $sshd_list in *" $p "*) continue ;; esac
    # sshd's own per-connection children are gone once the sessions close.
    echo "$p"
  done
}
expect_no_leftovers() { pods_expect_no_leftovers job_leftovers; }

# The probe waits until the sshds answer: no sleep needed, and it shows the probe over real ssh.
common=(-H "$HOST0:2,$HOST1:2" --ssh "$WORK/ssh" --probe-timeout 30)
run 60 "$TUTTIRUN" "${common[@]}" --dry-run -- "$CHECK"
expect_rc 0
# The default store address is this machine's address on the route to the first host: the bridge.
expect_out "via ssh; store at 198\.18\.$K\.1:"

export TUTTI_TRANSPORT=tcp
run 280 "$TUTTIRUN" "${common[@]}" -- "$CHECK" --counts 0,1,N-1,1000
expect_rc 0
expect_out '^\[0\] collectives_check: 4 ranks, [0-9]+ checks per rank, 0 failed$'
expect_no_leftovers

# Each rank runs on its host: TUTTI_HOST is the host, and the rank sees that host's address.
run 60 "$TUTTIRUN" "${common[@]}" -- sh -c 'echo "rank=$TUTTI_RANK host=$TUTTI_HOST addr=$(ip -o -4 addr show eth0 | awk "{print \$4}")"'
expect_rc 0
expect_out "^\[1\] rank=1 host=$HOST0 addr=$HOST0/24$"
expect_out "^\[3\] rank=3 host=$HOST1 addr=$HOST1/24$"

# What torch.distributed's env:// reads: every rank sees rank 0's host (its address on the route to
# tuttirun's store) and one port, which rank 0's host can indeed listen on.
run 60 "$TUTTIRUN" "${common[@]}" -- sh -c 'echo "torch rank=$RANK/$WORLD_SIZE local=$LOCAL_RANK/$LOCAL_WORLD_SIZE group=$GROUP_RANK/$GROUP_WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT"; [ "$RANK" != 0 ] || /usr/bin/python3 -c "import os, socket; s = socket.socket(); s.bind((\"\", int(os.environ[\"MASTER_PORT\"]))); print(\"bound\", os.environ[\"MASTER_PORT\"])"'
expect_rc 0
port=$(sed -n 's/^\[0\] torch rank=0.*master=[0-9.]*:\([0-9]*\)$/\1/p' "$WORK/out")
[ -n "$port" ] || fail "rank 0 printed no MASTER_PORT: $(cat "$WORK/out")"
expect_out "^\[0\] torch rank=0/4 local=0/2 group=0/2 master=$HOST0:$port$"
expect_out "^\[3\] torch rank=3/4 local=1/2 group=1/2 master=$HOST0:$port$"
expect_out "^\[0\] bound $port$"

# A DDP script across the hosts, as in an MPIJob launcher: torch.distributed meets at the
# MASTER_ADDR:MASTER_PORT tuttirun arranged, with no torchrun anywhere.
if [ -n "$TRAIN" ]; then
  for backend in ${BACKENDS//,/ }; do
    # The namespaces share this machine's hostname, which resolves to loopback: gloo would
    # advertise 127.0.0.1 (a real pod's hostname resolves to its own address).
    run 240 "$TUTTIRUN" "${common[@]}" -x "PYTHONPATH=$PY_PATH" -x OMP_NUM_THREADS=1 -x PYTHONDONTWRITEBYTECODE=1 \
      -x GLOO_SOCKET_IFNAME=eth0 -- \
      /usr/bin/python3 "$TRAIN" --backend "$backend" --max-steps 5 --log-every 5 --no-eval
    expect_rc 0
    expect_out "^\[0\] train.py: 4 ranks, backend $backend"
    sum=$(sed -n 's/^\[0\] rank 0: 5 steps, weights checksum \([0-9a-f]*\)$/\1/p' "$WORK/out")
    [ -n "$sum" ] || fail "rank 0 of train.py (backend $backend) reported no checksum"
    for r in 1 2 3; do expect_out "^\[$r\] rank $r: 5 steps, weights checksum $sum$"; done
    expect_no_leftovers
  done
fi

# Bytes that are not UTF-8 (and a newline) in an argument and in an -x value reach the rank exactly,
# as in local mode (they once arrived as U+FFFD).
arg=$'a\xff\xfe\nb\xe9'
val=$'\xe9t\xe9\x80'
hex() { printf %s "$1" | od -An -tx1 | tr -d ' \n'; }
run 60 "$TUTTIRUN" "${common[@]}" -x "BYTES=$val" -- sh -c \
  'printf "arg=%s val=%s\n" "$(printf %s "$1" | od -An -tx1 | tr -d " \n")" "$(printf %s "$BYTES" | od -An -tx1 | tr -d " \n")"' \
  sh "$arg"
expect_rc 0
expect_out "^\[0\] arg=$(hex "$arg") val=$(hex "$val")$"
expect_out "^\[3\] arg=$(hex "$arg") val=$(hex "$val")$"

# A rank that dies by SIGKILL on the second host: named with its host; the rest are stopped
# through their ssh sessions and nothing remains in either namespace.
run 120 "$TUTTIRUN" "${common[@]}" --grace 1 -- "$PROBE" on 2 kill 9 grandchild 60 sleep 60
[ "$RC" -ne 0 ] || fail "tuttirun succeeded although rank 2 was killed"
expect_err "rank 2 on $HOST1 \(pid [0-9]+\) exited with status 137"
expect_no_leftovers

# A host without sshd: refused by the probe, exit 3, no rank runs.
run 60 "$TUTTIRUN" -H "$HOST0,198.18.$K.99" --ssh "$WORK/ssh" --probe-timeout 3 -- touch "$WORK/ran"
expect_rc 3
expect_err "never became reachable within 3s through ssh: 198\.18\.$K\.99"
[ ! -e "$WORK/ran" ] || fail "a rank ran although a host was unreachable"
kill "${SSHD_PIDS[@]}" 2>/dev/null
wait "${SSHD_PIDS[@]}" 2>/dev/null
echo "PASS [$CASE]"
