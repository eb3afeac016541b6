#!/usr/bin/env bash
# Backend tutti on CUDA tensors, on a GPU host whose Python has a CUDA torch 2.x:
# builds the package tutti.torch against that torch with g++ alone (no torch CMake, no nvcc: the
# package uses c10's device-neutral stream interface only) and runs tests/gpu/torch_cuda_check.py
# under torchrun.
#
#   tests/gpu/torch_cuda.sh LIBTUTTI_DIR [NPROC] [-- check arguments]
#
# LIBTUTTI_DIR holds libtutti.so: a CUDA build's lib/ (build/lib) or any folder with a CUDA
# build's libtutti.so. With one GPU and NPROC 2, pass --pretend-hosts to the check (each rank its
# own host: NCCL refuses two ranks on one device of one host); --cpu runs the check on CPU tensors
# (where no GPU is). PYTHON names another Python (default python3); the package is built in
# $TMPDIR, or kept in TORCH_CUDA_BUILD_DIR and reused (--build-only stops there). The package holds
# tutti._core too (import tutti). TORCH_CUDA_CHECK names another script of tests/gpu to run
# (torch_cuda_train.py, dlpack_cuda_check.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ -d "$root/runtime/torch" ] || { echo "torch_cuda.sh: no runtime/torch under $root: run it from tutti's source tree (it builds runtime/torch's sources)" >&2; exit 1; }
lib=${1:?usage: torch_cuda.sh LIBTUTTI_DIR [NPROC] [-- check arguments]}; shift
nproc=${1:-2}; [ $# -gt 0 ] && shift; [ "${1:-}" = -- ] && shift
lib=$(cd "$lib" && pwd)
py=${PYTHON:-python3}
[ -e "$lib/libtutti.so" ] || { echo "torch_cuda.sh: no libtutti.so in $lib" >&2; exit 1; }
case " $* " in
  *" --cpu "*) ;;  # the check's dry run on CPU tensors, for a machine without a GPU
  *) if ! $py -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
       echo "SKIP: $py has no torch that sees a CUDA device (no GPU here, or a CPU torch)"
       exit 77  # ctest's skip
     fi ;;
esac
if [ -n "${TORCH_CUDA_BUILD_DIR:-}" ]; then
  out=$TORCH_CUDA_BUILD_DIR  # kept, and reused by later runs
else
  out=$(mktemp -d "${TMPDIR:-/tmp}/tutti-torch-cuda.XXXXXX"); trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out/tutti/torch" "$out/obj"
inc=$($py -c "import torch.utils.cpp_extension as c, sysconfig
print(' '.join('-isystem ' + p for p in c.include_paths()) + ' -isystem ' + sysconfig.get_paths()['include'])")
tlib=$($py -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'lib'))")
abi=$($py -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))")
suffix=$($py -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
# libtutti_torch's sources and the module's in one shared object (the CMake build makes two).
if ! ls "$out"/tutti/torch/_backend*.so >/dev/null 2>&1; then
objs=()
for src in "$root"/runtime/torch/cpp/src/*.cc "$root"/runtime/torch/python/src/*.cc; do
  obj=$out/obj/$(basename "$(dirname "$(dirname "$src")")")_$(basename "$src" .cc).o
  # shellcheck disable=SC2086
  g++ -O2 -fPIC -std=c++20 -fvisibility=hidden -D_GLIBCXX_USE_CXX11_ABI="$abi" \
    -I"$root/runtime/include" -I"$root/runtime/torch/cpp/include" $inc -c "$src" -o "$obj" &
  objs+=("$obj")
done
wait
g++ -shared -o "$out/tutti/torch/_backend$suffix" "${objs[@]}" -L"$tlib" -ltorch -ltorch_cpu -lc10 \
  -ltorch_python -L"$lib" -ltutti -Wl,-rpath,"$lib:$tlib"
cp "$root/runtime/torch/python/tutti/torch/__init__.py" "$out/tutti/torch/"
fi
# The package's own module too (import tutti: numpy and DLPack arrays), with the pybind11 that
# torch's headers carry.
if ! ls "$out"/tutti/_core*.so >/dev/null 2>&1; then
  for src in module buffer_view; do
    # shellcheck disable=SC2086
    g++ -O2 -fPIC -std=c++20 -fvisibility=hidden -I"$root/runtime/include" $inc \
      -c "$root/runtime/python/src/$src.cc" -o "$out/obj/python_$src.o" &
  done
  wait
  g++ -shared -o "$out/tutti/_core$suffix" "$out/obj/python_module.o" "$out/obj/python_buffer_view.o" \
    -L"$lib" -ltutti -Wl,-rpath,"$lib"
fi
cp "$root/runtime/python/tutti/__init__.py" "$root/runtime/python/tutti/elastic.py" "$out/tutti/"
echo "torch_cuda.sh: tutti.torch built against torch $($py -c 'import torch; print(torch.__version__)')"
case " $* " in *" --build-only "*) exit 0 ;; esac
PYTHONPATH=$out${PYTHONPATH:+:$PYTHONPATH} LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  $py -m torch.distributed.run --nproc-per-node "$nproc" --master-port "${MASTER_PORT:-29561}" \
  "$root/tests/gpu/${TORCH_CUDA_CHECK:-torch_cuda_check.py}" "$@"
