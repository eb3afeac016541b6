#!/usr/bin/env python3
"""Scripts that end without destroy_process_group() must exit cleanly (status 0, no abort).

    PYTHONPATH=<build>/python /usr/bin/python3 exit_clean_test.py [ROUNDS]    # default 3, one of each

Each round starts 3 rank processes of this file (env://, torch's TCPStore, as torchrun would) that
run collectives and then simply end: a plain all_reduce, one on a new_group as well, and all_reduces
issued with async_op=True and never waited for. The groups' worker threads used to drop their last
tensor references while the interpreter finalized; the GIL that takes made Python end the thread,
and that forced unwind ended the process in std::terminate ("terminate called without an active
exception", SIGABRT) in 2 to 3 runs of 6. Every rank of every round must exit with status 0, its
output free of "terminate called", and the async all_reduces must have run (every rank prints
their sum, reached at exit).
"""
import os
import socket
import subprocess
import sys
import time

import torch
import torch.distributed as dist

SIZE = 3
KINDS = ["plain", "group", "pending"]


def rank_main(kind):
    pending = []
    if kind == "pending":
        import atexit

        # atexit runs the last registered first: this runs after tutti.torch's own hook (registered
        # by the import below), which lets the worker finish what is queued.
        atexit.register(lambda: print(f"rank {os.environ['RANK']}: pending sums "
                                      f"{[p[0].item() for p in pending]}", flush=True))
    import tutti.torch  # noqa: F401

    dist.init_process_group("tutti")  # env://
    rank, size = dist.get_rank(), dist.get_world_size()
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    assert t[0].item() == size * (size + 1) / 2, t[:4]
    if kind in ("group", "pending"):
        group = dist.new_group(list(range(size)))
        u = torch.full((10,), 1.0)
        dist.all_reduce(u, group=group)
        assert u[0].item() == size, u
    if kind == "pending":
        pending.extend(torch.full((100,), float(i)) for i in range(20))
        for p in pending:
            dist.all_reduce(p, async_op=True)  # never waited for
    print(f"rank {rank}: {kind} done, leaving without destroy_process_group", flush=True)


def run_round(kind, index):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(SIZE):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(SIZE),
                   LOCAL_WORLD_SIZE=str(SIZE), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--rank", kind],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    failed = []
    for rank, p in enumerate(procs):
        try:
            out, _ = p.communicate(timeout=90)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
            failed.append(f"round {index} ({kind}) rank {rank}: still running after 90 s\n{out}")
            continue
        sums = f"rank {rank}: pending sums {[float(i * SIZE) for i in range(20)]}"
        if (p.returncode != 0 or "terminate called" in out or "done, leaving" not in out
                or (kind == "pending" and sums not in out)):
            failed.append(f"round {index} ({kind}) rank {rank}: exit status {p.returncode}\n{out}")
    return failed


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else len(KINDS)
    started = time.monotonic()
    failed = []
    for i in range(rounds):
        failed += run_round(KINDS[i % len(KINDS)], i)
    print(f"{rounds} rounds of {SIZE} ranks in {time.monotonic() - started:.1f} s")
    if failed:
        print("FAILED:\n" + "\n".join(failed))
        return 1
    print(f"all {rounds * SIZE} rank processes exited with status 0, none aborted")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2])
    else:
        sys.exit(main())
