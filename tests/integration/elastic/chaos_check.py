"""chaos_check.py STEPS STEP_MS: chaos_check.cc's rank in Python, under tutti.elastic.run.

Every step allreduces a one-hot vector over the world's ranks, which must come back as exactly the
members of the communicator the step ran on (the same as the step before unless a recovery came
between); the total adds sum(member + 1) per step, committed after every step. At the end the
survivors must agree on total and members. Prints "pid R P", "recovery R S (N ranks)", and
"DONE members=... steps=S total=T", "stopped: ..." (a clear failure) or "FAIL: ..." (a wrong
answer). CHAOS_SYNC_VICTIM=R: world rank R dies inside the state sync of its first recovery;
CHAOS_REGROUP_VICTIM=M: member M dies at the commit that learns the job grew.
"""
import os
import sys
import time

import numpy as np

import tutti
import tutti.elastic


class WrongAnswer(Exception):
    pass


class ChaosState(tutti.elastic.State):
    def __init__(self, victim, regroup_victim, **arrays):
        super().__init__(**arrays)
        self._victim = victim
        self._regroup_victim = regroup_victim

    def commit(self):
        try:
            super().commit()
        except tutti.elastic.MembershipChanged:
            # Gone the moment the launcher published a larger membership: the launcher must
            # abandon it.
            if self._regroup_victim:
                print("dies as the job grows", flush=True)
                os._exit(3)
            raise

    def sync(self, comm, root=0):
        if self._victim:
            # The sync's first broadcast, as State.sync makes it (the first array's bytes), then
            # gone before the second.
            comm.broadcast(self.step.view(np.uint8), root)
            print("dies inside the state sync", flush=True)
            os._exit(3)
        super().sync(comm, root)


def members(slots):
    return ",".join(str(r) for r in range(len(slots)) if slots[r] == 1)


def main():
    steps, step_ms = int(sys.argv[1]), int(sys.argv[2])
    world = tutti.init()
    # Slots by member id in a job that grows (ids are never reused), by world rank otherwise.
    member = os.environ.get("TUTTI_MEMBER_ID")
    me = int(member) if member is not None else world.rank
    world_size = 16 if member is not None else world.size
    if me >= world_size:
        raise WrongAnswer(f"member id {me} is beyond the {world_size} this check counts")
    print(f"pid {me} {os.getpid()}", flush=True)
    victim = os.environ.get("CHAOS_SYNC_VICTIM")
    regroup_victim = os.environ.get("CHAOS_REGROUP_VICTIM")
    state = ChaosState(victim is not None and int(victim) == me,
                       regroup_victim is not None and int(regroup_victim) == me,
                       step=np.zeros(1, np.int64), total=np.zeros(1, np.int64))
    seen = {"last_step": time.monotonic(), "recovered": True, "before": None, "members": None}

    def on_reset(comm):
        print(f"recovery {me} {time.monotonic() - seen['last_step']:.3f} ({comm.size} ranks)",
              flush=True)
        seen["recovered"] = True

    state.on_reset(on_reset)
    state.commit()

    def train(comm):
        while state.step[0] < steps:
            slots = np.zeros(world_size, np.int64)
            slots[me] = 1
            slots = comm.allreduce(slots)
            if not np.all((slots == 0) | (slots == 1)) or slots[me] != 1 or \
                    int(slots.sum()) != comm.size or \
                    (not seen["recovered"] and not np.array_equal(slots, seen["before"])):
                raise WrongAnswer(f"step {int(state.step[0])} ran with slots {slots.tolist()} on "
                                  f"a communicator of {comm.size} (the step before: "
                                  f"{seen['before']})")
            seen["before"], seen["members"], seen["recovered"] = slots, slots, False
            state.total[0] += int(np.dot(slots, np.arange(1, world_size + 1)))
            state.step[0] += 1
            seen["last_step"] = time.monotonic()
            state.commit()
            if state.step[0] == 1:
                print(f"started {me}", flush=True)
            time.sleep(step_ms / 1000)

    last = tutti.elastic.run(train, state, world)
    total = int(state.total[0])
    both = last.allreduce(np.array([total, -total], np.int64), tutti.MAX)
    if int(both[0]) != total or -int(both[1]) != total:
        print(f"FAIL: rank {me}: total {total}, the survivors' range {-int(both[1])}.."
              f"{int(both[0])}", flush=True)
        return 1
    print(f"DONE members={members(seen['members'])} steps={int(state.step[0])} total={total}",
          flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except WrongAnswer as e:
        print(f"FAIL: {e}", flush=True)
        sys.exit(1)
    except tutti.Error as e:
        print(f"stopped: {e.code}: {e}", flush=True)
        sys.exit(1)
