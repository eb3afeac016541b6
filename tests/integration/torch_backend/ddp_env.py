#!/usr/bin/env python3
"""DDP on backend tutti under the env:// rendezvous that torchrun sets up (torch's TCPStore, hosted
by rank 0):

    ddp_env.py --launch N [tutti|gloo]     # starts N ranks with RANK, WORLD_SIZE, LOCAL_RANK,
                                           # MASTER_ADDR, MASTER_PORT set, as torchrun does
    /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 --nproc_per_node N \\
        ddp_env.py [tutti|gloo]            # the same under torchrun itself

(ctest uses --launch: Debian's torchrun agent (1.13 under Python 3.11) often hangs at its own exit
after every rank has finished, with gloo as with tutti.)

Each rank feeds its own input (rank + 1 everywhere) to a bias-free linear layer of ones; DDP must
average the gradients, so every rank sees the mean input as its gradient. After 3 SGD steps every
rank must hold the same weights (compared through an all_gather).
"""
import os
import socket
import subprocess
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import tutti.torch  # noqa: F401


def main():
    backend = sys.argv[1] if len(sys.argv) > 1 else "tutti"
    dist.init_process_group(backend)  # env://: RANK, WORLD_SIZE, MASTER_ADDR/PORT from torchrun
    rank, size = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == backend
    layer = torch.nn.Linear(8, 1, bias=False)
    torch.nn.init.ones_(layer.weight)
    model = DDP(layer)
    x = torch.full((2, 8), float(rank + 1))
    model(x).sum().backward()
    mean_input = (size + 1) / 2
    assert torch.equal(layer.weight.grad, torch.full((1, 8), 2 * mean_input)), layer.weight.grad
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(3):
        opt.zero_grad()
        model(x * (step + 1)).sum().backward()
        opt.step()
    weights = [torch.empty_like(layer.weight) for _ in range(size)]
    dist.all_gather(weights, layer.weight.detach())
    assert all(torch.equal(w, weights[0]) for w in weights), weights
    dist.destroy_process_group()
    print(f"rank {rank}/{size}: DDP gradients averaged, weights identical")
    return 0


def launch(size, backend):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for rank in range(size):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(size),
                   LOCAL_WORLD_SIZE=str(size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, __file__, backend], env=env))
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=120))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append("hung")
    print(f"exit codes {codes}")
    return 0 if all(c == 0 for c in codes) else 1


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--launch":
        sys.exit(launch(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "tutti"))
    sys.exit(main())
