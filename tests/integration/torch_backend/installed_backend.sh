#!/usr/bin/env bash
# The installed package: `cmake --install` into a temporary prefix, then the op-by-op test on 2
# ranks imports tutti.torch from <prefix>/lib/python3.X/dist-packages only (no build tree on the
# path, no LD_LIBRARY_PATH: the extension must find the installed libtutti.so by its RPATH).
#   installed_backend.sh BUILD_DIR PYTHON OPS_TEST
set -euo pipefail
build=$1 python=$2 ops_test=$3
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
package=$(echo "$prefix"/lib/python3.*/dist-packages)
[ -d "$package" ] || { echo "installed_backend: no $prefix/lib/python3.X/dist-packages" >&2; exit 1; }
test -f "$package/tutti/torch/__init__.py"
ls "$package"/tutti/torch/_backend*.so >/dev/null
cd "$prefix"
env -u LD_LIBRARY_PATH PYTHONPATH="$package" "$python" -c \
  'import tutti.torch, sys; p = tutti.torch.__file__; sys.exit(0 if p.startswith(sys.argv[1]) else f"imported {p}")' \
  "$package"
env -u LD_LIBRARY_PATH PYTHONPATH="$package" "$python" "$ops_test" 2
