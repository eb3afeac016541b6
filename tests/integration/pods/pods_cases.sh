#!/usr/bin/env bash
# One pod integration case: pods_cases.sh CASE K tuttirun=P kubexec=P hostfile=P check=P probe=P
# mpi=P bench=P bench_gloo=ON|OFF. K is the case's subnet index (198.18.K.0/24). Pods are network namespaces (pods.sh); the
# only stand-in is ./kubectl. Exits 0 on success, 77 when pods cannot be made here (ctest SKIPPED),
# otherwise 1 with a message naming the failed check.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CASE=$1
K=$2
shift 2
TUTTIRUN='' KUBEXEC='' HOSTFILE='' CHECK='' PROBE='' MPI='' BENCH='' BENCH_GLOO=''
for arg in "$@"; do
  case $arg in
    tuttirun=*) TUTTIRUN=${arg#*=} ;;
    kubexec=*) KUBEXEC=${arg#*=} ;;
    hostfile=*) HOSTFILE=${arg#*=} ;;
    check=*) CHECK=${arg#*=} ;;
    probe=*) PROBE=${arg#*=} ;;
    mpi=*) MPI=${arg#*=} ;;
    bench=*) BENCH=${arg#*=} ;;
    bench_gloo=*) [ "${arg#*=}" = ON ] && BENCH_GLOO=1 ;;
    *) echo "pods_cases.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

# shellcheck source=pods.sh
source "$HERE/pods.sh"
pods_check_possible  # every case needs pods: skip (77) first, before any other check can fail

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-pods-$CASE.XXXXXX")
pods_user_cleanup() { rm -rf "$WORK"; }
trap pods_user_cleanup EXIT  # replaced by pods_up's trap, which still calls it

# The stand-in kubectl, first on PATH and named explicitly for kubexec, for this script only.
export PATH="$HERE:$PATH"
export KUBEXEC_KUBECTL="$HERE/kubectl"
# kubexec retries transient kubectl failures only until this, well inside each case's timeout.
export KUBEXEC_TIMEOUT=20
SUBNET="198.18.$K.0/24"
HOST_ADDR="198.18.$K.1"

# shellcheck source=checks.sh
source "$HERE/checks.sh"

require() {
  local what
  for what in "$@"; do
    case $what in
      tuttirun) [ -x "$TUTTIRUN" ] || fail "no tuttirun binary given" ;;
      kubexec) [ -x "$KUBEXEC" ] || fail "no kubexec binary given" ;;
      hostfile) [ -x "$HOSTFILE" ] || fail "no tutti-hostfile binary given" ;;
      check) [ -x "$CHECK" ] || fail "no collectives_check binary given" ;;
      probe) [ -x "$PROBE" ] || fail "no launcher_probe binary given" ;;
      bench) [ -x "$BENCH" ] || fail "no tutti-bench binary given" ;;
      mpi)
        [ -n "$MPI" ] || pods_skip "tutti was built without MPI (no mpi_pods_check)"
        command -v mpirun >/dev/null 2>&1 || pods_skip "no mpirun on PATH"
        mpirun --version 2>/dev/null | grep -q 'Open MPI) 4' || pods_skip "mpirun is not Open MPI 4"
        ;;
      remote-tuttirun)
        # A tuttirun without the remote modes fails these cases (it is a missing feature, not a
        # missing capability of the machine).
        "$TUTTIRUN" --help 2>&1 | grep -q -- '--pods' || fail "this tuttirun has no --pods (remote modes not built yet)"
        ;;
    esac
  done
}


# Every process of the test must be gone: nothing in any pod, and no tuttirun, kubexec, kubectl or
# `ip netns exec` on the host side that names one of our pods (they all carry PREFIX-worker- in their
# command line). Killed processes leave asynchronously, so the check is bounded, not instant.
expect_no_leftovers() {
  local prefix=$1
  for _ in $(seq 1 100); do
    [ -z "$(pods_pids)" ] && ! pgrep -f -- "$prefix-worker-[0-9]" >/dev/null && return 0
    sleep 0.1
  done
  local left
  left=$(pods_pids | tr '\n' ',' | sed 's/,$//')
  fail "processes of the job remain: in pods: $( [ -n "$left" ] && ps -o pid=,args= -p "$left" | head -5);" \
    "on the host: $(pgrep -af -- "$prefix-worker-[0-9]" | head -5)"
}

