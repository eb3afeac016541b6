#!/usr/bin/env python3
"""Backend "tutti" on torch 2.x: the calls torch 1.13 never had, with exact expected results.

    PYTHONPATH=<build>/torch2/python <venv>/bin/python ops2_test.py WORLD_SIZE

What FSDP, DTensor and torch.distributed.checkpoint call: all_gather_into_tensor and
reduce_scatter_tensor (odd sizes, 2-D outputs), their coalesced forms under _coalescing_manager,
all_reduce coalesced, all_to_all_single with split sizes, PREMUL_SUM (scalar and tensor factor),
split_group, DeviceMesh and DTensor redistribution, new_group after init_process_group(device_id=)
(which torch makes by splitting), abort and shutdown, and the refusal of an unsupported call by
name. Each rank is a real process (spawn_ranks.py).
"""
import datetime
import sys
import time

import torch
import torch.distributed as dist

import spawn_ranks


def value(rank, n, dtype=torch.float32):
    return (torch.arange(n) % 5 + 10 * rank + 1).to(dtype)


def check_tensor_forms(rank, size):
    for n in (1, 7, 1000):
        out = torch.empty(size * n)
        dist.all_gather_into_tensor(out, value(rank, n))
        assert torch.equal(out, torch.cat([value(r, n) for r in range(size)])), (n, out)
        grid = torch.empty(size, n, dtype=torch.int64)  # the stacked form
        dist.all_gather_into_tensor(grid, value(rank, n, torch.int64))
        assert torch.equal(grid, torch.stack([value(r, n, torch.int64) for r in range(size)]))
        full = torch.cat([value(rank, n) + p for p in range(size)])
        mine = torch.empty(n)
        dist.reduce_scatter_tensor(mine, full)
        expected = sum(value(r, n) for r in range(size)) + rank * size
        assert torch.equal(mine, expected), (n, mine, expected)
        dist.reduce_scatter_tensor(mine, full, op=dist.ReduceOp.AVG)
        assert torch.allclose(mine, expected / size), (n, mine)


def check_coalesced(rank, size):
    a, b = value(rank, 3), value(rank, 1000)
    with dist._coalescing_manager():
        dist.all_reduce(a)
        dist.all_reduce(b)
    assert torch.equal(a, sum(value(r, 3) for r in range(size)))
    assert torch.equal(b, sum(value(r, 1000) for r in range(size)))
    try:  # one reduction of one buffer: one dtype (gloo refuses a mix too)
        with dist._coalescing_manager():
            dist.all_reduce(value(rank, 3))
            dist.all_reduce(value(rank, 3, torch.float64))
        raise AssertionError("coalesced tensors of two dtypes must be refused")
    except RuntimeError as e:
        assert "different dtypes" in str(e), e
    outs = [torch.empty(size * 5), torch.empty(size * 2)]
    with dist._coalescing_manager():
        dist.all_gather_into_tensor(outs[0], value(rank, 5))
        dist.all_gather_into_tensor(outs[1], value(rank, 2) * 2)
    assert torch.equal(outs[0], torch.cat([value(r, 5) for r in range(size)])), outs[0]
    assert torch.equal(outs[1], torch.cat([value(r, 2) * 2 for r in range(size)])), outs[1]
    mine = [torch.empty(4), torch.empty(1)]
    with dist._coalescing_manager():
        dist.reduce_scatter_tensor(mine[0], torch.arange(4.0 * size) + rank)
        dist.reduce_scatter_tensor(mine[1], torch.ones(size) * (rank + 1))
    expected0 = sum(torch.arange(4.0 * size) + r for r in range(size))[4 * rank:4 * rank + 4]
    assert torch.equal(mine[0], expected0), (mine[0], expected0)
    assert mine[1].item() == size * (size + 1) / 2, mine[1]


def check_all_to_all_single(rank, size):
    # Rank r sends p + 1 rows to rank p: uneven splits both ways.
    send_splits = [p + 1 for p in range(size)]
    recv_splits = [rank + 1] * size
    rows = sum(send_splits)
    inp = torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) + 100 * rank
    out = torch.empty(sum(recv_splits), 3)
    dist.all_to_all_single(out, inp, recv_splits, send_splits)
    start = sum(send_splits[:rank])
    for src in range(size):
        got = out[src * (rank + 1):(src + 1) * (rank + 1)]
        sent = torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) + 100 * src
        assert torch.equal(got, sent[start:start + rank + 1]), (src, got)


def check_premul_sum(rank, size):
    t = torch.ones(6) * (rank + 1)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
    assert torch.allclose(t, torch.full((6,), 0.5 * size * (size + 1) / 2)), t
    t = torch.ones(6) * (rank + 1)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(torch.tensor([2.0])))
    assert torch.allclose(t, torch.full((6,), 1.0 * size * (size + 1))), t


