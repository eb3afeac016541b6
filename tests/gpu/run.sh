#!/usr/bin/env bash
# On a machine with NVIDIA GPUs: builds tutti with CUDA, runs the GPU tests (ctest -L gpu: the
# reduce kernels against the CPU loops, and the device collectives on every path) and the GPU
# bench (tutti's allreduce on GPU buffers against plain ncclAllReduce, interleaved, one rank per
# GPU), and prints a short table with the GPU targets: the NCCL path at least 0.95x
# ncclAllReduce's busbw, our own send/recv ring at least 0.8x.
#
#   tests/gpu/run.sh [BUILD_DIR]        (default build-gpu; needs CUDA 12+ with NCCL, cmake, ninja)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu}
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "tests/gpu/run.sh: no NVIDIA GPU here (nvidia-smi -L fails); run it on a GPU machine" >&2
  exit 1
fi
nvidia-smi -L
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTUTTI_WITH_CUDA=ON \
  -DTUTTI_WITH_TORCH=OFF >/dev/null
cmake --build "$build" -j"$(nproc)"
gpus=$(nvidia-smi -L | wc -l)

echo "== ctest -L gpu"
(cd "$build" && ctest -L gpu --output-on-failure) || { echo "GPU tests FAILED"; exit 1; }

echo "== bench: allreduce on GPU buffers against ncclAllReduce, $gpus ranks"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for path in nccl ring; do
  TUTTI_DEVICE_ALLREDUCE=$path "$build/bin/tuttirun" -np "$gpus" -- "$build/bin/tutti-bench" \
    allreduce --device cuda --baseline nccl -b 8 -e 1G -f 4 -n 20 -w 5 --rounds 5 \
    --csv "$out/$path.csv" >"$out/$path.txt"
  cat "$out/$path.txt"
done

echo
echo "== summary (busbw GB/s; ratio = tutti / ncclAllReduce, median of interleaved rounds)"
python3 - "$out/nccl.csv" "$out/ring.csv" <<'PY'
import csv, sys
targets = {"nccl": 0.95, "ring": 0.8}
rows = {}
for path, name in zip(sys.argv[1:], ("nccl", "ring")):
    for r in csv.DictReader(open(path)):
        rows.setdefault(int(r["size"]), {})[name] = r
print(f"{'size':>12} {'nccl busbw':>11} {'tutti nccl':>11} {'ratio':>6} {'tutti ring':>11} {'ratio':>6}")
misses = []
for size in sorted(rows):
    line = f"{size:>12}"
    base = rows[size].get("nccl", {}).get("baseline_busbw_gbps", "")
    line += f" {base:>11}"
    for name in ("nccl", "ring"):
        r = rows[size].get(name)
        if not r:
            line += f" {'-':>11} {'-':>6}"
            continue
        ratio = float(r["ratio"] or 0)
        line += f" {r['inplace_busbw_gbps']:>11} {ratio:>6.2f}"
        if size >= 1 << 20 and ratio < targets[name]:
            misses.append(f"{name} at {size} B: {ratio:.2f}x < {targets[name]}x")
    print(line)
print("targets (1 MiB and above): NCCL path >= 0.95x, own ring >= 0.8x")
print("missed: " + "; ".join(misses) if misses else "all targets met")
PY
