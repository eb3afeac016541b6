#!/usr/bin/env bash
# pip's way in (the root pyproject.toml): tutti installed with `cmake --install` into a temporary
# prefix, one wheel built by pip against PYTHON (its torch, its pybind11) and that prefix, the wheel
# installed into a folder of its own, and from there only: the op-by-op torch test on 2 ranks
# (tutti.torch) and the Python API's test on 2 ranks (import tutti).
#   pip_wheel.sh BUILD_DIR SOURCE_DIR PYTHON OPS_TEST CORE_TEST
set -euo pipefail
build=$1 source=$2 python=$3 ops_test=$4 core_test=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# pip builds in the source folder; its build folder goes to the temporary one (ccache then sees the
# same source paths every run).
# The temporary folder's name differs every run: ccache rewrites paths under it to relative ones
# (base_dir) and leaves the working folder out of its hash, or it would never hit (83 s a run).
if command -v ccache >/dev/null; then
  export CMAKE_ARGS="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache" CCACHE_BASEDIR="$work" CCACHE_NOHASHDIR=true
fi
CMAKE_PREFIX_PATH="$work/prefix" "$python" -m pip wheel --quiet --no-build-isolation --no-deps \
  --config-settings=build-dir="$work/build" -w "$work/wheels" "$source"
wheel=$(echo "$work"/wheels/tutti-*.whl)
[ -f "$wheel" ] || { echo "pip_wheel: no wheel in $work/wheels" >&2; exit 1; }
"$python" -m pip install --quiet --no-deps --target "$work/site" "$wheel"
cd "$work"
env -u LD_LIBRARY_PATH PYTHONPATH="$work/site" "$python" -c \
  'import tutti, tutti.torch, sys
for p in (tutti.__file__, tutti.torch.__file__):
    p.startswith(sys.argv[1]) or sys.exit(f"imported {p}")' "$work/site"
env -u LD_LIBRARY_PATH PYTHONPATH="$work/site" "$python" "$ops_test" 2
env -u LD_LIBRARY_PATH PYTHONPATH="$work/site" "$work/prefix/bin/tuttirun" -np 2 -- "$python" "$core_test"
