#!/usr/bin/env bash
# make image: builds the targets of docker/Dockerfile (context: the repository root) as
# ${IMAGE_PREFIX}tutti-NAME:VERSION (tutti-launcher, tutti-worker, tutti-worker-torch2), VERSION being
# the project's (CMakeLists.txt), the tag examples/k8s names. Exits non-zero, naming what, when an
# image could not be built; an engine that cannot build is an error, not a skip.
#
#   IMAGES="launcher worker"  build only these (default: all three)
#   CONTAINER_ENGINE=docker   the engine (default: docker where its daemon answers, else podman)
#   IMAGE_PREFIX=registry.example.com/ml/   your registry path, with its trailing slash
#   PUSH=1                    push what was built
#   KUBECTL=/path/to/kubectl  the launcher's kubectl from this file instead of dl.k8s.io (offline)
#   KUBECTL_VERSION=v1.31.4   the version downloaded otherwise
#   TORCH_INDEX_URL=URL       worker-torch2's torch (default PyTorch's CPU index;
#                             https://pypi.org/simple for PyPI's CUDA build, about 3.5 GB more)
# With podman (and docker's BuildKit) the build reads and fills your ccache and pip cache, pip
# trusts the CA bundle that PIP_CERT names, and a CUDA toolkit (CUDA_HOME, else /usr/local/cuda)
# is there for building the backend against a CUDA torch, through named build contexts.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=podman.sh
source scripts/podman.sh
version=$(sed -n 's/^project(tutti VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "make image: no project(tutti VERSION ...) in CMakeLists.txt" >&2; exit 1; }
prefix=${IMAGE_PREFIX:-}
read -r -a images <<<"${IMAGES:-launcher worker worker-torch2}"
for name in "${images[@]}"; do
  case $name in
    launcher | worker | worker-torch2) ;;
    *) echo "make image: no image '$name' (IMAGES takes launcher, worker, worker-torch2)" >&2; exit 2 ;;
  esac
done

fail() {
  echo "make image: $*" >&2
  echo "make image: no image was built." >&2
  exit 1
}

engine=${CONTAINER_ENGINE:-}
if [ -z "$engine" ]; then
  # docker only where its daemon answers: its client alone is installed on many machines.
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    engine=docker
  elif command -v podman >/dev/null 2>&1; then
    engine=podman
  elif command -v docker >/dev/null 2>&1; then
    fail "docker is installed but its daemon does not answer ('docker info' fails), and podman is not installed. Start the daemon, or install podman (apt-get install podman runc) and run make image again."
  else
    fail "neither docker nor podman is installed. Install one (apt-get install podman runc, or Docker Engine) and run make image again."
  fi
fi
command -v "$engine" >/dev/null 2>&1 || fail "CONTAINER_ENGINE=$engine is not installed"
if ! why=$("$engine" info 2>&1 >/dev/null); then
  fail "$engine cannot build here; '$engine info' says: $(printf '%s' "$why" | tail -n 1)"
fi

args=(-f docker/Dockerfile)
if [ "$engine" = podman ]; then
  podman_base_image debian:bookworm || fail "no base image debian:bookworm"
  mapfile -t more < <(podman_build_args)
  args+=("${more[@]}")
fi

# Named build contexts, where the engine takes them (podman 4.2+, docker with BuildKit).
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tutti-image.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if "$engine" build --help 2>/dev/null | grep -q -- --build-context; then
  cache=$(ccache -k cache_dir 2>/dev/null || true)
  [ -n "$cache" ] && [ -d "$cache" ] && args+=(--build-context "ccache=$cache")
  pip_cache=$(python3 -m pip cache dir 2>/dev/null || true)
  [ -n "$pip_cache" ] && [ -d "$pip_cache" ] && args+=(--build-context "pip-cache=$pip_cache")
  if [ -n "${PIP_CERT:-}" ] && [ -f "$PIP_CERT" ]; then
    mkdir -p "$tmp/pip-ca"
    cp "$PIP_CERT" "$tmp/pip-ca/ca-certificates.crt"
    args+=(--build-context "pip-ca=$tmp/pip-ca")
  fi
  # A CUDA build of torch (PyPI's) wants a CUDA toolkit to build tutti's backend against.
  cuda=${CUDA_HOME:-/usr/local/cuda}
  [ -x "$cuda/bin/nvcc" ] && args+=(--build-context "cuda=$cuda")
  if [ -n "${KUBECTL:-}" ]; then
    [ -x "$KUBECTL" ] || fail "KUBECTL=$KUBECTL is not an executable file"
    mkdir -p "$tmp/kubectl"
    cp "$KUBECTL" "$tmp/kubectl/kubectl"
    args+=(--build-context "kubectl=$tmp/kubectl")
  fi
elif [ -n "${KUBECTL:-}" ]; then
  fail "KUBECTL needs named build contexts, which this $engine lacks (podman 4.2+, docker with BuildKit)"
fi
# ccache hashes the locale: the build stage compiles under this shell's, so that the objects of a
# build here serve it.
for var in LANG LC_ALL; do [ -z "${!var+set}" ] || args+=(--build-arg "$var=${!var}"); done
[ -z "${KUBECTL_VERSION:-}" ] || args+=(--build-arg "KUBECTL_VERSION=$KUBECTL_VERSION")
[ -z "${TORCH_INDEX_URL:-}" ] || args+=(--build-arg "TORCH_INDEX_URL=$TORCH_INDEX_URL")

built=() failed=()
for name in "${images[@]}"; do
  tag="${prefix}tutti-$name:$version"
  echo "make image: $engine build --target $name -t $tag ."
  start=$SECONDS
  if "$engine" build "${args[@]}" --target "$name" -t "$tag" .; then
    size=$("$engine" image inspect --format '{{.Size}}' "$tag" 2>/dev/null || echo 0)
    built+=("$tag ($((size / 1000000)) MB, $((SECONDS - start)) s)")
  else
    failed+=("$tag")
    echo "make image: $tag did not build (its log is above)" >&2
  fi
done
if [ "${PUSH:-0}" = 1 ] && [ ${#failed[@]} -eq 0 ]; then
  for name in "${images[@]}"; do "$engine" push "${prefix}tutti-$name:$version"; done
fi
for line in "${built[@]}"; do echo "make image: built $line"; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "make image: FAILED: ${failed[*]}" >&2
  exit 1
fi
