#!/usr/bin/env bash
# Addresses of the store and the data ports: net_addresses.sh MODE TUTTIRUN CHECK.
#   ipv6    a store at [::1] (tuttirun's, and rank 0's through MASTER_ADDR=::1) and data listeners
#           on ::1 (TUTTI_ADDR), ranks over TCP: correct collectives. Skipped (77) without an IPv6
#           loopback.
#   ifname  TUTTI_SOCKET_IFNAME: '=lo' makes ranks listen on 127.0.0.1 and tuttirun advertise its
#           store there; a pattern that matches nothing fails ranks and tuttirun at once with a
#           kConfig message naming the pattern and listing this host's interfaces.
set -uo pipefail
mode=$1 tuttirun=$2 check=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
# expect FILE REGEX: the output holds the pattern (grep -E).
expect() { grep -qE -- "$2" "$1" || bad "no line matching '$2' in $1"; }
export TUTTI_TRANSPORT=tcp TUTTI_TIMEOUT=20
# shellcheck disable=SC2054  # commas are the check's list syntax
run_check=("$check" --counts 1,N-1,1000,70001 --dtypes float32,int64 --ops sum,max
           --collectives allreduce,allgather,broadcast)

case $mode in
  ipv6)
    grep -qE '^0{31}1 ' /proc/net/if_inet6 2>/dev/null ||
      { echo "SKIP: this host has no IPv6 loopback (::1)"; exit 77; }
    TUTTI_ADDR=::1 TUTTI_LOG_LEVEL=debug timeout 120 "$tuttirun" -np 3 --store-addr ::1 -- \
      "${run_check[@]}" >"$work/out" 2>&1
    status=$?
    grep -v ' debug: ' "$work/out"
    [ $status -eq 0 ] || bad "tuttirun with a store at [::1] exited with $status"
    expect "$work/out" '^\[0\] collectives_check: 3 ranks, [0-9]+ checks per rank, 0 failed$'
    expect "$work/out" 'store at \[::1\]:[0-9]+'
    for r in 0 1 2; do expect "$work/out" "rank $r listens for data connections on \[::1\]:[0-9]+"; done
    # No launcher: rank 0 hosts the store at MASTER_ADDR=::1; TUTTI_ADDR in URL brackets. The port
    # is drawn below the kernel's ephemeral range (other tests' outgoing connections take ports
    # from that range at any moment), and drawn again if another test listens on it already.
    read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range
    for attempt in 1 2 3; do
      port=$((20000 + RANDOM % (ephemeral_low > 21000 ? ephemeral_low - 20000 : 10000)))
      pids=()
      for r in 0 1; do
        RANK=$r WORLD_SIZE=2 MASTER_ADDR=::1 MASTER_PORT=$port TUTTI_ADDR='[::1]' TUTTI_LOG_LEVEL=debug \
          TUTTI_TIMEOUT=10 timeout 120 "${run_check[@]}" >"$work/rank$r" 2>&1 &
        pids+=($!)
      done
      statuses=()
      for r in 0 1; do
        wait "${pids[$r]}"
        statuses+=($?)
      done
      grep -q "cannot listen on \[::\]:$port: Address already in use" "$work/rank0" || break
      echo "net_addresses: port $port was taken; drawing another (attempt $attempt)"
    done
    for r in 0 1; do
      [ "${statuses[$r]}" -eq 0 ] || bad "rank $r with rank 0's store at [::1]:$port exited with ${statuses[$r]}"
      grep -v ' debug: ' "$work/rank$r"
      expect "$work/rank$r" "rank $r listens for data connections on \[::1\]:[0-9]+"
    done
    expect "$work/rank0" '^collectives_check: 2 ranks, [0-9]+ checks per rank, 0 failed$'
    ;;
  ifname)
    TUTTI_SOCKET_IFNAME='=lo' TUTTI_LOG_LEVEL=debug timeout 120 "$tuttirun" -np 3 -- \
      "${run_check[@]}" >"$work/out" 2>&1
    status=$?
    grep -v ' debug: ' "$work/out"
    [ $status -eq 0 ] || bad "tuttirun with TUTTI_SOCKET_IFNAME='=lo' exited with $status"
    expect "$work/out" '^\[0\] collectives_check: 3 ranks, [0-9]+ checks per rank, 0 failed$'
    for r in 0 1 2; do expect "$work/out" "rank $r listens for data connections on 127\.0\.0\.1:"; done
    # Nothing matches: every rank fails at init, at once (not at TUTTI_TIMEOUT), naming itself.
    start=$SECONDS
    TUTTI_SOCKET_IFNAME='=tutti-none,lo0' timeout 60 "$tuttirun" -np 2 -- "${run_check[@]}" \
      >"$work/none" 2>&1 ||
      true
    [ $((SECONDS - start)) -lt 15 ] || bad "a pattern that matches nothing took $((SECONDS - start)) s to fail"
    cat "$work/none"
    for r in 0 1; do
      expect "$work/none" "rank $r: TUTTI_SOCKET_IFNAME='=tutti-none,lo0' matches no interface"
    done
    expect "$work/none" 'this host has: .*lo 127\.0\.0\.1'
    expect "$work/none" 'exited with status 1'
    # tuttirun advertises its store on the interface the pattern selects (remote ranks; dry run).
    TUTTI_SOCKET_IFNAME='=lo' "$tuttirun" --pods p-worker-0,p-worker-1 --dry-run -- true \
      >"$work/dry" 2>&1 || bad "dry run with TUTTI_SOCKET_IFNAME='=lo' failed"
    cat "$work/dry"
    expect "$work/dry" 'store at 127\.0\.0\.1:<port chosen at launch>'
    if TUTTI_SOCKET_IFNAME='=tutti-none' "$tuttirun" --pods p-worker-0 --dry-run -- true \
      >"$work/dry-none" 2>&1; then
      bad "tuttirun accepted a TUTTI_SOCKET_IFNAME that matches nothing"
    fi
    cat "$work/dry-none"
    expect "$work/dry-none" "the store's address: TUTTI_SOCKET_IFNAME='=tutti-none' matches no interface.*--store-addr"
    ;;
  *)
    echo "net_addresses.sh: unknown mode '$mode'" >&2
    exit 2
    ;;
esac
[ $fail -eq 0 ] && echo "net_addresses $mode: OK"
exit $fail
