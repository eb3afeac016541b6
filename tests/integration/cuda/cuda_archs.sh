#!/usr/bin/env bash
# cuda_archs.sh LIBTUTTI NVCC ARCHS: libtutti carries GPU code for every entry of ARCHS
# (CMAKE_CUDA_ARCHITECTURES: "80-real" is sm_80 machine code, "120-virtual" compute_120 PTX, a bare
# "90" both), read with cuobjdump --list-elf/--list-ptx where it exists, else with fatbin_archs.py
# (our reader of the .nv_fatbin section). The reader is first checked on objects compiled here with
# known -gencode sets, including one that must NOT list sm_90, so a reader that lists everything
# fails this test.
set -euo pipefail
LIB=$1 NVCC=$2 ARCHS=$3
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-archs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

CUOBJDUMP=$(dirname "$NVCC")/cuobjdump
[ -x "$CUOBJDUMP" ] || CUOBJDUMP=$(command -v cuobjdump || true)
# list FILE: "sm_NN elf" / "sm_NN ptx" lines.
list() {
  if [ -n "$CUOBJDUMP" ]; then
    { "$CUOBJDUMP" --list-elf "$1" 2>/dev/null | sed -nE 's/.*\.(sm_[0-9]+)[a-z]*\.cubin.*/\1 elf/p'
      "$CUOBJDUMP" --list-ptx "$1" 2>/dev/null | sed -nE 's/.*\.(sm_[0-9]+)[a-z]*\.ptx.*/\1 ptx/p'; } | sort -u
  else
    python3 "$HERE/fatbin_archs.py" "$1"
  fi
}
if [ -n "$CUOBJDUMP" ]; then echo "tool: $CUOBJDUMP"; else echo "tool: fatbin_archs.py (no cuobjdump here)"; fi

# The reader against known objects.
printf '__global__ void k(int* p) { *p = 1; }\n' >"$WORK/k.cu"
"$NVCC" -c "$WORK/k.cu" -o "$WORK/only75.o" -gencode arch=compute_75,code=sm_75
"$NVCC" -c "$WORK/k.cu" -o "$WORK/mixed.o" -gencode arch=compute_80,code=sm_80 \
  -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
only75=$(list "$WORK/only75.o" | tr '\n' ',')
mixed=$(list "$WORK/mixed.o" | tr '\n' ',')
[ "$only75" = "sm_75 elf," ] || fail "an sm_75-only object lists '$only75'"
[ "$mixed" = "sm_80 elf,sm_90 elf,sm_90 ptx," ] || fail "an sm_80+sm_90+compute_90 object lists '$mixed'"
echo "reader: sm_75 object -> $only75 mixed object -> $mixed"

have=$(list "$LIB")
echo "libtutti: $(echo "$have" | tr '\n' ',')"
expect() { grep -qx "$1" <<<"$have" || fail "$(basename "$LIB") has no $1 code (CMAKE_CUDA_ARCHITECTURES=$ARCHS)"; }
for arch in ${ARCHS//;/ }; do
  case $arch in
    *-real) expect "sm_${arch%-real} elf" ;;
    *-virtual) expect "sm_${arch%-virtual} ptx" ;;
    *) expect "sm_$arch elf"; expect "sm_$arch ptx" ;;
  esac
done
echo "PASS"
