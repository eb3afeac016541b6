"""tutti's Python API on TensorFlow tensors (immutable: results are new tf.Tensors), run on every
rank under tuttirun -np N with PyPI's tensorflow-cpu (scripts/install-tf.sh). Every dtype TensorFlow
and tutti share, with the ops tutti takes on it, counts 0, 1, odd and large; the input must come
back unchanged and the result be a tf.Tensor of its dtype and shape. Also out= (a numpy array),
allgather, broadcast, reduce_scatter, the engine, and the refusals of a DLPack capsule
(tf.experimental.dlpack.to_dlpack) and a tf.Variable, with their advice. Prints "ok: ..." on rank 0,
"FAIL: ..." on failures.

    PYTHONPATH=<build>/python tuttirun -np 3 -- <tf venv>/bin/python tf_test.py
"""
import sys

import numpy as np
import tensorflow as tf

import tutti
from reduce_expect import expected, value as value_of

DTYPES = [tf.float32, tf.float64, tf.float16, tf.bfloat16, tf.int32, tf.int64, tf.int8, tf.int16,
          tf.uint8, tf.bool]
FLOATS = (tf.float32, tf.float64, tf.float16, tf.bfloat16)

failures = 0


def fail(message):
    global failures
    failures += 1
    print(f"FAIL: rank {tutti.rank()}: {message}", flush=True)


def value(rank, count, dtype):
    return value_of(rank, count, dtype.as_numpy_dtype, dtype == tf.bool)


def as_f64(x):
    return np.asarray(x).astype(np.float64)


def main():
    world = tutti.init()
    rank, size = world.rank, world.size
    checked = 0
    for dtype in DTYPES:
        for count in (0, 1, 1001, 300_001):
            host = [value(r, count, dtype) for r in range(size)]
            x = tf.constant(host[rank], dtype=dtype)
            stack = np.stack(host)
            for op in ("sum", "max", "min") + (("avg",) if dtype in FLOATS else ("bor",)):
                got = world.allreduce(x, op)
                checked += 1
                if not isinstance(got, tf.Tensor):
                    fail(f"allreduce {dtype.name} {op}: got a {type(got).__name__}")
                    continue
                want = expected(stack, op, dtype.as_numpy_dtype, dtype == tf.bool)
                if got.dtype != x.dtype or tuple(got.shape) != tuple(x.shape):
                    fail(f"allreduce {dtype.name} {op} count {count}: {got.dtype}{got.shape}")
                elif not np.allclose(as_f64(got), as_f64(want),
                                     rtol=1e-2 if dtype in (tf.float16, tf.bfloat16) else 1e-6):
                    fail(f"allreduce {dtype.name} {op} count {count}: wrong values")
                if not np.array_equal(x.numpy(), host[rank]):
                    fail(f"allreduce {dtype.name} {op} count {count}: the input changed")
            out = np.empty(count, dtype.as_numpy_dtype)
            if world.allreduce(x, "max", out=out) is not out or \
                    not np.array_equal(out, stack.max(axis=0) if count else out):
                fail(f"allreduce {dtype.name} count {count} into out=")
            gathered = world.allgather(x)
            if not isinstance(gathered, tf.Tensor) or tuple(gathered.shape) != (size, count) or \
                    not np.array_equal(gathered.numpy(), stack):
                fail(f"allgather {dtype.name} count {count}")
            root = count % size
            b = world.broadcast(x, root)
            if not isinstance(b, tf.Tensor) or not np.array_equal(b.numpy(), host[root]):
                fail(f"broadcast {dtype.name} count {count} root {root}")
    blocks = tf.constant(np.arange(size * 4, dtype=np.float32).reshape(size, 4) + rank)
    got = world.reduce_scatter(blocks)
    want = sum(np.arange(size * 4, dtype=np.float32).reshape(size, 4)[rank] + r
               for r in range(size))
    if not isinstance(got, tf.Tensor) or not np.allclose(got.numpy(), want):
        fail("reduce_scatter of a (size, 4) tensor")
    # The engine on tf.Tensors (a Keras training step's gradients).
    grads = [tf.fill((64 + i,), float(rank + i)) for i in range(8)]
    handles = [world.allreduce_async(f"g{i}", g, tutti.AVG) for i, g in enumerate(grads)]
    for i, h in enumerate(handles):
        got = h.wait()
        if not isinstance(got, tf.Tensor) or not np.allclose(got.numpy(), (size - 1) / 2 + i):
            fail(f"allreduce_async g{i}")
    # What tutti cannot take says what to pass instead.
    for thing, words, what in (
            (tf.experimental.dlpack.to_dlpack(tf.ones(3)), ["DLPack capsule", "__dlpack__"],
             "a DLPack capsule"),
            (tf.Variable([1.0, 2.0]), ["v.value()"], "a tf.Variable")):
        try:
            world.allreduce(thing)
            fail(f"{what} was not refused")
        except tutti.Error as e:
            if e.code != tutti.ErrorCode.INVALID_ARGUMENT or any(w not in str(e) for w in words):
                fail(f"{what}: {e.code}: {e}")
    if rank == 0:
        print(f"ok: TensorFlow {tf.__version__} tensors: {len(DTYPES)} dtypes, sum/max/min/avg|bor, "
              f"counts 0-300001, {checked} allreduces, out=, allgather, broadcast, reduce_scatter, "
              f"engine; inputs unchanged, results tf.Tensor; a capsule and a Variable refused",
              flush=True)
    tutti.finalize()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
