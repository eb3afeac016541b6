#!/usr/bin/env python3
"""A rank that joins late, on torch's TCPStore (tcp://): the others' store waits time out many times
while it is away, and everything after must still work.

    PYTHONPATH=<build>/python /usr/bin/python3 late_join_test.py

tutti waits on the store in short slices (it watches its peers between them). A c10d TCPStore
wait() that times out leaves the server's waiter registered on the client's socket (torch before
2.1, pytorch PR 100594), and the server's late "ready" byte then corrupts the client's next reply:
a get that blocks for ever partway through a value. The backend's store adapter waits by check()
instead; this test fails (a rank stuck past 60 s) where it used wait().
"""
import datetime
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZE = 3


def rank_main(rank, port, failures):
    try:
        import tutti.torch  # noqa: F401

        if rank == SIZE - 1:
            time.sleep(3)  # the others wait for it in slices, and time out many times
        dist.init_process_group("tutti", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=SIZE, timeout=datetime.timedelta(seconds=60))
        t = torch.ones(4) * (rank + 1)
        dist.all_reduce(t)
        assert torch.equal(t, torch.full((4,), 6.0)), t
        for _ in range(3):  # more store traffic: new groups meet through it too
            group = dist.new_group(list(range(SIZE)))
            t = torch.ones(2)
            dist.all_reduce(t, group=group)
            assert torch.equal(t, torch.full((2,), float(SIZE))), t
        dist.barrier()
        dist.destroy_process_group()
        print(f"rank {rank}: ok", flush=True)
    except BaseException as e:
        print(f"rank {rank}: {type(e).__name__}: {e}", flush=True)
        failures.put(rank)
        os._exit(1)


def main():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    failures = ctx.SimpleQueue()
    procs = [ctx.Process(target=rank_main, args=(r, port, failures)) for r in range(SIZE)]
    for p in procs:
        p.start()
    deadline = time.time() + 90
    for p in procs:
        p.join(max(1, deadline - time.time()))
    stuck = [r for r, p in enumerate(procs) if p.is_alive()]
    for p in procs:
        if p.is_alive():
            p.kill()
    codes = [p.exitcode for p in procs]
    if stuck or any(codes):
        print(f"FAILED: exit codes {codes}, stuck after 90 s: {stuck}")
        return 1
    print("all ranks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
