#!/usr/bin/env bash
# Builds every fuzz target of tests/fuzz/targets.txt with clang and libFuzzer (ASan + UBSan) and
# fuzzes each for a while:
#   scripts/fuzz.sh [OUT_DIR] [SECONDS_PER_TARGET] [NAME...]
# The project itself builds with g++, so this compiles the sources each target lists directly
# instead of configuring a second, clang-wide build. A target whose tests/fuzz/<name>_fuzz.cc does
# not exist is skipped. New inputs go to OUT_DIR/corpus-work/<name>; the committed seed corpus
# (tests/fuzz/corpus/<name>) is only read. A crash leaves OUT_DIR/<name>/crash-* and fails; fix it
# and add the input to tests/fuzz/corpus/<name> so <name>_fuzz_replay keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-build/fuzz}
seconds=${2:-30}
shift $(($# < 2 ? $# : 2))
only=("$@")
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "fuzz.sh: clang++ not found; install clang-14 and libclang-rt-14-dev (make deps)" >&2
  exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

# build NAME SOURCES...: rebuilds $out/NAME/NAME_fuzz when a source or header is newer.
build() {
  local name=$1
  shift
  local binary=$out/$name/${name}_fuzz
  mkdir -p "$out/$name"
  local stale=0 f
  [ -x "$binary" ] || stale=1
  for f in tests/fuzz/${name}_fuzz.cc "$@" hostfile/*.hpp launcher/*.hpp runtime/src/*/*.hpp \
    runtime/include/tutti/*; do
    [ "$f" -nt "$binary" ] && stale=1
  done
  [ "$stale" = 1 ] || return 0
  echo "fuzz.sh: building $binary with $cxx"
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -DFMT_SHARED -DTUTTI_VERSION='"fuzz"' -I. -Iruntime/src -Iruntime/include \
    "tests/fuzz/${name}_fuzz.cc" "$@" -lfmt -pthread -o "$binary"
}

ran=0
while read -r name _library patterns; do
  case $name in '' | '#'*) continue ;; esac
  if [ ${#only[@]} -gt 0 ] && [[ " ${only[*]} " != *" $name "* ]]; then continue; fi
  if [ ! -f "tests/fuzz/${name}_fuzz.cc" ]; then
    echo "fuzz.sh: $name: no tests/fuzz/${name}_fuzz.cc, skipped"
    continue
  fi
  # The globs expand here, against the repository root.
  # shellcheck disable=SC2086
  build "$name" $patterns
  echo "fuzz.sh: fuzzing $name for ${seconds}s"
  mkdir -p "$out/corpus-work/$name"
  (cd "$out/$name" &&
    ASAN_OPTIONS=detect_leaks=1 ./"${name}_fuzz" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=1024 -max_len=4096 -print_final_stats=1 "$out/corpus-work/$name" \
      "$root/tests/fuzz/corpus/$name")
  ran=$((ran + 1))
done <tests/fuzz/targets.txt
if [ "$ran" -eq 0 ]; then
  echo "fuzz.sh: no fuzz target ran" >&2
  exit 1
fi
echo "fuzz.sh: $ran target(s) fuzzed, no crash"
