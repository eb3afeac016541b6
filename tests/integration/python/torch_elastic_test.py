"""tutti.torch.elastic under the real tuttirun (docs/ELASTIC.md): a small torch model with SGD and
momentum trains STEPS steps in tutti.torch.elastic.run, committing every EVERY steps. Each member
(TUTTI_MEMBER_ID, else its first rank) trains on batches that depend only on the step and the
member, and gradients are averaged over the world (average_gradients). With die:R:S the rank whose
first rank is R exits hard at step S (tuttirun --min-np): the survivors roll back to the last
commit, sync, and redo the steps since with one member fewer. Under tuttirun
--host-discovery-script members join and take the model, the momentum and the step from rank 0.

At the end every rank replays the training alone: the same model and optimizer, each step's
gradient the mean over the members of the world that ran that step (told by the resets) of their
batches' gradients. Its weights must match the trained ones (to 1e-5): no step was lost or run by
the wrong world, and the optimizer's momentum went along. Each rank prints
"DONE member M rank R of N steps S checksum C replay ok".

    PYTHONPATH=<build>/python tuttirun -np 3 --min-np 2 -- python3 torch_elastic_test.py 40 4 die:1:10
    (sleep:MS: each step sleeps MS milliseconds; grow:N:S: a world smaller than N holds at step S,
    committing every 50 ms for up to 60 s, until the launcher's newcomers regroup it: however slow
    they are to start, they join mid-run)
"""
import hashlib
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import tutti
import tutti.torch.elastic as elastic

MAX_MEMBERS = 16


def make_model():
    torch.manual_seed(7)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
    return model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def batch(step, member):
    g = torch.Generator().manual_seed(1000 * step + member)
    x = torch.randn(4, 8, generator=g)
    return x, x.sum(1, keepdim=True).sin()


def checksum(model):
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().numpy().tobytes())
    return h.hexdigest()[:16]


def members_of(comm, member):
    one_hot = np.zeros(MAX_MEMBERS, np.int64)
    one_hot[member] = 1
    comm.allreduce(one_hot)
    return [m for m in range(MAX_MEMBERS) if one_hot[m]]


def main():
    steps, every = int(sys.argv[1]), int(sys.argv[2])
    victim = die_at = None
    pause = 0.0
    grow_to = hold_at = None
    for arg in sys.argv[3:]:
        if arg.startswith("die:"):
            _, victim, die_at = arg.split(":")
            victim, die_at = int(victim), int(die_at)
        elif arg.startswith("sleep:"):  # milliseconds a step, so that joiners come mid-run
            pause = int(arg[6:]) / 1000
        elif arg.startswith("grow:"):
            _, grow_to, hold_at = arg.split(":")
            grow_to, hold_at = int(grow_to), int(hold_at)
    torch.set_num_threads(1)
    world = tutti.init()
    member = int(os.environ.get("TUTTI_MEMBER_ID", world.rank))
    model, opt = make_model()
    # history: (first step, members) of each world that trained, as the resets tell it. A value
    # of the state, so newcomers get it with the model and a rollback takes it back too.
    state = elastic.TorchState(model, opt, step=0, history=[])

    def on_reset(comm):
        state.history.append((state.step, members_of(comm, member)))
        if comm.rank == 0:
            print(f"reset: {comm.size} ranks {state.history[-1][1]} from step {state.step}",
                  flush=True)

    state.on_reset(on_reset)
    if os.environ.get("TUTTI_ELASTIC_EPOCH", "0") == "0":  # not a newcomer (those get it by sync)
        state.history.append((0, members_of(world, member)))
    state.commit()

    def train(comm):
        while state.step < steps:
            if member == victim and state.step == die_at:
                os._exit(9)
            if grow_to and state.step == hold_at and comm.size < grow_to:
                # A count, not a clock: every member commits (a collective) as often as the others.
                for _ in range(1200):
                    time.sleep(0.05)
                    state.commit()  # raises MembershipChanged once the newcomers are there
                print(f"FAIL: no newcomer joined within 60 s at step {hold_at}", flush=True)
            x, y = batch(state.step, member)
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            elastic.average_gradients(model, comm)
            opt.step()
            state.step += 1
            if pause:
                time.sleep(pause)
            if state.step % every == 0:
                state.commit()

    comm = elastic.run(train, state, world)

    # The replay: one process, the same steps, each step's gradient the members' mean.
    replay, replay_opt = make_model()
    history = state.history
    starts = [start for start, _ in history] + [steps]
    for (start, members), end in zip(history, starts[1:]):
        for s in range(start, end):
            replay_opt.zero_grad()
            loss = sum(F.mse_loss(replay(batch(s, m)[0]), batch(s, m)[1]) for m in members)
            (loss / len(members)).backward()
            replay_opt.step()
    worst = max((a - b).abs().max().item() for a, b in
                zip(model.state_dict().values(), replay.state_dict().values()))
    ok = worst <= 1e-5
    print(f"{'DONE' if ok else 'FAIL:'} member {member} rank {comm.rank} of {comm.size} steps "
          f"{state.step} checksum {checksum(model)} replay {'ok' if ok else 'off'} ({worst:.2e}; "
          f"worlds {history})", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
