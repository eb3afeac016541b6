"""Backend tutti on CUDA tensors, on a GPU host with a CUDA torch 2.x:

    torchrun --nproc-per-node 2 tests/gpu/torch_cuda_check.py [--pretend-hosts]

Every collective torch.distributed has, on CUDA tensors, checked against the same op on CPU
tensors through the same backend: on the current stream, on a side stream whose input is still
being written by a slow kernel when the op is issued (the op must wait for it), with async_op and
wait() from another stream, and in place and not. Then DDP and fully_shard (FSDP2) training steps
on the GPU, checked against the same steps on the CPU through backend tutti. --pretend-hosts:
every rank says it is its own host (TUTTI_HOST, NCCL_HOSTID), so that two ranks can share one GPU.
Exits non-zero on the first wrong result; prints one line per check.
"""
import os
import sys

import gpu_check  # before torch and tutti: --pretend-hosts sets their env

import torch
import torch.distributed as dist

import tutti.torch  # noqa: F401  registers backend "tutti"

RANK = int(os.environ["RANK"])
SIZE = int(os.environ["WORLD_SIZE"])
report = gpu_check.Report(RANK)
say = report.say


def same(a, b):
    return a.shape == b.shape and torch.equal(a.cpu(), b.cpu())


def slow_fill(t, value):
    """Writes `value` into t on the current stream behind a slow kernel, so that an op issued right
    after it reads garbage unless it waits for the stream."""
    x = torch.randn(2048, 2048, device=t.device)
    for _ in range(20):
        x = x @ x
        x = x / x.norm()
    t.copy_(torch.full_like(t, 0) + value + 0 * x[0, 0].to(t.dtype))


def inputs(n, dtype, device):
    base = torch.arange(n, dtype=torch.float64) % 7 + RANK + 1
    return base.to(dtype).to(device)


def check_collectives(dev):
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int32, torch.int64, torch.uint8):
        for n in (0, 1, 1000003):
            for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.MIN):
                want = inputs(n, dtype, "cpu")
                dist.all_reduce(want, op=op)
                got = inputs(n, dtype, dev)
                dist.all_reduce(got, op=op)
                say(same(got, want), f"all_reduce {dtype} n={n} {op}")
    # AVG on floats and PREMUL_SUM.
    for dtype in (torch.float32, torch.float64):
        want = inputs(4099, dtype, "cpu")
        dist.all_reduce(want, op=dist.ReduceOp.AVG)
        got = inputs(4099, dtype, dev)
        dist.all_reduce(got, op=dist.ReduceOp.AVG)
        say(torch.allclose(got.cpu(), want), f"all_reduce avg {dtype}")
    if dev.type == "cuda":
        check_streams(dev)
    check_others(dev)


def check_streams(dev):
    side = torch.cuda.Stream(dev)
    # A side stream whose input is still being written when the op is issued.
    n = 1 << 22
    with torch.cuda.stream(side):
        t = torch.empty(n, device=dev)
        slow_fill(t, RANK + 1)
        dist.all_reduce(t)
        got = t.clone()
    side.synchronize()
    say(bool((got == SIZE * (SIZE + 1) / 2).all()), "all_reduce on a side stream waits for its input")
    # async_op, waited for from the default stream (another stream than the one it was issued on).
    with torch.cuda.stream(side):
        t = torch.empty(n, device=dev)
        slow_fill(t, RANK + 1)
        work = dist.all_reduce(t, async_op=True)
    work.wait()
    got = t * 1  # the default stream, after wait()
    say(bool((got == SIZE * (SIZE + 1) / 2).all()), "async all_reduce, wait() from another stream")
    # Stream-ordered, as nccl: the op completes once enqueued, so wait() returns while the stream
    # still runs the slow fill and the op behind it (before, the host waited for the device).
    stream = torch.cuda.current_stream(dev)
    t = torch.empty(n, device=dev)
    for _ in range(10):
        slow_fill(t, RANK + 1)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    ran_ahead = not stream.query()
    busy = not work.is_completed()
    got = t * 1
    stream.synchronize()
    say(ran_ahead and bool((got == SIZE * (SIZE + 1) / 2).all()),
        f"all_reduce returns once enqueued: wait() came back while the stream ran it "
        f"(is_completed() then: {not busy}), exact after")



