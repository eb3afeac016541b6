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
"""
import math
import os

import tutti

__all__ = ["State", "run", "MembershipChanged"]


class MembershipChanged(Exception):
    """Raised by State.commit() inside run() when the launcher published a new membership (ranks
    joined); every member raises it at the same commit, and run() regroups."""

    def __init__(self, epoch):
        super().__init__(f"elastic: the launcher published membership {epoch}: ranks joined the "
                         "job; tutti.elastic.run regroups")
        self.epoch = epoch


class State:
    """Named numpy arrays (writable, each keeps its shape and dtype), with a copy taken at every
    commit(). Attributes give the arrays: State(w=np.zeros(4)).w."""

    def __init__(self, **arrays):
        self._arrays = {}
        self._committed = {}
        self._callbacks = []
        self._watched = None  # run()'s communicator in an elastic job
        self._epoch = 0
        self.commits = 0
        for name, array in arrays.items():
            self.add(name, array)

    def add(self, name, array):
        """Registers `array` (a writable numpy array, or anything with a writable buffer) under
        `name`; tutti.Error INVALID_ARGUMENT for a name used twice."""
        if name in self._arrays:
            raise _invalid(f"elastic.State.add: '{name}' is already in the state")
        np = _np()
        view = np.asarray(array)
        if not view.flags.writeable or not view.flags.c_contiguous:
            raise _invalid(f"elastic.State.add: '{name}' must be a writable contiguous array")
        self._arrays[name] = array

    def __getattr__(self, name):
        arrays = self.__dict__.get("_arrays", {})
        if name in arrays:
            return arrays[name]
        raise AttributeError(name)

    def commit(self):
        """Copies every array: what restore() goes back to. Inside run() of an elastic job it also
        asks whether ranks joined (one 8-byte broadcast) and raises MembershipChanged, after the
        copy, when they did."""
        np = _np()
        for name, array in self._arrays.items():
            self._committed[name] = np.array(array, copy=True)
        self.commits += 1
        if self._watched is not None:
            comm = self._watched
            latest = np.array([comm.membership_epoch() if comm.rank == 0 else 0], np.int64)
            comm.broadcast(latest, 0)
            if int(latest[0]) > self._epoch:
                raise MembershipChanged(int(latest[0]))

    def restore(self):
        """Copies the last commit back into the arrays."""
        if not self.commits:
            raise _invalid("elastic.State.restore: nothing was committed yet; commit() the "
                           "starting state first")
        np = _np()
        for name, array in self._arrays.items():
            if name in self._committed:
                np.copyto(np.asarray(array), self._committed[name])

    def sync(self, comm, root=0):
        """Every rank's arrays (and commit count) become root's: one broadcast per array, in the
        order added (a rank whose arrays differ in size fails it with MISMATCH)."""
        np = _np()
        for name, array in self._arrays.items():
            comm.broadcast(array, root)
            self._committed[name] = np.array(array, copy=True)
        commits = np.array([self.commits], np.int64)
        comm.broadcast(commits, root)
        self.commits = int(commits[0])

    def on_reset(self, callback):
        """callback(comm) runs after each reset (shrink or regroup, restore, sync), before the work
        is called again: repartition data, log."""
        self._callbacks.append(callback)

    def _reset(self, comm):
        for callback in self._callbacks:
            callback(comm)


_joined = False


def _wait_for_ranks(comm, epoch, wanted, timeout):
    """Below the job's --min-np after a shrink: poll the store for the membership the launcher
    publishes when it adds ranks, and regroup into it. (comm, epoch); TIMEOUT past `timeout`."""
    import time
    if comm.size >= wanted:
        return comm, epoch
    deadline = time.monotonic() + timeout
    while comm.size < wanted:
        latest = comm.membership_epoch()
        if latest > epoch:
            comm, epoch = comm.regroup(latest), latest
            continue
        if time.monotonic() > deadline:
            error = tutti.Error(
                f"elastic.run on rank {comm.rank}: {comm.size} rank(s) left, fewer than the job's "
                f"--min-np {wanted}, "
                f"and no ranks joined within {timeout:g} s (TUTTI_ELASTIC_TIMEOUT, tuttirun "
                "--elastic-timeout): are there hosts for the launcher to add?")
            error.code = tutti.ErrorCode.TIMEOUT
            raise error
        time.sleep(0.1)
    return comm, epoch


_SURVIVABLE = ("PEER_FAILURE", "ABORTED", "TIMEOUT")


def _survivable(error):
    """Ranks died (PEER_FAILURE), peers failed because of it (ABORTED), or a rank stopped
    answering (TIMEOUT: a collective waited past TUTTI_COLLECTIVE_TIMEOUT for it). Anything else is
    the program's to handle."""
    return any(error.code == getattr(tutti.ErrorCode, name) for name in _SURVIVABLE)


def _shrink(comm, cause):
    """shrink(), again while the lowest survivor dies inside it (PEER_FAILURE there), at most once
    per rank; any other failure ends this rank's run, saying what it recovered from."""
    for attempt in range(1, comm.size + 1):
        try:
            return comm.shrink()
        except tutti.Error as s:
            if s.code == tutti.ErrorCode.PEER_FAILURE and attempt < comm.size:
                continue
            error = tutti.Error(f"elastic.run on rank {comm.rank}: the shrink after a failure "
                                f"failed; the failure was: {cause}; the shrink: {s}")
            error.code = s.code
            raise error from s


