#!/usr/bin/env bash
# TUTTI_STORE=etcd:// without pods: ranks a plain shell starts (as an MPIJob's or Slurm's would be,
# each told its rank, size and store), tuttirun --store with a restart, and an etcd that is not
# there. A real etcd on 127.0.0.1:2379 of the script's own network namespace (pods.sh's private
# world: fixed ports collide with nothing).
#   etcd_cases.sh CASE tuttirun=P check=P
#     env_np3      3 ranks from a shell loop run collectives_check through etcd; keys expire after
#     restart      tuttirun --store --restarts 1: attempt 0 fails, attempt 1 passes in a clean prefix;
#                  nothing is left in etcd
#     unreachable  no etcd: every rank fails within TUTTI_TIMEOUT, naming the URL
#     gone_at_end  etcd stops mid-job for good: the job ends and tuttirun exits within moments
#     gone_at_death  etcd stops for good, then a rank dies: the survivors fail, saying that their
#                  shrink failed for want of etcd (needs chaos=PATH, the elastic chaos_check)
#     same_job     a second tuttirun --store with the running one's --job-id, on another host (a
#                  pod), is refused (it would clear the running job's keys); the first ends well
#     torchrun     torchrun's etcd rendezvous (--rdzv_backend etcd: etcd's v2 API through
#                  python3-etcd) with 2 agents and train.py --backend tutti, whose process group then
#                  runs on torch's EtcdStore: rank 1 is killed at step 15, both agents restart their
#                  workers (a second rendezvous round in etcd), which resume from the step-10
#                  checkpoint and end 30 steps on equal weights. Needs pythonpath=DIR (the build's
#                  tutti package for Debian's torch) and train=PATH.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PODS_DIR=$HERE/../pods
CASE=etcd_${1:-}
TUTTI_PYTHONPATH='' TRAIN='' CHAOS=''
args=()
for arg in "${@:2}"; do
  case $arg in
    pythonpath=*) TUTTI_PYTHONPATH=${arg#*=} ;;
    chaos=*) CHAOS=${arg#*=} ;;
    train=*) TRAIN=${arg#*=} ;;
    *) args+=("$arg") ;;
  esac
done
# shellcheck source=../pods/pods.sh
source "$PODS_DIR/pods.sh"
# Subnet 198.18.159.0/24 for the one case that makes a pod (same_job: another "host").
pods_case_setup "etcd-$1" 159 ${args[@]+"${args[@]}"}
# shellcheck source=../pods/etcd.sh
source "$PODS_DIR/etcd.sh"
pods_user_stop() { etcd_down; }
trap 'pods_user_stop; pods_user_cleanup' EXIT
export TUTTI_TIMEOUT=20

case "$1" in
  env_np3)
    etcd_up 127.0.0.1
    pids=()
    for r in 0 1 2; do
      TUTTI_RANK=$r TUTTI_SIZE=3 TUTTI_JOB_ID=envjob TUTTI_ETCD_LEASE_TTL=3 \
        TUTTI_STORE="etcd://$ETCD_ENDPOINT/plain" "$CHECK" >"$WORK/out.$r" 2>&1 &
      pids+=($!)
    done
    for r in 0 1 2; do wait "${pids[$r]}" || fail "rank $r exited $?: $(tail -3 "$WORK/out.$r")"; done
    grep -q "3 ranks, [0-9]* checks per rank, 0 failed" "$WORK/out.0" ||
      fail "rank 0: $(tail -3 "$WORK/out.0")"
    n=$(etcd_keys /plain/ | wc -l)
    [ "$n" -gt 0 ] || fail "no keys in etcd after the job: did the ranks use it?"
    echo "[$CASE] 3 ranks met in etcd ($n keys)"
    # The same job id again at once, its keys still there: each rank waits out its old claim (and
    # a keep-alive period more), then the job runs as new.
    started=$(date +%s.%N)
    for r in 0 1 2; do
      TUTTI_RANK=$r TUTTI_SIZE=3 TUTTI_JOB_ID=envjob TUTTI_ETCD_LEASE_TTL=3 \
        TUTTI_STORE="etcd://$ETCD_ENDPOINT/plain" "$CHECK" >"$WORK/again.$r" 2>&1 &
      pids[$r]=$!
    done
    for r in 0 1 2; do wait "${pids[$r]}" || fail "rerun: rank $r exited $?: $(tail -3 "$WORK/again.$r")"; done
    grep -q "3 ranks, [0-9]* checks per rank, 0 failed" "$WORK/again.0" ||
      fail "rerun: rank 0: $(tail -3 "$WORK/again.0")"
    grep -q "waiting up to 5 s" "$WORK/again.0" || fail "the rerun did not wait out the old keys"
    awk -v s="$started" -v e="$(date +%s.%N)" 'BEGIN { printf "[rerun] same job id at once: ran after %.1f s\n", e - s }'
    # Their leases (3 s) end with them: the keys go by themselves.
    for _ in $(seq 1 80); do [ -z "$(etcd_keys /plain/)" ] && break; sleep 0.1; done
    [ -z "$(etcd_keys /plain/)" ] || fail "keys still in etcd 8 s after the ranks ended"
    echo "[$CASE] the keys expired after the ranks ended"
    ;;
  restart)
    etcd_up 127.0.0.1
    cat >"$WORK/flaky.sh" <<FLAKY
