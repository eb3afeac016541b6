"""Runs checks on real rank processes joined into backend "tutti" (ops_test.py, ops2_test.py).

launch(size, module, checks) spawns `size` processes; each imports tutti.torch, joins
init_process_group("tutti") on a FileStore, runs module.<check>(rank, size) for each name in
`checks` in order, and leaves. init_kwargs go to init_process_group; before_init names a
function of the module run as (rank, size) before joining (torch.set_num_threads, say). Returns 0
when every rank passed, 1 when one failed (its traceback printed) or hung (killed after `limit`
seconds).
"""
import importlib
import os
import sys
import tempfile
import traceback

import torch.distributed as dist
import torch.multiprocessing as mp


def _run_rank(rank, size, init_file, failures, module, checks, init_kwargs, before_init):
    try:
        tests = importlib.import_module(module)
        if before_init:
            getattr(tests, before_init)(rank, size)
        import tutti.torch  # noqa: F401

        dist.init_process_group("tutti", init_method="file://" + init_file, rank=rank,
                                world_size=size, **init_kwargs)
        assert dist.get_backend() == "tutti"
        for name in checks:
            getattr(tests, name)(rank, size)
            print(f"rank {rank}: {name} ok", flush=True)
        dist.destroy_process_group()
    except BaseException:
        traceback.print_exc()
        failures.put(rank)
        sys.stdout.flush()
        os._exit(1)


def launch(size, module, checks, limit=240, init_kwargs=None, before_init=None):
    ctx = mp.get_context("spawn")
    failures = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "init")
        procs = [ctx.Process(target=_run_rank,
                             args=(r, size, init_file, failures, module, list(checks),
                                   init_kwargs or {}, before_init))
                 for r in range(size)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(limit)
        hung = [r for r, p in enumerate(procs) if p.is_alive()]
        for p in procs:
            if p.is_alive():
                p.kill()
        codes = [p.exitcode for p in procs]
    if hung or any(codes):
        print(f"FAILED: exit codes {codes}, still running after {limit} s: {hung}")
        return 1
    print(f"all {size} ranks passed")
    return 0
