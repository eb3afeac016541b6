#!/usr/bin/env bash
# Installs every Debian package the build and tests need. Idempotent: packages already present are skipped,
# and apt is not touched at all when nothing is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libboost-dev
  # Boost.Process (kubexec) needs Boost.Filesystem.
  libboost-filesystem1.74-dev
  # Commands the tests and bench scripts run. coreutils (timeout, od, mktemp), util-linux (unshare),
  # grep, sed, mawk, findutils, diffutils (cmp) and hostname are Essential or required in Debian 12,
  # so always present; these are not: ip (iproute2), ps/pgrep/pkill/uptime (procps), python3 (the
  # bench and tests' CSV/JSON checks and bench/*.py run Debian's /usr/bin/python3). psmisc: killall
  # and fuser, for clearing up by hand after an interrupted pods test.
  iproute2 procps psmisc python3
  # TUTTI_STORE=etcd://: libtutti loads libcurl when an etcd store is named (its headers build it); the
  # tests start a real etcd (etcd-server; its own service is not needed) and etcdctl reads it back.
  libcurl4-openssl-dev etcd-server etcd-client
  # torchrun --rdzv_backend etcd (tests/integration/etcd): Debian torch's etcd rendezvous imports it.
  python3-etcd
  # scripts/k8s_validate.py (ctest -L k8s): the manifests in examples/k8s against the CRDs' schemas.
  python3-jsonschema python3-yaml
  # tuttirun --exec ssh is tested against real sshds that the test starts inside network-namespace
  # pods (tests/integration/pods/ssh_pods.sh); the package's own service is not needed.
  openssh-client openssh-server
  # The images (make image, ctest -L images): podman builds and runs them; runc, because crun cannot
  # start a container on a hybrid cgroup hierarchy; mmdebstrap makes the debian:bookworm base image
  # where no registry answers.
  podman runc mmdebstrap
  # Slurm for one host (ctest -L slurm: tests/integration/slurm starts munged, slurmctld and slurmd
  # itself; the packages' own services are not needed); libpmi2-0: srun --mpi=pmi2.
  slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge libpmi2-0
  # Peers for tutti-bench --baseline mpi|gloo, gnuplot for bench/plot.sh (make bench), and iperf3
  # for bench/pods_tcp.sh --peers iperf (the link's own bandwidth between two pods).
  openmpi-bin libopenmpi-dev libgloo-dev gnuplot-nox iperf3
  # MPICH's Hydra (mpiexec.hydra) for the PMI-1 bootstrap tests (ctest -L mpi). Only the launcher:
  # libtutti's PMI client links no MPI, and the build stays on Open MPI (CMakeLists.txt pins
  # FindMPI to mpicc.openmpi; Debian gives Open MPI's mpirun priority 50 over MPICH's 40).
  mpich
  # clang with libFuzzer (scripts/fuzz.sh, make fuzz): every tests/fuzz target is fuzzed in CI.
  clang-14 libclang-rt-14-dev
  # make format.
  clang-format
  # PyTorch (runtime/torch, examples/fashion_mnist, ctest -L torch): libtorch for the C++ binding,
  # Debian's python3-torch and pybind11 for backend "tutti" (no torchvision needed).
  libtorch-dev python3-torch pybind11-dev
  # The venv for PyPI's torch 2.x (scripts/install-torch2.sh, make deps) where no other Python is.
  python3-venv
  # examples/plain_sgd trains on the real Fashion-MNIST (its .gz files read with zlib).
  dataset-fashion-mnist zlib1g-dev
  # Not here: the CUDA toolkit and NCCL (TUTTI_WITH_CUDA, GPU buffers) come from NVIDIA (its apt
  # repository, the CUDA images, or the nvidia-* pip wheels under /usr/local/cuda), not Debian.
  # With TUTTI_WITH_CUDA=AUTO (the default) a machine without them builds libtutti without CUDA.
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"

# mpich registers mpirun/mpiexec alternatives too. Open MPI must stay the plain `mpirun` (the docs,
# tuttirun --mpirun and the bench use it): if someone pointed the alternative elsewhere, say so.
if command -v update-alternatives >/dev/null 2>&1 && [ -e /usr/bin/mpirun.openmpi ]; then
  current=$(readlink -f /usr/bin/mpirun || true)
  case "$current" in
    */orterun | */mpirun.openmpi | */prterun) ;;
    *) echo "install-deps: warning: /usr/bin/mpirun is $current, not Open MPI's; run" \
         "'update-alternatives --set mpirun /usr/bin/mpirun.openmpi' (tests call mpirun.openmpi" \
         "and mpiexec.hydra by name either way)" >&2 ;;
  esac
fi
