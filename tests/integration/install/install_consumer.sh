#!/usr/bin/env bash
# install_consumer.sh BUILD_DIR CONSUMER_SRC HEADER_DIR
# `cmake --install` into a fresh temporary prefix, checks the layout (programs, libtutti with its
# soname, the static archive, every public header, the CMake package and tutti.pc), then builds the
# consumer project (C and C++) against that prefix twice, with find_package(tutti) and with
# pkg-config, and runs each program on 2 ranks through the installed tuttirun. Every allreduce
# result is checked by the consumer itself; this script checks that both ranks said so.
set -euo pipefail
BUILD=$1 SRC=$2 HEADERS=$3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-install.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
PREFIX=$WORK/prefix
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" || { cat "$WORK/install.log"; fail "cmake --install"; }

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

# 1. find_package(tutti), nothing else on the search path (no package registry, no build tree).
cmake -S "$SRC" -B "$WORK/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log"; fail "configuring the consumer (find_package)"; }
grep -qx "tutti_DIR:PATH=$PREFIX/lib/cmake/tutti" "$WORK/cmake/CMakeCache.txt" ||
  fail "find_package(tutti) found $(grep '^tutti_DIR' "$WORK/cmake/CMakeCache.txt"), not the prefix"
cmake --build "$WORK/cmake" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; fail "building the consumer (find_package)"; }
grep -q -- "$(dirname "$HEADERS")" "$WORK/cmake/build.ninja" && fail "the consumer's build reaches into the source tree"
[ -x "$WORK/cmake/consumer_cxx_static" ] || fail "tutti::tutti_static was not offered (fmt is installed here)"
run_consumer consumer_c "$WORK/cmake/consumer_c" find_package-c
run_consumer consumer_cxx "$WORK/cmake/consumer_cxx" find_package-c++
run_consumer consumer_cxx "$WORK/cmake/consumer_cxx_static" find_package-c++-static

# 2. pkg-config, the way a Makefile would use it.
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
[ "$(pkg-config --modversion tutti)" = "$(sed -n 's/^Version: //p' "$PREFIX/lib/pkgconfig/tutti.pc")" ] || fail "pkg-config --modversion"
cflags=$(pkg-config --cflags tutti)
libs=$(pkg-config --libs tutti)
libdir=$(pkg-config --variable=libdir tutti)
[ "$(cd "$libdir" && pwd -P)" = "$(cd "$PREFIX/lib" && pwd -P)" ] || fail "tutti.pc's libdir $libdir is not the prefix's lib/"
# shellcheck disable=SC2086
cc -std=c11 -Wall -Werror $cflags "$SRC/consumer.c" -o "$WORK/pc_c" $libs -Wl,-rpath,"$libdir" || fail "cc with pkg-config"
# shellcheck disable=SC2086
c++ -std=c++20 -Wall -Werror $cflags "$SRC/consumer.cc" -o "$WORK/pc_cxx" $libs -Wl,-rpath,"$libdir" || fail "c++ with pkg-config"
run_consumer consumer_c "$WORK/pc_c" pkg-config-c
run_consumer consumer_cxx "$WORK/pc_cxx" pkg-config-c++
echo PASS
