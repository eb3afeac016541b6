#!/usr/bin/env bash
# The installed package: core_test.py on 2 ranks under the installed tuttirun, importing tutti from
# <prefix>/lib/python3.X/dist-packages only (no build tree on the path, no LD_LIBRARY_PATH: the
# extension must find the installed libtutti.so by its RUNPATH).
#   installed_core.sh PREFIX PYTHON CORE_TEST
set -euo pipefail
prefix=$1 python=$2 core_test=$3
package=$(echo "$prefix"/lib/python3.*/dist-packages)
[ -f "$package/tutti/__init__.py" ] || { echo "FAIL: no tutti/__init__.py in $package"; exit 1; }
ls "$package"/tutti/_core*.so >/dev/null || { echo "FAIL: no tutti/_core*.so in $package"; exit 1; }
cd "$prefix"
env -u LD_LIBRARY_PATH PYTHONPATH="$package" "$python" -c \
  'import tutti, sys; p = tutti.__file__; sys.exit(0 if p.startswith(sys.argv[1]) else f"FAIL: imported {p}")' \
  "$package"
env -u LD_LIBRARY_PATH PYTHONPATH="$package" "$prefix/bin/tuttirun" -np 2 -- "$python" "$core_test"
