"""tutti: an allreduce runtime, for any framework's arrays.

    import numpy as np, tutti
    tutti.init()                                   # from tuttirun's, torchrun's or MPI's env
    grads = tutti.allreduce(np.ones(4, np.float32), op=tutti.AVG)

Collectives take numpy arrays and anything with ``__dlpack__`` (JAX, CuPy, TensorFlow through
``tf.experimental.dlpack``, torch tensors), of float32, float64, float16, int32, int64, int8,
int16, uint8 or bool, in contiguous row-major memory. A writable input (numpy, torch, CuPy) is
reduced in place and returned; an immutable one (a JAX array, a TensorFlow tensor) gets a new array
of its own kind; ``out=`` names the buffer to write instead (then the input is left as it was).
Device memory (CUDA) goes to tutti's device path where libtutti was built with CUDA.

``allreduce_async(name, x)`` enqueues on tutti's engine (Horovod's model: ranks may enqueue in any
order, ready tensors are fused) and returns a Handle; ``handle.wait()`` returns the result.

Every failure raises ``tutti.Error``; its ``code`` is a ``tutti.ErrorCode``. A call that does not
match across ranks (another count, type or collective) raises on every rank. ``import
tutti.torch`` registers backend "tutti" for torch.distributed.
"""
import atexit as _atexit
import weakref as _weakref

try:
    from . import _core
except ImportError as _e:  # a tutti.torch-only installation: the backend works, this API does not
    _core = None
    _core_missing = _e

if _core is not None:
    Error = _core.Error
    ErrorCode = _core.ErrorCode
    ReduceOp = _core.ReduceOp
    SUM, PROD, MIN, MAX, AVG = ReduceOp.SUM, ReduceOp.PROD, ReduceOp.MIN, ReduceOp.MAX, ReduceOp.AVG
    BAND, BOR, BXOR = ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR
    # What the fast path of allreduce takes for op: None, a ReduceOp, or its name.
    _OP_CODES = {None: int(SUM)}
    for _name, _value in ReduceOp.__members__.items():
        _OP_CODES[_value] = int(_value)
        _OP_CODES[_name.lower()] = int(_value)
    _OP_CODES["mean"] = int(AVG)

__all__ = ["init", "finalize", "is_initialized", "world", "rank", "size", "local_rank",
           "local_size", "Communicator", "Handle", "Error", "ErrorCode", "ReduceOp", "SUM", "PROD",
           "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR", "allreduce", "broadcast", "reduce",
           "allgather", "reduce_scatter", "alltoall", "gather", "scatter", "barrier", "send",
           "recv", "allreduce_async", "broadcast_async", "join"]

_OPS = {"sum": "SUM", "prod": "PROD", "min": "MIN", "max": "MAX", "avg": "AVG", "mean": "AVG",
        "band": "BAND", "bor": "BOR", "bxor": "BXOR"}

# Frameworks whose arrays are never written in place: their arrays are immutable values.
_IMMUTABLE = ("jax", "jaxlib", "tensorflow")


def _need_core():
    if _core is None:
        raise ImportError(f"tutti's core module is not installed ({_core_missing}); only "
                          "tutti.torch is available in this installation")


def _op(op):
    if type(op) is ReduceOp:
        return op
    if isinstance(op, str):
        name = _OPS.get(op.lower())
        if name is None:
            raise _invalid_argument(f"unknown reduction {op!r}; use one of "
                                    f"{', '.join(sorted(_OPS))} (or tutti.SUM, ...)")
        return getattr(ReduceOp, name)
    if isinstance(op, ReduceOp):
        return op
    raise _invalid_argument(f"op must be a tutti.ReduceOp or a name like 'sum', not "
                            f"{type(op).__name__}")


def _invalid_argument(message):
    """A tutti.Error with code INVALID_ARGUMENT (the checks made here, before any rank is asked)."""
    error = Error(message)
    error.code = ErrorCode.INVALID_ARGUMENT
    return error


def _framework(x):
    return type(x).__module__.split(".", 1)[0]


def _np():
    import numpy
    return numpy


