#!/bin/sh
# The elastic tests' discovery script (tuttirun --host-discovery-script runs it with tuttirun's
# environment): prints $HOSTS_BEFORE (default localhost:2) for its first $HOSTS_SWITCH_AT runs
# (default 3: the start and two polls), then $HOSTS_AFTER; it counts its runs in $HOSTS_COUNT_FILE.
n=$(cat "$HOSTS_COUNT_FILE" 2>/dev/null || echo 0)
echo $((n + 1)) >"$HOSTS_COUNT_FILE"
if [ "$n" -lt "${HOSTS_SWITCH_AT:-3}" ]; then echo "${HOSTS_BEFORE:-localhost:2}"; else echo "$HOSTS_AFTER"; fi
