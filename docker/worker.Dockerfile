# tutti worker image: the pods the ranks run in (MPIJob Worker, TrainJob node). Holds the runtime
# (libtutti, headers, tutti-bench, tutti-demo, tuttirun for its --rank-agent), the examples' sources,
# python3 with torch and tutti's torch.distributed backend (`import tutti.torch`), the Fashion-MNIST
# data (the PyTorchJob's train.py), Open MPI (orted, for the mpirun style) and sshd (for the ssh
# style).
#   docker build -f docker/worker.Dockerfile -t tutti-worker:0.1.0 .     (or: make image)
# The build context is the repository root.

# ---- build stage: compilers live here only --------------------------------------------------
FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake ninja-build pkg-config \
      libcli11-dev libfmt-dev nlohmann-json3-dev libboost-dev libboost-filesystem1.74-dev \
      libbenchmark-dev libopenmpi-dev openmpi-bin \
      libtorch-dev python3-torch python3-dev pybind11-dev \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
# TUTTI_WITH_TORCH=ON: libtutti_torch and the Python package `tutti` (backend "tutti"), or the build
# fails. The package goes where Debian's python3.11 looks under /usr/local (the default,
# /usr/local/lib/python3.11/dist-packages; /usr/local/lib/python3/dist-packages is not on its path).
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
      -DTUTTI_WITH_GLOO=OFF -DTUTTI_WITH_MPI=ON -DTUTTI_WITH_TORCH=ON \
 && cmake --build /build \
 && DESTDIR=/staging cmake --install /build --prefix /usr/local \
 && mkdir -p /staging/usr/local/share/tutti \
 && cp -r /src/examples /staging/usr/local/share/tutti/examples

# ---- runtime stage: no compiler -----------------------------------------------------------------
FROM debian:bookworm
# python3-torch is Debian's CPU build of PyTorch (torch examples, the PyTorchJob's torchrun; it
# brings libtorch, which tutti's backend links); dataset-fashion-mnist puts the data at
# /usr/share/datasets/fashion-mnist (train.py's default); openmpi-bin gives orted to mpirun-style
# jobs; openssh-server is the ssh style's sshd.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libfmt9 libboost-filesystem1.74.0 openmpi-bin \
      openssh-server python3 python3-torch dataset-fashion-mnist iproute2 procps \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /staging/usr/local/ /usr/local/
# Ranks run as tutti (uid 1000). sshd runs as that user too, on port 2222, with a host key the user
# owns (generated here, so every pod of this image shares it: the launcher does not pin host keys)
# and the authorized_keys that the operator's Secret mounts at sshAuthMountPath (/home/tutti/.ssh).
# StrictModes is off because kubelet, not the user, sets that volume's modes.
RUN useradd --create-home --uid 1000 --shell /bin/bash tutti \
 && mkdir -p /home/tutti/.sshd \
 && ssh-keygen -q -t ed25519 -N '' -f /home/tutti/.sshd/ssh_host_ed25519_key \
 && printf '%s\n' 'Port 2222' 'HostKey /home/tutti/.sshd/ssh_host_ed25519_key' \
      'PidFile /home/tutti/.sshd/sshd.pid' 'AuthorizedKeysFile /home/tutti/.ssh/authorized_keys' \
      'PasswordAuthentication no' 'KbdInteractiveAuthentication no' 'UsePAM no' 'StrictModes no' \
      >/home/tutti/.sshd_config \
 && chown -R tutti:tutti /home/tutti
ARG TUTTI_IMAGE_PROVIDES="/usr/local/bin/tuttirun /usr/local/bin/tutti-bench /usr/local/bin/tutti-demo \
/usr/local/bin/tutti-hostfile /usr/local/lib/libtutti.so /usr/local/share/tutti/examples /usr/sbin/sshd \
/home/tutti/.sshd_config /usr/bin/orted /usr/bin/python3 /usr/share/datasets/fashion-mnist /bin/sh /bin/sleep"
# `import tutti.torch` registers backend "tutti" (pytorchjob.yaml runs train.py --backend tutti).
RUN for p in $TUTTI_IMAGE_PROVIDES; do test -e "$p" || { echo "image lacks $p" >&2; exit 1; }; done \
 && /usr/local/bin/tutti-bench --help >/dev/null \
 && python3 -c 'import torch, torch.distributed.run, tutti.torch' \
 && test -f /usr/local/share/tutti/examples/fashion_mnist/train.py
USER 1000:1000
WORKDIR /home/tutti
CMD ["/usr/sbin/sshd", "-De", "-f", "/home/tutti/.sshd_config"]