try:
    from numpy import ndarray as _ndarray
except ImportError:  # no numpy: every array goes the general way
    _ndarray = None


def _writable(x):
    """Whether tutti may write x in place."""
    if _framework(x) in _IMMUTABLE:
        return False
    if isinstance(x, (bytes, str)):
        return False
    if isinstance(x, memoryview):
        return not x.readonly
    flags = getattr(x, "flags", None)
    if flags is not None and hasattr(flags, "writeable"):
        return bool(flags.writeable)
    return True


def _shape_dtype(x):
    shape = getattr(x, "shape", None)  # not a getattr default: len(x) fails where shape exists
    shape = tuple(int(d) for d in (shape if shape is not None else (len(x),)))
    return shape, getattr(x, "dtype", None)


def _empty_like(x, shape):
    """A new, writable array of x's element type and shape `shape`: of x's framework where that
    framework's arrays are writable, else a numpy array (converted back by _as_kind)."""
    kind = _framework(x)
    if kind == "torch":
        import torch
        return torch.empty(shape, dtype=x.dtype, device=x.device)
    if kind == "cupy":
        import cupy
        return cupy.empty(shape, dtype=x.dtype)
    np = _np()
    if isinstance(x, np.ndarray):
        return np.empty(shape, dtype=x.dtype)
    _, dtype = _shape_dtype(x)
    if dtype is None:
        raise _invalid_argument(f"cannot make an array like a {type(x).__name__} (it has no "
                                "dtype); pass out=")
    dtype = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))  # TensorFlow's DType names numpy's
    if dtype.name == "bfloat16":
        return _Bits(np.empty(shape, dtype=np.uint16), dtype)
    return np.empty(shape, dtype=dtype)


class _Bits:
    """bfloat16 memory (a JAX or ml_dtypes array's type) held as uint16: numpy's buffer protocol
    and DLPack export cannot name it, so the core module reads `_tutti_bfloat16` instead."""

    def __init__(self, bits, dtype):
        self._tutti_bfloat16, self.dtype = bits, dtype

    def typed(self):
        return self._tutti_bfloat16.view(self.dtype)


def _plain(a):
    """A numpy array of ml_dtypes' bfloat16 (JAX's and TensorFlow's host arrays), which neither the
    buffer protocol nor numpy's DLPack export can carry, as its uint16 bits; anything else as is."""
    if type(a) is _ndarray and a.dtype.name == "bfloat16":
        return _Bits(a.view(_np().uint16), a.dtype)
    return a


def _as_kind(result, like):
    """`result` (made by _empty_like) as an array of like's framework."""
    if isinstance(result, _Bits):
        result = result.typed()
    kind = _framework(like)
    if kind in ("jax", "jaxlib"):
        import jax.numpy as jnp
        return jnp.asarray(result)
    if kind == "tensorflow":
        import tensorflow as tf
        return tf.convert_to_tensor(result)
    return result


def _same(shape):
    return shape


def _timeout(timeout):
    if timeout is None:
        return None
    return float(getattr(timeout, "total_seconds", lambda: timeout)())


class Handle:
    """An asynchronous operation (allreduce_async, broadcast_async, join)."""

    def __init__(self, impl, result, like, comm=None):
        self._impl, self._result, self._like = impl, result, like
        # Its communicator, for Ctrl-C to abort during wait(); weakly, so that a handle kept
        # around does not keep a finalized world alive.
        self._comm = None if comm is None else _weakref.ref(comm)

    def done(self):
        """True once it finished (completed or failed); never blocks."""
        return self._impl.done()

    def wait(self, timeout=None):
        """Waits until it finished and returns its result (raises its error if it failed; with a
        timeout, tutti.Error TIMEOUT when it has not finished by then)."""
        comm = None if self._comm is None else self._comm()
        self._impl.wait(_timeout(timeout), None if comm is None else comm._impl)
        if self._result is None:
            return None
        return _as_kind(self._result, self._like)

    @property
    def last_joined(self):
        """join(): the rank that joined last."""
        return self._impl.last_joined


