# tutti launcher image: the pod that runs `tuttirun` (MPIJob Launcher, TrainJob launcher).
# Holds tuttirun, kubexec, tutti-hostfile (and the rest of `cmake --install`), kubectl for the
# kubexec style, the ssh client for the ssh style and Open MPI's mpirun for the mpirun style.
#   docker build -f docker/launcher.Dockerfile -t tutti-launcher:0.1.0 .     (or: make image)
# The build context is the repository root.

# ---- build stage: compilers live here only --------------------------------------------------
FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential cmake ninja-build pkg-config \
      libcli11-dev libfmt-dev nlohmann-json3-dev libboost-dev libboost-filesystem1.74-dev \
      libbenchmark-dev libopenmpi-dev openmpi-bin ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
COPY . /src
# BUILD_TESTING=OFF: no test binaries in the tree that gets installed; Gloo is only a benchmark
# baseline. The image gets exactly what `cmake --install` lays out, staged under /staging.
RUN cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
      -DTUTTI_WITH_GLOO=OFF -DTUTTI_WITH_MPI=ON \
 && cmake --build /build \
 && DESTDIR=/staging cmake --install /build --prefix /usr/local
# kubectl is not packaged by Debian: the release binary, checked against the checksum file that
# dl.k8s.io publishes beside it. Pick a version within one minor of your cluster's.
ARG KUBECTL_VERSION=v1.31.4
ARG TARGETARCH=amd64
RUN curl -fsSLo /staging/usr/local/bin/kubectl \
      "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/${TARGETARCH}/kubectl" \
 && curl -fsSLo /tmp/kubectl.sha256 \
      "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/${TARGETARCH}/kubectl.sha256" \
 && echo "$(cat /tmp/kubectl.sha256)  /staging/usr/local/bin/kubectl" | sha256sum --check \
 && chmod 0755 /staging/usr/local/bin/kubectl

# ---- runtime stage: no compiler, no headers of the build deps ---------------------------------
FROM debian:bookworm
# libfmt9 and libboost-filesystem1.74.0: what tuttirun/kubexec link; openmpi-bin: mpirun (and
# libmpi for tutti-bench's MPI baseline); openssh-client: `ssh` for the ssh and mpirun styles.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libfmt9 libboost-filesystem1.74.0 openmpi-bin \
      openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /staging/usr/local/ /usr/local/
# The launcher may run as any user; the examples run it as tutti (uid 1000), whose ~/.ssh is where
# the MPIJob's sshAuthMountPath puts the operator's keys. Workers are reached by pod DNS names whose
# host keys change with every pod, so they are not pinned; port 2222 is where the worker image's
# sshd listens (a non-root sshd cannot bind 22).
RUN useradd --create-home --uid 1000 --shell /bin/bash tutti \
 && printf '%s\n' 'Host *' '  Port 2222' '  StrictHostKeyChecking no' '  UserKnownHostsFile /dev/null' \
      '  LogLevel ERROR' >/etc/ssh/ssh_config.d/tutti.conf
# What this image promises to the manifests in examples/k8s. scripts/k8s_validate.py reads this
# list (a manifest may name no other program here), and this build fails if any of it is missing.
ARG TUTTI_IMAGE_PROVIDES="/usr/local/bin/tuttirun /usr/local/bin/kubexec /usr/local/bin/tutti-hostfile \
/usr/local/bin/tutti-bench /usr/local/bin/tutti-demo /usr/local/bin/kubectl /usr/bin/mpirun /usr/bin/ssh \
/bin/sh /bin/sleep"
RUN for p in $TUTTI_IMAGE_PROVIDES; do test -e "$p" || { echo "image lacks $p" >&2; exit 1; }; done \
 && /usr/local/bin/tuttirun --version && /usr/local/bin/kubectl version --client
USER 1000:1000
WORKDIR /home/tutti
ENTRYPOINT []
CMD ["/usr/local/bin/tuttirun", "--help"]