# expect_mpi_output N: every rank's line with a distinct pod address, and the allreduce OK in N
# network namespaces.
expect_mpi_output() {
  local n=$1 r
  expect_out "mpi_pods_check: allreduce OK on $n ranks in $n network namespaces$"
  for ((r = 0; r < n; r++)); do
    expect_out "mpi_pods_check: rank $r of $n addr 198\.18\.$K\.(1[0-9]) netns [0-9]+$"
  done
  local addrs
  addrs=$(grep -oE "addr 198\.18\.$K\.[0-9]+" "$WORK/out" | sort -u | wc -l)
  [ "$addrs" -eq "$n" ] || fail "ranks reported $addrs distinct pod addresses, expected $n"
  grep -q 'WRONG' "$WORK/out" && fail "wrong allreduce result"
  return 0
}

case "$CASE" in
  mpirun_kubexec_pods)
    # Open MPI 4's mpirun on the launcher (this host) starts orted in each pod through kubexec, as
    # in an MPIJob v1; ranks talk TCP between the pods' own addresses.
    require kubexec hostfile mpi
    pods_up mpirun 3 "$K"
    "$HOSTFILE" --pods "$(pod_names mpirun 3)" --slots 1 --format openmpi -o "$WORK/hostfile" ||
      fail "tutti-hostfile failed"
    note "hostfile: $(tr '\n' ' ' <"$WORK/hostfile")"
    run 120 mpirun --allow-run-as-root --hostfile "$WORK/hostfile" -np 3 \
      --mca plm_rsh_agent "$KUBEXEC" --mca plm_rsh_no_tree_spawn 1 \
      --mca btl tcp,self --mca btl_tcp_if_include "$SUBNET" --mca oob_tcp_if_include "$SUBNET" "$MPI"
    cat "$WORK/out"
    expect_rc 0
    expect_mpi_output 3
    # The same through the environment, as an MPIJob launcher sets it (OMPI_MCA_plm_rsh_agent).
    run 120 env OMPI_MCA_plm_rsh_agent="$KUBEXEC" OMPI_MCA_plm_rsh_no_tree_spawn=1 OMPI_MCA_btl=tcp,self \
      OMPI_MCA_btl_tcp_if_include="$SUBNET" OMPI_MCA_oob_tcp_if_include="$SUBNET" \
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun --hostfile "$WORK/hostfile" -np 2 "$MPI"
    expect_rc 0
    expect_mpi_output 2
    expect_no_leftovers mpirun
    ;;

  kubexec_hostile_pods)
    require kubexec
    pods_up hostile 2 "$K"
    MARK="$WORK/marker"
    # A kubectl that records being called, then does the stand-in's work: a refused name must not
    # even reach kubectl.
    cat >"$WORK/kubectl-logged" <<EOF
#!/usr/bin/env bash
touch "$WORK/kubectl-called"
exec "$HERE/kubectl" "\$@"
EOF
    chmod +x "$WORK/kubectl-logged"
    hostile=(
      "hostile-worker-0;touch $MARK"
      "hostile-worker-0 touch $MARK"
      "hostile-worker-0"$'\n'"touch $MARK"
      "hostile-worker-0\$(touch $MARK)"
      "\$(touch $MARK)"
      "\`touch $MARK\`"
      "hostile-worker-0|touch $MARK"
      "hostile-worker-0&&touch $MARK"
      "hostile-worker-0'"
      "hostile-worker-0\""
      "-hostile-worker-0"
      "--namespace=x"
      "Hostile-Worker-0"
      "hostile_worker_0"
      "hostile-worker-0/../x"
      "hostile-worker-0.svc;touch $MARK"
      " hostile-worker-0"
      ""
    )
    for name in "${hostile[@]}"; do
      rm -f "$WORK/kubectl-called"
      run 30 env KUBEXEC_KUBECTL="$WORK/kubectl-logged" "$KUBEXEC" -- "$name" touch "$MARK"
      shown=$(printf '%q' "$name")
      [ "$RC" -eq 255 ] || fail "pod name $shown: exit code $RC, expected 255 (refused)"
      grep -q "is not a pod name" "$WORK/err" || fail "pod name $shown: no clear refusal on stderr"
      [ -e "$WORK/kubectl-called" ] && fail "pod name $shown reached kubectl"
      [ -e "$MARK" ] && fail "pod name $shown executed a command"
    done
    note "${#hostile[@]} hostile pod names refused before kubectl"
    # A leading '-' without "--" is an ssh-style option to kubexec (as for ssh): whatever it makes
    # of the rest, nothing may run.
    run 30 "$KUBEXEC" -hostile-worker-0 sh -c "touch $MARK"
    expect_fail
    [ -e "$MARK" ] && fail "'-hostile-worker-0' without -- executed a command"

    # Commands: kubexec joins its words with spaces and hands them to sh -c in the pod, as ssh does,
    # so quoting written for ssh means the same.
    run 30 "$KUBEXEC" hostile-worker-0 "$(cat <<'EOF'
