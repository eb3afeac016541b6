"""tutti's Python API (import tutti) on numpy arrays, memoryviews, DLPack objects and torch tensors,
run on every rank under tuttirun -np N. Every result is compared with numpy's own reduction of what
every rank passed (each rank can compute every rank's input). Prints "ok: ..." lines on rank 0 and
exits 0, or prints "FAIL: ..." and exits 1.

    PYTHONPATH=<build>/python tuttirun -np 3 -- python3 core_test.py
"""
import sys

import numpy as np

import tutti

DTYPES = [np.float32, np.float64, np.float16, np.int32, np.int64, np.int8, np.int16, np.uint8,
          np.bool_]
FLOATS = (np.float32, np.float64, np.float16)
OPS = ["sum", "prod", "min", "max", "avg", "band", "bor", "bxor"]

failures = 0


def fail(message):
    global failures
    failures += 1
    print(f"FAIL: rank {tutti.rank()}: {message}", flush=True)


def ok(message):
    if tutti.rank() == 0:
        print(f"ok: {message}", flush=True)


def counts(size):
    # 0, 1, size - 1 (0 again at size 1), odd, and more than one segment of every type
    return sorted({0, 1, max(size - 1, 1), 1001, 300_001})


def value(rank, count, dtype, op):
    """Rank `rank`'s input: small values, so sums and products stay exact in every type."""
    i = np.arange(count, dtype=np.int64)
    if dtype is np.bool_:
        return (i + rank) % 3 == 0
    if op == "prod":
        return ((i + rank) % 3 + 1).astype(dtype)
    return ((i * 7 + rank * 3) % 11).astype(dtype)


