# tutti worker image for PyTorch 2.x: the pods of a PyTorchJob that runs FSDP (fully_shard) and
# torch.distributed.checkpoint on backend "tutti" (examples/k8s/pytorchjob-fsdp.yaml). Holds the
# runtime (`cmake --install` into /usr/local: libtutti, tuttirun, tutti-bench, tutti-demo), the
# examples' sources, and a venv at /opt/torch2 with PyPI's torch 2.15.0 (CPU build) and tutti's
# torch.distributed backend built against it (`/opt/torch2/bin/python -c 'import tutti.torch'`).
# Debian's python3-torch (1.13, tutti-worker's) is not in it: 1.13 has no fully_shard.
#   docker build -f docker/worker-torch2.Dockerfile -t tutti-worker-torch2:0.1.0 .   (or: make image)
# The build context is the repository root.

# ---- build stage: compilers live here only --------------------------------------------------
FROM debian:bookworm AS build
# python3-dev: Python.h for the extension module; python3-venv: the venv. zlib1g-dev: the plain_sgd
# example (tutti-worker gets it through libopenmpi-dev; this image has no MPI).
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake ninja-build pkg-config \
      libcli11-dev libfmt-dev nlohmann-json3-dev libboost-dev libboost-filesystem1.74-dev \
      libbenchmark-dev zlib1g-dev python3 python3-dev python3-venv \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
# tutti itself, without a torch binding (TUTTI_WITH_TORCH=OFF: Debian's libtorch 1.13 is not here,
# and the binding for torch 2.x is built by pip below), without MPI (torchrun starts the ranks; no
# mpirun style in these pods) and without CUDA (a CPU image). Installed twice: into /usr/local of
# this stage, where pip's build finds it (find_package(tutti)), and staged for the runtime stage.
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
      -DTUTTI_WITH_GLOO=OFF -DTUTTI_WITH_MPI=OFF -DTUTTI_WITH_CUDA=OFF -DTUTTI_WITH_TORCH=OFF \
      -DTUTTI_TORCH2_PYTHON=OFF \
 && cmake --build /build \
 && cmake --install /build --prefix /usr/local \
 && DESTDIR=/staging cmake --install /build --prefix /usr/local \
 && mkdir -p /staging/usr/local/share/tutti \
 && cp -r /src/examples /staging/usr/local/share/tutti/examples
# torch from PyTorch's CPU wheel index: PyPI's default Linux wheel is the CUDA build, which pulls
# about 3 GB of NVIDIA libraries (and imports them even where there is no GPU); the CPU wheel is a
# tenth of that, and tutti's backend handles CPU tensors only (devices=["cpu"]). `==2.15.0` matches
# the index's 2.15.0+cpu. numpy (train_fsdp.py's checksum, torch.distributed.checkpoint) and
# scikit-build-core (pip's build of runtime/torch) come from PyPI.
ARG TORCH_VERSION=2.15.0
RUN python3 -m venv /opt/torch2 \
 && /opt/torch2/bin/python -m pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu \
      "torch==${TORCH_VERSION}" \
 && /opt/torch2/bin/python -m pip install --no-cache-dir numpy scikit-build-core pybind11
# The package tutti with backend "tutti" for that torch (the root pyproject.toml: import tutti and
# tutti.torch): --no-build-isolation so that the
# extension is built against the torch just installed (its headers, its pybind11), not a fresh copy
# in pip's build environment; tutti is found in /usr/local. The package lands in the venv's
# site-packages, libtutti_torch beside its extension; libtutti stays /usr/local/lib's (RUNPATH).
RUN cd /src \
 && /opt/torch2/bin/python -m pip install --no-cache-dir --no-build-isolation --no-deps . \
 && /opt/torch2/bin/python -c 'import torch, tutti, tutti.torch; print("torch", torch.__version__)'

# ---- runtime stage: no compiler -----------------------------------------------------------------
FROM debian:bookworm
# python3: the interpreter the venv's bin/python links to (the same Debian package as in the build
# stage); libfmt9: libtutti; libboost-filesystem1.74.0: kubexec (installed with the rest); iproute2,
# procps: ip and ps for looking into a running pod.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libfmt9 libboost-filesystem1.74.0 python3 \
      iproute2 procps \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /staging/usr/local/ /usr/local/
# The venv at the same path as in the build stage (its scripts' #! lines and pyvenv.cfg name it).
# It is not put on PATH: commands name /opt/torch2/bin/python.
COPY --from=build /opt/torch2 /opt/torch2
RUN useradd --create-home --uid 1000 --shell /bin/bash tutti
ARG TUTTI_IMAGE_PROVIDES="/usr/local/bin/tuttirun /usr/local/bin/tutti-bench /usr/local/bin/tutti-demo \
/usr/local/lib/libtutti.so /usr/local/share/tutti/examples /opt/torch2/bin/python /opt/torch2/bin/torchrun \
/bin/sh /bin/sleep"
ARG TORCH_VERSION=2.15.0
# `import tutti.torch` registers backend "tutti" (pytorchjob-fsdp.yaml runs train_fsdp.py
# --backend tutti); fully_shard and torch.distributed.checkpoint are what train_fsdp.py uses.
RUN for p in $TUTTI_IMAGE_PROVIDES; do test -e "$p" || { echo "image lacks $p" >&2; exit 1; }; done \
 && /usr/local/bin/tutti-bench --help >/dev/null \
 && /opt/torch2/bin/python -c 'import sys, torch, torch.distributed.run, torch.distributed.checkpoint, tutti.torch; \
from torch.distributed.fsdp import fully_shard; \
v = torch.__version__.split("+")[0]; sys.exit(0 if v == sys.argv[1] else f"torch {v}, not {sys.argv[1]}")' \
      "$TORCH_VERSION" \
 && test -f /usr/local/share/tutti/examples/fsdp/train_fsdp.py
USER 1000:1000
WORKDIR /home/tutti
CMD ["/opt/torch2/bin/python", "-c", "import torch, tutti.torch; print('torch', torch.__version__, 'with backend tutti')"]
