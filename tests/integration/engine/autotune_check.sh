#!/usr/bin/env bash
# TUTTI_AUTOTUNE: a first run tunes (short windows), writes its choice to TUTTI_AUTOTUNE_FILE, and
# every rank ends up using it; a second run reads the file, uses the same values on every rank
# and tunes nothing (the file stays as it was).
set -euo pipefail
tuttirun=$1 check=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
file="$work/tune.txt"

TUTTI_LOG_LEVEL=info TUTTI_AUTOTUNE=1 TUTTI_AUTOTUNE_WINDOW=0.03 TUTTI_AUTOTUNE_FILE="$file" \
  "$tuttirun" -np 2 -- "$check" autotune --file "$file" --seconds 30 >"$work/first" 2>&1 ||
  { cat "$work/first"; echo "FAIL: the tuning run failed"; exit 1; }
cat "$work/first" | grep -vE "^\[[0-9]\] ok"
[ -s "$file" ] || { echo "FAIL: no autotune file was written"; exit 1; }
cat "$file"
threshold=$(sed -n 's/^fusion_threshold=//p' "$file")
cycle=$(sed -n 's/^cycle_time_us=//p' "$file")
grep -q "autotune chose fusion threshold" "$work/first" || { echo "FAIL: the choice was not logged"; exit 1; }
for r in 0 1; do
  grep -q "^\[$r\] rank $r: fusion_threshold=$threshold cycle_time_us=$cycle$" "$work/first" ||
    { echo "FAIL: rank $r does not use the tuned values"; exit 1; }
done
before=$(stat -c %Y.%s "$file"; md5sum <"$file")
sleep 1
TUTTI_AUTOTUNE=1 TUTTI_AUTOTUNE_FILE="$file" \
  "$tuttirun" -np 2 -- "$check" autotune --file "$file" --seconds 0 >"$work/second" 2>&1 ||
  { cat "$work/second"; echo "FAIL: the second run failed"; exit 1; }
for r in 0 1; do
  grep -q "^\[$r\] rank $r: fusion_threshold=$threshold cycle_time_us=$cycle$" "$work/second" ||
    { cat "$work/second"; echo "FAIL: rank $r of the second run does not use the file's values"; exit 1; }
done
[ "$before" = "$(stat -c %Y.%s "$file"; md5sum <"$file")" ] || { echo "FAIL: the second run rewrote the file"; exit 1; }
# A malformed file is a clear error, not a silent default.
echo "fusion_threshold=lots" >"$file"
if TUTTI_AUTOTUNE_FILE="$file" "$tuttirun" -np 2 -- "$check" autotune --file "$file" --seconds 0 \
  >"$work/third" 2>&1; then
  echo "FAIL: a malformed autotune file was accepted"; exit 1
fi
grep -q "TUTTI_AUTOTUNE_FILE '$file'" "$work/third" || { cat "$work/third"; echo "FAIL: the error does not name the file"; exit 1; }
echo "ok: autotune tuned, wrote, and a later run read the file"
