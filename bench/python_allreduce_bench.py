"""numpy float32 allreduce from Python: tutti (import tutti) against mpi4py's Allreduce over Open MPI
and torch.distributed's gloo, interleaved in the same processes; and tutti's Python call against
the same C++ call made in a loop inside the extension (the Python layer's own cost).

    mpirun -np 2 python python_allreduce_bench.py [--sizes 8,1M,64M] [--rounds 7]

Under mpirun: mpi4py is MPI's own; tutti joins through the same launch (PMI); gloo meets on
127.0.0.1 (one host). Every size runs R rounds; each round times N back-to-back calls of each
library in turn (out of place into a second buffer, as mpi4py's Allreduce; gloo in place, which
spares it a copy), after a barrier. A
call's time is rank 0's mean over the N calls; the table shows each library's median over rounds and
the ratios in the same run (> 1: tutti faster).
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

import tutti


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text.rstrip("B"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="8,1M,64M", help="bytes per rank (8, 1M, 64M, ...)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--no-gloo", action="store_true")
    args = p.parse_args()
    mpi = MPI.COMM_WORLD
    rank, size = mpi.Get_rank(), mpi.Get_size()
    world = tutti.init()
    assert world.rank == rank and world.size == size, "tutti and MPI disagree on ranks"
    gloo = None
    if not args.no_gloo:
        import torch
        import torch.distributed as dist
        port = mpi.bcast(29400 + os.getpid() % 500 if rank == 0 else None, root=0)
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=size)
        gloo = (torch, dist)
    if rank == 0:
        print(f"# {size} ranks, numpy float32 allreduce (sum), out of place; medians of "
              f"{args.rounds} rounds; ratios > 1: tutti faster", flush=True)
        print(f"# {'bytes':>10} {'tutti us':>10} {'C++ us':>9} {'py cost':>8} {'mpi4py us':>10} "
              f"{'gloo us':>9} {'/mpi4py':>8} {'/gloo':>7}", flush=True)
    for nbytes in [parse_size(s) for s in args.sizes.split(",")]:
        count = max(nbytes // 4, 1)
        x = np.ones(count, np.float32)
        y = np.empty_like(x)
        iterations = max(5, min(20000, int(2e8 // max(nbytes, 1) // 50 + 5)))
        if nbytes <= 64:
            iterations = 20000
        times = {"tutti": [], "loop": [], "mpi4py": [], "gloo": []}

        def timed(call, n):
            mpi.Barrier()
            start = time.perf_counter()
            for _ in range(n):
                call()
            return (time.perf_counter() - start) / n * 1e6

        for _ in range(args.rounds):
            times["tutti"].append(timed(lambda: world.allreduce(x, out=y), iterations))
            mpi.Barrier()
            times["loop"].append(world._impl._loop_allreduce(x, y, iterations) * 1e6)
            times["mpi4py"].append(timed(lambda: mpi.Allreduce(x, y), iterations))
            if gloo is not None:
                torch, dist = gloo
                ty = torch.from_numpy(y)
                # In place (gloo has no out-of-place allreduce): no copy is counted against it.
                times["gloo"].append(timed(lambda: dist.all_reduce(ty), iterations))
        if rank == 0:
            m = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}
            print(f"  {nbytes:>10} {m['tutti']:>10.2f} {m['loop']:>9.2f} "
                  f"{m['tutti'] - m['loop']:>8.2f} {m['mpi4py']:>10.2f} {m['gloo']:>9.2f} "
                  f"{m['mpi4py'] / m['tutti']:>8.2f} {m['gloo'] / m['tutti']:>7.2f}", flush=True)
    if gloo is not None:
        gloo[1].destroy_process_group()
    tutti.finalize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
