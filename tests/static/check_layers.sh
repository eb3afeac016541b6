#!/usr/bin/env bash
# Checks the arrows of docs/ARCHITECTURE.md: a layer of runtime/src includes only itself and the
# layers below it. (Linking already refuses upward calls; this also catches header-only uses.)
set -euo pipefail
src=$1/runtime/src
declare -A allowed=(
  [core]="core"
  [reduce]="reduce core"
  [bootstrap]="bootstrap core"
  [transport]="transport bootstrap core"
  [collectives]="collectives transport reduce bootstrap core"
  [comm]="comm collectives transport reduce bootstrap core"
  [api]="api comm collectives transport reduce bootstrap core"
)
bad=0
for layer in "${!allowed[@]}"; do
  [ -d "$src/$layer" ] || continue
  while IFS= read -r line; do
    file=${line%%:*}
    included=$(sed -E 's/.*#include "([a-z_]+)\/.*/\1/' <<<"$line")
    [ "$included" = tutti ] && continue  # public headers are free of internals
    if ! grep -qw "$included" <<<"${allowed[$layer]}"; then
      echo "layering: $file includes $included/, which is above $layer"
      bad=1
    fi
  done < <(grep -rHE '#include "[a-z_]+/' "$src/$layer" || true)
done
[ $bad -eq 0 ] && echo "layering: every include points downward"
exit $bad
