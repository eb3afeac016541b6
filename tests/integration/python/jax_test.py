"""tutti's Python API on JAX arrays (DLPack, immutable: results are new JAX arrays), run on every
rank under tuttirun -np N with PyPI's jax (CPU). Every dtype numpy and JAX share (64-bit ones with
jax_enable_x64), and JAX's bfloat16, with ops tutti takes on it, counts 0, 1, odd and large; the input must come back
unchanged, the result as a JAX array. Prints "ok: ..." on rank 0, "FAIL: ..." on failures.

    PYTHONPATH=<build>/python tuttirun -np 3 -- <venv>/bin/python jax_test.py
"""
import sys

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import tutti  # noqa: E402
from reduce_expect import expected, value as value_of  # noqa: E402

DTYPES = [jnp.float32, jnp.float64, jnp.float16, jnp.bfloat16, jnp.int32, jnp.int64, jnp.int8,
          jnp.int16, jnp.uint8, jnp.bool_]
FLOATS = (jnp.float32, jnp.float64, jnp.float16, jnp.bfloat16)

failures = 0


def fail(message):
    global failures
    failures += 1
    print(f"FAIL: rank {tutti.rank()}: {message}", flush=True)


def value(rank, count, dtype):
    return value_of(rank, count, np.dtype(dtype), dtype is jnp.bool_)


def main():
    world = tutti.init()
    rank, size = world.rank, world.size
    checked = 0
    for dtype in DTYPES:
        name = np.dtype(dtype).name
        for count in (0, 1, 1001, 300_001):
            host = [value(r, count, dtype) for r in range(size)]
            x = jnp.asarray(host[rank])
            for op in ("sum", "max", "min") + (("avg",) if dtype in FLOATS else ("bor",)):
                got = world.allreduce(x, op)
                checked += 1
                if not isinstance(got, jax.Array):
                    fail(f"allreduce {name} {op}: got a {type(got).__name__}, not a JAX array")
                    continue
                want = expected(np.stack(host), op, np.dtype(dtype), dtype is jnp.bool_)
                if got.dtype != x.dtype or got.shape != x.shape:
                    fail(f"allreduce {name} {op} count {count}: {got.dtype}{got.shape}")
                elif not np.allclose(np.asarray(got).astype(np.float64),
                                     want.astype(np.float64),
                                     rtol=1e-2 if dtype in (jnp.float16, jnp.bfloat16) else 1e-6):
                    fail(f"allreduce {name} {op} count {count}: wrong values")
                if not np.array_equal(np.asarray(x), host[rank]):
                    fail(f"allreduce {name} {op} count {count}: the JAX input changed")
            gathered = world.allgather(x)
            if not isinstance(gathered, jax.Array) or gathered.shape != (size, count) or \
                    not np.array_equal(np.asarray(gathered), np.stack(host)):
                fail(f"allgather {name} count {count}")
            root = count % size
            b = world.broadcast(x, root)
            if not isinstance(b, jax.Array) or not np.array_equal(np.asarray(b), host[root]):
                fail(f"broadcast {name} count {count} root {root}")
    # numpy arrays of ml_dtypes' bfloat16 (what np.asarray gives for a JAX bfloat16 array): neither
    # the buffer protocol nor numpy's DLPack carries them; tutti reads their bits.
    bf = np.array(jnp.full((5,), rank + 1, jnp.bfloat16))  # a writable copy
    want = sum(r + 1 for r in range(size))
    world.allreduce(bf)
    out = np.empty_like(bf)
    world.allreduce(np.asarray(jnp.ones((5,), jnp.bfloat16)), out=out)
    if bf.dtype.name != "bfloat16" or not np.allclose(bf.astype(np.float32), want) or \
            not np.allclose(out.astype(np.float32), size):
        fail("allreduce of numpy bfloat16 arrays, in place and into out=")
    # The engine on JAX arrays (what train_jax.py does each step).
    grads = [jnp.full((64 + i,), float(rank + i), jnp.float32) for i in range(8)]
    handles = [world.allreduce_async(f"g{i}", g, tutti.AVG) for i, g in enumerate(grads)]
    for i, h in enumerate(handles):
        got = h.wait()
        if not isinstance(got, jax.Array) or not np.allclose(np.asarray(got),
                                                             (size - 1) / 2 + i):
            fail(f"allreduce_async g{i}")
    if rank == 0:
        print(f"ok: JAX arrays: {len(DTYPES)} dtypes, sum/max/min/avg|bor, counts 0-300001, "
              f"{checked} allreduces, allgather, broadcast, engine; inputs unchanged, results JAX",
              flush=True)
    tutti.finalize()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
