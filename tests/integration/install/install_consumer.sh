#!/usr/bin/env bash
# install_consumer.sh CASE BUILD_DIR SOURCE_DIR HEADER_DIR [WITH_TORCH]
# `cmake --install` into a fresh temporary prefix, then builds a consumer project from SOURCE_DIR
# (tests/integration/install) against that prefix the way a user would, and runs each program on 2
# ranks through the installed tuttirun, with no LD_LIBRARY_PATH. Every allreduce result is checked
# by the consumer itself; this script checks that both ranks said so. CASE:
#   c-and-cxx  checks the layout (programs, libtutti with its soname, the static archive, every
#              public header, the CMake package and tutti.pc), then builds consumer/ (C and C++)
#              twice: with find_package(tutti), and with pkg-config alone (no rpath of its own: the
#              program must run as `c++ app.cc $(pkg-config --cflags --libs tutti)` built it)
#   cxx-only   consumer_cxx_only/: a project(... LANGUAGES CXX) with find_package(tutti) (a tutti
#              built with MPI must not need the C language), and tutti/tutti_mpi.h built there
#   torch      consumer_torch/: a libtorch program linking tutti::tutti_torch; WITH_TORCH (the
#              build's TUTTI_HAVE_TORCH) not ON: skipped (exit 77), there is no libtutti_torch
set -euo pipefail
CASE=$1 BUILD=$2 SOURCES=$3 HEADERS=$4 WITH_TORCH=${5:-OFF}
SRC=$SOURCES/consumer
fail() { echo "FAIL: $*" >&2; exit 1; }
case $CASE in
  c-and-cxx | cxx-only) ;;
  torch)
    if [ "$WITH_TORCH" != ON ]; then
      echo "SKIP: this tutti build has no libtorch binding (TUTTI_WITH_TORCH=OFF, or libtorch was not found: Debian's libtorch-dev), so its installed package has no tutti::tutti_torch to link"
      exit 77
    fi ;;
  *) fail "unknown case '$CASE' (c-and-cxx, cxx-only or torch)" ;;
esac
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-install.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PREFIX=$WORK/prefix

cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" || { cat "$WORK/install.log"; fail "cmake --install"; }

