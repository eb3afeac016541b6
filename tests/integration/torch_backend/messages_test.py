#!/usr/bin/env python3
"""What backend tutti says, and does, when a call goes wrong, on 2 real ranks.

    PYTHONPATH=<build>/python /usr/bin/python3 messages_test.py

- Tensors of two dtypes (all_gather_into_tensor with a float64 output for a float32 input, and the
  other gathers and reduce-scatters): the error says that the dtypes differ, naming both, not that
  the output "must hold 2 times input".
- work.wait(timeout=...) that passes before the op completes: the error names the op, the rank and
  the timeout (torch's own Work said only "Operation timed out!"), the group is aborted (the peer's
  later call on it fails naming the timed-out wait), and the op never writes the caller's tensor
  afterwards (it used to, once the peer arrived).
"""
import datetime
import sys
import time

import torch
import torch.distributed as dist

import spawn_ranks


def expect_error(call, *needles, absent=()):
    try:
        call()
    except (RuntimeError, ValueError) as e:
        message = str(e)
    else:
        raise AssertionError(f"no error; expected one with {needles}")
    for needle in needles:
        assert needle in message, (needle, message)
    for needle in absent:
        assert needle not in message, (needle, message)
    return message


def check_dtype_messages(rank, size):
    f32, f64 = torch.ones(2), torch.empty(2 * size, dtype=torch.float64)
    gather_into = getattr(dist, "all_gather_into_tensor", None) or dist._all_gather_base
    expect_error(lambda: gather_into(f64, f32), "differ in dtype", "float64", "float32",
                 absent=("must hold",))
    scatter_from = getattr(dist, "reduce_scatter_tensor", None) or dist._reduce_scatter_base
    expect_error(lambda: scatter_from(torch.empty(2), torch.ones(2 * size, dtype=torch.float64)),
                 "differ in dtype", "float64", "float32", absent=("must hold",))
    # Right dtype, wrong size: that one still says what it must hold.
    expect_error(lambda: gather_into(torch.empty(3), f32), f"must hold {size} times")
    dist.barrier()


def check_wait_timeout(rank, size):
    group = dist.new_group(list(range(size)))
    if rank == 0:
        t = torch.full((8,), 1.0)
        work = dist.all_reduce(t, group=group, async_op=True)  # rank 1 calls it 3 s later
        started = time.monotonic()
        message = expect_error(lambda: work.wait(timeout=datetime.timedelta(seconds=2)),
                               "tutti allreduce of float32[8]", "Timed out",
                               "wait(timeout=2000 ms)", "rank 0", "aborted")
        took = time.monotonic() - started
        assert 1.9 < took < 10, f"wait(timeout=2 s) returned after {took:.1f} s: {message}"
        dist.barrier()  # rank 1 now calls its all_reduce on the group
        dist.barrier()
        time.sleep(0.5)
        assert torch.equal(t, torch.full((8,), 1.0)), f"the timed-out op wrote the tensor: {t}"
    else:
        dist.barrier()  # after rank 0's wait timed out
        u = torch.full((8,), 1.0)
        expect_error(lambda: dist.all_reduce(u, group=group), "aborted",
                     "wait(timeout=2000 ms)")
        dist.barrier()
    # Other groups go on.
    t = torch.full((3,), float(rank + 1))
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((3,), float(size * (size + 1) / 2))), t


CHECKS = ["check_dtype_messages", "check_wait_timeout"]


def main():
    return spawn_ranks.launch(2, "messages_test", CHECKS, limit=120)


if __name__ == "__main__":
    sys.exit(main())
