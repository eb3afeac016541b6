#!/usr/bin/env bash
# A whole pod killed mid-training, the survivors go on (elastic shrink, on the pods harness):
# 8 ranks in 4 pods (network namespaces, 2 slots each) under tuttirun --pods --exec kubexec
# --min-np 6; every rank runs shrink_check loop. Once all run, pod 2 (ranks 4 and 5) is killed
# (kill -9 of everything in it, then the namespace deleted, as a node or pod loss). The other 6 must
# fail their call, shrink to 6 ranks, run 50 checked steps and exit 0; tuttirun must exit 0 naming
# the lost ranks. Prints, per survivor, the time from the kill to its first step after the shrink
# (the goal: 3 s), and fails above it.
# With `etcd`, the job's store is a real etcd on the host side (tuttirun --store etcd://...), as a
# large job's would be: the survivors shrink through it, and tuttirun removes the job's keys at the
# end (checked with etcdctl).
#   pods_shrink.sh K tuttirun=P kubexec=P check=P [etcd]
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PODS_DIR=$HERE/../pods
CASE=pods_shrink
# shellcheck source=../pods/pods.sh
source "$PODS_DIR/pods.sh"
pods_case_setup pods-shrink "$@"
STORE=(--store-addr "$HOST_ADDR")
case "${CASE_WORDS[*]}" in
  '') ;;
  etcd) CASE=pods_shrink_etcd ;;
  *) echo "pods_shrink.sh: unknown argument '${CASE_WORDS[0]}'" >&2; exit 2 ;;
esac

pods_up shr 4 "$K"
if [ "$CASE" = pods_shrink_etcd ]; then
  # shellcheck source=../pods/etcd.sh
  source "$PODS_DIR/etcd.sh"
  pods_user_stop() { etcd_down; }
  etcd_up "$HOST_ADDR"
  STORE=(--store "etcd://$ETCD_ENDPOINT/pods" --job-id shrink-etcd)
fi
mkdir -p "$WORK/pids"
TUTTI_TIMEOUT=30 timeout -k 5 200 "$TUTTIRUN" --pods "$(pod_names shr 4)" --slots 2 --exec kubexec \
  --kubexec "$KUBEXEC" "${STORE[@]}" --probe-timeout 20 --min-np 6 -- \
  "$CHECK" loop "$WORK/pids" >"$WORK/out" 2>"$WORK/err" </dev/null &
launcher=$!
RUN_PID=$launcher
pods_wait_pid_files "$WORK/pids" 8 $launcher || fail "the 8 ranks never started"
for r in 4 5; do
  ip netns pids shr-worker-2 | grep -qx "$(cat "$WORK/pids/$r.pid")" ||
    fail "rank $r is not in pod shr-worker-2"
done
if [ "$CASE" = pods_shrink_etcd ]; then
  n=$(etcd_keys /pods/shrink-etcd/a0/ | wc -l)
  [ "$n" -gt 0 ] || fail "no keys of the job in etcd while it runs"
  echo "[$CASE] the running job has $n keys in etcd under /pods/shrink-etcd/a0/"
fi
sleep 1
killed_at=$(date +%s.%N)
pods_kill_and_delete shr-worker-2
for _ in $(seq 1 600); do
  kill -0 $launcher 2>/dev/null || break
  sleep 0.1
done
kill -0 $launcher 2>/dev/null && fail "tuttirun still running 60 s after pod 2 was killed"
wait $launcher
RC=$?
[ "$RC" -eq 0 ] || fail "tuttirun exited $RC, want 0 (the 6 survivors went on)"
grep -qE 'go on \(--min-np 6\)' "$WORK/err" || fail "tuttirun did not say the others go on"
grep -qE 'the others went on without them' "$WORK/err" || fail "tuttirun's summary does not say the job went on"
went_on=$(grep -cE '^\[[0-9]+\] ok: rank [0-9]+: went on as rank [0-9]+ of 6 ' "$WORK/out")
[ "$went_on" -eq 6 ] || fail "$went_on ranks went on as one of 6, want 6"
# awk for the arithmetic: it is in every Debian base (bc is not).
sed -nE 's/^\[[0-9]+\] ok: rank ([0-9]+): went on as .* first step at ([0-9.]+)$/\1 \2/p' "$WORK/out" |
  awk -v killed="$killed_at" -v tag="$CASE" '
    { took = $2 - killed; if (took > worst) worst = took
      printf "[%s] rank %s: first step after the shrink %.3f s after the pod was killed\n", tag, $1, took }
    END { printf "[%s] slowest survivor: %.3f s from the kill to its first step (goal 3 s)\n", tag, worst
          exit worst <= 3 ? 0 : 1 }' || fail "the slowest survivor took more than 3 s from the kill"
grep -q FAIL "$WORK/out" && fail "a rank printed FAIL"
if [ "$CASE" = pods_shrink_etcd ]; then
  left=$(etcd_keys /pods/)
  [ -z "$left" ] || fail "the job left keys in etcd: $(echo "$left" | head -3)"
fi
echo "[$CASE] ok"
