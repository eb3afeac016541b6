#!/usr/bin/env python3
"""Fashion-MNIST, elastic: the model of train.py trained on tutti's own communicators under
tutti.torch.elastic (docs/ELASTIC.md), so that ranks may die and join while it runs.

    tuttirun -np 4 --min-np 2 -- python3 train_elastic.py                      # ranks may die
    tuttirun --host-discovery-script ./hosts.sh --min-np 2 --max-np 8 -- python3 train_elastic.py
    tuttirun --pods-selector app=fmnist --min-np 2 --max-np 8 -- python3 train_elastic.py

Every step each rank takes its share of one global batch (--batch-size in all, split over the
ranks there are), averages the gradients (one allreduce) and steps SGD. The state (model, optimizer,
step) is committed every --commit-every steps: when ranks die the survivors go back to it and go on
without them; ranks that join take it from rank 0. Since the global batch is the same whatever the
world, the loss curve does not depend on how many ranks ran each step. At the end every rank prints
`rank R: S steps, weights checksum H` (the same H everywhere).
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fashion_data  # noqa: E402
from train import Net, weights_checksum  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=fashion_data.DEFAULT_DIR, help="directory of the IDX files")
    p.add_argument("--steps", type=int, default=500, help="global steps to train")
    p.add_argument("--batch-size", type=int, default=128, help="the global batch, split over the ranks")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--commit-every", type=int, default=10, help="steps between commits")
    p.add_argument("--log-every", type=int, default=20, help="steps between rank 0's log lines")
    # For the tests: seconds each step sleeps, so that pods can be killed and added mid-run.
    p.add_argument("--step-delay", type=float, default=0.0, help=argparse.SUPPRESS)
    args = p.parse_args()
    for name in ("steps", "batch_size", "commit_every", "log_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main():
    args = parse_args()
    try:
        import tutti
        import tutti.torch.elastic as elastic
    except ImportError as e:
        sys.exit(f"train_elastic.py: needs tutti's Python package with tutti.torch ({e})")
    world = tutti.init()
    try:
        images, labels = fashion_data.load(args.data, "train")
    except (OSError, ValueError) as e:
        raise SystemExit(f"train_elastic.py: rank {world.rank}: {e}")
    torch.manual_seed(args.seed)
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    state = elastic.TorchState(model, optimizer, step=0)

    def on_reset(comm):
        if comm.rank == 0:
            print(f"train_elastic.py: {comm.size} ranks from step {state.step}", flush=True)

    state.on_reset(on_reset)
    state.commit()
    if world.rank == 0 and os.environ.get("TUTTI_ELASTIC_EPOCH", "0") == "0":
        print(f"train_elastic.py: {world.size} ranks, global batch {args.batch_size}, "
              f"{args.steps} steps", flush=True)

    def train(comm):
        while state.step < args.steps:
            # The global batch of this step, the same on every rank; this rank's rows of it.
            g = torch.Generator().manual_seed(args.seed * 1000003 + state.step)
            batch = torch.randint(0, images.shape[0], (args.batch_size,), generator=g)
            mine = batch[comm.rank::comm.size]
            optimizer.zero_grad()
            # Each rank's loss is its rows' sum over the global batch's size: the average of the
            # ranks' gradients times the world is the global batch's mean gradient.
            loss = F.cross_entropy(model(images[mine]), labels[mine], reduction="sum") / args.batch_size
            (loss * comm.size).backward()
            elastic.average_gradients(model, comm)
            optimizer.step()
            state.step += 1
            if args.step_delay:
                time.sleep(args.step_delay)
            if comm.rank == 0 and state.step % args.log_every == 0:
                print(f"step {state.step} loss {loss.item() * comm.size:.6f} ranks {comm.size}", flush=True)
            if state.step % args.commit_every == 0:
                state.commit()

    comm = elastic.run(train, state, world)
    print(f"rank {comm.rank}: {state.step} steps, weights checksum {weights_checksum(model)}", flush=True)


if __name__ == "__main__":
    main()
