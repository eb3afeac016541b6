#!/usr/bin/env python3
"""Backend "tutti" for torch.distributed, op by op, with exact expected results.

    PYTHONPATH=<build>/python /usr/bin/python3 ops_test.py WORLD_SIZE

Starts WORLD_SIZE real rank processes (spawned), each joining init_process_group("tutti") on a
FileStore, and checks every op (allreduce with each reduce op and dtype, strided tensors, async
work and futures, coalesced forms, broadcast, all_gather and its base/coalesced forms,
reduce_scatter and its base form, all_to_all with and without split sizes, reduce, gather,
scatter, barrier, send/recv, isend/irecv), a group that leaves a rank out, and calls whose sizes
differ across ranks (a clear error on every rank, not a hang or a wrong answer). Exits 0 when every
rank passed; a failing rank prints its traceback and the exit status is 1.
"""
import datetime
import sys
import time

import torch
import torch.distributed as dist

import spawn_ranks

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int16, torch.int32, torch.int64]


def value(rank, n, dtype):
    """rank + 1 + i, small enough for every dtype's exact sum and product on 3 ranks."""
    return (torch.arange(n) % 4 + rank + 1).to(dtype)


def check_allreduce(rank, size):
    ranks = range(size)
    for dtype in DTYPES:
        t = value(rank, 10, dtype)
        dist.all_reduce(t)
        assert torch.equal(t, sum(value(r, 10, dtype) for r in ranks)), (dtype, t)
        for op, combine in ((dist.ReduceOp.MAX, torch.max), (dist.ReduceOp.MIN, torch.min)):
            t = value(rank, 10, dtype)
            dist.all_reduce(t, op=op)
            expected = value(0, 10, dtype)
            for r in ranks:
                expected = combine(expected, value(r, 10, dtype))
            assert torch.equal(t, expected), (dtype, op, t)
        t = value(rank, 10, dtype)
        dist.all_reduce(t, op=dist.ReduceOp.PRODUCT)
        expected = value(0, 10, dtype)
        for r in ranks[1:]:
            expected = expected * value(r, 10, dtype)
        assert torch.equal(t, expected), (dtype, "prod", t)
    # avg on float, bitwise on integers, logic on bool
    t = torch.full((7,), float(rank))
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert torch.equal(t, torch.full((7,), (size - 1) / 2)), t
    t = torch.tensor([1 << rank, 7], dtype=torch.int32)
    dist.all_reduce(t, op=dist.ReduceOp.BOR)
    assert t.tolist() == [(1 << size) - 1, 7], t
    t = torch.tensor([rank == 0, True, False])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert t.tolist() == [True, True, False], t
    # PREMUL_SUM with a scalar factor: sum of 3 * x
    t = torch.full((5,), float(rank + 1), dtype=torch.float64)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(3.0))
    assert torch.equal(t, torch.full((5,), 3.0 * size * (size + 1) / 2, dtype=torch.float64)), t
    # A strided view (every other column of a transposed matrix) is reduced in place.
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) * (rank + 1)
    view = base.t()[::2]
    assert not view.is_contiguous()
    dist.all_reduce(view)
    expected = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    assert torch.equal(view, expected.t()[::2] * (size * (size + 1) / 2)), view
    assert torch.equal(base.t()[1::2], expected.t()[1::2] * (rank + 1)), "untouched columns"
    # async: a work, then its future, holding the output tensor
    t = torch.ones(1000) * rank
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    result = fut.wait()
    assert work.is_completed() and work.is_success()
    assert torch.equal(result[0], torch.ones(1000) * (size * (size - 1) / 2)), result
    # empty tensors are valid (a rank's shard may be empty)
    t = torch.empty(0)
    dist.all_reduce(t)
    dist.broadcast(t, src=0)
    assert t.numel() == 0
    # coalesced: one allreduce of several tensors
    ts = [torch.full((3,), float(rank)), torch.full((2, 2), float(rank + 1))]
    dist.all_reduce_coalesced(ts)
    assert torch.equal(ts[0], torch.full((3,), size * (size - 1) / 2))
    assert torch.equal(ts[1], torch.full((2, 2), size * (size + 1) / 2))


