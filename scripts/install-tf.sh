#!/usr/bin/env bash
# TensorFlow (CPU) from PyPI in a venv of its own, for the Python API's TensorFlow tests
# (tests/integration/python/tf_test.py: import tutti on tf.Tensor). Its own venv: TensorFlow and
# PyPI's torch pin different numpy and protobuf versions.
#
#   scripts/install-tf.sh              # make deps runs it
#   TUTTI_TF=skip make deps            # no TensorFlow (its tests are then not made)
#   TUTTI_TF_VENV=/opt/tf scripts/install-tf.sh
#
# The venv is the cache: a machine that has it spends about 3 s checking (TensorFlow's import). A
# fresh one downloads about 0.6 GB into 1.6 GB of venv (about a minute here). The venv's Python
# must be the minor version tutti's core module is built for (Debian's python3, 3.11).
set -euo pipefail

venv=${TUTTI_TF_VENV:-$HOME/.cache/tutti/tf-venv}
version=${TUTTI_TF_VERSION:-2.21.0}
if [ "${TUTTI_TF:-}" = "skip" ]; then
  echo "install-tf: TUTTI_TF=skip; no TensorFlow"
  exit 0
fi
have=$(TF_CPP_MIN_LOG_LEVEL=3 "$venv/bin/python" -c 'import tensorflow as tf; print(tf.__version__)' \
  2>/dev/null || true)
if [ "$have" = "$version" ]; then
  echo "install-tf: TensorFlow $have in $venv"
  exit 0
fi
python=${TUTTI_TF_BASE_PYTHON:-}
if [ -z "$python" ]; then
  for candidate in python3.11 python3; do
    path=$(command -v "$candidate" || true)
    if [ -n "$path" ]; then
      python=$path
      break
    fi
  done
fi
echo "install-tf: tensorflow-cpu $version into $venv (with $python)"
mkdir -p "$(dirname "$venv")"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
for attempt in 1 2 3; do
  if "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
       "tensorflow-cpu==$version" numpy; then
    exit 0
  fi
  echo "install-tf: pip failed (try $attempt of 3)" >&2
  sleep 5
done
echo "install-tf: could not install TensorFlow $version from PyPI; its tests are left out" >&2
exit 2
