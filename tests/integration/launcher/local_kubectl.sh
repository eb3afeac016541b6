#!/usr/bin/env bash
# Stand-in kubectl for tuttirun's remote-mode cases on one machine (no API server can exist here):
# `kubectl exec -i POD [-n NS] [-c C] -- CMD...` runs CMD right here. A pod named in
# $LOCAL_KUBECTL_MISSING (space separated) fails the way kubectl does for an unknown pod. The
# network-namespace pods of tests/integration/pods are the full version of this.
set -u
[ "${1:-}" = exec ] || { echo "local_kubectl: only 'exec' is supported" >&2; exit 1; }
shift
[ "${1:-}" = -i ] && shift
pod=$1
shift
while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done
shift
for missing in ${LOCAL_KUBECTL_MISSING:-}; do
  if [ "$pod" = "$missing" ]; then
    echo "Error from server (NotFound): pods \"$pod\" not found" >&2
    exit 1
  fi
done
# A pod has an environment of its own, not the launcher's.
exec env -i PATH="$PATH" HOME="${HOME:-/}" "$@"
