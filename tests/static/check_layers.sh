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

# Settings reach the layers below comm through a communicator's Options (the environment only fills
# their defaults, in api/): nothing below comm reads the environment. The one exception is
# bootstrap/world_info.cc, whose input is the launcher's variables that say which rank this
# process is (never a setting).
env_bad=0
while IFS= read -r line; do
  file=${line%%:*}
  case "$file" in */bootstrap/world_info.cc) continue ;; esac
  echo "settings: $line reads the environment below comm; pass it in through Options"
  env_bad=1
done < <(grep -rnE 'getenv|env::(get_|raw|is_set|process_value)|secure_getenv' \
           "$src"/{reduce,bootstrap,transport,collectives,net} 2>/dev/null | grep -v '^\S*:[0-9]*: *//' || true)
[ $env_bad -eq 0 ] && echo "settings: nothing below comm reads the environment"
[ $env_bad -eq 0 ] || bad=1
exit $bad