printf '%s\n' 'single $HOME `id` $(id) \n "dq"'
EOF
)"
    expect_rc 0
    [ "$(cat "$WORK/out")" = 'single $HOME `id` $(id) \n "dq"' ] || fail "single quotes: got '$(cat "$WORK/out")'"
    run 30 "$KUBEXEC" hostile-worker-0 "$(cat <<'EOF'
printf '%s\n' "double \"inner\" \$HOME \\ back 'sq'"
EOF
)"
    expect_rc 0
    [ "$(cat "$WORK/out")" = "double \"inner\" \$HOME \\ back 'sq'" ] || fail "double quotes: got '$(cat "$WORK/out")'"
    run 30 "$KUBEXEC" hostile-worker-0 printf "'%s|'" it\\\'s "a\\ b" '"c  d"' 'e$((6*7))'
    expect_rc 0
    [ "$(cat "$WORK/out")" = "it's|a b|c  d|e42|" ] || fail "joined words: got '$(cat "$WORK/out")'"
    run 30 "$KUBEXEC" hostile-worker-0 echo "a   b"
    [ "$(cat "$WORK/out")" = "a b" ] || fail "ssh joining: got '$(cat "$WORK/out")', expected 'a b'"
    # The remote status, stdin and the pod's own network namespace.
    run 30 "$KUBEXEC" hostile-worker-1 'exit 42'
    expect_rc 42
    printf 'line one\nline "two" $x\n' >"$WORK/stdin"
    timeout 30 "$KUBEXEC" hostile-worker-1 cat <"$WORK/stdin" >"$WORK/out" 2>"$WORK/err"
    cmp -s "$WORK/stdin" "$WORK/out" || fail "stdin did not arrive intact: '$(cat "$WORK/out")'"
    run 30 "$KUBEXEC" hostile-worker-1 ip -4 -o addr show dev eth0
    expect_out "inet $(pod_ip "$K" 1)/24"
    run 30 "$KUBEXEC" hostile-worker-1.hostile.default.svc.cluster.local ip -4 -o addr show dev eth0
    expect_rc 0
    expect_out "inet $(pod_ip "$K" 1)/24"
    # A pod that does not exist: kubectl's own error, a non-zero status, nothing run.
    run 60 "$KUBEXEC" hostile-worker-7 touch "$MARK"
    expect_fail
    expect_err '^Error from server \(NotFound\): pods "hostile-worker-7" not found$'
    [ -e "$MARK" ] && fail "a command ran for a pod that does not exist"
    expect_no_leftovers hostile
    ;;

  tuttirun_pods_sweep)
    require tuttirun kubexec check remote-tuttirun
    pods_up sweep 3 "$K"
    pods=$(pod_names sweep 3)
    common=(--exec kubexec --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR" --probe-timeout 20)
    run 60 "$TUTTIRUN" --pods "$pods" --slots 2 "${common[@]}" --dry-run -- "$CHECK"
    expect_rc 0
    for r in 0 1 2 3 4 5; do
      expect_out "rank $r host sweep-worker-$((r / 2)) local_rank $((r % 2))/2 cross_rank $((r / 2))/3"
    done
    [ -z "$(pods_pids)" ] || fail "--dry-run started something in a pod"
    export TUTTI_TRANSPORT=tcp
    run 280 "$TUTTIRUN" --pods "$pods" --slots 2 "${common[@]}" -- "$CHECK" --counts 0,1,N-1,1000
    note "6 ranks in 3 pods: ${ELAPSED}s"
    expect_rc 0
    show out 'collectives_check: '
    expect_out '^\[0\] collectives_check: 6 ranks, [0-9]+ checks per rank, 0 failed$'
    expect_no_leftovers sweep
    run 120 "$TUTTIRUN" --pods "$pods" --slots 1 -np 2 "${common[@]}" -- "$CHECK" --counts 1,1000
    expect_rc 0
    expect_out '^\[0\] collectives_check: 2 ranks, [0-9]+ checks per rank, 0 failed$'
    expect_no_leftovers sweep
    # Bytes that are not UTF-8 (and a newline) in an argument and in an -x value reach ranks in
    # other pods exactly, as in local mode (they once arrived as U+FFFD).
    arg=$'a\xff\xfe\nb\xe9'
    val=$'\xe9t\xe9\x80'
    hex() { printf %s "$1" | od -An -tx1 | tr -d ' \n'; }
    run 60 "$TUTTIRUN" --pods "$pods" --slots 1 "${common[@]}" -x "BYTES=$val" -- sh -c \
      'printf "arg=%s val=%s\n" "$(printf %s "$1" | od -An -tx1 | tr -d " \n")" "$(printf %s "$BYTES" | od -An -tx1 | tr -d " \n")"' \
      sh "$arg"
    expect_rc 0
    expect_out "^\[2\] arg=$(hex "$arg") val=$(hex "$val")$"
    expect_no_leftovers sweep
    ;;

  tuttirun_pods_kill)
    require tuttirun kubexec check remote-tuttirun
    pods_up kill 3 "$K"
    mkdir -p "$WORK/pids"
    TUTTI_TRANSPORT=tcp timeout -k 5 200 "$TUTTIRUN" --pods "$(pod_names kill 3)" --slots 1 --exec kubexec \
      --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR" --probe-timeout 20 -- \
      "$CHECK" --loop-seconds 120 --pid-dir "$WORK/pids" >"$WORK/out" 2>"$WORK/err" </dev/null &
    launcher=$!
    RUN_PID=$launcher
    pods_wait_pid_files "$WORK/pids" 3 $launcher || fail "the 3 ranks never started"
    victim=$(cat "$WORK/pids/1.pid")
    ip netns pids kill-worker-1 | grep -qx "$victim" || fail "rank 1 (pid $victim) is not in pod kill-worker-1"
    sleep 1
    kill -9 "$victim"
    for _ in $(seq 1 600); do
      kill -0 $launcher 2>/dev/null || break
      sleep 0.1
    done
    kill -0 $launcher 2>/dev/null && fail "tuttirun still running 60 s after rank 1 was killed"
    wait $launcher
    RC=$?
    # Which failure tuttirun sees first (rank 1's death, or a peer's error about it) is a race, so
    # only "non-zero" is certain; the line about rank 1 must be there either way.
    show err 'rank 1 on kill-worker-1|ranks failed'
    expect_fail
    expect_err 'rank 1 on kill-worker-1\b.*(status 137|signal 9|SIGKILL)'
    expect_no_leftovers kill
    # --restarts: rank 1 fails in its pod on the first attempt only; the whole job is relaunched
    # and TUTTI_RESTART_COUNT tells the ranks which attempt they are in.
    flaky=(sh -c '[ "$TUTTI_RANK" = 1 ] && [ "$TUTTI_RESTART_COUNT" = 0 ] && exit 7; exec "$0" show TUTTI_RESTART_COUNT' "$PROBE")
    run 120 "$TUTTIRUN" --pods "$(pod_names kill 3)" --exec kubexec --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR" \
      --probe-timeout 20 --restarts 2 --restart-backoff 0.5 -- "${flaky[@]}"
    show err 'rank 1 on kill-worker-1'
    expect_rc 0
    expect_err 'rank 1 on kill-worker-1\b.*status 7'
    for r in 0 1 2; do expect_out "^\[$r\] TUTTI_RESTART_COUNT=1\$"; done
    # Without restarts the same failure is the job's status.
    run 120 "$TUTTIRUN" --pods "$(pod_names kill 3)" --exec kubexec --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR" \
      --probe-timeout 20 -- "${flaky[@]}"
    expect_rc 7
    expect_err '^tuttirun: .*rank 1 on kill-worker-1 \(pid [0-9]+\) exited with status 7'
    expect_no_leftovers kill
    ;;

  bench_gloo_pods)
    # tutti-bench --baseline gloo with one rank per pod: the ranks are on different hosts, so Gloo
    # cannot use 127.0.0.1 and needs GLOO_SOCKET_IFNAME; its file store sits under TMPDIR, which
    # the pods share (one filesystem), as it would on a shared volume.
    require tuttirun kubexec bench remote-tuttirun
    [ -n "$BENCH_GLOO" ] || pods_skip "tutti-bench was built without the Gloo baseline"
    pods_up gloo 2 "$K"
    common=(--pods "$(pod_names gloo 2)" --slots 1 --exec kubexec --kubexec "$KUBEXEC"
            --store-addr "$HOST_ADDR" --probe-timeout 20)
    export TUTTI_TRANSPORT=tcp
    sweep=(allreduce -b 8 -e 64K -f 8 -n 2 -w 1 -c 1 --rounds 2 -d float -o sum --baseline gloo)
    run 60 "$TUTTIRUN" "${common[@]}" -- "$BENCH" "${sweep[@]}"
    note "without GLOO_SOCKET_IFNAME: exit $RC after ${ELAPSED}s"
    show err 'GLOO_SOCKET_IFNAME'
    expect_fail
    expect_err "rank [01] has 1 of the 2 ranks on its host.*set GLOO_SOCKET_IFNAME on every rank"
    expect_no_leftovers gloo
    run 120 "$TUTTIRUN" "${common[@]}" -x GLOO_SOCKET_IFNAME=eth0 -- "$BENCH" "${sweep[@]}"
    note "GLOO_SOCKET_IFNAME=eth0: exit $RC after ${ELAPSED}s"
    show out '# Baseline gloo'
    expect_rc 0
    expect_out "# Out of bounds values : 0 OK"
    expect_out "# Baseline gloo: .*interface eth0 \\(GLOO_SOCKET_IFNAME\\), rank 0 at 198\\.18\\.$K\\.10"
    expect_no_leftovers gloo
    # bench/torch_gloo_bench.py the same way, one rank per pod (--rank/--master at pod 0's
    # address), where Debian's python3 has torch.
    if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
      script="$HERE/../../../bench/torch_gloo_bench.py"
      torch_args=(-np 2 --master "$(pod_ip "$K" 0):29622" -b 1M -e 4M -n 2 -w 1)
      timeout -k 5 120 kubectl exec gloo-worker-1 -- env GLOO_SOCKET_IFNAME=eth0 /usr/bin/python3 \
        "$script" "${torch_args[@]}" --rank 1 >"$WORK/torch1.out" 2>"$WORK/torch1.err" </dev/null &
      rank1=$!
      run 120 kubectl exec gloo-worker-0 -- env GLOO_SOCKET_IFNAME=eth0 /usr/bin/python3 \
        "$script" "${torch_args[@]}" --rank 0
      wait "$rank1" || fail "torch_gloo_bench.py rank 1 exited $?: $(cat "$WORK/torch1.err")"
      note "torch_gloo_bench.py across pods: exit $RC after ${ELAPSED}s"
      show out '^ +[0-9]'
      expect_rc 0
      [ "$(awk '!/^#/ && NF == 9 && $9 == 0' "$WORK/out" | wc -l)" -eq 2 ] ||
        fail "torch_gloo_bench.py rank 0 did not print its 2 rows with #wrong 0"
      [ ! -s "$WORK/torch1.out" ] || fail "torch_gloo_bench.py rank 1 printed something"
      expect_no_leftovers gloo
    else
      note "no torch in /usr/bin/python3: torch_gloo_bench.py across pods not run"
    fi
    ;;

  tuttirun_pods_ifname)
    # Two interfaces per pod, as with a pod network plus a secondary (Multus) data network: eth0
    # carries the default route and reaches the launcher (the store) but not the other pods (its
    # bridge ports are isolated); data0 is on a bridge the pods share. Ranks advertise the address
    # that reaches the store unless TUTTI_SOCKET_IFNAME says which interface to use.
    require tuttirun kubexec check remote-tuttirun
    pods_up ifname 2 "$K"
    pods_isolate "$K" 2 || fail "cannot isolate the pods' eth0 bridge ports"
    pods_data_net_up "$K" || fail "cannot create the data bridge"
    for i in 0 1; do
      pod_add_data "ifname-worker-$i" "$K" "$i" data0 || fail "cannot give ifname-worker-$i a data0"
    done
    # The network is what the case claims: eth0 reaches the host only, data0 the other pod. (A TCP
    # connect to a closed port: "refused" means the address answered.)
    answers() { timeout 3 ip netns exec "$1" bash -c "exec 3<>/dev/tcp/$2/9" 2>&1 | grep -q refused; }
    answers ifname-worker-0 "$HOST_ADDR" || fail "pod 0 cannot reach the host over eth0"
    answers ifname-worker-0 "$(pod_data_ip "$K" 1)" || fail "pod 0 cannot reach pod 1 over data0"
    answers ifname-worker-0 "$(pod_ip "$K" 1)" &&
      fail "pod 0 reaches pod 1 over eth0; the bridge ports are not isolated"
    pods=$(pod_names ifname 2)
    common=(--pods "$pods" --slots 1 --exec kubexec --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR"
            --probe-timeout 20)
    export TUTTI_TRANSPORT=tcp
    # Without TUTTI_SOCKET_IFNAME: the eth0 addresses are advertised, peers cannot connect, and the
    # job fails at TUTTI_TIMEOUT naming the endpoint it could not reach.
    run 90 env TUTTI_TIMEOUT=5 "$TUTTIRUN" "${common[@]}" -- "$CHECK" --counts 1000 --collectives allreduce
    note "without TUTTI_SOCKET_IFNAME: exit $RC after ${ELAPSED}s"
    show err 'collectives_check: '
    expect_fail
    [ "$ELAPSED" -le 45 ] || fail "took ${ELAPSED}s to fail; TUTTI_TIMEOUT was 5s"
    expect_err "collectives_check: rank [01] timed out after 5\\.0 s waiting for rank [01] .*reachable at 198\\.18\\.$K\\.1[01]:[0-9]+"
    expect_no_leftovers ifname
    for pattern in data '^eth' '=data0'; do
      run 120 env TUTTI_SOCKET_IFNAME="$pattern" TUTTI_LOG_LEVEL=debug "$TUTTIRUN" "${common[@]}" -- \
        "$CHECK" --counts 1,N-1,1000,70001 --dtypes float32,int64 --ops sum,max \
        --collectives allreduce,allgather
      note "TUTTI_SOCKET_IFNAME=$pattern: exit $RC after ${ELAPSED}s"
      show err 'listens for data'
      expect_rc 0
      expect_out '^\[0\] collectives_check: 2 ranks, [0-9]+ checks per rank, 0 failed$'
      for r in 0 1; do
        expect_err "rank $r listens for data connections on 198\\.19\\.$K\\.1$r:"
      done
      expect_no_leftovers ifname
    done
    ;;
  tuttirun_pods_unreachable)
    require tuttirun kubexec probe remote-tuttirun
    pods_up unreach 2 "$K"
    common=(--pods "$(pod_names unreach 3)" --exec kubexec --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR")
    # unreach-worker-2 has no namespace: nothing may start anywhere, exit 3 within the deadline.
    run 60 "$TUTTIRUN" "${common[@]}" --probe-timeout 3 -- "$PROBE" touch "$WORK/ran"
    note "unreachable pod: exit $RC after ${ELAPSED}s"
    show err 'never became reachable'
    expect_rc 3
    [ "$ELAPSED" -le 15 ] || fail "took ${ELAPSED}s to give up; --probe-timeout was 3s"
    expect_err '^tuttirun: .*never became reachable within [^:]*: .*unreach-worker-2'
    grep 'never became reachable' "$WORK/err" | grep -qE 'unreach-worker-[01]\b' &&
      fail "reachable pods were listed as unreachable"
    grep 'never became reachable' "$WORK/err" | grep -q 'not found' ||
      fail "the failure does not give kubectl's reason (not found)"
    ls "$WORK"/ran.* >/dev/null 2>&1 && fail "a rank ran although a pod was unreachable"
    expect_no_leftovers unreach
    # The same pod appears 3 s later (a worker still being scheduled): tuttirun waits, says so, runs.
    PODS_NAMES+=(unreach-worker-2)  # pod_add runs in a subshell; pods_down must still remove it
    (sleep 3 && pod_add unreach-worker-2 "$K" 2) &
    late=$!
    run 90 "$TUTTIRUN" "${common[@]}" --probe-timeout 60 -- "$PROBE" touch "$WORK/late"
    wait $late || fail "could not add the late pod"
    note "late pod: exit $RC after ${ELAPSED}s"
    show err 'waiting for'
    expect_rc 0
    expect_err '^tuttirun: waiting for 1/3 hosts: unreach-worker-2'
    for r in 0 1 2; do [ -e "$WORK/late.$r" ] || fail "rank $r did not run"; done
    expect_no_leftovers unreach
    ;;

  tuttirun_pods_hostfile)
    require tuttirun kubexec hostfile probe remote-tuttirun
    pods_up hostf 2 "$K"
    common=(--exec kubexec --kubexec "$KUBEXEC" --store-addr "$HOST_ADDR" --probe-timeout 20)
    # Each rank prints the namespace it runs in, then its TUTTI_* environment.
    report=(sh -c 'echo "NETNS=$(ip netns identify $$)"; exec "$0" env' "$PROBE")
    # check_rank R POD LOCAL_RANK LOCAL_SIZE CROSS_RANK CROSS_SIZE SIZE
    check_rank() {
      local kv
      for kv in "NETNS=$2" "TUTTI_RANK=$1" "TUTTI_SIZE=$7" "TUTTI_LOCAL_RANK=$3" "TUTTI_LOCAL_SIZE=$4" \
        "TUTTI_CROSS_RANK=$5" "TUTTI_CROSS_SIZE=$6" "TUTTI_HOST=$2"; do
        expect_out "^\[$1\] $kv\$"
      done
    }
    "$HOSTFILE" --pods "$(pod_names hostf 2)" --slots 2 --format openmpi -o "$WORK/openmpi" ||
      fail "tutti-hostfile failed"
    run 120 "$TUTTIRUN" --hostfile "$WORK/openmpi" "${common[@]}" -- "${report[@]}"
    expect_rc 0
    check_rank 0 hostf-worker-0 0 2 0 2 4
    check_rank 1 hostf-worker-0 1 2 0 2 4
    check_rank 2 hostf-worker-1 0 2 1 2 4
    check_rank 3 hostf-worker-1 1 2 1 2 4
    # MPICH/Intel style with uneven slots, written by hand, comments and all.
    printf '# MPICH hostfile\nhostf-worker-0:1\n\nhostf-worker-1:3  # three ranks\n' >"$WORK/mpich"
    run 120 "$TUTTIRUN" --hostfile "$WORK/mpich" "${common[@]}" -- "${report[@]}"
    expect_rc 0
    check_rank 0 hostf-worker-0 0 1 0 2 4
    check_rank 1 hostf-worker-1 0 3 1 2 4
    check_rank 2 hostf-worker-1 1 3 1 2 4
    check_rank 3 hostf-worker-1 2 3 1 2 4
    # -np below the slots fills hosts in order: both ranks in the first pod.
    run 120 "$TUTTIRUN" --hostfile "$WORK/openmpi" -np 2 "${common[@]}" -- "${report[@]}"
    expect_rc 0
    check_rank 0 hostf-worker-0 0 2 0 1 2
    check_rank 1 hostf-worker-0 1 2 0 1 2
    # --pods-file in `kubectl get pods -o name` form, and --output-dir's per-rank files.
    printf 'pod/hostf-worker-1\npod/hostf-worker-0\n' >"$WORK/pods"
    run 120 "$TUTTIRUN" --pods-file "$WORK/pods" --slots 1 --output-dir "$WORK/outdir" "${common[@]}" -- "${report[@]}"
    expect_rc 0
    check_rank 0 hostf-worker-1 0 1 0 2 2
    check_rank 1 hostf-worker-0 0 1 1 2 2
    grep -qx 'NETNS=hostf-worker-0' "$WORK/outdir/rank.1/stdout" 2>/dev/null ||
      fail "--output-dir: rank.1/stdout lacks NETNS=hostf-worker-0"
    grep -qx 'TUTTI_RANK=1' "$WORK/outdir/rank.1/stdout" || fail "--output-dir: rank.1/stdout lacks TUTTI_RANK=1"
    [ -e "$WORK/outdir/rank.0/stderr" ] || fail "--output-dir: no rank.0/stderr"
    # Hostile host lists: refused before anything runs, naming the file and line at fault; kubectl
    # is never called.
    printf '#!/usr/bin/env bash\ntouch %q\nexec %q "$@"\n' "$WORK/kubectl-called" "$HERE/kubectl" >"$WORK/kubectl-logged"
    chmod +x "$WORK/kubectl-logged"
    MARK="$WORK/marker"
    printf 'hostf-worker-0 slots=2\nhostf-worker-1;touch %s slots=1\n' "$MARK" >"$WORK/bad"
    run 60 env KUBEXEC_KUBECTL="$WORK/kubectl-logged" "$TUTTIRUN" --hostfile "$WORK/bad" "${common[@]}" -- touch "$MARK"
    expect_rc 2
    expect_err "$WORK/bad:2"
    for pods in "hostf-worker-0,hostf-worker-1\$(touch $MARK)" "hostf-worker-0,-hostf-worker-1" \
      "hostf-worker-0,hostf-worker-1 touch $MARK" "hostf-worker-0,hostf-worker-1"$'\n'"touch $MARK"; do
      run 60 env KUBEXEC_KUBECTL="$WORK/kubectl-logged" "$TUTTIRUN" --pods "$pods" "${common[@]}" -- touch "$MARK"
      expect_rc 2
      expect_err 'not a valid pod name'
    done
    [ -e "$WORK/kubectl-called" ] && fail "a hostile host list reached kubectl"
    [ -e "$MARK" ] && fail "a hostile host list ran a command"
    expect_no_leftovers hostf
    ;;

  tuttirun_pods_mpirun_mode)
    require tuttirun kubexec mpi remote-tuttirun
    pods_up mpimode 2 "$K"
    # How mpirun gets MCA settings in --mpirun mode: the spec names none, so they come the way an
    # MPIJob launcher passes them, through OMPI_MCA_* in the environment.
    export OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include="$SUBNET" OMPI_MCA_oob_tcp_if_include="$SUBNET"
    export OMPI_MCA_plm_rsh_no_tree_spawn=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    run 120 "$TUTTIRUN" --mpirun --pods "$(pod_names mpimode 2)" --exec kubexec --kubexec "$KUBEXEC" \
      --probe-timeout 20 -- "$MPI"
    cat "$WORK/out"
    expect_rc 0
    expect_mpi_output 2
    # TUTTI_* of tuttirun's environment reach the ranks (mpirun -x); each rank runs in its pod.
    export TUTTI_PODS_FORWARDED="yes it is"
    run 120 "$TUTTIRUN" --mpirun --pods "$(pod_names mpimode 2)" --exec kubexec --kubexec "$KUBEXEC" \
      --probe-timeout 20 -- sh -c 'echo "rank $OMPI_COMM_WORLD_RANK in $(hostname): $TUTTI_PODS_FORWARDED"'
    expect_rc 0
    for r in 0 1; do expect_out "rank $r in mpimode-worker-$r: yes it is\$"; done
    expect_no_leftovers mpimode
    ;;

  *)
    echo "pods_cases.sh: unknown case '$CASE'" >&2
    exit 2
    ;;
esac
note "PASS"
exit 0
