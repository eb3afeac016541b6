"""`import tutti` on CUDA arrays through DLPack, on a GPU host with a CUDA torch:

    TORCH_CUDA_CHECK=dlpack_cuda_check.py tests/gpu/torch_cuda.sh LIBDIR 2 -- --pretend-hosts

torch CUDA tensors stand for any DLPack producer of device memory (CuPy, JAX on a GPU): tutti
reads them through __dlpack__, never the buffer protocol. Every collective, in place and with out=,
every dtype torch and tutti share, counts 0, 1 and odd > 1 Mi, checked bit for bit against the same
call on CPU tensors. An input still being written on a torch side stream when the call is made must
be read after that write (tutti asks the producer for stream 1, the legacy default stream); the
engine's handle on device memory; a CUDA input with a CPU out= is refused. --pretend-hosts: each
rank its own host, so that two ranks share one GPU. --cpu: a dry run on CPU tensors. Exits non-zero
on the first wrong result; prints one line per check.
"""
import sys

import gpu_check  # before torch and tutti: --pretend-hosts sets their env

import torch

import tutti

RANK = SIZE = 0
report = gpu_check.Report(0)


def say(ok, what):
    report.say(ok, what)


def same(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a.cpu(), b.cpu())


def inputs(n, dtype, dev, salt=0):
    base = (torch.arange(n, dtype=torch.int64) * 7 + RANK * 3 + salt) % 5 + 1
    if dtype == torch.bool:
        return (base % 2 == RANK % 2).to(dev)
    return base.to(dtype).to(dev)


def exports(dtype):
    """Whether this torch exports dtype through DLPack (1.13 refuses bool)."""
    try:
        torch.zeros(1, dtype=dtype).__dlpack__()
        return True
    except (RuntimeError, TypeError, BufferError):
        return False


DTYPES = tuple(t for t in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32,
                           torch.int64, torch.int8, torch.int16, torch.uint8, torch.bool)
               if exports(t))


def ops_for(dtype):
    ops = ["sum", "min", "max"]
    if not dtype.is_floating_point:
        ops += ["band", "bor", "bxor"]
    return ops


def check_allreduce(dev):
    for dtype in DTYPES:
        for n in (0, 1, 1048579):
            for op in ops_for(dtype):
                want = tutti.allreduce(inputs(n, dtype, "cpu"), op=op)
                x = inputs(n, dtype, dev)
                got = tutti.allreduce(x, op=op)
                ok = got is x and same(x, want)
                src = inputs(n, dtype, dev)
                out = torch.empty_like(src)
                got_out = tutti.allreduce(src, op=op, out=out)
                ok = ok and got_out is out and same(out, want) and same(src, inputs(n, dtype, "cpu"))
                say(ok, f"allreduce {str(dtype)[6:]} {op} n={n}: in place and out= match the CPU")


def check_others(dev):
    n = 100003
    for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.uint8):
        x = inputs(n, dtype, dev)
        got = tutti.allgather(x)
        want = tutti.allgather(inputs(n, dtype, "cpu"))
        say(got.device == x.device and same(got, want), f"allgather {dtype}: a new CUDA tensor")
        y = inputs(n, dtype, dev, salt=RANK)
        tutti.broadcast(y, root=SIZE - 1)
        say(same(y, tutti.broadcast(inputs(n, dtype, "cpu", salt=RANK), root=SIZE - 1)),
            f"broadcast {dtype} from rank {SIZE - 1} in place")
        blocks = torch.stack([inputs(n, dtype, dev, salt=b) for b in range(SIZE)])
        got = tutti.reduce_scatter(blocks)
        want = tutti.reduce_scatter(blocks.cpu())
        say(got.device == blocks.device and same(got, want), f"reduce_scatter {dtype}")
    tutti.barrier()


def slow_fill(t, value):
    """Writes `value` into t on the current stream behind a slow kernel."""
    x = torch.randn(2048, 2048, device=t.device)
    for _ in range(30):
        x = x @ x
        x = x / x.norm()
    t.copy_(torch.full_like(t, 0) + value + 0 * x[0, 0].to(t.dtype))


def check_streams(dev):
    if dev.type != "cuda":
        say(True, "side stream: CPU dry run, skipped")
        return
    n = 1 << 22
    side = torch.cuda.Stream()
    for trial in range(3):
        x = torch.zeros(n, device=dev)
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            slow_fill(x, RANK + 1 + trial)
            tutti.allreduce(x)  # x is still being written on `side` when the call is made
        want = sum(r + 1 + trial for r in range(SIZE))
        say(bool((x == want).all()), f"input written on a side stream is read after the write "
            f"(trial {trial}): every element {want}")
        h = tutti.allreduce_async(f"side.{trial}", x)
        got = h.wait()
        say(got is x and bool((x == want * SIZE).all()),
            f"allreduce_async on device memory, wait() then read on torch's stream (trial {trial})")


def check_refusals(dev):
    if dev.type != "cuda":
        return
    try:
        tutti.allreduce(torch.ones(4, device=dev), out=torch.empty(4))
        say(False, "a CUDA input with a CPU out= is refused")
    except tutti.Error as e:
        say(True, f"a CUDA input with a CPU out= is refused: {str(e)[:100]}")
    try:
        tutti.allreduce(torch.ones(8, device=dev)[::2])
        say(False, "a strided CUDA view is refused")
    except tutti.Error as e:
        say("contiguous" in str(e), f"a strided CUDA view is refused: {str(e)[:100]}")


def main():
    global RANK, SIZE
    world = tutti.init()
    RANK, SIZE = world.rank, world.size
    report.rank = RANK
    dev = gpu_check.device(torch)
    check_allreduce(dev)
    check_others(dev)
    check_streams(dev)
    check_refusals(dev)
    tutti.barrier()
    ok = report.failures == 0
    print(f"[{RANK}] tutti DLPack CUDA check {'OK' if ok else f'FAILED ({report.failures} checks)'} "
          f"(torch {torch.__version__}, {SIZE} ranks, "
          f"{gpu_check.device_name(torch, dev)})", flush=True)
    tutti.finalize()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
