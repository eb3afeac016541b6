#!/usr/bin/env bash
# make image where it cannot build: it must fail (non-zero), say why and what to do, and never
# report an image it did not build. Engines are absent or stood in by scripts that fail as the real
# ones do without a daemon (docker) or without a working runtime (podman).
#   make_image_errors.sh SOURCE
set -uo pipefail
SOURCE=$1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-make-image.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "FAIL [images_make_image_errors]: $*" >&2
  [ -s "$WORK/out" ] && { echo "--- output" >&2; cat "$WORK/out" >&2; }
  exit 1
}
# A PATH with this machine's programs but docker and podman.
mkdir -p "$WORK/bin" "$WORK/fake"
for dir in /usr/local/bin /usr/bin /bin; do
  for p in "$dir"/*; do
    name=${p##*/}
    case $name in docker | podman) continue ;; esac
    [ -e "$WORK/bin/$name" ] || ln -s "$p" "$WORK/bin/$name"
  done
done
cat >"$WORK/fake/docker" <<'FAKE'
#!/bin/sh
echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?" >&2
exit 1
FAKE
cat >"$WORK/fake/podman" <<'FAKE'
#!/bin/sh
echo "Error: default OCI runtime \"crun\" not found: invalid argument" >&2
exit 125
FAKE
chmod +x "$WORK/fake/docker" "$WORK/fake/podman"

# expect NAME RC REGEX ENV...: runs build-images.sh with ENV, wants exit RC and REGEX in its output.
expect() {
  local name=$1 rc=$2 regex=$3
  shift 3
  env "$@" bash "$SOURCE/scripts/build-images.sh" >"$WORK/out" 2>&1 </dev/null
  local got=$?
  [ "$got" -eq "$rc" ] || fail "$name: exit $got, expected $rc"
  grep -qE -- "$regex" "$WORK/out" || fail "$name: the output lacks /$regex/"
  grep -q "make image: built" "$WORK/out" && fail "$name: reports an image as built"
  echo "[images_make_image_errors] $name: exit $got: $(grep -E -- "$regex" "$WORK/out" | head -n 1)"
}
only_docker=$WORK/only-docker
mkdir -p "$only_docker"
ln -s "$WORK/fake/docker" "$only_docker/docker"
only_podman=$WORK/only-podman
mkdir -p "$only_podman"
ln -s "$WORK/fake/podman" "$only_podman/podman"

expect "no engine" 1 "neither docker nor podman is installed" PATH="$WORK/bin"
expect "docker without its daemon, no podman" 1 "docker is installed but its daemon does not answer" \
  PATH="$only_docker:$WORK/bin"
expect "CONTAINER_ENGINE=docker without its daemon" 1 "docker cannot build here; 'docker info' says: Cannot connect" \
  PATH="$only_docker:$WORK/bin" CONTAINER_ENGINE=docker
expect "podman that cannot run" 1 "podman cannot build here; 'podman info' says: .*crun" \
  PATH="$only_podman:$WORK/bin"
expect "CONTAINER_ENGINE not installed" 1 "CONTAINER_ENGINE=nerdctl is not installed" \
  PATH="$WORK/bin" CONTAINER_ENGINE=nerdctl
expect "an unknown image" 2 "no image 'lancher'" PATH="$WORK/bin" IMAGES=lancher
echo PASS
