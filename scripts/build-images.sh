#!/usr/bin/env bash
# make image: builds docker/launcher.Dockerfile, docker/worker.Dockerfile and
# docker/worker-torch2.Dockerfile (context: the repository root) as ${IMAGE_PREFIX}tutti-NAME:VERSION
# (tutti-launcher, tutti-worker, tutti-worker-torch2), VERSION being the project's (CMakeLists.txt),
# the tag examples/k8s names. With PUSH=1 it pushes them too. IMAGE_PREFIX is your registry path
# with its trailing slash, e.g. registry.example.com/ml/.
# Uses docker, else podman (CONTAINER_ENGINE picks one). Where neither is installed, or the one
# found cannot build (no daemon reachable), it says so and exits 0: there is nothing to build with.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version=$(sed -n 's/^project(tutti VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "make image: no project(tutti VERSION ...) in CMakeLists.txt" >&2; exit 1; }
prefix=${IMAGE_PREFIX:-}

engine=${CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then
  for candidate in docker podman; do
    if command -v "$candidate" >/dev/null 2>&1; then engine=$candidate; break; fi
  done
fi
if [ -z "$engine" ]; then
  echo "make image: neither docker nor podman is installed here; no image was built."
  echo "  Install one (apt-get install podman, or Docker Engine) and run make image again."
  exit 0
fi
if ! why=$("$engine" info 2>&1 >/dev/null); then
  echo "make image: $engine is installed but cannot build here; no image was built."
  echo "  '$engine info' says: $(printf '%s' "$why" | tail -n 1)"
  echo "  Start its daemon (or use podman: CONTAINER_ENGINE=podman make image) and run make image again."
  exit 0
fi

images=(launcher worker worker-torch2)
built=
for name in "${images[@]}"; do
  tag="${prefix}tutti-$name:$version"
  built="$built $tag"
  echo "make image: $engine build -f docker/$name.Dockerfile -t $tag ."
  "$engine" build -f "docker/$name.Dockerfile" -t "$tag" .
done
if [ "${PUSH:-0}" = 1 ]; then
  for name in "${images[@]}"; do "$engine" push "${prefix}tutti-$name:$version"; done
fi
echo "make image: built$built"