def expected(dtype, op, count, size):
    stack = np.stack([value(r, count, dtype, op) for r in range(size)])
    if dtype is np.bool_:
        if op in ("sum", "max", "bor"):
            return np.logical_or.reduce(stack, axis=0)
        if op in ("prod", "min", "band"):
            return np.logical_and.reduce(stack, axis=0)
        return np.logical_xor.reduce(stack, axis=0)
    if op == "sum":
        return stack.sum(axis=0, dtype=dtype)
    if op == "prod":
        return stack.prod(axis=0, dtype=dtype)
    if op == "min":
        return stack.min(axis=0)
    if op == "max":
        return stack.max(axis=0)
    if op == "avg":
        if dtype in FLOATS:
            return (stack.astype(np.float64).sum(axis=0) / size).astype(dtype)
        return (stack.astype(np.int64).sum(axis=0) // size).astype(dtype)
    reducer = {"band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}[op]
    return reducer.reduce(stack, axis=0)


def refused(dtype, op):
    """What tutti refuses: bitwise ops on floating types, avg on bool."""
    return (dtype in FLOATS and op in ("band", "bor", "bxor")) or (dtype is np.bool_ and op == "avg")


def same(got, want, dtype):
    if dtype in FLOATS:
        tolerance = 1e-2 if dtype is np.float16 else 1e-6
        return got.shape == want.shape and np.allclose(got.astype(np.float64),
                                                       want.astype(np.float64), rtol=tolerance)
    return got.shape == want.shape and np.array_equal(got, want)


def check_allreduce(comm):
    rank, size = comm.rank, comm.size
    calls = 0
    for dtype in DTYPES:
        for op in OPS:
            for count in counts(size):
                for mode in ("in place", "out=", "read-only input"):
                    x = value(rank, count, dtype, op)
                    original = x.copy()
                    if refused(dtype, op):
                        try:
                            comm.allreduce(x, op)
                            fail(f"allreduce {np.dtype(dtype).name} {op} was not refused")
                        except tutti.Error as e:
                            if e.code != tutti.ErrorCode.INVALID_ARGUMENT:
                                fail(f"allreduce {np.dtype(dtype).name} {op}: code {e.code}: {e}")
                        break
                    want = expected(dtype, op, count, size)
                    what = f"allreduce {np.dtype(dtype).name} {op} count {count} {mode}"
                    if mode == "in place":
                        got = comm.allreduce(x, op)
                        if got is not x:
                            fail(f"{what}: did not return its input")
                    elif mode == "out=":
                        out = np.empty_like(x)
                        got = comm.allreduce(x, op, out=out)
                        if got is not out or not np.array_equal(x, original):
                            fail(f"{what}: did not write out= alone")
                    else:
                        x.setflags(write=False)
                        got = comm.allreduce(x, op)
                        if got is x or not np.array_equal(x, original):
                            fail(f"{what}: wrote its read-only input")
                    calls += 1
                    if not same(np.asarray(got), want, dtype):
                        fail(f"{what}: wrong result (first values {np.asarray(got)[:5]} where "
                             f"{want[:5]})")
    ok(f"allreduce: every dtype and op, counts {counts(size)}, in place, out= and read-only "
       f"({calls} calls)")


def check_other_collectives(comm):
    rank, size = comm.rank, comm.size
    for dtype in (np.float32, np.int64, np.uint8, np.bool_):
        name = np.dtype(dtype).name
        for count in (0, 1, 1001):
            mine = value(rank, count, dtype, "sum")
            every = [value(r, count, dtype, "sum") for r in range(size)]
            for root in range(size):
                b = mine.copy()
                got = comm.broadcast(b, root)
                if got is not b or not np.array_equal(b, every[root]):
                    fail(f"broadcast {name} count {count} root {root}")
                got = comm.reduce(mine, root, "max")
                if rank == root:
                    if not np.array_equal(got, np.max(np.stack(every), axis=0)):
                        fail(f"reduce {name} count {count} root {root}")
                elif got is not None:
                    fail(f"reduce returned {type(got)} off the root")
                got = comm.gather(mine, root)
                if rank == root and not np.array_equal(got, np.stack(every)):
                    fail(f"gather {name} count {count} root {root}")
                blocks = np.stack([value(r + 10 * root, count, dtype, "sum") for r in range(size)])
                got = comm.scatter(blocks if rank == root else None, root,
                                   out=None if rank == root else np.empty(count, dtype))
                if not np.array_equal(got, blocks[rank]):
                    fail(f"scatter {name} count {count} root {root}")
            got = comm.allgather(mine)
            if got.shape != (size, count) or not np.array_equal(got, np.stack(every)):
                fail(f"allgather {name} count {count}")
            grid = np.stack([value(rank * size + p, count, dtype, "sum") for p in range(size)])
            got = comm.alltoall(grid)
            want = np.stack([value(p * size + rank, count, dtype, "sum") for p in range(size)])
            if not np.array_equal(got, want):
                fail(f"alltoall {name} count {count}")
            if dtype is not np.bool_:
                rows = np.stack([value(rank + 7 * b, count, dtype, "sum") for b in range(size)])
                got = comm.reduce_scatter(rows, "sum")
                want = np.sum(np.stack([value(r + 7 * rank, count, dtype, "sum")
                                        for r in range(size)]), axis=0, dtype=dtype)
                if got.shape != (count,) or not np.array_equal(got, want):
                    fail(f"reduce_scatter {name} count {count}")
    comm.barrier()
    # Point to point around the ring.
    if size > 1:
        right, left = (rank + 1) % size, (rank - 1) % size
        out = np.full(5, rank, np.int32)
        got = np.empty(5, np.int32)
        if rank % 2 == 0:
            comm.send(out, right, tag=3)
            comm.recv(got, left, tag=3)
        else:
            comm.recv(got, left, tag=3)
            comm.send(out, right, tag=3)
        if not np.array_equal(got, np.full(5, left, np.int32)):
            fail("send/recv around the ring")
    ok("broadcast, reduce, gather, scatter (every root), allgather, alltoall, reduce_scatter, "
       "barrier, send/recv")


def check_buffers(comm):
    """memoryview, bytearray, a DLPack-only object, torch tensors, shapes kept."""
    rank, size = comm.rank, comm.size
    raw = bytearray([rank + 1] * 9)
    comm.allreduce(raw, "max")
    if list(raw) != [size] * 9:
        fail(f"bytearray in place: {list(raw)}")
    view = memoryview(np.full(6, rank, np.int32))
    comm.allreduce(view, "sum")
    if list(view) != [size * (size - 1) // 2] * 6:
        fail("memoryview in place")

    class DLPackOnly:  # what JAX or CuPy look like to tutti: __dlpack__ and nothing else
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__()

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    base = np.full((3, 4), rank + 1.0, np.float32)
    comm.allreduce(DLPackOnly(base), "sum", out=None)
    if not np.all(base == size * (size + 1) / 2):
        fail(f"DLPack-only object in place: {base[0]}")
    matrix = np.arange(12, dtype=np.float64).reshape(3, 4) + rank
    got = comm.allreduce(matrix, "min", out=np.empty((3, 4)))
    if got.shape != (3, 4) or not np.array_equal(got, np.arange(12).reshape(3, 4)):
        fail("a 2-D array's shape or values")
    try:
        import torch
    except ImportError:
        ok("buffers: bytearray, memoryview, DLPack-only, 2-D (torch not importable here)")
        return
    t = torch.full((5,), float(rank), dtype=torch.float32)
    got = comm.allreduce(t, "sum")
    if got is not t or not torch.equal(t, torch.full((5,), float(size * (size - 1) // 2))):
        fail(f"torch tensor in place: {t}")
    g = comm.allgather(torch.tensor([rank], dtype=torch.int64))
    if not isinstance(g, torch.Tensor) or g.flatten().tolist() != list(range(size)):
        fail(f"torch allgather: {g}")
    ok("buffers: bytearray, memoryview, DLPack-only, 2-D, torch tensors (DLPack, in place and new)")


def check_refusals(comm):
    rank = comm.rank

    def expect(call, code, words, what):
        try:
            call()
            fail(f"{what} was not refused")
        except tutti.Error as e:
            if e.code != code or any(w not in str(e) for w in words):
                fail(f"{what}: code {e.code}: {e}")

    expect(lambda: comm.allreduce(np.zeros(4, np.complex64)), tutti.ErrorCode.INVALID_ARGUMENT,
           ["is not one tutti reduces", "float32"], "complex64")
    expect(lambda: comm.allreduce(np.zeros(4, np.uint16)), tutti.ErrorCode.INVALID_ARGUMENT,
           ["is not one tutti reduces"], "uint16")
    expect(lambda: comm.allreduce(np.zeros((4, 4), np.float32)[:, 1]),
           tutti.ErrorCode.INVALID_ARGUMENT, ["contiguous"], "a strided slice")
    expect(lambda: comm.allreduce(np.zeros(4, np.float32), "median"),
           tutti.ErrorCode.INVALID_ARGUMENT, ["unknown reduction"], "op 'median'")
    expect(lambda: comm.allreduce(np.zeros(4, np.float32), out=np.zeros(5, np.float32)),
           tutti.ErrorCode.INVALID_ARGUMENT, ["5 elements where 4"], "out= of another size")
    expect(lambda: comm.allreduce(np.zeros(4, np.float32), out=np.zeros(4, np.float64)),
           tutti.ErrorCode.INVALID_ARGUMENT, ["types differ"], "out= of another type")
    expect(lambda: comm.allreduce([1.0, 2.0]), tutti.ErrorCode.INVALID_ARGUMENT,
           ["neither a buffer"], "a list")
    expect(lambda: comm.reduce_scatter(np.zeros(comm.size * 3 + 1, np.float32)),
           tutti.ErrorCode.INVALID_ARGUMENT, ["one block per rank", "reshape"],
           "reduce_scatter of a flat array")
    if comm.size > 1:
        # A call that does not match across ranks fails on every rank (and fails that
        # communicator: a dup of the world takes it).
        doomed = comm.dup()
        expect(lambda: doomed.allreduce(np.zeros(10 + rank, np.float32), timeout=30),
               tutti.ErrorCode.MISMATCH, [], "counts that differ across ranks")
        # The same through the plain call's fast path (no timeout or scales): the error is the
        # same tutti.Error, code and all.
        fast = comm.dup()
        expect(lambda: fast.allreduce(np.zeros(10 + rank, np.float32)),
               tutti.ErrorCode.MISMATCH, [], "counts that differ across ranks (fast path)")
        expect(lambda: fast.allreduce(np.zeros(4, np.float32)), tutti.ErrorCode.MISMATCH, [],
               "a call on the communicator the mismatch broke (fast path): its failure again")
    # The fast path's op names: every spelling the general path takes, and None.
    for op, want in (("sum", 1), ("SUM", 1), ("mean", 1), (tutti.AVG, 1), (None, 1)):
        x = np.ones(3, np.float64) * (1 if op in ("mean", tutti.AVG) else 1 / comm.size)
        if not np.allclose(comm.allreduce(x, op), want):
            fail(f"allreduce with op {op!r}")
    ok("refusals: complex64, uint16, strided, unknown op, out= size and type, a list; counts "
       "that differ across ranks raise MISMATCH on every rank")


def check_communicators(comm):
    rank, size = comm.rank, comm.size
    halves = comm.split(rank % 2)
    got = halves.allreduce(np.array([rank], np.int64))
    if got[0] != sum(r for r in range(size) if r % 2 == rank % 2):
        fail(f"split: {got}")
    if comm.split(-1) is not None:
        fail("split with a negative color did not give None")
    if rank < 2 and size >= 2:
        pair = comm.group([1, 0])
        if pair.rank != 1 - rank:
            fail("group: order not kept")
    twin = comm.dup()
    if twin.allreduce(np.ones(3, np.float32))[0] != size:
        fail("dup")
    ok("split, group (order kept), dup")


def check_engine(comm):
    rank, size = comm.rank, comm.size
    names = [f"grad.{i}" for i in range(40)]
    order = list(names)
    np.random.default_rng(rank).shuffle(order)  # every rank enqueues in its own order
    arrays = {n: np.full(100 + i, float(rank + i), np.float32) for i, n in enumerate(names)}
    handles = {n: comm.allreduce_async(n, arrays[n], "avg") for n in order}
    for i, n in enumerate(names):
        got = handles[n].wait()
        want = np.full(100 + i, (size - 1) / 2 + i, np.float32)
        if got is not arrays[n] or not np.allclose(got, want):
            fail(f"allreduce_async {n}")
    ro = np.ones(7, np.int32)
    ro.setflags(write=False)
    got = comm.allreduce_async("read-only", ro, "sum").wait()
    if got is ro or got.tolist() != [size] * 7:
        fail("allreduce_async of a read-only input")
    b = np.full(4, rank, np.int16)
    comm.broadcast_async("b", b, size - 1).wait()
    if b.tolist() != [size - 1] * 4:
        fail("broadcast_async")
    # Uneven work: the last rank joins at once, the others reduce once more meanwhile.
    if rank != size - 1:
        x = np.ones(3, np.float32)
        got = comm.allreduce_async("extra", x, "sum").wait()
        if got.tolist() != [size - 1] * 3:
            fail(f"allreduce beside a joined rank: {got}")
    last = comm.join().wait()
    ok("engine: 40 names in a different order per rank, a read-only input, broadcast_async, join")
    return last


def main():
    world = tutti.init()
    if tutti.size() != world.size or not tutti.is_initialized():
        fail("world and module disagree")
    for check in (check_allreduce, check_other_collectives, check_buffers, check_refusals,
                  check_communicators, check_engine):
        try:
            check(world)
        except tutti.Error as e:
            fail(f"{check.__name__}: unexpected tutti.Error {e.code}: {e}")
            break
    tutti.finalize()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
