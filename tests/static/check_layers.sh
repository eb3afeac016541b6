#!/usr/bin/env bash
# Checks the arrows of docs/ARCHITECTURE.md: a layer of runtime/src includes only itself and the
# layers below it. (Linking already refuses upward calls; this also catches header-only uses.)
set -euo pipefail
src=$1/runtime/src
cmake_file=$1/runtime/CMakeLists.txt
# The layer table is runtime/CMakeLists.txt's (TUTTI_LAYERS, TUTTI_DEPS_<layer>), read here so the
# two cannot drift apart: a layer may include itself and everything it reaches through its deps.
layers=$(sed -nE 's/^set\(TUTTI_LAYERS (.*)\)$/\1/p' "$cmake_file")
[ -n "$layers" ] || { echo "layering: no TUTTI_LAYERS in $cmake_file"; exit 1; }
declare -A deps allowed
for layer in $layers; do
  deps[$layer]=$(sed -nE "s/^set\(TUTTI_DEPS_${layer} \"?([a-z_ ]*)\"?\)$/\1/p" "$cmake_file")
done
reach() {  # prints every layer reachable from $1, itself included
  local seen=" $1 " queue=$1 next layer
  while [ -n "$queue" ]; do
    next=""
    for layer in $queue; do
      for dep in ${deps[$layer]}; do
        case "$seen" in *" $dep "*) ;; *) seen+="$dep "; next+=" $dep" ;; esac
      done
    done
    queue=$next
  done
  echo "$seen"
}
for layer in $layers; do allowed[$layer]=$(reach "$layer"); done
bad=0
# Every folder under runtime/src must be a layer of the table.
for dir in "$src"/*/; do
  folder=$(basename "$dir")
  [ -n "${allowed[$folder]+x}" ] ||
    { echo "layering: runtime/src/$folder is not in TUTTI_LAYERS of runtime/CMakeLists.txt"; bad=1; }
done
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
# runtime/torch sits on the public API: it includes tutti's public headers ("tutti/...") and its own
# files, never the runtime's internals (which its libraries could not link anyway: libtutti exports
# only the public API).
if [ -d "$1/runtime/torch" ]; then
  while IFS= read -r line; do
    echo "layering: ${line%%:*} includes a runtime internal (${line#*#include }); runtime/torch sees only tutti/"
    bad=1
  done < <(grep -rHE '#include "(core|reduce|device|net|bootstrap|transport|collectives|comm|engine|api)/' \
             "$1/runtime/torch" || true)
fi
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
           "$src"/{reduce,device,bootstrap,transport,collectives,net} 2>/dev/null | grep -v '^\S*:[0-9]*: *//' || true)
[ $env_bad -eq 0 ] && echo "settings: nothing below comm reads the environment"
[ $env_bad -eq 0 ] || bad=1
exit $bad
