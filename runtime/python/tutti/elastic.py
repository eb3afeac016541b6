"""Elastic training from Python (docs/ELASTIC.md), as tutti::elastic in C++ and Horovod's
hvd.elastic: a State of named arrays with commit/restore/sync, and run(), which goes on with the
survivors when ranks die and takes in the ranks an elastic launcher starts.

    import numpy as np, tutti, tutti.elastic
    world = tutti.init()
    state = tutti.elastic.State(weights=np.zeros(n, np.float32), step=np.zeros(1, np.int64))
    state.commit()

    def train(comm):
        while state.step[0] < steps:
            grads = compute(state.weights)
            comm.allreduce(grads, tutti.AVG)
            state.weights -= lr * grads
            state.step[0] += 1
            state.commit()          # what a failure rolls back to; where newcomers are noticed

    comm = tutti.elastic.run(train, state, world)

Run it under `tuttirun --min-np N` (ranks may die) or `tuttirun --host-discovery-script S
--max-np M` (ranks may also join).

The loop is tutti::elastic::run of the C++ API (tutti._core runs it): Python and C++ programs
recover alike and read TUTTI_ELASTIC_MIN_NP and TUTTI_ELASTIC_TIMEOUT alike.
"""
import tutti
from tutti import _core

__all__ = ["State", "run", "MembershipChanged"]

MembershipChanged = _core.MembershipChanged


class State(_core.ElasticState):
    """Named numpy arrays (writable, each keeps its shape and dtype), with a copy taken at every
    commit(). Attributes give the arrays: State(w=np.zeros(4)).w. Subclasses may extend commit,
    restore and sync (tutti.torch.elastic.TorchState does); run() calls theirs."""

    def __init__(self, **arrays):
        super().__init__()
        self.__dict__["_arrays"] = {}
        for name, array in arrays.items():
            self.add(name, array)

    def add(self, name, array):
        """Registers `array` (a writable contiguous numpy array, or a CPU tensor or other array
        numpy reads without a copy) under `name`; tutti.Error INVALID_ARGUMENT for a name used
        twice or an array tutti could not write back into."""
        import numpy
        view = numpy.asarray(array)
        if view is not array and view.base is None:
            raise _invalid(f"elastic.State.add: '{name}' is a {type(array).__name__}, which numpy "
                           "copies: give an array whose memory the state can restore into (a "
                           "numpy array, a CPU tensor)")
        if not view.flags.writeable:
            raise _invalid(f"elastic.State.add: '{name}' must be a writable array")
        self._add(name, view)  # refuses a name used twice, and a non-contiguous array
        self._arrays[name] = (array, view)

    def __getattr__(self, name):
        arrays = self.__dict__.get("_arrays", {})
        if name in arrays:
            return arrays[name][0]
        raise AttributeError(name)

    def __setattr__(self, name, value):
        arrays = self.__dict__.get("_arrays", {})
        if name in arrays and value is not arrays[name][0]:
            raise _invalid(f"elastic.State: '{name}' is registered as an array; change it in place "
                           f"(state.{name}[...] = value): a new array would not be in the state")
        super().__setattr__(name, value)

    def commit(self):
        """Copies every array: what restore() goes back to. Inside run() of an elastic job it also
        asks whether ranks joined (one 8-byte broadcast) and raises MembershipChanged, after the
        copy, when they did."""
        self._commit()

    def restore(self):
        """Copies the last commit back into the arrays."""
        self._restore()

    def sync(self, comm, root=0):
        """Every rank's arrays (and commit count) become root's: one broadcast per array, in the
        order added (a rank whose arrays differ in size fails it with MISMATCH)."""
        self._sync(comm._impl, root)

    def on_reset(self, callback):
        """callback(comm) runs after each reset (shrink or regroup, restore, sync), before the work
        is called again: repartition data, log."""
        self._on_reset(lambda impl: callback(tutti.Communicator(impl)))


def run(work, state, comm=None, *, max_resets=1 << 30, min_size=1, wait_for_size=None,
        wait_timeout=None):
    """Calls work(comm) until it returns, and returns the communicator it finished on. When a call
    inside it fails because ranks died, aborted or stopped answering (PEER_FAILURE, ABORTED,
    TIMEOUT), the survivors shrink, restore the state to its last commit, sync it from rank 0, run
    the callbacks and call work again; a rank that dies during that makes them shrink again. Below
    the job's --min-np (wait_for_size, default TUTTI_ELASTIC_MIN_NP) a job that grows (tuttirun
    --host-discovery-script) waits up to wait_timeout seconds (default TUTTI_ELASTIC_TIMEOUT) for
    the launcher to add ranks; any other job fails at once, before another step. In a job that
    grows, a commit that sees newcomers makes every member regroup with them and sync them. Other
    errors are raised as they were."""
    if not isinstance(state, State):
        raise _invalid("elastic.run: the state must be a tutti.elastic.State (or a subclass, as "
                       f"tutti.torch.elastic.TorchState), not {type(state).__name__}")
    comm = comm if comm is not None else tutti.world()
    last = _core._elastic_run(lambda impl: work(tutti.Communicator(impl)), state, comm._impl,
                              max_resets, min_size, -1 if wait_for_size is None else wait_for_size,
                              wait_timeout)
    return tutti.Communicator(last)


def _invalid(message):
    error = tutti.Error(message)
    error.code = tutti.ErrorCode.INVALID_ARGUMENT
    return error
