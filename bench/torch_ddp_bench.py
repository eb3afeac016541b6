#!/usr/bin/env python3
"""DDP steps per second on backend tutti against gloo, interleaved in the same processes.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_ddp_bench.py [-np 2,4] [--steps 10]
        [--rounds 5] [--warmup 3] [--bucket-mb 25]

The model has torchvision ResNet-50's 161 parameter shapes (25.6 M floats, from
torch_gloo_bench.resnet50_sizes) and no compute: its backward hands every parameter a gradient of
ones without computing it (a broadcast view), so a step is DDP's work on 102 MB of gradients
(writing them into its buckets, with gradient_as_bucket_view) and the buckets' allreduces, which
is what a backend changes. A step is forward + backward; the optimizer step is left out (it is
the same arithmetic whatever the backend). Each rank process joins a default gloo group and a
tutti group (new_group(backend="tutti")), wraps one copy of the model in DDP on each, and then
alternates: a round times --steps DDP steps (forward and backward, which runs the allreduces) on
one backend, then on the other, with the first backend alternating between rounds.
The slowest rank's time counts; the table shows the median steps/s over --rounds per backend and
world size, and the ratio tutti/gloo of the medians.
"""
import argparse
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_gloo_bench import resnet50_sizes  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_model(torch):
    class GradientOfOnes(torch.autograd.Function):
        """Output x.sum(); every parameter's gradient is the incoming scalar broadcast to its
        shape, as a stride-0 view: backward allocates nothing and computes nothing, so the
        step is DDP writing each gradient into its bucket and the bucket allreduces."""

        @staticmethod
        def forward(ctx, x, *params):
            ctx.shapes = [p.shape for p in params]
            return x.sum()

        @staticmethod
        def backward(ctx, grad):
            return (None, *(grad.expand(shape) for shape in ctx.shapes))

    class ShapesOfResNet50(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.params = torch.nn.ParameterList(
                torch.nn.Parameter(torch.zeros(n)) for n in resnet50_sizes())

        def forward(self, x):
            return GradientOfOnes.apply(x, *self.params)

    return ShapesOfResNet50()


def rank_main(rank, size, port, args, queue):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    import tutti.torch  # noqa: F401

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=size)
    groups = {"gloo": dist.group.WORLD, "tutti": dist.new_group(backend="tutti")}
    # gradient_as_bucket_view: the gradients live in DDP's buckets (no copy back after the
    # allreduce), as recommended for speed and the same for both backends.
    models = {name: DDP(make_model(torch), process_group=group, bucket_cap_mb=args.bucket_mb,
                        gradient_as_bucket_view=True)
              for name, group in groups.items()}
    x = torch.full((4,), float(rank + 1))

    def steps(name, n):
        model = models[name]
        for _ in range(n):
            # set_to_none: the reducer then writes each gradient into its bucket once (a copy,
            # not an add), the least work DDP does per gradient.
            model.zero_grad(set_to_none=True)
            model(x).backward()

    for name in models:
        steps(name, args.warmup)
    results = {name: [] for name in models}
    order = list(models)
    for r in range(args.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            dist.barrier()
            start = time.perf_counter()
            steps(name, args.steps)
            elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
            dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)  # the slowest rank's time counts
            results[name].append(args.steps / elapsed.item())
    # Every gradient is the average over ranks of 1 (DDP divides the sum by the world size), on
    # both backends: a wrong or missing allreduce would show here.
    for name, model in models.items():
        for p in model.parameters():
            if not torch.all(p.grad == 1.0):
                raise SystemExit(f"rank {rank}: {name} gave a wrong gradient {p.grad[:4]}")
    if rank == 0:
        queue.put(results)
    dist.destroy_process_group()


def run(size, args):
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=rank_main, args=(r, size, port, args, queue)) for r in range(size)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode for p in procs):
        raise SystemExit(f"-np {size}: a rank failed (exit codes {[p.exitcode for p in procs]})")
    return queue.get()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-np", default="2,4", help="world sizes, comma-separated")
    parser.add_argument("--steps", type=int, default=10, help="steps per timed round")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per backend")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per backend")
    parser.add_argument("--bucket-mb", type=float, default=25, help="DDP bucket_cap_mb")
    args = parser.parse_args()
    try:
        import torch  # noqa: F401
        import tutti.torch  # noqa: F401
    except ImportError as e:
        print(f"needs torch and tutti.torch ({e}); run with /usr/bin/python3 and "
              "PYTHONPATH=<build>/python", file=sys.stderr)
        return 2
    print(f"DDP, ResNet-50 parameter shapes (161 tensors, {sum(resnet50_sizes()):,} floats), "
          f"{args.steps} steps x {args.rounds} rounds per backend, interleaved")
    print(f"{'ranks':>5} {'gloo steps/s':>13} {'tutti steps/s':>14} {'tutti/gloo':>11}")
    for size in (int(s) for s in args.np.split(",")):
        results = run(size, args)
        gloo = statistics.median(results["gloo"])
        tutti = statistics.median(results["tutti"])
        print(f"{size:>5} {gloo:>13.2f} {tutti:>14.2f} {tutti / gloo:>10.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