#!/bin/sh
# Attempt 0: rank 1 fails before it ever meets the others (they are stopped by tuttirun).
if [ "\$TUTTI_RESTART_COUNT" = 0 ] && [ "\$TUTTI_RANK" = 1 ]; then exit 3; fi
exec "$CHECK"
FLAKY
    chmod +x "$WORK/flaky.sh"
    "$TUTTIRUN" -np 3 --store "etcd://$ETCD_ENDPOINT/runs" --job-id flaky --restarts 1 \
      --restart-backoff 0.1 -- "$WORK/flaky.sh" >"$WORK/out" 2>"$WORK/err" </dev/null ||
      fail "tuttirun exited $?: $(tail -5 "$WORK/err")"
    grep -q "3 ranks, [0-9]* checks per rank, 0 failed" "$WORK/out" || fail "no passing attempt"
    left=$(etcd_keys /runs/)
    [ -z "$left" ] || fail "tuttirun left keys in etcd: $(echo "$left" | head -3)"
    echo "[$CASE] attempt 1 passed after attempt 0 failed; etcd is empty again"
    ;;
  same_job)
    # The second tuttirun runs in a pod: another host, where tuttirun's own per-host claim on a
    # job id cannot see the first; only the etcd prefix they share can. It waits out the first's
    # hold for a lease TTL and 2 s (12 s: an earlier tuttirun's hold would have expired by then),
    # so the first runs longer than that.
    pods_up sj 1 "$K"
    etcd_up "$HOST_ADDR"
    store="etcd://$ETCD_ENDPOINT/runs"
    "$TUTTIRUN" -np 2 --store "$store" --job-id twice -- \
      sh -c 'sleep 16; exec "$0"' "$CHECK" >"$WORK/out" 2>"$WORK/err" </dev/null &
    first=$!
    # The second starts once the first holds the prefix (its claim key is there), not after a
    # guessed pause that a loaded machine may outlast.
    for _ in $(seq 1 100); do
      etcd_keys /runs/twice/ 2>/dev/null | grep -q '/tuttirun$' && break
      sleep 0.1
    done
    etcd_keys /runs/twice/ | grep -q '/tuttirun$' || fail "the first tuttirun never claimed its prefix"
    started=$(date +%s)
    ip netns exec sj-worker-0 "$TUTTIRUN" -np 1 --store "$store" --job-id twice -- true \
      >"$WORK/out2" 2>"$WORK/err2" </dev/null && fail "the second tuttirun of job 'twice' ran: $(cat "$WORK/err2" "$WORK/out2" | tail -5)"
    took=$(($(date +%s) - started))
    grep -q "another tuttirun runs job 'twice'" "$WORK/err2" || fail "no clear refusal: $(tail -3 "$WORK/err2")"
    wait $first || fail "the first job failed: $(tail -5 "$WORK/err")"
    grep -q "2 ranks, [0-9]* checks per rank, 0 failed" "$WORK/out" || fail "the first job's check did not pass"
    [ -z "$(etcd_keys /runs/)" ] || fail "keys left in etcd"
    echo "[$CASE] the second tuttirun (another host) was refused after $took s; the first ran to the end"
    ;;
  gone_at_end)
    # etcd stops while the job runs and never comes back: the ranks, which need it no more, end
    # their work, and tuttirun exits within moments (it used to wait a request timeout, 10 s, for
    # etcd to remove the job's keys, which expire with their leases anyway).
    etcd_up 127.0.0.1
    "$TUTTIRUN" -np 2 --store "etcd://$ETCD_ENDPOINT/gone" -- "$CHECK" --loop-seconds 6 \
      >"$WORK/out" 2>"$WORK/err" </dev/null &
    job=$!
    # Gone once the ranks met (init takes well under this) and long before their work ends.
    sleep 2.5
    etcd_down
    # From the ranks' end of work to tuttirun's exit: what a gone etcd costs.
    for _ in $(seq 1 600); do
      [ "$(grep -c 'large allreduces done' "$WORK/out")" -ge 2 ] && break
      kill -0 $job 2>/dev/null || break
      sleep 0.05
    done
    ended=$(date +%s.%N)
    wait $job || fail "tuttirun exited $?: $(tail -5 "$WORK/err")"
    [ "$(grep -c 'large allreduces done' "$WORK/out")" -eq 2 ] || fail "the ranks did not end their work"
    took=$(awk -v a="$ended" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    awk -v t="$took" 'BEGIN { exit !(t <= 5) }' ||
      fail "tuttirun exited ${took} s after the ranks ended their work (a gone etcd held it)"
    grep -q "they expire with their leases" "$WORK/err" || fail "tuttirun did not say the keys were left"
    echo "[$CASE] etcd stopped mid-job; tuttirun exited ${took} s after the ranks ended their work"
    ;;
  gone_at_death)
    # etcd stops for good, then a rank dies: the survivors cannot shrink without the store. Each
    # fails once a request times out (TUTTI_TIMEOUT), saying that the shrink after the death
    # failed and why, and the job stops.
    etcd_up 127.0.0.1
    TUTTI_TIMEOUT=3 "$TUTTIRUN" -np 3 --min-np 2 --store "etcd://$ETCD_ENDPOINT/death" -- \
      "$CHAOS" 100000 2 >"$WORK/out" 2>&1 </dev/null &
    job=$!
    for _ in $(seq 1 200); do
      [ "$(grep -c '\] started' "$WORK/out")" -ge 3 ] && break
      sleep 0.05
    done
    victim=$(sed -n 's/^\[1\] pid 1 \([0-9]*\)$/\1/p' "$WORK/out")
    [ -n "$victim" ] || fail "rank 1 never started: $(tail -5 "$WORK/out")"
    etcd_down
    kill -9 "$victim"
    killed=$(date +%s)
    wait $job && fail "the job went on without its store"
    took=$(($(date +%s) - killed))
    [ "$took" -le 20 ] || fail "the job ended $took s after the death (TUTTI_TIMEOUT=3)"
    said=$(grep -c "the shrink after a failure failed; the failure was: .*died.*the shrink: .*etcd at http://127.0.0.1:2379" "$WORK/out")
    [ "$said" -ge 1 ] || fail "no survivor said its shrink failed for want of etcd: $(grep stopped "$WORK/out" | head -2)"
    echo "[$CASE] etcd gone, a rank killed: $said survivor(s) said the shrink failed for want of etcd; the job ended $took s after the death"
    ;;
  unreachable)
    started=$(date +%s)
    TUTTI_RANK=0 TUTTI_SIZE=2 TUTTI_TIMEOUT=2 TUTTI_STORE="etcd://127.0.0.1:2379/none" \
      timeout 30 "$CHECK" >"$WORK/out" 2>&1
    rc=$?
    took=$(($(date +%s) - started))
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "exit $rc, want a failure before timeout's 30 s"
    [ "$took" -le 10 ] || fail "took $took s with TUTTI_TIMEOUT=2"
    grep -q "etcd at http://127.0.0.1:2379 did not answer" "$WORK/out" ||
      fail "the error does not name etcd's URL: $(tail -3 "$WORK/out")"
    echo "[$CASE] failed in $took s: $(grep -o 'etcd at .*' "$WORK/out" | head -1)"
    ;;
  torchrun)
    PY=/usr/bin/python3
    "$PY" -c 'import torch.distributed.run, etcd' 2>/dev/null ||
      pods_skip "Debian's python3 lacks torch or python3-etcd (make deps)"
    [ -n "$TUTTI_PYTHONPATH" ] && [ -f "$TRAIN" ] || fail "torchrun needs pythonpath= and train="
    # torchrun's etcd rendezvous speaks etcd's v2 API, which etcd 3.4 serves when asked.
    ETCD_EXTRA=(--enable-v2=true)
    etcd_up 127.0.0.1
    pids=()
    for node in 0 1; do
      PYTHONPATH=$TUTTI_PYTHONPATH PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1 timeout -k 5 200 \
        "$PY" -m torch.distributed.run --redirects 1 --tee 1 --nnodes 2 --nproc_per_node 1 \
        --rdzv_backend etcd --rdzv_endpoint "$ETCD_ENDPOINT" --rdzv_id etcdjob --max_restarts 1 \
        --monitor_interval 1 "$TRAIN" --backend tutti --max-steps 30 --log-every 5 --no-eval \
        --checkpoint "$WORK/ckpt.pt" --checkpoint-every 10 --kill-at-step 15 --kill-rank 1 \
        >"$WORK/node.$node" 2>&1 </dev/null &
      pids+=($!)
    done
    for node in 0 1; do
      wait "${pids[$node]}" || fail "torchrun $node exited $?: $(tail -5 "$WORK/node.$node")"
    done
    all=$(cat "$WORK/node.0" "$WORK/node.1")
    grep -q "Creating EtcdStore as the c10d::Store" <<<"$all" || fail "torchrun did not rendezvous in etcd"
    grep -q "killing myself (SIGKILL) at step 15" <<<"$all" || fail "rank 1 was never killed"
    grep -qE "resuming from $WORK/ckpt.pt at epoch 0 step 10" <<<"$all" || fail "no resume from the step-10 checkpoint"
    sums=$(grep -oE "rank [01]: 30 steps, weights checksum [0-9a-f]+" <<<"$all" | sort -u)
    [ "$(grep -c . <<<"$sums")" -eq 2 ] || fail "not both ranks finished 30 steps: $sums"
    [ "$(awk '{ print $NF }' <<<"$sums" | sort -u | wc -l)" -eq 1 ] || fail "different weights: $sums"
    echo "[$CASE] rendezvous in etcd, rank 1 killed at 15, resumed at 10, both ranks 30 steps on $(awk 'NR == 1 { print $NF }' <<<"$sums")"
    ;;
  *) echo "etcd_cases.sh: unknown case '$1'" >&2; exit 2 ;;
esac
echo "[$CASE] ok"
