"""DDP and fully_shard (FSDP2) on CUDA, backend tutti against backend nccl, on a GPU host with a
CUDA torch 2.x:

    TORCH_CUDA_CHECK=torch_cuda_train.py tests/gpu/torch_cuda.sh LIBDIR 2 -- [--pretend-hosts]

One process group per backend in the same processes (tutti's, then nccl's through new_group), the
same model (examples/fsdp's TinyT5, made larger), the same seeded batches: STEPS AdamW steps of
each wrapping on each backend, interleaved step by step (tutti, nccl, tutti, ...) so that both meet
the same GPU and host state. Losses must agree step for step (to float32 reduction-order
tolerance: NCCL and tutti may sum in another order); step times (CUDA-synchronized, medians over
the steps after the first two) are printed side by side. --pretend-hosts: each rank its own host.
--cpu: a dry run on CPU tensors against gloo.
"""
import os
import statistics
import sys
import time

import gpu_check  # before torch and tutti: --pretend-hosts sets their env

import torch
import torch.distributed as dist
import torch.nn.functional as F

import tutti.torch  # noqa: F401  registers backend "tutti"

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                                "fsdp"))
from t5_model import TinyT5, batch  # noqa: E402

STEPS = int(os.environ.get("TRAIN_STEPS", "20"))
SHAPE = dict(vocab=4096, dim=512, heads=8, ff=2048, layers=4)  # about 17 M parameters


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def make(wrap, group, dev):
    torch.manual_seed(0)
    model = TinyT5(**SHAPE).to(dev)
    if wrap == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, device_ids=[dev.index] if dev.type == "cuda" else None,
                    process_group=group)
        vocab = model.module.vocab
    else:
        from torch.distributed.fsdp import fully_shard
        from torch.distributed.device_mesh import DeviceMesh
        mesh = DeviceMesh.from_group(group, dev.type)
        for block in model.blocks:
            fully_shard(block, mesh=mesh)
        fully_shard(model, mesh=mesh)
        vocab = model.vocab
    return model, torch.optim.AdamW(model.parameters(), lr=1e-3), vocab


def step(trainer, n, rank, dev):
    model, optimizer, vocab = trainer
    inputs, targets = batch(n, rank, vocab=vocab, batch_size=16, seq=64)
    inputs, targets = inputs.to(dev), targets.to(dev)
    sync(dev)
    began = time.perf_counter()
    loss = F.cross_entropy(model(inputs).reshape(-1, vocab), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    sync(dev)
    return loss.item(), time.perf_counter() - began


def main():
    dev = gpu_check.device(torch)
    peer = "gloo" if gpu_check.CPU else "nccl"
    dist.init_process_group("tutti")
    rank, size = dist.get_rank(), dist.get_world_size()
    groups = {"tutti": dist.group.WORLD, peer: dist.new_group(backend=peer)}
    failures = 0
    for wrap in ("ddp", "fully_shard"):
        trainers = {name: make(wrap, group, dev) for name, group in groups.items()}
        losses = {name: [] for name in groups}
        times = {name: [] for name in groups}
        for n in range(STEPS):
            for name, trainer in trainers.items():
                loss, seconds = step(trainer, n, rank, dev)
                losses[name].append(loss)
                times[name].append(seconds)
        worst = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(losses["tutti"], losses[peer]))
        ok = worst <= 1e-3
        failures += not ok
        median = {name: statistics.median(t[2:] if len(t) > 4 else t) * 1e3
                  for name, t in times.items()}
        if rank == 0 or not ok:
            print(f"[{rank}] {'ok  ' if ok else 'FAIL'} {wrap} on {dev.type}, {size} ranks, "
                  f"{STEPS} steps: losses tutti {losses['tutti'][0]:.4f} -> "
                  f"{losses['tutti'][-1]:.4f}, {peer} {losses[peer][0]:.4f} -> "
                  f"{losses[peer][-1]:.4f}, largest relative difference {worst:.2e}; "
                  f"step time median tutti {median['tutti']:.2f} ms, {peer} {median[peer]:.2f} ms "
                  f"({median[peer] / median['tutti']:.2f}x)", flush=True)
        del trainers
    dist.barrier()
    # One write for the whole line: the ranks share torchrun's stdout.
    sys.stdout.write(f"[{rank}] torch CUDA training {'OK' if not failures else 'FAILED'} "
                     f"(torch {torch.__version__}, {size} ranks, "
                     f"{gpu_check.device_name(torch, dev)}, "
                     f"TUTTI_DEVICE_ALLREDUCE={os.environ.get('TUTTI_DEVICE_ALLREDUCE', 'auto')})\n")
    sys.stdout.flush()
    dist.destroy_process_group()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
