#!/bin/sh
# Stand-in kubectl for kubexec's tests only (no API server exists here). Understands
#   kubectl exec [-i] POD [-n NS] [-c C] -- CMD...
# and runs CMD locally. Knobs (all optional):
#   FAKE_KUBECTL_LOG         file that receives this call's argv, NUL-terminated
#   FAKE_KUBECTL_CALLS       file counting the calls
#   FAKE_KUBECTL_FAIL_TIMES  the first N calls fail like kubectl does for a pod not yet running
#   FAKE_KUBECTL_PODS        pods that exist (default: job-worker-0 job-worker-1)
#   FAKE_KUBECTL_TMPDIR      give each pod its own TMPDIR under this directory, as real pods have
#                            their own /tmp (Open MPI's orteds of one job keep session directories
#                            there; two sharing one host name and /tmp race and can hang)
if [ -n "$FAKE_KUBECTL_LOG" ]; then
  : >"$FAKE_KUBECTL_LOG"
  for arg in "$@"; do printf '%s\0' "$arg" >>"$FAKE_KUBECTL_LOG"; done
fi
calls=1
if [ -n "$FAKE_KUBECTL_CALLS" ]; then
  calls=$(($(cat "$FAKE_KUBECTL_CALLS" 2>/dev/null || echo 0) + 1))
  echo "$calls" >"$FAKE_KUBECTL_CALLS"
fi
[ "$1" = exec ] || { echo "error: fake kubectl only knows exec" >&2; exit 2; }
shift
pod=
while [ $# -gt 0 ]; do
  case $1 in
    -i) shift ;;
    -n | -c) shift 2 ;;
    --) shift; break ;;
    -*) echo "error: unknown flag: $1" >&2; exit 2 ;;
    *) pod=$1; shift ;;
  esac
done
if [ "$calls" -le "${FAKE_KUBECTL_FAIL_TIMES:-0}" ]; then
  echo "error: unable to upgrade connection: container not found (\"mpi\")" >&2
  exit 1
fi
case " ${FAKE_KUBECTL_PODS:-job-worker-0 job-worker-1} " in
  *" $pod "*) ;;
  *) echo "Error from server (NotFound): pods \"$pod\" not found" >&2; exit 1 ;;
esac
if [ -n "$FAKE_KUBECTL_TMPDIR" ]; then
  export TMPDIR="$FAKE_KUBECTL_TMPDIR/$pod"
  mkdir -p "$TMPDIR"
fi
exec "$@"
