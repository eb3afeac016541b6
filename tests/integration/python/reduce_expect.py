"""What the framework tests (jax_test.py, tf_test.py) share: each rank's input and the result an
allreduce of every rank's input must give, computed with numpy."""
import numpy as np


def value(rank, count, np_dtype, is_bool):
    """Rank `rank`'s input of `count` elements: small integers (exact in every type), or a pattern
    of booleans."""
    i = np.arange(count, dtype=np.int64)
    if is_bool:
        return (i + rank) % 3 == 0
    return ((i * 5 + rank * 3) % 11).astype(np_dtype)


def expected(stack, op, np_dtype, is_bool):
    """op over the rows of `stack` (one row per rank), as tutti defines it: on bool, sum and max
    are or, min is and; avg in float64, then the type."""
    if is_bool:
        return stack.any(axis=0) if op in ("sum", "max", "bor") else stack.all(axis=0)
    if op == "sum":
        return stack.sum(axis=0, dtype=np_dtype)
    if op == "max":
        return stack.max(axis=0)
    if op == "min":
        return stack.min(axis=0)
    if op == "avg":
        return (stack.astype(np.float64).sum(axis=0) / len(stack)).astype(np_dtype)
    return np.bitwise_or.reduce(stack, axis=0)
