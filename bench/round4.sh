#!/usr/bin/env bash
# The fourth performance round's measurements in one run, as a regression guard: each prints its
# ratios against the peer of the same run, so the next round starts from a measurement
# (docs/PERFORMANCE.md, "The fourth round").
#
#   bench/round4.sh BUILD_DIR OUT_DIR [ROUNDS]          (default 5 rounds)
#
#   1. Small allreduces (8 B to 64 KiB) under mpirun's bindings at 2 and 4 ranks, Open MPI's time
#      over tutti's (bench/binding.sh; "core" at 2 ranks and "socket" at 4 are Open MPI's default).
#   1b. The same sizes under srun --cpu-bind=cores against none, 2 ranks, on a Slurm cluster of
#      its own (bench/slurm_binding.sh; root only).
#   2. The engine's 256 x 16 KiB step against one flat allreduce, (b)/(c): between 2 and 4 pods,
#      and 8 ranks in 4 pods (bench/pods_tcp.sh, root only); elsewhere 2 ranks on this host.
#   2b. ResNet-50's 161 gradients between 4 pods, the engine's steps/s over PyTorch gloo's flat
#      buffer (bench/pods_tcp.sh --peers torch-engine, 2 runs; root and torch only).
#   3. Start-up to the first allreduce at 64 and 128 ranks, tuttirun against mpirun
#      --oversubscribe, with each side's peak RSS of a rank (bench/startup.sh); and 128 ranks in 8
#      pods of 16, both through kubexec (bench/pods_tcp.sh --peers startup; root only).
#
# Needs mpirun.openmpi and a build with MPI. Writes each part's output to OUT_DIR and prints them.
set -uo pipefail
[ $# -ge 2 ] || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$1
out=$2
rounds=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
status=0
echo "# bench/round4.sh: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

echo "## 1. small allreduces under mpirun's bindings"
for np in 2 4; do
  BINDING_ITERS=${BINDING_ITERS:-2000} "$here/binding.sh" "$build" "$out/binding-np$np" "$rounds" "$np" \
    | tee "$out/binding-np$np.txt" || status=1
done

echo "## 1b. small allreduces under srun --cpu-bind=cores against none (2 ranks)"
if [ "$(id -u)" -eq 0 ]; then
  BINDING_ITERS=${BINDING_ITERS:-2000} "$here/slurm_binding.sh" "$build" "$out/slurm-binding" \
    "$rounds" 2 | tee "$out/slurm-binding.txt" || status=1
else
  echo "not root: no Slurm cluster of its own (slurmd starts the tasks as root)"
fi

echo "## 2. the engine, 256 x 16 KiB, (b) against (c)"
flags="--case 256x16K --steps 100 --rounds $rounds --modes bc"
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null; then
  for layout in "2 1" "4 1" "8 2"; do
    read -r np slots <<<"$layout"
    ENGINE_FLAGS=$flags "$here/pods_tcp.sh" "$build" "$out/engine-np$np" --np "$np" --slots "$slots" \
      --peers engine --runs 1 >"$out/engine-np$np.txt" 2>&1 || status=1
    echo "$np ranks in $((np / slots)) pods: $(grep -hE '\(b\)/\(c\)' "$out"/engine-np$np/*.txt 2>/dev/null | sed 's/^ *//' | head -n 1)"
  done
else
  # shellcheck disable=SC2086
  "$build/bin/tuttirun" -np 2 --no-tag-output -- "$build/bin/tutti-bench" engine $flags \
    >"$out/engine-np2-shm.txt" 2>&1 || status=1
  echo "2 ranks on this host (not root: no pods): $(grep -E '\(b\)/\(c\)' "$out/engine-np2-shm.txt" | head -n 1)"
fi

echo "## 2b. ResNet-50's 161 gradients between 4 pods: the engine against PyTorch gloo's flat buffer"
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null &&
  "${TORCH_PYTHON:-/usr/bin/python3}" -c 'import torch' 2>/dev/null; then
  "$here/pods_tcp.sh" "$build" "$out/resnet-np4" --np 4 --peers torch-engine --runs 2 \
    >"$out/resnet-np4.txt" 2>&1 || status=1
  echo "4 pods, 2 runs: $(grep -h 'PyTorch gloo (c)' "$out/resnet-np4.txt" | sed 's/^# //' | paste -sd ';' -)"
else
  echo "skipped: needs root (pods) and torch under ${TORCH_PYTHON:-/usr/bin/python3}"
fi

echo "## 3. start-up to the first allreduce"
"$here/startup.sh" "$build" "$rounds" 64 128 | tee "$out/startup.txt" || status=1
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null; then
  STARTUP_ROUNDS=$rounds "$here/pods_tcp.sh" "$build" "$out/startup-pods" --np 128 --slots 16 \
    --peers startup --runs 1 >"$out/startup-pods.txt" 2>&1 || status=1
  echo "128 ranks in 8 pods of 16: $(grep -h 'mpirun /' "$out/startup-pods.txt" | sed 's/^ *//')"
fi
exit $status
