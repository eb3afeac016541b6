#!/usr/bin/env bash
# Stand-in ssh for tuttirun's ssh cases on one machine: `ssh [-o OPTION]... [-T] HOST COMMAND` runs
# COMMAND right here with sh -c, as sshd on HOST would, in an environment of its own. A host named
# in $LOCAL_SSH_DOWN (space separated) fails the way ssh does when nothing listens there (status
# 255). tests/integration/pods/ssh_pods.sh is the version with real sshds.
set -u
while [ $# -gt 0 ]; do
  case $1 in
    -o) shift 2 ;;
    -T) shift ;;
    *) break ;;
  esac
done
host=$1
shift
for down in ${LOCAL_SSH_DOWN:-}; do
  if [ "$host" = "$down" ]; then
    echo "ssh: connect to host $host port 22: Connection refused" >&2
    exit 255
  fi
done
exec env -i PATH="$PATH" HOME="${HOME:-/}" sh -c "$*"