class Communicator:
    """A group of ranks that run collectives together (world(), split, group, dup)."""

    def __init__(self, impl):
        self._impl = impl

    def __repr__(self):
        try:
            return f"<tutti.Communicator rank {self.rank} of {self.size}>"
        except Error:  # a world tutti.finalize() ended: its rank is gone with it
            return "<tutti.Communicator of a finalized world>"

    rank = property(lambda self: self._impl.rank)
    size = property(lambda self: self._impl.size)
    local_rank = property(lambda self: self._impl.local_rank)
    local_size = property(lambda self: self._impl.local_size)
    cross_rank = property(lambda self: self._impl.cross_rank)
    cross_size = property(lambda self: self._impl.cross_size)

    def split(self, color, key=None):
        """MPI_Comm_split: every rank calls it; ranks with one color form a communicator ordered by
        key (default: rank). A negative color gives None."""
        # The core refuses what is not an integer or does not fit a C int, naming the value.
        made = self._impl.split(color, self.rank if key is None else key)
        return None if made is None else Communicator(made)

    def group(self, ranks):
        """A communicator of the listed ranks, in the order listed; only they call it."""
        return Communicator(self._impl.group(list(ranks)))

    def dup(self):
        return Communicator(self._impl.dup())

    def shrink(self):
        """The survivors go on (docs/ELASTIC.md): after a call failed because ranks died, every
        rank still alive calls it and gets a communicator of the ranks still there, in their old
        order. tutti.elastic.run does it for you."""
        return Communicator(self._impl.shrink())

    def membership_epoch(self):
        """Elastic jobs (tuttirun --host-discovery-script): the number of the latest membership
        the launcher published (0: none)."""
        return self._impl.membership_epoch()

    def regroup(self, epoch):
        """This process's communicator in membership `epoch`, with the ranks the launcher started
        for it (collective over its members). tutti.elastic.run does it for you."""
        return Communicator(self._impl.regroup(epoch))

    def abort(self, reason="aborted from Python"):
        """From any thread: every pending and later call on this communicator fails, on every rank."""
        self._impl.abort(str(reason))

    # -- helpers ------------------------------------------------------------------------------
    def _output(self, x, out, shape, in_place_ok):
        """(buffer to write, value to return): out, or x itself (in place), or a new array of
        shape shape(x's shape) (a function: an object written in place need not have a shape)."""
        if out is not None:
            return out, out
        if in_place_ok and _writable(x):
            return x, x
        return _empty_like(x, shape(_shape_dtype(x)[0])), None

    def _result(self, written, returned, like):
        return returned if returned is not None else _as_kind(written, like)

    # -- collectives --------------------------------------------------------------------------
    def allreduce(self, x, op=None, *, out=None, timeout=None, prescale=1.0, postscale=1.0):
        """op over every rank's x (default SUM). In place when x is writable and out is not given;
        else a new array of x's kind. prescale/postscale (floating sum/avg) scale inside the
        reduction."""
        # The plain call first: a buffer (numpy) with no timeout or scales goes to the core's fast
        # path (a small message costs about a microsecond, and so may this layer); it declines
        # anything else, which the general path below handles or explains.
        if timeout is None and prescale == 1.0 and postscale == 1.0:
            try:
                code = _OP_CODES.get(op)
            except TypeError:  # an unhashable op: the general path says what is wrong
                code = None
            # In place only on numpy arrays: another framework's buffer may be writable and still
            # be an immutable value of that framework's (the general path returns a new array).
            if code is not None:
                if out is not None:
                    if _core._allreduce_buffers(self._impl, x, out, code):
                        return out
                elif type(x) is _ndarray and _core._allreduce_buffers(self._impl, x, x, code):
                    return x
        op = SUM if op is None else _op(op)
        seconds = None if timeout is None else _timeout(timeout)
        if out is not None:
            self._impl.allreduce(_plain(x), _plain(out), op, seconds, prescale, postscale)
            return out
        if type(x) is _ndarray and x.flags.writeable:
            send = _plain(x)
            self._impl.allreduce(send, send, op, seconds, prescale, postscale)
            return x
        target, returned = self._output(x, out, _same, True)
        send = _plain(x)
        self._impl.allreduce(send, send if target is x else _plain(target), op, seconds,
                             float(prescale), float(postscale))
        return self._result(target, returned, x)

    def broadcast(self, x, root=0, *, out=None, timeout=None):
        """root's x on every rank: x itself (in place) when writable, else a new array (then
        out= or x's shape and type say what to receive)."""
        target, returned = self._output(x, out, _same, True)
        if target is not x and self.rank == int(root):
            np = _np()
            if isinstance(target, _Bits):
                target.typed()[...] = np.asarray(x)
            else:
                target[...] = np.asarray(x) if isinstance(target, np.ndarray) else x
        self._impl.broadcast(_plain(target), int(root), _timeout(timeout))
        return self._result(target, returned, x)

    def reduce(self, x, root=0, op=None, *, out=None, timeout=None):
        """op over every rank's x, at root (a new array or out, or x in place with out=x); the
        other ranks get None."""
        root = int(root)
        op = _op(op if op is not None else SUM)
        if self.rank != root:
            self._impl.reduce(_plain(x), None, op, root, _timeout(timeout))
            return None
        shape, _ = _shape_dtype(x)
        target, returned = (out, out) if out is not None else (_empty_like(x, shape), None)
        self._impl.reduce(_plain(x), _plain(target), op, root, _timeout(timeout))
        return self._result(target, returned, x)

    def allgather(self, x, *, out=None, timeout=None):
        """Every rank's x, stacked in rank order: shape (size, *x.shape)."""
        target, returned = self._output(x, out, lambda shape: (self.size,) + shape, False)
        self._impl.allgather(_plain(x), _plain(target), _timeout(timeout))
        return self._result(target, returned, x)

    def reduce_scatter(self, x, op=None, *, out=None, timeout=None):
        """x holds one block per rank along its first axis (shape (size, *block)); rank r gets
        op over every rank's x[r], of shape block."""
        self._blocks(x, "reduce_scatter")
        target, returned = self._output(x, out, lambda shape: shape[1:], False)
        self._impl.reduce_scatter(_plain(x), _plain(target), _op(op if op is not None else SUM),
                                  _timeout(timeout))
        return self._result(target, returned, x)

    def alltoall(self, x, *, out=None, timeout=None):
        """x holds one block per rank along its first axis (shape (size, *block)); x[p] goes to
        rank p, which gets it at [rank] of its result (the same shape as x)."""
        self._blocks(x, "alltoall")
        target, returned = self._output(x, out, _same, False)
        self._impl.alltoall(_plain(x), _plain(target), _timeout(timeout))
        return self._result(target, returned, x)

    def _blocks(self, x, name):
        shape, _ = _shape_dtype(x)
        if not shape or shape[0] != self.size:
            raise _invalid_argument(f"{name} on rank {self.rank}: the input's first axis must hold "
                                    f"one block per rank ({self.size}), its shape is {shape}; "
                                    f"reshape a flat array with x.reshape({self.size}, -1)")
        return shape

    def gather(self, x, root=0, *, out=None, timeout=None):
        """Every rank's x at root, stacked: shape (size, *x.shape); None elsewhere."""
        root = int(root)
        if self.rank != root:
            self._impl.gather(_plain(x), None, root, _timeout(timeout))
            return None
        shape, _ = _shape_dtype(x)
        target, returned = (out, out) if out is not None else (
            _empty_like(x, (self.size,) + shape), None)
        self._impl.gather(_plain(x), _plain(target), root, _timeout(timeout))
        return self._result(target, returned, x)

    def scatter(self, x, root=0, *, out=None, timeout=None):
        """x[rank] of root's x (shape (size, *block)). Ranks other than root pass x=None and out=
        (the block to receive), or a template x of the block's shape and type."""
        root = int(root)
        if self.rank == root:
            shape = self._blocks(x, "scatter")
            target, returned = (out, out) if out is not None else (_empty_like(x, shape[1:]), None)
            self._impl.scatter(_plain(x), _plain(target), root, _timeout(timeout))
            return self._result(target, returned, x)
        if out is None and x is None:
            raise _invalid_argument(f"scatter on rank {self.rank}: give out= (the block to "
                                    "receive) or a template x of its shape and type")
        if out is not None:
            self._impl.scatter(None, _plain(out), root, _timeout(timeout))
            return out
        shape, _ = _shape_dtype(x)
        target = _empty_like(x, shape)
        self._impl.scatter(None, _plain(target), root, _timeout(timeout))
        return _as_kind(target, x)

    def barrier(self, *, timeout=None):
        self._impl.barrier(_timeout(timeout))

    def send(self, x, peer, tag=0, *, timeout=None):
        """x to rank peer; it receives with recv(from this rank, the same tag). Sizes must match."""
        self._impl.send(_plain(x), int(peer), int(tag), _timeout(timeout))

    def recv(self, out, peer, tag=0, *, timeout=None):
        """Receives into out (writable) from rank peer; returns out."""
        self._impl.recv(_plain(out), int(peer), int(tag), _timeout(timeout))
        return out

    # -- engine -------------------------------------------------------------------------------
    def allreduce_async(self, name, x, op=None, *, out=None, prescale=1.0, postscale=1.0):
        """Enqueues allreduce of x under `name` (every rank enqueues every name, in any order);
        returns a Handle whose wait() gives the result. x (or out) must stay unchanged until
        then."""
        target, returned = self._output(x, out, _same, True)
        send = _plain(x)
        impl = self._impl.allreduce_async(str(name), send, send if target is x else _plain(target),
                                          _op(op if op is not None else SUM), float(prescale),
                                          float(postscale))
        return Handle(impl, returned if returned is not None else target,
                      returned if returned is not None else x, self)

    def broadcast_async(self, name, x, root=0):
        """Enqueues broadcast of root's x (in place; x must be writable) under `name`."""
        impl = self._impl.broadcast_async(str(name), _plain(x), int(root))
        return Handle(impl, x, x, self)

    def join(self):
        """This rank has no more data: it takes part in the others' engine calls until every rank
        has joined. Returns a Handle (last_joined: the rank that joined last)."""
        return Handle(self._impl.join(), None, None, self)