check_layout() {
  for program in tuttirun kubexec tutti-hostfile tutti-bench tutti-demo; do
    [ -x "$PREFIX/bin/$program" ] || fail "bin/$program is not installed"
  done
  soname=$(objdump -p "$PREFIX/lib/libtutti.so" | awk '$1 == "SONAME" { print $2 }')
  [ "$soname" = libtutti.so.0 ] || fail "libtutti.so's soname is '$soname', expected libtutti.so.0"
  [ -e "$PREFIX/lib/$soname" ] || fail "lib/$soname (the soname link) is missing"
  [ -f "$PREFIX/lib/libtutti.a" ] || fail "lib/libtutti.a is not installed"
  # Every header of the source's public folder, and nothing from the runtime's internals.
  want=$(cd "$HEADERS" && find . -type f | sort)
  # libtutti_torch (built with libtorch) installs its own tutti/torch*.hpp next to them.
  have=$(cd "$PREFIX/include/tutti" && find . -type f ! -name 'torch*.hpp' | sort)
  if [ -e "$PREFIX/lib/libtutti_torch.so" ]; then
    [ -f "$PREFIX/include/tutti/torch.hpp" ] || fail "libtutti_torch is installed without tutti/torch.hpp"
  fi
  [ "$want" = "$have" ] || fail "include/tutti differs from runtime/include/tutti: $(diff <(echo "$want") <(echo "$have") | tr '\n' ' ')"
  [ -f "$PREFIX/lib/cmake/tutti/tuttiConfig.cmake" ] || fail "no CMake package config"
  [ -f "$PREFIX/lib/pkgconfig/tutti.pc" ] || fail "no tutti.pc"
  # The installed programs find the installed library, not the build tree's.
  lib=$(env -u LD_LIBRARY_PATH ldd "$PREFIX/bin/tutti-bench" | awk '/libtutti\.so/ { print $3 }')
  [ "$lib" = "$PREFIX/bin/../lib/libtutti.so.0" ] || fail "installed tutti-bench loads libtutti from '$lib'"
  # Built with CUDA: libtutti needs libnccl, and finds it through its own RUNPATH (libnccl's folder
  # is rarely on the loader's path), so no program that links libtutti needs LD_LIBRARY_PATH.
  if objdump -p "$PREFIX/lib/libtutti.so" | grep -q 'NEEDED.*libnccl'; then
    nccl=$(objdump -p "$PREFIX/lib/libtutti.so" | awk '$1 == "NEEDED" && $2 ~ /^libnccl/ { print $2 }')
    found=""
    for dir in $(objdump -p "$PREFIX/lib/libtutti.so" | awk '$1 == "RUNPATH" || $1 == "RPATH" { print $2 }' | tr ':' ' '); do
      [ -e "$dir/$nccl" ] && found=$dir
    done
    [ -n "$found" ] || fail "libtutti.so needs $nccl but no folder of its RUNPATH holds it"
    echo "cuda: $nccl through libtutti's RUNPATH ($found)"
  fi
  # No installed program needs the CUDA runtime on the loader's path (a fresh Debian has none there:
  # tutti-bench exited 127 "libcudart.so.13: cannot open shared object file"): libcudart
  # is linked statically, and a program that calls NCCL itself finds it through its own RUNPATH.
  for program in "$PREFIX"/bin/*; do
    objdump -p "$program" >/dev/null 2>&1 || continue
    if objdump -p "$program" | grep -q 'NEEDED.*libcudart'; then
      fail "installed $(basename "$program") needs libcudart.so on the loader's path"
    fi
    nccl=$(objdump -p "$program" | awk '$1 == "NEEDED" && $2 ~ /^libnccl/ { print $2 }')
    [ -n "$nccl" ] || continue
    found=""
    for dir in $(objdump -p "$program" | awk '$1 == "RUNPATH" || $1 == "RPATH" { print $2 }' | tr ':' ' '); do
      [ -e "$dir/$nccl" ] && found=$dir
    done
    [ -n "$found" ] || fail "installed $(basename "$program") needs $nccl but no folder of its RUNPATH holds it"
  done
  echo "layout: $(cd "$PREFIX" && find . -type f | wc -l) files, soname $soname"
}

# run_consumer NAME PROGRAM LABEL: 2 ranks under the installed tuttirun, both report correct.
run_consumer() {
  local name=$1 program=$2 label=$3 out=$WORK/$3.out
  lib=$(env -u LD_LIBRARY_PATH ldd "$program" | awk '/libtutti\.so/ { print $3 }')
  case $lib in "" | "$PREFIX"/*) ;; *) fail "$label loads libtutti from '$lib', not from the prefix" ;; esac
  if ! env -u LD_LIBRARY_PATH timeout 60 "$PREFIX/bin/tuttirun" -np 2 -- "$program" >"$out" 2>&1; then
    cat "$out"
    fail "$label: the 2-rank job failed"
  fi
  for r in 0 1; do
    grep -qE "^\[$r\] $name: rank $r of 2: allreduce correct" "$out" || { cat "$out"; fail "$label: rank $r did not report a correct allreduce"; }
  done
  echo "$label: 2 ranks correct"
}

# configure_consumer SOURCE BUILD LABEL [CMAKE ARGS...]: find_package(tutti), nothing else on the
# search path (no package registry, no build tree); the package must be the prefix's.
configure_consumer() {
  local source=$1 build=$2 label=$3
  shift 3
  cmake -S "$source" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "$@" >"$build.cmake.log" 2>&1 || { cat "$build.cmake.log"; fail "configuring the consumer ($label)"; }
  grep -qx "tutti_DIR:PATH=$PREFIX/lib/cmake/tutti" "$build/CMakeCache.txt" ||
    fail "$label: find_package(tutti) found $(grep '^tutti_DIR' "$build/CMakeCache.txt"), not the prefix"
}
# build_consumer BUILD LABEL: builds it, and nothing of it reaches into tutti's source tree.
build_consumer() {
  local build=$1 label=$2
  cmake --build "$build" >"$build.build.log" 2>&1 || { cat "$build.build.log"; fail "building the consumer ($label)"; }
  if grep -q -- "$(dirname "$HEADERS")" "$build/build.ninja"; then fail "$label: the consumer's build reaches into the source tree"; fi
}

case $CASE in
c-and-cxx)
  check_layout
  # 1. find_package(tutti) in a C and C++ project.
  configure_consumer "$SRC" "$WORK/cmake" find_package
  build_consumer "$WORK/cmake" find_package
  [ -x "$WORK/cmake/consumer_cxx_static" ] || fail "tutti::tutti_static was not offered (fmt is installed here)"
  run_consumer consumer_c "$WORK/cmake/consumer_c" find_package-c
  run_consumer consumer_cxx "$WORK/cmake/consumer_cxx" find_package-c++
  run_consumer consumer_cxx "$WORK/cmake/consumer_cxx_static" find_package-c++-static

  # 2. pkg-config, the way a Makefile would use it: its flags alone, no rpath or LD_LIBRARY_PATH of
  # our own; the program must find the prefix's libtutti as built.
  export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
  [ "$(pkg-config --modversion tutti)" = "$(sed -n 's/^Version: //p' "$PREFIX/lib/pkgconfig/tutti.pc")" ] || fail "pkg-config --modversion"
  cflags=$(pkg-config --cflags tutti)
  libs=$(pkg-config --libs tutti)
  libdir=$(pkg-config --variable=libdir tutti)
  [ "$(cd "$libdir" && pwd -P)" = "$(cd "$PREFIX/lib" && pwd -P)" ] || fail "tutti.pc's libdir $libdir is not the prefix's lib/"
  # shellcheck disable=SC2086
  cc -std=c11 -Wall -Werror $cflags "$SRC/consumer.c" -o "$WORK/pc_c" $libs || fail "cc with pkg-config"
  # shellcheck disable=SC2086
  c++ -std=c++20 -Wall -Werror $cflags "$SRC/consumer.cc" -o "$WORK/pc_cxx" $libs || fail "c++ with pkg-config"
  for program in "$WORK/pc_c" "$WORK/pc_cxx"; do
    lib=$(env -u LD_LIBRARY_PATH ldd "$program" | awk '/libtutti\.so/ { print ($3 == "not" ? "" : $3) }')
    if [ -z "$lib" ] || [ "$(readlink -f "$lib")" != "$(readlink -f "$PREFIX/lib/libtutti.so.0")" ]; then
      fail "$(basename "$program"), built with \$(pkg-config --cflags --libs tutti) ($libs), loads libtutti from '${lib:-nowhere: not found}' without LD_LIBRARY_PATH, not from the prefix (tutti.pc's Libs should carry -Wl,-rpath,\${libdir})"
    fi
  done
  run_consumer consumer_c "$WORK/pc_c" pkg-config-c
  run_consumer consumer_cxx "$WORK/pc_cxx" pkg-config-c++
  ;;
cxx-only)
  # find_package(tutti) in a project with the C++ language alone.
  configure_consumer "$SOURCES/consumer_cxx_only" "$WORK/cxx-only" find_package-cxx-only
  with_mpi=$(sed -n 's/^set(tutti_WITH_MPI \(.*\))$/\1/p' "$PREFIX/lib/cmake/tutti/tuttiConfig.cmake")
  echo "cxx-only: tutti built with MPI: ${with_mpi:-?}"
  build_consumer "$WORK/cxx-only" find_package-cxx-only
  if [[ ${with_mpi^^} =~ ^(ON|TRUE|YES|Y|1)$ ]]; then
    [ -x "$WORK/cxx-only/consumer_mpi" ] || fail "cxx-only: tutti/tutti_mpi.h's consumer was not built (tutti_WITH_MPI not seen?)"
    echo "cxx-only: tutti/tutti_mpi.h consumer built and linked"
  fi
  run_consumer consumer_cxx "$WORK/cxx-only/consumer_cxx" find_package-cxx-only
  ;;
torch)
  [ -e "$PREFIX/lib/libtutti_torch.so" ] || fail "the build has libtorch but lib/libtutti_torch.so is not installed"
  [ -f "$PREFIX/lib/cmake/tutti/tuttiTorchTargets.cmake" ] || fail "no tuttiTorchTargets.cmake: the package does not export tutti::tutti_torch"
  # As a libtorch user would write it: find_package(tutti), link tutti::tutti_torch.
  configure_consumer "$SOURCES/consumer_torch" "$WORK/torch" find_package-torch
  build_consumer "$WORK/torch" find_package-torch
  lib=$(env -u LD_LIBRARY_PATH ldd "$WORK/torch/consumer_torch" | awk '/libtutti_torch\.so/ { print $3 }')
  case $lib in "$PREFIX"/*) ;; *) fail "consumer_torch loads libtutti_torch from '$lib', not from the prefix" ;; esac
  run_consumer consumer_torch "$WORK/torch/consumer_torch" find_package-torch
  # And required by name: COMPONENTS torch.
  configure_consumer "$SOURCES/consumer_torch" "$WORK/torch-component" find_package-COMPONENTS-torch \
    -DCONSUMER_COMPONENTS=torch
  echo "find_package-COMPONENTS-torch: configured"
  ;;
esac
echo PASS
