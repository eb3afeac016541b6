"""tutti.elastic's API from Python without a failure to recover from, on every rank under tuttirun
(the deaths and joins are elastic_check.sh's): the loop is the C++ one (tutti::elastic::run), and
what Python raises inside it reaches it as raised.

- TUTTI_ELASTIC_TIMEOUT is read as C++ reads it: "5m" is accepted;
- an exception of the work that the loop does not handle (ValueError, a tutti.Error such as
  INVALID_ARGUMENT) comes out of run() as the same object, with the work's frame in its traceback;
- a tutti.Error the loop survives, raised by the work on every rank (TIMEOUT), makes the ranks
  shrink (all of them alive: the same size), restore the last commit, sync, call on_reset with a
  tutti.Communicator, and call the work again;
- a subclass's restore and sync are the ones the loop calls;
- State's refusals: a name used twice, an array numpy copies, a non-contiguous or read-only array,
  replacing a registered array, restore or run before a commit, a wait_timeout that is not a
  positive number.

Prints "ok: ..." lines on rank 0 and exits 0, or "FAIL: ..." and exits 1.

    PYTHONPATH=<build>/python tuttirun -np 2 -- python3 elastic_api_test.py
"""
import os
import sys
import traceback

import numpy as np

import tutti
import tutti.elastic

import checks

fail, ok, refused = checks.fail, checks.ok, checks.refused


def main():
    world = tutti.init()
    checks.rank = world.rank
    E = tutti.ErrorCode

    before = checks.failures
    os.environ["TUTTI_ELASTIC_TIMEOUT"] = "5m"
    state = tutti.elastic.State(w=np.zeros(4, np.float32))
    state.commit()
    done = tutti.elastic.run(lambda comm: comm.allreduce(state.w, tutti.SUM), state, world)
    if not isinstance(done, tutti.Communicator) or done.size != world.size:
        fail(f"run returned {done!r}")
    ok("TUTTI_ELASTIC_TIMEOUT=5m is a duration to Python as to C++", before)

    before = checks.failures
    raised = ValueError("the work's own bug")

    def buggy(comm):
        raise raised

    try:
        tutti.elastic.run(buggy, state, world)
        fail("run returned past a ValueError")
    except ValueError as e:
        frames = [f.name for f in traceback.extract_tb(e.__traceback__)]
        if e is not raised or "buggy" not in frames:
            fail(f"a different ValueError came out, or without the work's frame: {frames}")

    def bad_call(comm):
        comm.allreduce(np.zeros(4, np.float32), tutti.SUM, out=np.zeros(3, np.float32))

    try:
        tutti.elastic.run(bad_call, state, world)
        fail("run returned past an INVALID_ARGUMENT")
    except tutti.Error as e:
        frames = [f.name for f in traceback.extract_tb(e.__traceback__)]
        if e.code != E.INVALID_ARGUMENT or "bad_call" not in frames:
            fail(f"the work's INVALID_ARGUMENT came out as {e.code} or lost its frame: {frames}")
    ok("what the loop does not handle comes out as raised, with its traceback", before)

    before = checks.failures
    calls, resets = [], []

    class Logged(tutti.elastic.State):
        def restore(self):
            calls.append("restore")
            super().restore()

        def sync(self, comm, root=0):
            calls.append(("sync", type(comm).__name__))
            super().sync(comm, root)

    state = Logged(step=np.zeros(1, np.int64))
    state.on_reset(lambda comm: resets.append((type(comm).__name__, comm.size)))
    state.commit()

    def stalls_once(comm):
        state.step[0] += 5  # rolled back by the restore
        if len(resets) == 0:
            error = tutti.Error("a peer stopped answering (raised by the test)")
            error.code = E.TIMEOUT
            raise error

    done = tutti.elastic.run(stalls_once, state, world)
    if resets != [("Communicator", world.size)]:
        fail(f"on_reset saw {resets}, one reset with a tutti.Communicator of {world.size} expected")
    if calls != ["restore", ("sync", "Communicator")]:
        fail(f"the loop called {calls}, the subclass's restore then sync expected")
    if int(state.step[0]) != 5:
        fail(f"step {int(state.step[0])} after a reset and one more call, 5 expected")
    if done.size != world.size:
        fail(f"the loop went on with {done.size} ranks, {world.size} expected")
    ok("a TIMEOUT raised by the work: shrink, the subclass's restore and sync, on_reset, again",
       before)

    before = checks.failures
    state = tutti.elastic.State(a=np.zeros(3))
    refused(lambda: state.add("a", np.zeros(3)), E.INVALID_ARGUMENT, ["'a'", "already"],
            "a name used twice")
    refused(lambda: state.add("b", [1.0, 2.0]), E.INVALID_ARGUMENT, ["'b'", "list", "copies"],
            "a list")
    refused(lambda: state.add("c", np.zeros((4, 4))[:, 1]), E.INVALID_ARGUMENT,
            ["'c'", "contiguous"], "a strided view")
    read_only = np.zeros(3)
    read_only.flags.writeable = False
    refused(lambda: state.add("d", read_only), E.INVALID_ARGUMENT, ["'d'", "writable"],
            "a read-only array")
    refused(lambda: setattr(state, "a", np.ones(3)), E.INVALID_ARGUMENT, ["'a'", "in place"],
            "replacing a registered array")
    state.a += 1  # in place: the same array comes back to setattr
    refused(state.restore, E.INVALID_ARGUMENT, ["commit"], "restore before a commit")
    refused(lambda: tutti.elastic.run(lambda comm: None, state, world), E.INVALID_ARGUMENT,
            ["commit"], "run before a commit")
    state.commit()
    refused(lambda: tutti.elastic.run(lambda comm: None, state, world, wait_timeout=0),
            E.INVALID_ARGUMENT, ["wait_timeout"], "wait_timeout=0")
    refused(lambda: tutti.elastic.run(lambda comm: None, object(), world), E.INVALID_ARGUMENT,
            ["tutti.elastic.State"], "a state of another type")
    state.a[:] = 7
    state.restore()
    if not np.array_equal(state.a, np.ones(3)):
        fail(f"restore gave {state.a}, the committed ones expected")
    state.a[:] = world.rank
    state.sync(world, 0)
    if not np.array_equal(state.a, np.zeros(3)):
        fail(f"sync from rank 0 gave {state.a}")
    ok("State's refusals, restore and sync", before)

    tutti.finalize()
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