def _recover(comm, state, failure, ctx):
    """After `failure` on `comm`: shrink, roll back, wait for ranks below the job's minimum (a job
    that grows), sync from rank 0 and run the callbacks; a rank that dies or stops answering during
    any of it makes the survivors shrink again, as long as enough are left."""
    cause, code = str(failure), failure.code
    while True:
        if ctx["resets"] >= ctx["max_resets"]:
            raise failure
        ctx["resets"] += 1
        nxt = _shrink(comm, cause)
        if nxt.size < ctx["min_size"]:
            error = tutti.Error(f"elastic.run: {nxt.size} rank(s) left, fewer than min_size "
                                f"{ctx['min_size']}; the failure was: {cause}")
            error.code = code
            raise error
        min_np = ctx["wait_for_size"]
        if not ctx["elastic"] and nxt.size < min_np:
            error = tutti.Error(
                f"elastic.run on rank {nxt.rank}: {nxt.size} rank(s) left, fewer than the job's "
                f"--min-np {min_np}: no step runs below it and no ranks can join (a job that "
                f"grows needs --host-discovery-script); the job stops. The failure was: {cause}")
            error.code = code
            raise error
        comm = nxt
        state.restore()
        if ctx["elastic"]:
            comm, ctx["epoch"] = _wait_for_ranks(comm, ctx["epoch"], ctx["wait_for_size"],
                                                 ctx["wait_timeout"])
        try:
            state.sync(comm, 0)
            state._reset(comm)
            return comm
        except tutti.Error as e:
            if not _survivable(e):
                raise
            cause, code, failure = str(e), e.code, e


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
    errors are raised."""
    if wait_for_size is None:
        wait_for_size = int(os.environ.get("TUTTI_ELASTIC_MIN_NP", "0") or 0)
    if wait_timeout is None:
        wait_timeout = _seconds(os.environ.get("TUTTI_ELASTIC_TIMEOUT", "600") or "600")
    global _joined
    comm = comm if comm is not None else tutti.world()
    elastic = "TUTTI_ELASTIC_EPOCH" in os.environ
    epoch = int(os.environ.get("TUTTI_ELASTIC_EPOCH", "0") or 0) if elastic else 0
    if elastic and epoch > 0 and not _joined:
        # Started into a running job: take the state from rank 0, as the running members do
        # right after they regrouped.
        _joined = True
        epoch = comm.membership_epoch()
        state.sync(comm, 0)
        state._reset(comm)
    elif not state.commits:
        raise _invalid("elastic.run: commit() the state once before run(): it is what a failure "
                       "rolls back to")
    ctx = {"resets": 0, "max_resets": max_resets, "min_size": min_size, "elastic": elastic,
           "epoch": epoch, "wait_for_size": wait_for_size, "wait_timeout": wait_timeout}
    try:
        while True:
            state._watched = comm if elastic else None
            state._epoch = max(state._epoch, ctx["epoch"])
            try:
                work(comm)
                return comm
            except MembershipChanged as changed:
                state._watched = None
                ctx["epoch"] = changed.epoch  # met or abandoned: no commit asks for it again
                try:
                    comm = comm.regroup(changed.epoch)
                except tutti.Error as e:
                    # A member ended before the new membership formed: the launcher abandoned
                    # it, and the running members go on in the communicator they had, shrunk.
                    if not _survivable(e):
                        raise
                    comm = _recover(comm, state, e, ctx)
                    continue
                try:
                    state.sync(comm, 0)
                    state._reset(comm)
                except tutti.Error as e:
                    if not _survivable(e):
                        raise
                    comm = _recover(comm, state, e, ctx)
            except tutti.Error as e:
                state._watched = None
                if not _survivable(e):
                    raise
                comm = _recover(comm, state, e, ctx)
    finally:
        state._watched = None


def _seconds(text):
    """TUTTI_ELASTIC_TIMEOUT read as the C++ side reads it (core/parse.cc): seconds, or with ms, s
    or m; finite and positive. (This loop mirrors api/elastic.cc's until Python binds that one.)"""
    t = text.strip()
    scale = 1.0
    if len(t) > 2 and t.endswith("ms"):
        t, scale = t[:-2], 1e-3
    elif len(t) > 1 and t.endswith("s"):
        t = t[:-1]
    elif len(t) > 1 and t.endswith("m"):
        t, scale = t[:-1], 60.0
    try:
        value = float(t) * scale if t and "e" not in t.lower() else float("nan")
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or value <= 0:
        error = tutti.Error(f"TUTTI_ELASTIC_TIMEOUT='{text}' is not a positive duration "
                            "(examples: 30, 2.5s, 500ms, 5m)")
        error.code = tutti.ErrorCode.CONFIG
        raise error
    return value


def _np():
    import numpy
    return numpy


def _invalid(message):
    error = tutti.Error(message)
    error.code = tutti.ErrorCode.INVALID_ARGUMENT
    return error