def check_broadcast_reduce(rank, size):
    for root in range(size):
        t = torch.full((4,), float(rank * 10))
        dist.broadcast(t, src=root)
        assert torch.equal(t, torch.full((4,), float(root * 10))), (root, t)
        t = torch.full((4,), rank + 1, dtype=torch.int64)
        dist.reduce(t, dst=root)
        if rank == root:
            assert torch.equal(t, torch.full((4,), size * (size + 1) // 2)), (root, t)


def check_gathers(rank, size):
    mine = torch.full((2, 3), float(rank))
    outs = [torch.empty(2, 3) for _ in range(size)]
    dist.all_gather(outs, mine)
    for r in range(size):
        assert torch.equal(outs[r], torch.full((2, 3), float(r))), outs
    flat = torch.empty(size * 2, 3)
    dist._all_gather_base(flat, mine)
    assert torch.equal(flat, torch.arange(size).repeat_interleave(6).float().reshape(size * 2, 3))
    ins = [torch.full((2,), float(rank)), torch.full((1, 3), float(-rank))]
    out_lists = [[torch.empty(2), torch.empty(1, 3)] for _ in range(size)]
    dist.all_gather_coalesced(out_lists, ins)
    for r in range(size):
        assert torch.equal(out_lists[r][0], torch.full((2,), float(r)))
        assert torch.equal(out_lists[r][1], torch.full((1, 3), float(-r)))
    for root in range(size):
        outs = [torch.empty(3) for _ in range(size)] if rank == root else None
        dist.gather(torch.full((3,), float(rank)), outs, dst=root)
        if rank == root:
            assert all(torch.equal(outs[r], torch.full((3,), float(r))) for r in range(size))
        out = torch.empty(3)
        ins = [torch.full((3,), float(r * 100)) for r in range(size)] if rank == root else None
        dist.scatter(out, ins, src=root)
        assert torch.equal(out, torch.full((3,), float(rank * 100))), out


def check_reduce_scatter_alltoall(rank, size):
    ins = [torch.full((4,), float(rank + p)) for p in range(size)]
    out = torch.empty(4)
    dist.reduce_scatter(out, ins)
    assert torch.equal(out, torch.full((4,), float(sum(r + rank for r in range(size))))), out
    flat_in = torch.cat(ins)
    out = torch.empty(4)
    dist._reduce_scatter_base(out, flat_in)
    assert torch.equal(out, torch.full((4,), float(sum(r + rank for r in range(size))))), out
    # all_to_all: rank r sends block p (value 10 r + p) to p
    ins = [torch.full((2,), float(10 * rank + p)) for p in range(size)]
    outs = [torch.empty(2) for _ in range(size)]
    dist.all_to_all(outs, ins)
    for p in range(size):
        assert torch.equal(outs[p], torch.full((2,), float(10 * p + rank))), outs
    # all_to_all_single with split sizes: rank r sends p + 1 rows to p
    in_splits = [p + 1 for p in range(size)]
    out_splits = [rank + 1] * size
    src = torch.cat([torch.full((p + 1, 2), float(10 * rank + p)) for p in range(size)])
    dst = torch.empty(sum(out_splits), 2)
    dist.all_to_all_single(dst, src, out_splits, in_splits)
    expected = torch.cat([torch.full((rank + 1, 2), float(10 * p + rank)) for p in range(size)])
    assert torch.equal(dst, expected), dst
    dst = torch.empty(size, 3)
    dist.all_to_all_single(dst, torch.arange(size * 3).float().reshape(size, 3) + 100 * rank)
    for p in range(size):
        assert torch.equal(dst[p], torch.arange(3).float() + 3 * rank + 100 * p), dst


def check_point_to_point(rank, size):
    peer_next, peer_prev = (rank + 1) % size, (rank - 1) % size
    # A ring of blocking calls, ordered so that no two ranks wait on each other.
    if rank == 0:
        dist.send(torch.full((5,), 42.0), peer_next)
        t = torch.empty(5)
        dist.recv(t, peer_prev)
        assert torch.equal(t, torch.full((5,), 42.0 + size - 1)), t
    else:
        t = torch.empty(5)
        dist.recv(t, peer_prev)
        dist.send(t + 1, peer_next)
    # Both directions at once: posted, then waited on.
    big = 1 << 20
    out = torch.full((big,), float(rank))
    inc = torch.empty(big)
    works = [dist.isend(out, peer_next, tag=7), dist.irecv(inc, peer_prev, tag=7)]
    for w in works:
        w.wait()
    assert torch.equal(inc, torch.full((big,), float(peer_prev))), inc[:4]


def check_group(rank, size):
    members = list(range(size - 1)) if size > 2 else [0, 1]
    group = dist.new_group(members)
    if rank in members:
        t = torch.full((3,), float(rank + 1))
        dist.all_reduce(t, group=group)
        assert torch.equal(t, torch.full((3,), float(sum(m + 1 for m in members)))), t
        assert dist.get_world_size(group) == len(members)
    else:
        assert group == dist.GroupMember.NON_GROUP_MEMBER
    everyone = dist.new_group(list(range(size)))
    t = torch.full((2,), float(rank))
    dist.all_reduce(t, group=everyone)
    assert torch.equal(t, torch.full((2,), float(size * (size - 1) / 2)))


def check_complex(rank, size):
    # Complex broadcast used to be refused ("complex goes as its real view"); bytes are bytes.
    z = torch.full((5, 3), complex(rank + 1, -(rank + 1)), dtype=torch.complex64)
    dist.broadcast(z, src=size - 1)
    assert torch.equal(z, torch.full((5, 3), complex(size, -size), dtype=torch.complex64)), z
    w = torch.full((7,), complex(1, 2 * rank), dtype=torch.complex128)
    dist.reduce(w, dst=0, op=dist.ReduceOp.SUM)
    if rank == 0:
        want = complex(size, 2 * sum(range(size)))
        assert torch.equal(w, torch.full((7,), want, dtype=torch.complex128)), w
    a = torch.full((4,), complex(rank, 1), dtype=torch.complex64)
    dist.all_reduce(a)
    assert torch.equal(a, torch.full((4,), complex(sum(range(size)), size),
                                     dtype=torch.complex64)), a
    try:
        dist.reduce(torch.ones(2, dtype=torch.complex64), dst=0, op=dist.ReduceOp.MAX)
        raise AssertionError("MAX on complex must be refused")
    except (RuntimeError, ValueError) as e:
        assert "complex" in str(e), e


def check_timeout_message(rank, size):
    # Under torch the timeout comes from init_process_group / new_group (torch's rules),
    # and TUTTI_COLLECTIVE_TIMEOUT is ignored: the message must not advise it.
    if size < 2:
        return
    slow = dist.new_group(list(range(size)), timeout=datetime.timedelta(seconds=2))
    if rank == 0:
        try:
            dist.all_reduce(torch.ones(4), group=slow)  # the others never call it
            raise AssertionError("an allreduce the other ranks never join must time out")
        except RuntimeError as e:
            assert "TUTTI_COLLECTIVE_TIMEOUT" not in str(e), e
            assert "init_process_group" in str(e), e
    dist.barrier()


def check_group_disagreement(rank, size):
    # new_group with different member lists per rank used to give shm errors that did not say so,
    # hold rank 0 until SIGTERM and leave /dev/shm segments. Now every process fails at once naming
    # both lists, and the world goes on (group_agreement_test.py has lists of one size).
    if size < 3:
        return
    ranks = [0, 1] if rank == 0 else list(range(size))
    started = time.time()
    try:
        dist.new_group(ranks)
        raise AssertionError("new_group with different member lists must fail")
    except RuntimeError as e:
        assert "[0, 1] on rank 0" in str(e) and "[0, 1, 2] on ranks 1 and 2" in str(e), e
        assert time.time() - started < 10, e
    dist.barrier()


def check_errors(rank, size):
    try:
        dist.all_reduce(torch.ones(2, dtype=torch.complex64), op=dist.ReduceOp.MAX)
        raise AssertionError("MAX on complex must be refused")
    except (RuntimeError, ValueError):
        pass
    try:
        dist.recv(torch.empty(1))  # any source
        raise AssertionError("a receive from any source must be refused")
    except RuntimeError as e:
        assert "any source" in str(e), e
    # Sizes that differ across ranks: every rank gets an error naming the op, nobody hangs.
    mismatched = dist.new_group(list(range(size)), timeout=datetime.timedelta(seconds=30))
    try:
        dist.all_reduce(torch.ones(10 + rank), group=mismatched)
        raise AssertionError("allreduce with sizes that differ across ranks must fail")
    except RuntimeError as e:
        assert "tutti allreduce of float32[" in str(e), e


CHECKS = ["check_allreduce", "check_broadcast_reduce", "check_gathers",
          "check_reduce_scatter_alltoall", "check_point_to_point", "check_group", "check_complex",
          "check_timeout_message", "check_errors", "check_group_disagreement"]


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    return spawn_ranks.launch(size, "ops_test", CHECKS)


if __name__ == "__main__":
    sys.exit(main())