_world = None
_finalize_registered = False


def init():
    """Joins the world from the environment (tuttirun, torchrun, MPI, or a world of one);
    idempotent. Returns the world communicator."""
    global _world, _finalize_registered
    _need_core()
    if _world is None:
        _world = Communicator(_core.init())
        if not _finalize_registered:
            _atexit.register(finalize)
            _finalize_registered = True
    return _world


def finalize():
    """Leaves the world (at exit, if not called before). init() may join a new one afterwards."""
    global _world
    if _world is not None:
        _world = None
        _core.finalize()


def is_initialized():
    return _world is not None


def world():
    """The world communicator; tutti.Error NOT_INITIALIZED before init()."""
    if _world is None:
        _need_core()
        error = Error("tutti.init() has not been called (or tutti.finalize() has)")
        error.code = ErrorCode.NOT_INITIALIZED
        raise error
    return _world


def rank():
    return world().rank


def size():
    return world().size


def local_rank():
    return world().local_rank


def local_size():
    return world().local_size


def _on_world(name):
    def call(*args, comm=None, **kwargs):
        return getattr(comm if comm is not None else world(), name)(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = f"Communicator.{name} on the world (or on comm=)." + "\n\n" + \
        (getattr(Communicator, name).__doc__ or "")
    return call


allreduce = _on_world("allreduce")
broadcast = _on_world("broadcast")
reduce = _on_world("reduce")
allgather = _on_world("allgather")
reduce_scatter = _on_world("reduce_scatter")
alltoall = _on_world("alltoall")
gather = _on_world("gather")
scatter = _on_world("scatter")
barrier = _on_world("barrier")
send = _on_world("send")
recv = _on_world("recv")
allreduce_async = _on_world("allreduce_async")
broadcast_async = _on_world("broadcast_async")
join = _on_world("join")
