#!/usr/bin/env bash
# A PMI_FD that is a socket but whose other end never answers: init must fail within TUTTI_TIMEOUT
# with a message naming PMI, not hang.
set -euo pipefail
check=$1
out=$(python3 - "$check" <<'PY'
import os, socket, subprocess, sys
ours, theirs = socket.socketpair()
env = dict(os.environ, PMI_RANK="0", PMI_SIZE="2", PMI_FD=str(theirs.fileno()), TUTTI_TIMEOUT="2")
p = subprocess.run([sys.argv[1], "--counts", "1"], env=env, pass_fds=[theirs.fileno()],
                   capture_output=True, text=True, timeout=20)
print(p.returncode)
print(p.stderr)
PY
)
echo "$out"
[ "$(head -1 <<<"$out")" != 0 ] || { echo "FAIL: init succeeded without a PMI launcher"; exit 1; }
grep -q "did not answer within the deadline" <<<"$out" || { echo "FAIL: no deadline message"; exit 1; }
echo PASS
