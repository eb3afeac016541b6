#!/usr/bin/env bash
# TUTTI_TCP_CONGESTION on live connections. Each case runs 3 ranks over TCP in a network namespace
# of its own whose kernel default is set first (a host whose default is BBR, or Reno), and reads
# the congestion control of every established socket of the ranks with `ss` while they run:
#   auto,   default bbr   -> the 6 data sockets use cubic (the rendezvous sockets keep bbr)
#   auto,   default reno  -> reno kept
#   system, default bbr   -> bbr kept
#   reno,   default bbr   -> reno
# Then the errors: an algorithm the kernel lacks, and a value that names none, fail every rank at
# start with a message naming the setting, within 30 s.
#   tcp_congestion.sh TUTTIRUN CHECK
set -uo pipefail
tuttirun=$1 check=$2
work=$(mktemp -d)
ns="tutti-cc-$$"
cleanup() {
  ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$ns" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

has() { grep -qw "$1" /proc/sys/net/ipv4/tcp_available_congestion_control; }
if [ "$(id -u)" -ne 0 ] || ! command -v ss >/dev/null || ! has cubic || ! has reno; then
  echo "SKIP: needs root (a network namespace), ss, and cubic and reno in the kernel"
  exit 77
fi
# bbr is a module: loading it is what a host that defaults to it has done.
modprobe tcp_bbr 2>/dev/null
if ! has bbr; then
  echo "SKIP: the kernel has no bbr (net.ipv4.tcp_available_congestion_control)"
  exit 77
fi
if ! ip netns add "$ns" 2>"$work/netns.err"; then
  echo "SKIP: cannot create a network namespace: $(cat "$work/netns.err")"
  exit 77
fi
ip netns exec "$ns" ip link set lo up

fail=0
# case NAME DEFAULT SETTING EXPECTED_DATA
run_case() {
  local name=$1 default=$2 setting=$3 want=$4
  ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control="$default"
  ip netns exec "$ns" env TUTTI_TRANSPORT=tcp TUTTI_TCP_CONGESTION="$setting" TUTTI_LOG_LEVEL=info \
    "$tuttirun" -np 3 -- "$check" --loop-seconds 4 >"$work/$name.out" 2>&1 &
  local job=$!
  local seen=""
  # Look while the job runs (its loop lasts 4 s after init, however long a busy machine takes to
  # get there), for at most 120 s.
  local until=$((SECONDS + 120))
  while kill -0 "$job" 2>/dev/null && [ "$SECONDS" -lt "$until" ]; do
    sleep 0.2
    # Data sockets carry the loop's 16 MiB allreduces: above 1 MB sent or received (a ring sends
    # one way on each connection). Each socket's line of the process is followed by one that
    # starts with its algorithm ("cubic wscale:...").
    seen=$(ip netns exec "$ns" ss -tinpH state established 2>/dev/null |
      awk 'function count(key,   at) {
             if (!match($0, key ":[0-9]+")) return 0
             at = index(substr($0, RSTART), ":")
             return substr($0, RSTART + at, RLENGTH - at) + 0
           }
           /collectives_che/ { mine = 1; next }
           mine { mine = 0
                  if (count("bytes_sent") > 1000000 || count("bytes_received") > 1000000) print $1 }' |
      sort | uniq -c | tr -s ' ' | tr '\n' ';')
    [ "$(echo "$seen" | tr ';' '\n' | awk '{ n += $1 } END { print n + 0 }')" -ge 6 ] && break
  done
  wait "$job"
  local status=$?
  echo "--- $name (default $default, TUTTI_TCP_CONGESTION=$setting): data sockets: $seen exit $status"
  grep -E "TCP data sockets|tutti rank .* (warn|error)" "$work/$name.out" | sort -u
  if [ "$status" -ne 0 ]; then
    echo "FAIL: $name: the job failed"; cat "$work/$name.out"; fail=1; return
  fi
  if [ "$seen" != " 6 $want;" ]; then
    echo "FAIL: $name: expected all 6 data sockets on $want, saw '$seen'"; fail=1
  fi
}

run_case auto-bbr bbr auto cubic
grep -q "TCP data sockets use cubic instead of the kernel's bbr" "$work/auto-bbr.out" ||
  { echo "FAIL: auto-bbr: no info line saying bbr -> cubic"; fail=1; }
run_case auto-reno reno auto reno
grep -q "TCP data sockets" "$work/auto-reno.out" &&
  { echo "FAIL: auto-reno: auto said it changed something"; fail=1; }
run_case system-bbr bbr system bbr
run_case named-reno bbr reno reno

# error NAME SETTING PATTERN
expect_error() {
  local name=$1 setting=$2 pattern=$3
  local start=$SECONDS
  ip netns exec "$ns" env TUTTI_TRANSPORT=tcp TUTTI_TCP_CONGESTION="$setting" timeout 60 \
    "$tuttirun" -np 3 -- "$check" --counts 1000 --collectives allreduce >"$work/$name.out" 2>&1
  local status=$? elapsed=$((SECONDS - start))
  echo "--- $name (TUTTI_TCP_CONGESTION=$setting): exit $status after ${elapsed}s"
  grep -m 3 "TUTTI_TCP_CONGESTION" "$work/$name.out"
  if [ "$status" -eq 0 ] || [ "$status" -eq 124 ] || [ "$elapsed" -gt 30 ]; then
    echo "FAIL: $name: expected a quick failure"; cat "$work/$name.out"; fail=1
  fi
  grep -qE "$pattern" "$work/$name.out" || { echo "FAIL: $name: no message matching '$pattern'"; fail=1; }
}
expect_error unknown nosuchcc \
  "TUTTI_TCP_CONGESTION=nosuchcc .Options::tcp_congestion. for the data connections? (to )?rank [0-9].*no TCP congestion control 'nosuchcc'"
expect_error malformed "CUBIC" "TUTTI_TCP_CONGESTION='CUBIC' is not a TCP congestion control"

[ "$fail" -eq 0 ] && echo "PASS"
exit "$fail"
