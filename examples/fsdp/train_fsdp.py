#!/usr/bin/env python3
"""FSDP (fully_shard) training of a small T5-like model on backend tutti or gloo (torch 2.x).

    torchrun --nproc_per_node 2 train_fsdp.py --backend tutti --checkpoint /shared/t5-ckpt
    tuttirun -np 2 -- python train_fsdp.py --backend tutti

Switching to tutti is `import tutti.torch` and backend="tutti"; FSDP, DTensor and
torch.distributed.checkpoint run on it unchanged. Each rank trains on its own synthetic batches
(next-token prediction on seeded random tokens, so no download); rank 0 logs. With --checkpoint DIR
the model and optimizer are saved every --checkpoint-every steps with torch.distributed.checkpoint
(one shard file per rank, written to DIR.tmp and then renamed over DIR, so a crash mid-save leaves
the previous one), and a restarted job resumes from it, also with another number of ranks.
At the end every rank prints `rank R: N steps, weights checksum H`: the same H on every rank.
"""
import argparse
import hashlib
import os
import shutil
import sys
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from t5_model import TinyT5, batch  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="tutti", help="tutti (default) or gloo")
    p.add_argument("--max-steps", type=int, default=100)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--checkpoint", help="directory for torch.distributed.checkpoint (shared by ranks)")
    p.add_argument("--checkpoint-every", type=int, default=50)
    args = p.parse_args()
    if args.max_steps < 1 or args.log_every < 1 or args.checkpoint_every < 1:
        p.error("--max-steps, --log-every and --checkpoint-every must be at least 1")
    return args


def state(model, optimizer, step):
    model_state, optim_state = get_state_dict(model, optimizer)
    return {"model": model_state, "optim": optim_state, "step": torch.tensor(step)}


def save(model, optimizer, step, path):
    tmp = path + ".tmp"
    if dist.get_rank() == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    dist.barrier()
    dcp.save(state(model, optimizer, step), checkpoint_id=tmp)
    dist.barrier()
    if dist.get_rank() == 0:
        old = path + ".prev"
        shutil.rmtree(old, ignore_errors=True)
        if os.path.exists(path):
            os.rename(path, old)
        os.rename(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    dist.barrier()


def load(model, optimizer, path):
    """The step the checkpoint at `path` was taken after (0: none there)."""
    if not os.path.isdir(path):
        return 0
    loaded = state(model, optimizer, 0)
    dcp.load(loaded, checkpoint_id=path)
    set_state_dict(model, optimizer, model_state_dict=loaded["model"],
                   optim_state_dict=loaded["optim"])
    return int(loaded["step"])


def checksum(model):
    """A hash of the whole model, the same on every rank (each shard gathered, in name order)."""
    h = hashlib.sha256()
    for name, param in sorted(model.named_parameters()):
        full = param.full_tensor() if hasattr(param, "full_tensor") else param
        h.update(name.encode())
        h.update(full.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def main():
    args = parse_args()
    if args.backend == "tutti":
        import tutti.torch  # noqa: F401  (registers backend "tutti")
    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    model = TinyT5()
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if rank == 0:
        params = sum(p.numel() for p in TinyT5().parameters())
        print(f"train_fsdp.py: {world} ranks, backend {args.backend}, {params} parameters, "
              f"fully_shard", flush=True)
    step = load(model, optimizer, args.checkpoint) if args.checkpoint else 0
    if step and rank == 0:
        print(f"resuming from {args.checkpoint} at step {step}", flush=True)
    started, first = time.time(), step
    while step < args.max_steps:
        inputs, targets = batch(step, rank, vocab=model.vocab)
        loss = F.cross_entropy(model(inputs).reshape(-1, model.vocab), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        if step % args.log_every == 0:
            mean = loss.detach().clone()
            dist.all_reduce(mean)
            if rank == 0:
                print(f"step {step} loss {mean.item() / world:.4f} "
                      f"({(time.time() - started) / (step - first) * 1e3:.1f} ms/step)", flush=True)
        if args.checkpoint and (step % args.checkpoint_every == 0 or step == args.max_steps):
            save(model, optimizer, step, args.checkpoint)
            if rank == 0:
                print(f"checkpoint saved at step {step}", flush=True)
    # One write for the whole line: the ranks share torchrun's stdout, and print() writes the text
    # and its newline apart, so two ranks' lines could run into one.
    line = f"rank {rank}: {step} steps, weights checksum {checksum(model)}\n"
    sys.stdout.write(line)
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
