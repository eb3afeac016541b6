#!/usr/bin/env bash
# The images tests' first step: the launcher and worker images of docker/Dockerfile, built from this
# source tree with podman, in podman storage of the tests' own (STATE), as a user's `make image`
# builds them: the base image made from Debian's packages where no registry answers, host network,
# your ccache (objects of this tree's build serve the image's), and the test's kubectl stand-in as
# the launcher's kubectl (no kubectl download here, and no API server). Prints each image's size and
# build time; the Dockerfile's own check (no compiler, no header, every library found) runs in the
# build, and again here on the finished image.
#   build.sh SOURCE STATE
# Exits 77 (ctest SKIPPED) with the reason only where podman is not installed or cannot run a
# container here; any failure to build is a failure.
set -uo pipefail
SOURCE=$1 STATE=$2
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../../scripts/podman.sh
source "$SOURCE/scripts/podman.sh"
skip() {
  echo "SKIP: $*" >&2
  exit 77
}
fail() {
  echo "FAIL [images_build]: $*" >&2
  exit 1
}

command -v podman >/dev/null 2>&1 || skip "podman is not installed (apt-get install podman runc mmdebstrap; make deps does)"
[ "$(id -u)" -eq 0 ] || skip "the images tests run podman as root (their pods are network namespaces)"
rm -f "$STATE/images.ok"
podman_private "$STATE"
why=$(podman info 2>&1 >/dev/null) || skip "podman cannot run here: $(tail -n 1 <<<"$why")"
podman_base_image debian:bookworm || fail "no base image debian:bookworm"
# A container must start before anything is built on it: where none can (no runtime, no cgroups),
# the tests cannot run, and that is said rather than failed.
why=$(podman run --rm --network none debian:bookworm true 2>&1) ||
  skip "podman cannot start a container here: $(tail -n 1 <<<"$why")"

mapfile -t args < <(podman_build_args)
kubectl_dir=$(mktemp -d "${TMPDIR:-/tmp}/tutti-images-kubectl.XXXXXX")
trap 'rm -rf "$kubectl_dir"' EXIT
cp "$HERE/kubectl" "$kubectl_dir/kubectl"
args+=(--build-context "kubectl=$kubectl_dir")
cache=$(ccache -k cache_dir 2>/dev/null || true)
[ -n "$cache" ] && [ -d "$cache" ] && args+=(--build-context "ccache=$cache")
for var in LANG LC_ALL; do [ -z "${!var+set}" ] || args+=(--build-arg "$var=${!var}"); done

for name in launcher worker; do
  start=$SECONDS
  echo "images_build: podman build --target $name -t tutti-$name:test"
  podman build "${args[@]}" -f "$SOURCE/docker/Dockerfile" --target "$name" -t "tutti-$name:test" "$SOURCE" \
    >"$STATE/build-$name.log" 2>&1 || {
    tail -n 40 "$STATE/build-$name.log" >&2
    fail "tutti-$name did not build (log: $STATE/build-$name.log)"
  }
  seconds=$((SECONDS - start))
  grep -A 2 '^Cacheable calls' "$STATE/build-$name.log" | sed "s/^/images_build: $name: ccache: /"
  size=$(podman image inspect --format '{{.Size}}' "tutti-$name:test")
  echo "images_build: tutti-$name: $((size / 1000000)) MB, built in $seconds s"
  # The image's own check, on the finished image: what it promises is there, no compiler, no
  # header, every program and library of tutti's finds its libraries.
  out=$(podman run --rm --network none "tutti-$name:test" /usr/local/share/tutti/check-image 2>&1) ||
    fail "tutti-$name fails its check: $out"
done
touch "$STATE/images.ok"
echo PASS
