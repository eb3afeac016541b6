#!/usr/bin/env bash
# PyTorch 2.x from PyPI in a venv of its own, for the second build of tutti's torch binding
# (cmake/Torch2.cmake finds it there) and its tests; with it jax (CPU), optax and mpi4py, for the
# Python API's tests and its JAX example. Debian's python3-torch (1.13) stays the
# system's; this one never touches it.
#
#   scripts/install-torch2.sh            # make deps runs it
#   TUTTI_TORCH2_VENV=/opt/torch2 scripts/install-torch2.sh
#   TUTTI_TORCH2=skip make deps          # no torch 2.x (the build then has none)
#
# The venv is the cache: a machine that has it spends nothing (about 1 s to check). A fresh machine
# downloads about 3.5 GB (torch's CUDA wheel pulls NVIDIA's CUDA libraries, which it imports on a
# CPU-only machine too) into 5.4 GB of venv: about 1 minute at the registry's speed seen here. pip's
# own cache (~/.cache/pip) keeps the wheels, so a venv that was removed comes back without a
# download.
set -euo pipefail

venv=${TUTTI_TORCH2_VENV:-$HOME/.cache/tutti/torch2-venv}
version=${TUTTI_TORCH2_VERSION:-2.15.0}
# The Python that makes the venv: python3.11 where there is one (torch wheels exist for it), else
# the first python3 on PATH that is not Debian's (whose torch is 1.13).
python=${TUTTI_TORCH2_BASE_PYTHON:-}

if [ "${TUTTI_TORCH2:-}" = "skip" ]; then
  echo "install-torch2: TUTTI_TORCH2=skip; no torch 2.x"
  exit 0
fi

# The Python API's tests and its JAX example (import tutti: numpy, DLPack) use PyPI's jax (CPU),
# optax and mpi4py from the same venv, and `pip install .` (the root pyproject.toml) its pybind11.
extras=(jax optax mpi4py pybind11)
have=$("$venv/bin/python" -c 'import scikit_build_core, torch, jax, optax, mpi4py, pybind11; print(torch.__version__.split("+")[0])' \
  2>/dev/null || true)
if [ "$have" = "$version" ]; then
  echo "install-torch2: torch $have, jax, optax and mpi4py in $venv"
  exit 0
fi

if [ -z "$python" ]; then
  for candidate in python3.11 python3; do
    path=$(command -v "$candidate" || true)
    if [ -n "$path" ] && [ "$path" != /usr/bin/python3 ] && [ "$path" != /usr/bin/python3.11 ]; then
      python=$path
      break
    fi
  done
fi
if [ -z "$python" ]; then
  # Debian's own python3 can make the venv too (python3-venv), the venv just does not see
  # Debian's packages.
  python=/usr/bin/python3
fi

echo "install-torch2: torch $version into $venv (with $python)"
mkdir -p "$(dirname "$venv")"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
# numpy: torch.distributed's tests and FSDP's checkpoints use it; scikit-build-core: pip's build of
# runtime/torch (pyproject.toml). Three tries: a registry that drops a connection is the machine's
# problem, not the project's.
for attempt in 1 2 3; do
  if "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "torch==$version" numpy \
       scikit-build-core "${extras[@]}"; then
    "$venv/bin/python" -c 'import torch, jax; print("install-torch2: torch", torch.__version__, "jax", jax.__version__)'
    exit 0
  fi
  echo "install-torch2: pip failed (try $attempt of 3)" >&2
  sleep 5
done
echo "install-torch2: could not install torch $version from PyPI; the build goes on without torch 2.x" >&2
exit 2
