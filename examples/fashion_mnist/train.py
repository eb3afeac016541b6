#!/usr/bin/env python3
"""Fashion-MNIST with DistributedDataParallel: the familiar script, on backend tutti or gloo.

    torchrun --nproc_per_node 2 train.py --backend tutti      # (Debian: add --redirects 1 --tee 1)
    tuttirun -np 2 -- python3 train.py --backend tutti        # tuttirun exports what env:// reads

Switching a script to tutti takes two lines: `import tutti.torch` and backend="tutti". Each rank
trains on its shard (DistributedSampler, reseeded every epoch), rank 0 evaluates on the test set,
logs, and writes a checkpoint every --checkpoint-every steps; a restarted job (torchrun
--max-restarts, tuttirun --restarts) resumes from it, with the state broadcast from rank 0.
"""

import argparse
import hashlib
import os
import signal
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpoint  # noqa: E402
import fashion_data  # noqa: E402


class Net(nn.Module):
    """Two convolutions and two dense layers: over 88% on Fashion-MNIST in a few epochs."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 5, padding=2)
        self.conv2 = nn.Conv2d(16, 32, 5, padding=2)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="tutti", choices=["tutti", "gloo"])
    p.add_argument("--data", default=fashion_data.DEFAULT_DIR, help="directory of the IDX files")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=64, help="per rank")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--checkpoint", help="checkpoint file (on storage every restart sees)")
    p.add_argument("--checkpoint-every", type=int, default=100, help="steps between checkpoints")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: no limit)")
    p.add_argument("--log-every", type=int, default=50, help="steps between progress lines")
    p.add_argument("--no-eval", action="store_true", help="skip the test-set evaluation")
    p.add_argument("--final-weights", help="rank 0 writes the final model's state_dict here")
    # Fault injection for the restart tests: SIGKILL this rank at the start of that step, in the
    # job's first attempt only.
    p.add_argument("--kill-at-step", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--kill-rank", type=int, default=0, help=argparse.SUPPRESS)
    # For the elastic tests: seconds each step sleeps, so that pods can be killed and added mid-run.
    p.add_argument("--step-delay", type=float, default=0.0, help=argparse.SUPPRESS)
    args = p.parse_args()
    for name in ("epochs", "batch_size", "checkpoint_every", "log_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.max_steps < 0:
        p.error("--max-steps must not be negative")
    if not (1e-12 <= args.lr < 1e6):  # also refuses nan and inf
        p.error(f"--lr {args.lr} must be finite, at least 1e-12 and below 1e6")
    if not (0 <= args.momentum < 1):
        p.error(f"--momentum {args.momentum} must be in [0, 1)")
    return args


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_distributed(backend):
    if backend == "tutti":
        try:
            import tutti.torch  # noqa: F401  registers backend "tutti"
        except ImportError as e:
            sys.exit(f"train.py: backend tutti needs tutti's Python package ({e}); build tutti and "
                     "set PYTHONPATH=<build>/python, or install it")
    if "RANK" not in os.environ:  # run by hand: a world of one
        os.environ.update(RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    dist.init_process_group(backend, init_method="env://")


def restart_count():
    for name in ("TUTTI_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT"):
        if os.environ.get(name):
            return int(os.environ[name])
    return 0


def weights_checksum(model):
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def evaluate(model, images, labels):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, images.shape[0], 1000):
            correct += (model(images[i:i + 1000]).argmax(1) == labels[i:i + 1000]).sum().item()
    model.train()
    return correct / images.shape[0]


def resume(args, model, optimizer, rank, log):
    """Rank 0 reads the checkpoint; every rank gets its state by broadcast. (epoch, step, step_in_epoch)."""
    message = [None, None, None]
    if rank == 0 and args.checkpoint:
        try:
            checkpoint.check_path(args.checkpoint)
            state, path = checkpoint.load(args.checkpoint, log)
            message = [state, path, None]
        except checkpoint.CheckpointError as e:
            message = [None, None, str(e)]
    dist.broadcast_object_list(message, src=0)
    state, path, error = message
    if error:
        raise SystemExit(f"train.py: rank {rank}: {error}")
    if state is None:
        return 0, 0, 0
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    log(f"resuming from {path} at epoch {state['epoch']} step {state['step']}")
    saved_world = state.get("world_size", dist.get_world_size())
    if saved_world != dist.get_world_size():
        # An elastic job (torchrun --nnodes MIN:MAX) regrouped: the epoch goes on from the same
        # batch index of the new ranks' shards, so some samples of this epoch are seen twice or
        # not at all; the step count and the weights go on exactly.
        log(f"the world changed from {saved_world} to {dist.get_world_size()} ranks since the "
            f"checkpoint: this epoch goes on at batch {state['step_in_epoch']} of the new shards")
    return state["epoch"], state["step"], state["step_in_epoch"]


def main():
    args = parse_args()
    init_distributed(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()

    def log(line):
        if rank == 0:
            print(line, flush=True)

    torch.manual_seed(args.seed)
    try:
        train_x, train_y = fashion_data.load(args.data, "train")
        test_x, test_y = fashion_data.load(args.data, "t10k")
    except (OSError, ValueError) as e:
        raise SystemExit(f"train.py: rank {rank}: {e}")
    model = Net()
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
    epoch, step, step_in_epoch = resume(args, model, optimizer, rank, log)
    log(f"train.py: {world} ranks, backend {args.backend}, batch {args.batch_size} per rank, "
        f"{args.epochs} epochs, from step {step}")

    sampler = torch.utils.data.distributed.DistributedSampler(
        torch.utils.data.TensorDataset(train_x), num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    steps_per_epoch = (sampler.num_samples + args.batch_size - 1) // args.batch_size
    done = False
    window_start, window_images = time.perf_counter(), 0
    while epoch < args.epochs and not done:
        sampler.set_epoch(epoch)
        indices = torch.tensor(list(sampler))
        for i in range(step_in_epoch, steps_per_epoch):
            if args.kill_at_step and step + 1 == args.kill_at_step and rank == args.kill_rank \
                    and restart_count() == 0:
                print(f"rank {rank}: killing myself (SIGKILL) at step {step + 1}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            if args.step_delay:
                time.sleep(args.step_delay)
            batch = indices[i * args.batch_size:(i + 1) * args.batch_size]
            optimizer.zero_grad()
            loss = F.cross_entropy(ddp(train_x[batch]), train_y[batch])
            loss.backward()
            optimizer.step()
            step += 1
            window_images += batch.numel() * world
            if step % args.log_every == 0 or i + 1 == steps_per_epoch:
                now = time.perf_counter()
                log(f"epoch {epoch} step {step} ({i + 1}/{steps_per_epoch}) loss {loss.item():.8f} "
                    f"{window_images / (now - window_start):.0f} img/s")
                window_start, window_images = now, 0
            end_of_epoch = i + 1 == steps_per_epoch
            if args.checkpoint and rank == 0 and (step % args.checkpoint_every == 0 or end_of_epoch):
                checkpoint.save(args.checkpoint, {
                    "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "epoch": epoch + 1 if end_of_epoch else epoch, "step": step,
                    "step_in_epoch": 0 if end_of_epoch else i + 1,
                    "world_size": world, "batch_size": args.batch_size, "seed": args.seed})
                log(f"checkpoint saved at step {step}")
            if args.max_steps and step >= args.max_steps:
                done = True
                break
        if not done:
            epoch += 1
            step_in_epoch = 0
            if rank == 0 and not args.no_eval:
                log(f"epoch {epoch - 1} test accuracy {evaluate(model, test_x, test_y):.4f}")
    if rank == 0 and args.final_weights:
        torch.save(model.state_dict(), args.final_weights)
    print(f"rank {rank}: {step} steps, weights checksum {weights_checksum(model)}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
