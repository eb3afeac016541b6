#!/usr/bin/env bash
# bench/tune.sh fits every algorithm on a small placement into a fresh tuning file; the runtime
# then reads it through TUTTI_TUNE_FILE: the decision table names the file and marks tuned
# predictions, and the sweep that auto picks from it stays correct.
set -euo pipefail
src=$1 build=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$src/bench/tune.sh" "$build" "$dir/tune.json" 1,1 -b 8 -e 64K -f 8 -n 2 -w 1 -c 0
for algo in ring tree hd; do grep -q "\"algorithm\": \"$algo\"" "$dir/tune.json"; done
TUTTI_TUNE_FILE=$dir/tune.json TUTTI_LOG_LEVEL=debug \
  "$src/tests/integration/runtime/placed_hosts.sh" "$build/bin/tuttirun" "$build/bin/collectives_check" 1,1 \
  --counts 1,1000 --collectives allreduce --dtypes float32 --ops sum 2>&1 | tee "$dir/run.log" >/dev/null
grep -q "tuned lines from $dir/tune.json" "$dir/run.log"
grep -q '\*' "$dir/run.log"
# (`! cmd` never stops a set -e script: say it.)
if grep -E "(^|[^0-9])[1-9][0-9]* failed|FAIL" "$dir/run.log"; then echo "a failure in the run's log"; exit 1; fi
echo "tune round trip OK"
