#!/usr/bin/env python3
"""A rank that never calls init_process_group: the others must say which one, and how long they
waited.

    PYTHONPATH=<build>/python /usr/bin/python3 never_arrived_test.py

Two jobs of 2 ranks on a FileStore (as torchrun's agent store: nobody waits for the others before
the backend does), one without rank 0 and one without rank 1, timeout 3 s. The rank that came fails
after about 3 s with an error naming the missing rank and the time it waited. It used to say
"torch store wait 'tutti/torch/job_id': not set within 0 ms" (the last slice of the wait) when
rank 0 was missing.
"""
import datetime
import os
import re
import sys
import tempfile
import time

import torch.multiprocessing as mp

SIZE = 2
TIMEOUT = 3.0


def rank_main(rank, absent, init_file, results):
    if rank == absent:
        time.sleep(TIMEOUT + 1)  # never joins
        return
    import torch.distributed as dist

    import tutti.torch  # noqa: F401

    started = time.monotonic()
    try:
        dist.init_process_group("tutti", init_method="file://" + init_file, rank=rank,
                                world_size=SIZE, timeout=datetime.timedelta(seconds=TIMEOUT))
        results.put((rank, absent, 0.0, "init_process_group returned"))
    except Exception as e:  # noqa: BLE001  (whatever it is, the message is checked)
        results.put((rank, absent, time.monotonic() - started, f"{type(e).__name__}: {e}"))


def main():
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=rank_main,
                             args=(r, absent, os.path.join(tmp, f"init{absent}"), results))
                 for absent in range(SIZE) for r in range(SIZE)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
                failures.append("a rank still ran after 60 s")
    got = []
    while not results.empty():
        got.append(results.get())
    if len(got) != SIZE:
        failures.append(f"{len(got)} ranks reported, {SIZE} expected: {got}")
    for rank, absent, took, message in got:
        print(f"rank {rank} (rank {absent} absent) after {took:.1f} s: {message}")
        waited = re.search(r"waited ([0-9.]+) s", message)
        if f"rank {absent} never arrived" not in message or not waited:
            failures.append(f"rank {rank}: the message does not name rank {absent} and the wait")
        elif not TIMEOUT - 0.5 <= float(waited.group(1)) <= took + 0.5:
            failures.append(f"rank {rank}: says it waited {waited.group(1)} s, took {took:.1f} s")
        if " 0 ms" in message:
            failures.append(f"rank {rank}: the message still speaks of 0 ms")
        if not TIMEOUT - 0.5 <= took < TIMEOUT + 10:
            failures.append(f"rank {rank}: failed after {took:.1f} s, the timeout is {TIMEOUT} s")
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("every rank that came named the one that did not, and its wait")
    return 0


if __name__ == "__main__":
    sys.exit(main())
