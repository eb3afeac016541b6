# shellcheck shell=bash
# etcd.sh: a real etcd (Debian's etcd-server) for the pods cases, on the script's side of the bridge.
# Sourced after pods.sh; the case script's private network namespace makes the fixed ports safe.
#
#   etcd_up ADDR   start etcd with its client URL on ADDR:2379 (data under $WORK/etcd); wait until it
#                  answers; sets ETCD_ENDPOINT (ADDR:2379). Exits 77 (ctest SKIPPED) without etcd.
#   etcd_keys PREFIX   the keys under PREFIX, one per line
#   etcd_down      stop it (call from pods_user_stop)

ETCD_PID=''
ETCD_ENDPOINT=''
ETCD_EXTRA=()  # more etcd flags (--enable-v2=true for torchrun's etcd rendezvous)

etcd_up() {
  local addr=$1
  command -v etcd >/dev/null || pods_skip "no etcd: apt install etcd-server (scripts/install-deps.sh)"
  command -v etcdctl >/dev/null || pods_skip "no etcdctl: apt install etcd-client"
  mkdir -p "$WORK/etcd"
  ETCD_ENDPOINT="$addr:2379"
  etcd --name pods --data-dir "$WORK/etcd/data" --log-level warn \
    --listen-client-urls "http://$addr:2379" --advertise-client-urls "http://$addr:2379" \
    --listen-peer-urls "http://127.0.0.1:2380" --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster pods=http://127.0.0.1:2380 ${ETCD_EXTRA[@]+"${ETCD_EXTRA[@]}"} >"$WORK/etcd/log" 2>&1 &
  ETCD_PID=$!
  local _
  for _ in $(seq 1 100); do
    ETCDCTL_API=3 etcdctl --endpoints "$ETCD_ENDPOINT" --dial-timeout 1s endpoint health \
      >/dev/null 2>&1 && return 0
    kill -0 "$ETCD_PID" 2>/dev/null || break
    sleep 0.1
  done
  cat "$WORK/etcd/log" >&2
  echo "etcd.sh: etcd did not come up on $ETCD_ENDPOINT" >&2
  exit 1
}

etcd_keys() {
  ETCDCTL_API=3 etcdctl --endpoints "$ETCD_ENDPOINT" get --prefix "$1" --keys-only | grep -v '^$'
}

etcd_down() {
  [ -n "$ETCD_PID" ] || return 0
  kill "$ETCD_PID" 2>/dev/null
  wait "$ETCD_PID" 2>/dev/null
  ETCD_PID=''
}
