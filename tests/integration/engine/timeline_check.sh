#!/usr/bin/env bash
# The engine timeline: written at run time (tutti::start_timeline/stop_timeline) and from
# TUTTI_TIMELINE at init; every rank's file must be a valid Chrome trace (a JSON array of events)
# holding the spans the README names, for the tensors that ran.
set -euo pipefail
tuttirun=$1 check=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# With the tree over TCP a fused batch is packed and unpacked around the collective (copy spans).
# The ring over TCP sends from and receives into the tensors themselves (no copy spans), and so
# does the window on shared memory, and the hierarchical algorithm on hosts of shared memory
# (pretend hosts: 2 ranks on one, 1 on the other).
TUTTI_TRANSPORT=tcp TUTTI_ALGO=tree "$tuttirun" -np 2 -- "$check" timeline --path "$work/runtime.json"
TUTTI_TRANSPORT=tcp TUTTI_ALGO=ring TUTTI_TIMELINE="$work/ring-{rank}.json" \
  "$tuttirun" -np 3 -- "$check" random --tensors 40 --steps 2
TUTTI_ALGO=hier TUTTI_LAYOUT=2,1 TUTTI_TIMELINE="$work/hier-{rank}.json" \
  "$tuttirun" -np 3 -- "$(dirname "$0")/../../../scripts/on_pretend_host.sh" "$check" random \
  --tensors 40 --steps 2
TUTTI_TIMELINE="$work/env-{rank}.json" "$tuttirun" -np 3 -- "$check" random --tensors 40 --steps 2

/usr/bin/python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
expect = {
    "runtime.rank0.json": {"queue", "negotiate", "fusion_copy_in", "collective", "fusion_copy_out", "callback"},
    "runtime.rank1.json": {"queue", "negotiate", "fusion_copy_in", "collective", "fusion_copy_out", "callback"},
    "env-0.json": {"queue", "negotiate", "collective", "callback"},
    "env-1.json": {"queue", "negotiate", "collective", "callback"},
    "env-2.json": {"queue", "negotiate", "collective", "callback"},
    "ring-0.json": {"queue", "negotiate", "collective", "callback"},
    "ring-1.json": {"queue", "negotiate", "collective", "callback"},
    "ring-2.json": {"queue", "negotiate", "collective", "callback"},
    "hier-0.json": {"queue", "negotiate", "collective", "callback"},
    "hier-1.json": {"queue", "negotiate", "collective", "callback"},
    "hier-2.json": {"queue", "negotiate", "collective", "callback"},
}
copies = {"fusion_copy_in", "fusion_copy_out"}
bad = 0
for name, spans in expect.items():
    path = os.path.join(work, name)
    if not os.path.exists(path):
        print(f"FAIL: {name} was not written; files: {sorted(os.listdir(work))}"); bad = 1; continue
    events = json.load(open(path))  # raises on invalid JSON
    if not isinstance(events, list) or not events:
        print(f"FAIL: {name} is not a non-empty JSON array"); bad = 1; continue
    seen = {e["name"] for e in events if e.get("ph") == "X"}
    for e in events:
        if e.get("ph") == "X" and not (isinstance(e.get("ts"), (int, float)) and e.get("dur", -1) >= 0):
            print(f"FAIL: {name}: span without ts/dur: {e}"); bad = 1; break
    rows = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    if missing := spans - seen:
        print(f"FAIL: {name} lacks spans {sorted(missing)} (has {sorted(seen)})"); bad = 1
    if not name.startswith("runtime") and seen & copies:
        print(f"FAIL: {name}: fused batches were copied ({sorted(seen & copies)}), not reduced in place"); bad = 1
    if name.startswith("runtime") and not {"layer0", "layer5", "traced"} <= rows:
        print(f"FAIL: {name}: rows {sorted(rows)} lack the traced tensors"); bad = 1
    # (The tensor finished just before start may still log its last span; the one enqueued after
    # stop must not appear.)
    if name.startswith("runtime") and "untraced.again" in rows:
        print(f"FAIL: {name}: a tensor enqueued after stop_timeline was traced"); bad = 1
    print(f"{name}: {len(events)} events, spans {sorted(seen)}")
sys.exit(bad)
PY
echo "ok: timelines valid"
