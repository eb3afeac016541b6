"""tutti.elastic from Python under the real tuttirun (docs/ELASTIC.md): every rank trains STEPS
steps under tutti.elastic.run, committing after each; a step adds the world's size (an allreduce of
ones) to a running total. With die:R:S rank R exits hard at step S (tuttirun --min-np): the
survivors shrink, roll back to the last commit and redo that step with one rank fewer. Under
tuttirun --host-discovery-script ranks join and take the state from rank 0 (die:M:S names a member id there). Every rank ends with
the same total; each prints "DONE member M rank R of N steps S total T".

    PYTHONPATH=<build>/python tuttirun -np 3 --min-np 2 -- python3 elastic_test.py 60 10 die:1:20
"""
import os
import sys
import time

import numpy as np

import tutti
import tutti.elastic


def main():
    steps, step_ms = int(sys.argv[1]), int(sys.argv[2])
    victim = die_at = None
    if len(sys.argv) > 3 and sys.argv[3].startswith("die:"):
        _, victim, die_at = sys.argv[3].split(":")
        victim, die_at = int(victim), int(die_at)
    world = tutti.init()
    member = os.environ.get("TUTTI_MEMBER_ID", str(world.rank))
    state = tutti.elastic.State(step=np.zeros(1, np.int64), total=np.zeros(1, np.int64))

    def on_reset(comm):
        if comm.rank == 0:
            print(f"reset: {comm.size} ranks from step {int(state.step[0])} at {time.time():.3f}",
                  flush=True)

    state.on_reset(on_reset)
    state.commit()

    def train(comm):
        while state.step[0] < steps:
            if int(member) == victim and state.step[0] == die_at:
                os._exit(9)
            got = comm.allreduce(np.ones(1, np.int64))
            if int(got[0]) != comm.size:
                print(f"FAIL: allreduce of ones gave {int(got[0])} on {comm.size} ranks", flush=True)
                sys.exit(1)
            state.total[0] += comm.size
            state.step[0] += 1
            time.sleep(step_ms / 1000)
            state.commit()

    comm = tutti.elastic.run(train, state, world)
    print(f"DONE member {member} rank {comm.rank} of {comm.size} steps {int(state.step[0])} "
          f"total {int(state.total[0])}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except tutti.Error as e:
        print(f"FAIL: {e.code}: {e}", flush=True)
        sys.exit(1)
