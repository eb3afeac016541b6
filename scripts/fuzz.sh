#!/usr/bin/env bash
# Builds every fuzz target of tests/fuzz/targets.txt with clang and libFuzzer (ASan + UBSan) and
# fuzzes each for a while:
#   scripts/fuzz.sh [OUT_DIR] [SECONDS_PER_TARGET] [NAME...]
# The project itself builds with g++, so this compiles the sources each target lists directly
# instead of configuring a second, clang-wide build: each source once into OUT_DIR/obj (the
# targets share most of theirs: core, net, bootstrap), JOBS (default nproc) at a time, then one
# link per target. The targets then fuzz side by side, JOBS at a time, each for SECONDS; their
# output is printed target by target. A target whose tests/fuzz/<name>_fuzz.cc does not exist is
# skipped. New inputs go to OUT_DIR/corpus-work/<name>; the committed seed corpus
# (tests/fuzz/corpus/<name>) is only read. A crash leaves OUT_DIR/<name>/crash-* and fails; fix it
# and add the input to tests/fuzz/corpus/<name> so <name>_fuzz_replay keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${1:-build/fuzz}
seconds=${2:-30}
shift $(($# < 2 ? $# : 2))
only=("$@")
jobs=${JOBS:-$(nproc)}
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "fuzz.sh: clang++ not found; install clang-14 and libclang-rt-14-dev (make deps)" >&2
  exit 1
fi
mkdir -p "$out/obj"
out=$(cd "$out" && pwd)
# The library sources get libFuzzer's coverage instrumentation without its main (fuzzer-no-link);
# the link adds the fuzzer itself.
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer-no-link,address,undefined
  -fno-sanitize-recover=undefined -DFMT_SHARED -DTUTTI_VERSION='"fuzz"' -I. -Iruntime/src
  -Iruntime/include)

# The targets to build, and each one's sources (the globs expand here, against the repository
# root).
names=()
declare -A sources_of
while read -r name _library patterns; do
  case $name in '' | '#'*) continue ;; esac
  if [ ${#only[@]} -gt 0 ] && [[ " ${only[*]} " != *" $name "* ]]; then continue; fi
  if [ ! -f "tests/fuzz/${name}_fuzz.cc" ]; then
    echo "fuzz.sh: $name: no tests/fuzz/${name}_fuzz.cc, skipped"
    continue
  fi
  names+=("$name")
  # shellcheck disable=SC2086
  sources_of[$name]="tests/fuzz/${name}_fuzz.cc $(echo $patterns)"
done <tests/fuzz/targets.txt
if [ ${#names[@]} -eq 0 ]; then
  echo "fuzz.sh: no fuzz target ran" >&2
  exit 1
fi

object_of() { echo "$out/obj/${1//\//__}.o"; }
# An object is stale when it is older than its source or than any header (no dependency files:
# a header change rebuilds everything, as a fresh build would).
newest_header=$(find hostfile launcher runtime/src runtime/include -name '*.hpp' -o -name '*.h' |
  xargs stat -c %Y | sort -n | tail -n 1)
declare -A seen
stale=()
for name in "${names[@]}"; do
  for src in ${sources_of[$name]}; do
    [ -z "${seen[$src]:-}" ] || continue
    seen[$src]=1
    obj=$(object_of "$src")
    if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$(stat -c %Y "$obj")" -lt "$newest_header" ]; then
      stale+=("$src")
    fi
  done
done

# Runs "$@" in the background, at most $jobs at a time; `drain` waits for the rest. A failure
# fails the script once every job has ended.
failed=0
spawn() {
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || failed=1; done
  "$@" &
}
drain() {
  while [ -n "$(jobs -rp)" ]; do wait -n || failed=1; done
  wait || failed=1
}

compile() {
  local obj
  obj=$(object_of "$1")
  # Through a temporary file: an interrupted compile leaves no object that looks fresh.
  "$cxx" "${flags[@]}" -c "$1" -o "$obj.tmp" && mv "$obj.tmp" "$obj"
}
if [ ${#stale[@]} -gt 0 ]; then
  echo "fuzz.sh: compiling ${#stale[@]} source(s) with $cxx, $jobs at a time"
  for src in "${stale[@]}"; do spawn compile "$src"; done
  drain
  # Each object is there or its compile failed: a status `wait` may not have reported.
  for src in "${stale[@]}"; do [ -f "$(object_of "$src")" ] || failed=1; done
  [ "$failed" -eq 0 ] || { echo "fuzz.sh: a source did not compile (above)" >&2; exit 1; }
fi

for name in "${names[@]}"; do
  binary=$out/$name/${name}_fuzz
  mkdir -p "$out/$name"
  objects=()
  relink=0
  [ -x "$binary" ] || relink=1
  for src in ${sources_of[$name]}; do
    obj=$(object_of "$src")
    objects+=("$obj")
    [ "$obj" -nt "$binary" ] && relink=1
  done
  if [ "$relink" -eq 1 ]; then
    echo "fuzz.sh: linking $binary"
    "$cxx" -fsanitize=fuzzer,address,undefined "${objects[@]}" -lfmt -pthread -o "$binary"
  fi
done

fuzz() {
  local name=$1 status=0
  mkdir -p "$out/corpus-work/$name"
  (cd "$out/$name" &&
    ASAN_OPTIONS=detect_leaks=1 ./"${name}_fuzz" -max_total_time="$seconds" -timeout=10 \
      -rss_limit_mb=1024 -max_len=4096 -print_final_stats=1 "$out/corpus-work/$name" \
      "$root/tests/fuzz/corpus/$name") >"$out/$name/fuzz.log" 2>&1 || status=$?
  echo "$status" >"$out/$name/fuzz.status"
  return "$status"
}
echo "fuzz.sh: fuzzing ${names[*]} for ${seconds}s each, $jobs at a time"
for name in "${names[@]}"; do
  rm -f "$out/$name/fuzz.status"
  spawn fuzz "$name"
done
drain
crashed=()
for name in "${names[@]}"; do
  echo "fuzz.sh: $name:"
  cat "$out/$name/fuzz.log"
  [ "$(cat "$out/$name/fuzz.status" 2>/dev/null || echo 1)" -eq 0 ] || crashed+=("$name")
done
if [ ${#crashed[@]} -gt 0 ]; then
  echo "fuzz.sh: ${crashed[*]} failed (a crash-* input is in $out/<name>/; output above)" >&2
  exit 1
fi
echo "fuzz.sh: ${#names[@]} target(s) fuzzed, no crash"
