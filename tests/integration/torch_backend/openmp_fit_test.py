#!/usr/bin/env python3
"""Backend "tutti" fits torch's OpenMP threads to a host its ranks share (tutti/torch_openmp.hpp).

Every case starts real rank processes pinned to 2 CPUs (as many as this machine has is enough),
joins them into backend tutti and reads two things on each rank: the note the group logs, and the
CPU time the process burns while its main thread sleeps right after a parallel region, which is
libgomp's workers spinning. Cases:

  oversubscribed   2 ranks x 2 threads on 2 CPUs: the spin is throttled (little CPU while idle)
  user's choice    the same with GOMP_SPINCOUNT=300000 (libgomp's default) set: left alone, and
                   the workers spin (the control: it shows the measurement sees spinning)
  one thread       2 ranks x 1 thread: nothing to fit
  fits             1 rank x 2 threads on 2 CPUs: nothing to fit
  one process      2 ranks x 3 threads on 2 CPUs: libgomp throttles by itself, nothing to do

Exit 0 when every case holds, 1 when one does not, 77 (skip) where fewer than 2 CPUs are usable.
"""
import json
import os
import statistics
import sys
import tempfile
import time
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

# The spinning control must burn clearly more than the throttled case: 300,000 spins are
# milliseconds on any x86 CPU (each pause is 10-140 cycles); 100 spins are microseconds.
THROTTLED_MAX_S = 0.001
SPINNING_MIN_S = 0.002


def rank_main(rank, size, init_file, threads, out):
    try:
        torch.set_num_threads(threads)
        import tutti.torch  # noqa: F401

        dist.init_process_group("tutti", init_method="file://" + init_file, rank=rank,
                                world_size=size)
        group = dist.distributed_c10d._get_default_group()
        # torch 2.x wraps the backend in a ProcessGroup; on 1.13 the group is the backend.
        backend = group._get_backend(torch.device("cpu")) if hasattr(group, "_get_backend") \
            else group
        x = torch.ones(1 << 22)
        idle = []
        for _ in range(7):
            (x + 1).sum()  # a parallel region on `threads` threads (4 Mi elements, many grains)
            started = time.process_time()
            time.sleep(0.1)
            idle.append(time.process_time() - started)
        dist.barrier()
        with open(f"{out}.{rank}", "w") as f:
            json.dump({"note": backend._openmp_note, "idle_cpu_s": statistics.median(idle)}, f)
        dist.destroy_process_group()
    except BaseException:
        traceback.print_exc()
        sys.stdout.flush()
        os._exit(1)


def run_case(size, threads, env, limit=120):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        ctx = mp.get_context("spawn")
        with tempfile.TemporaryDirectory() as tmp:
            init, out = os.path.join(tmp, "init"), os.path.join(tmp, "out")
            procs = [ctx.Process(target=rank_main, args=(r, size, init, threads, out))
                     for r in range(size)]
            for p in procs:
                p.start()
            for p in procs:
                p.join(limit)
            for p in procs:
                if p.is_alive():
                    p.kill()
            codes = [p.exitcode for p in procs]
            if any(codes):
                raise AssertionError(f"ranks exited {codes} (None: killed after {limit} s)")
            return [json.load(open(f"{out}.{r}")) for r in range(size)]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def main():
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        print(f"SKIP: {len(cpus)} usable CPU; the cases need 2")
        return 77
    # The children inherit it: libgomp counts these 2 CPUs, whatever the machine has.
    os.sched_setaffinity(0, cpus[:2])
    for k in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY", "OMP_NUM_THREADS"):
        os.environ.pop(k, None)
    cases = [
        ("oversubscribed", 2, 2, {}, "throttled", lambda s: s <= THROTTLED_MAX_S),
        ("user's choice", 2, 2, {"GOMP_SPINCOUNT": "300000"}, "GOMP_SPINCOUNT is set",
         lambda s: s >= SPINNING_MIN_S),
        ("one thread", 2, 1, {}, "nothing to fit", None),
        ("fits", 1, 2, {}, "they fit", None),
        ("one process", 2, 3, {}, "throttles by itself", lambda s: s <= THROTTLED_MAX_S),
    ]
    failed = 0
    for name, size, threads, env, expect, idle_ok in cases:
        try:
            results = run_case(size, threads, env)
            for rank, r in enumerate(results):
                print(f"{name}: rank {rank}: idle CPU {r['idle_cpu_s'] * 1e3:.2f} ms; {r['note']}")
                assert expect in r["note"], f"{name}: note should say '{expect}': {r['note']}"
                if idle_ok:
                    assert idle_ok(r["idle_cpu_s"]), \
                        f"{name}: rank {rank} burnt {r['idle_cpu_s'] * 1e3:.2f} ms while idle"
            print(f"{name}: ok")
        except AssertionError as e:
            print(f"FAIL {e}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
