#!/usr/bin/env bash
# pip's way in (runtime/torch/pyproject.toml): tutti installed with `cmake --install` into a
# temporary prefix, a wheel built by pip against PYTHON's torch and that prefix, the wheel installed
# into a folder of its own, and the op-by-op test on 2 ranks importing tutti.torch from there only.
#   pip_wheel.sh BUILD_DIR SOURCE_DIR PYTHON OPS_TEST
set -euo pipefail
build=$1 source=$2 python=$3 ops_test=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# pip builds in the source folder; its build folder goes to the temporary one (ccache then sees the
# same source paths every run).
if command -v ccache >/dev/null; then export CMAKE_ARGS="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"; fi
CMAKE_PREFIX_PATH="$work/prefix" "$python" -m pip wheel --quiet --no-build-isolation --no-deps \
  --config-settings=build-dir="$work/build" -w "$work/wheels" "$source/runtime/torch"
wheel=$(echo "$work"/wheels/tutti_torch-*.whl)
[ -f "$wheel" ] || { echo "pip_wheel: no wheel in $work/wheels" >&2; exit 1; }
"$python" -m pip install --quiet --no-deps --target "$work/site" "$wheel"
cd "$work"
env -u LD_LIBRARY_PATH PYTHONPATH="$work/site" "$python" -c \
  'import tutti.torch, sys; p = tutti.torch.__file__; sys.exit(0 if p.startswith(sys.argv[1]) else f"imported {p}")' \
  "$work/site"
env -u LD_LIBRARY_PATH PYTHONPATH="$work/site" "$python" "$ops_test" 2