def check_others(dev):
    # The future too (DDP's comm hooks chain on it).
    t = inputs(12345, torch.float32, dev)
    fut = dist.all_reduce(t, async_op=True).get_future()
    value = fut.wait()[0]
    want = inputs(12345, torch.float32, "cpu")
    dist.all_reduce(want)
    say(same(value, want), "all_reduce future value")
    # A strided view (staged through a contiguous copy and written back).
    base = inputs(2000, torch.float32, dev).view(40, 50)
    view = base[:, ::2]
    dist.all_reduce(view)
    wantb = inputs(2000, torch.float32, "cpu").view(40, 50)
    wv = wantb[:, ::2]
    dist.all_reduce(wv)
    say(same(base, wantb), "all_reduce of a strided view")

    # broadcast
    for root in range(SIZE):
        t = inputs(100003, torch.float32, dev)
        dist.broadcast(t, root)
        w = inputs(100003, torch.float32, "cpu")
        dist.broadcast(w, root)
        say(same(t, w), f"broadcast root {root}")
    # all_gather_into_tensor, all_gather (list), reduce_scatter_tensor, reduce_scatter (list)
    for n in (1, 777, 262147):
        x = inputs(n, torch.float32, dev)
        out = torch.empty(n * SIZE, device=dev)
        dist.all_gather_into_tensor(out, x)
        w = torch.empty(n * SIZE)
        dist.all_gather_into_tensor(w, x.cpu())
        say(same(out, w), f"all_gather_into_tensor n={n}")
        outs = [torch.empty(n, device=dev) for _ in range(SIZE)]
        dist.all_gather(outs, x)
        say(same(torch.cat(outs), w), f"all_gather n={n}")
        big = inputs(n * SIZE, torch.float32, dev)
        mine = torch.empty(n, device=dev)
        dist.reduce_scatter_tensor(mine, big)
        wm = torch.empty(n)
        dist.reduce_scatter_tensor(wm, big.cpu())
        say(same(mine, wm), f"reduce_scatter_tensor n={n}")
        pieces = list(big.chunk(SIZE))
        mine2 = torch.empty(n, device=dev)
        dist.reduce_scatter(mine2, pieces)
        say(same(mine2, wm), f"reduce_scatter (list) n={n}")
    # The host-staged ones: reduce, gather, scatter, all_to_all_single, send/recv.
    t = inputs(5003, torch.float32, dev)
    dist.reduce(t, 0)
    w = inputs(5003, torch.float32, "cpu")
    dist.reduce(w, 0)
    if RANK == 0:
        say(same(t, w), "reduce to rank 0")
    x = inputs(301, torch.int64, dev)
    gl = [torch.empty(301, dtype=torch.int64, device=dev) for _ in range(SIZE)] if RANK == 0 else None
    dist.gather(x, gl, 0)
    glw = [torch.empty(301, dtype=torch.int64) for _ in range(SIZE)] if RANK == 0 else None
    dist.gather(x.cpu(), glw, 0)
    if RANK == 0:
        say(same(torch.cat(gl), torch.cat(glw)), "gather")
    sl = [inputs(64, torch.float32, dev) + i for i in range(SIZE)] if RANK == 0 else None
    o = torch.empty(64, device=dev)
    dist.scatter(o, sl, 0)
    slw = [s.cpu() for s in sl] if RANK == 0 else None
    ow = torch.empty(64)
    dist.scatter(ow, slw, 0)
    say(same(o, ow), "scatter")
    a = inputs(SIZE * 1000, torch.float32, dev)
    b = torch.empty_like(a)
    dist.all_to_all_single(b, a)
    bw = torch.empty(SIZE * 1000)
    dist.all_to_all_single(bw, a.cpu())
    say(same(b, bw), "all_to_all_single")
    if SIZE >= 2:
        peer = RANK ^ 1
        if peer < SIZE:
            s = inputs(4097, torch.float32, dev)
            r = torch.empty(4097, device=dev)
            for w_ in (dist.isend(s, peer), dist.irecv(r, peer)):
                w_.wait()
            exp = (torch.arange(4097, dtype=torch.float64) % 7 + peer + 1).float()
            say(same(r, exp), "send/recv")
    # Refusals: mixed devices.
    if dev.type != "cuda":
        return
    try:
        outs = [torch.empty(3) for _ in range(SIZE)]
        dist.all_gather(outs, torch.ones(3, device=dev))
        say(False, "mixed CPU and CUDA tensors refused")
    except Exception as e:  # noqa: BLE001
        say("one device" in str(e), f"mixed CPU and CUDA tensors refused: {str(e)[:120]}")


def train(model, steps, dev, wrap):
    torch.manual_seed(1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        g = torch.Generator().manual_seed(100 + step * SIZE + RANK)
        x = torch.randn(32, 64, generator=g).to(dev)
        y = torch.randn(32, 8, generator=g).to(dev)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


def net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))


def check_training(dev):
    from torch.nn.parallel import DistributedDataParallel as DDP

    cpu = train(DDP(net()), 3, "cpu", None).module
    gpu = train(DDP(net().to(dev), device_ids=[dev.index] if dev.type == "cuda" else None), 3, dev,
                None).module
    close = all(torch.allclose(a.cpu(), b, atol=1e-5, rtol=1e-4)
                for a, b in zip(gpu.parameters(), cpu.parameters()))
    say(close, f"DDP on {dev.type}: 3 SGD steps match DDP on the CPU")
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        say(True, "fully_shard: not in this torch, skipped")
        return
    model = net().to(dev)
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    train(model, 3, dev, None)
    full = [p.full_tensor().cpu() for p in model.parameters()]
    close = all(torch.allclose(a, b, atol=1e-5, rtol=1e-4) for a, b in zip(full, cpu.parameters()))
    say(close, f"fully_shard on {dev.type}: 3 SGD steps match DDP on the CPU")


def main():
    dev = gpu_check.device(torch)
    dist.init_process_group("tutti", device_id=None)
    check_collectives(dev)
    check_training(dev)
    dist.barrier()
    ok = report.failures == 0
    print(f"[{RANK}] torch CUDA check {'OK' if ok else f'FAILED ({report.failures} checks)'} "
          f"(torch {torch.__version__}, {SIZE} ranks, "
          f"{gpu_check.device_name(torch, dev)}, "
          f"TUTTI_DEVICE_ALLREDUCE={os.environ.get('TUTTI_DEVICE_ALLREDUCE', 'auto')})", flush=True)
    dist.destroy_process_group()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
