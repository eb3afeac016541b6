#!/usr/bin/env bash
# Builds the hostfile parser's libFuzzer target with clang (ASan + UBSan) and fuzzes it for a while:
#   scripts/fuzz.sh [OUT_DIR] [SECONDS]
# The project itself builds with g++, so this compiles the few sources the target needs directly
# instead of configuring a second, clang-wide build. New inputs go to OUT_DIR/corpus-work; the
# committed seed corpus (tests/fuzz/corpus) is only read. A crash leaves OUT_DIR/crash-* and fails;
# fix it and add the input to tests/fuzz/corpus so hostfile_fuzz_replay keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/fuzz}
seconds=${2:-30}
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "fuzz.sh: clang++ not found; install clang-14 and libclang-rt-14-dev (make deps)" >&2
  exit 1
fi
mkdir -p "$out/corpus-work"
sources=(tests/fuzz/hostfile_parse_fuzz.cc hostfile/dns_name.cc hostfile/emit.cc hostfile/hostfile.cc
         hostfile/parse.cc runtime/src/core/*.cc)
binary=$out/hostfile_parse_fuzz
# Rebuild only when a source is newer than the binary.
stale=0
[ -x "$binary" ] || stale=1
for f in "${sources[@]}" hostfile/*.hpp runtime/src/core/*.hpp; do
  [ "$f" -nt "$binary" ] && stale=1
done
if [ "$stale" = 1 ]; then
  echo "fuzz.sh: building $binary with $cxx"
  "$cxx" -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -DFMT_SHARED -I. -Iruntime/src -Iruntime/include "${sources[@]}" -lfmt -o "$binary"
fi
echo "fuzz.sh: fuzzing the hostfile parser for ${seconds}s"
cd "$out"
ASAN_OPTIONS=detect_leaks=1 ./hostfile_parse_fuzz -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=1024 -max_len=4096 -print_final_stats=1 corpus-work "$OLDPWD/tests/fuzz/corpus"