def check_split_group(rank, size):
    if size < 2:
        return
    halves = [list(range(0, size, 2)), list(range(1, size, 2))]
    group = dist.split_group(split_ranks=halves)
    mine = halves[rank % 2]
    assert dist.get_world_size(group) == len(mine), dist.get_world_size(group)
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=group)
    assert t.item() == sum(mine), (t, mine)
    # Only some ranks listed: the others get no group.
    only = dist.split_group(split_ranks=[[0, 1]])
    if rank in (0, 1):
        t = torch.ones(2)
        dist.all_reduce(t, group=only)
        assert torch.equal(t, torch.full((2,), 2.0)), t
    else:
        assert only is None or only == dist.GroupMember.NON_GROUP_MEMBER, only
    dist.barrier()


def check_device_mesh(rank, size):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Partial, Replicate, Shard, distribute_tensor

    shape = (2, size // 2) if size % 2 == 0 and size >= 4 else (size,)
    names = ("dp", "tp") if len(shape) == 2 else ("dp",)
    mesh = init_device_mesh("cpu", shape, mesh_dim_names=names)
    full = torch.arange(4.0 * size * 3).reshape(4 * size, 3)
    sharded = distribute_tensor(full, mesh, [Shard(0)] * len(shape))
    assert torch.equal(sharded.full_tensor(), full)
    replicated = sharded.redistribute(mesh, [Replicate()] * len(shape))
    assert torch.equal(replicated.to_local(), full)
    # Partial -> Replicate is an all-reduce over the mesh.
    from torch.distributed.tensor import DTensor

    partial = DTensor.from_local(torch.ones(5) * (rank + 1), mesh, [Partial()] * len(shape))
    summed = partial.redistribute(mesh, [Replicate()] * len(shape)).to_local()
    assert torch.equal(summed, torch.full((5,), size * (size + 1) / 2)), summed
    if len(shape) == 2:
        sub = mesh["tp"].get_group()
        t = torch.ones(1)
        dist.all_reduce(t, group=sub)
        assert t.item() == shape[1], t


def check_abort_shutdown(rank, size):
    # shutdown (destroy_process_group of a subgroup): a later call on it is refused by name.
    group = dist.new_group(list(range(size)))
    backend = group._get_backend(torch.device("cpu"))
    t = torch.ones(3)
    dist.all_reduce(t, group=group)
    backend.shutdown()
    try:
        backend.allreduce([torch.ones(1)]).wait()
        raise AssertionError("a call after shutdown must be refused")
    except RuntimeError as e:
        assert "shut down" in str(e), e
    # abort from one rank: every rank's call on that group fails at once, the world goes on.
    doomed = dist.new_group(list(range(size)), timeout=datetime.timedelta(seconds=60))
    dist.barrier()
    if rank == 0:
        doomed._get_backend(torch.device("cpu")).abort()
    started = time.time()
    try:
        dist.all_reduce(torch.ones(4), group=doomed)
        if size > 1 or rank == 0:
            raise AssertionError("an allreduce on an aborted group must fail")
    except RuntimeError as e:
        assert "abort" in str(e), e
        assert time.time() - started < 30, time.time() - started
    dist.barrier()


def check_set_timeout(rank, size):
    # torch.distributed.set_timeout on a group: a later op that the others never join times out
    # after the new timeout, not the group's first one (60 s).
    if size < 2:
        return
    group = dist.new_group(list(range(size)), timeout=datetime.timedelta(seconds=60))
    dist.set_timeout(datetime.timedelta(seconds=2), group)
    if rank == 0:
        started = time.time()
        try:
            dist.all_reduce(torch.ones(4), group=group)  # the others never call it
            raise AssertionError("an allreduce the other ranks never join must time out")
        except RuntimeError as e:
            assert "Timed out" in str(e) and time.time() - started < 20, (e, time.time() - started)
    dist.barrier()


def check_unsupported(rank, size):
    try:
        dist.monitored_barrier()
        raise AssertionError("monitored_barrier must be refused")
    except RuntimeError as e:
        assert "tutti" in str(e) and "monitoredBarrier" in str(e), e
    dist.barrier()


CHECKS = ["check_tensor_forms", "check_coalesced", "check_all_to_all_single", "check_premul_sum",
          "check_split_group", "check_device_mesh", "check_abort_shutdown", "check_set_timeout",
          "check_unsupported"]


def main():
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    # device_id binds the default group to a device, and torch then makes new groups by split.
    return spawn_ranks.launch(size, "ops2_test", CHECKS,
                              init_kwargs={"device_id": torch.device("cpu", 0)})


if __name__ == "__main__":
    sys.exit(main())
