"""Refusals of tutti's Python API that used to be silent or raw, run on every rank under tuttirun:

- send and receive buffers that overlap partly (tutti.allreduce(buf[0:6], out=buf[2:8]) gave
  [1,1,2,2,2,2,3,3] for [1,1,2,2,2,2,2,2]) raise tutti.Error INVALID_ARGUMENT naming the call, the
  rank and both ranges, on the fast path, the general path, the other collectives and the engine;
  in place, each call's in-place block, adjacent views and empty views still work;
- a second thread refused while another thread's call holds the communicator: that call fails too
  (in a world of one it used to return success);
- communicators kept past tutti.finalize(), also past a new tutti.init(), raise NOT_INITIALIZED;
- integers past a C int (comm.split(2**40)) raise INVALID_ARGUMENT naming the value and the range,
  not pybind11's "incompatible function arguments".

Prints "ok: ..." lines on rank 0 and exits 0, or "FAIL: ..." and exits 1.

    PYTHONPATH=<build>/python tuttirun -np 2 -- python3 guards_test.py
"""
import sys
import threading

import numpy as np

import tutti

import checks

fail, ok, refused = checks.fail, checks.ok, checks.refused


def check_overlap(comm):
    before = checks.failures
    rank, size = comm.rank, comm.size
    bad = tutti.ErrorCode.INVALID_ARGUMENT
    names = lambda call: [f"{call} on rank {rank}", "send [0x", "recv [0x", "overlap"]  # noqa: E731
    report = [1, 1, 2, 2, 2, 2, 2, 2]
    buf = np.array(report, np.float32)
    # The report's case, on the fast path and (with a timeout) the general one, both directions.
    refused(lambda: comm.allreduce(buf[0:6], out=buf[2:8]), bad, names("allreduce"),
            "allreduce(buf[0:6], out=buf[2:8])")
    refused(lambda: comm.allreduce(buf[0:6], out=buf[2:8], timeout=30), bad, names("allreduce"),
            "allreduce(buf[0:6], out=buf[2:8], timeout=30)")
    refused(lambda: comm.allreduce(buf[2:8], out=buf[0:6]), bad, names("allreduce"),
            "allreduce(buf[2:8], out=buf[0:6])")
    refused(lambda: tutti.allreduce(buf[0:6], out=buf[2:8], comm=comm), bad, names("allreduce"),
            "tutti.allreduce(..., comm=)")
    if buf.tolist() != report:
        fail(f"a refused allreduce wrote its buffer: {buf.tolist()}")
    refused(lambda: comm.allreduce_async("overlap", buf[0:6], out=buf[2:8]), bad,
            names("allreduce_async"), "allreduce_async(buf[0:6], out=buf[2:8])")
    # Adjacent views, in place and empty views go through.
    got = comm.allreduce(buf[0:4], out=buf[4:8])
    if buf[4:8].tolist() != [size * v for v in report[0:4]] or got is not None and \
            got.tolist() != buf[4:8].tolist():
        fail(f"adjacent allreduce gave {buf.tolist()}")
    x = np.full(6, 2, np.float32)
    comm.allreduce(x)
    if x.tolist() != [2.0 * size] * 6:
        fail(f"in-place allreduce gave {x.tolist()}")
    comm.allreduce(buf[0:0], out=buf[0:0])
    # allgather: the input may be this rank's row of the output, nothing else of it.
    rows = np.zeros((size, 3), np.float32)
    rows[rank] = rank + 1
    comm.allgather(rows[rank], out=rows)
    if rows.tolist() != [[r + 1] * 3 for r in range(size)]:
        fail(f"allgather from this rank's own row gave {rows.tolist()}")
    spare = np.zeros(3 * size + 1, np.float32)
    refused(lambda: comm.allgather(spare[3 * rank + 1:3 * rank + 4],
                                   out=spare[:3 * size].reshape(size, 3)),
            bad, names("allgather"), "allgather from a view one element into this rank's row")
    # reduce_scatter: the output may be this rank's row of the input.
    blocks = np.ones((size, 2), np.float32)
    comm.reduce_scatter(blocks, out=blocks[rank])
    if blocks[rank].tolist() != [size] * 2:
        fail(f"reduce_scatter into this rank's own row gave {blocks[rank].tolist()}")
    wide = np.ones(2 * size + 1, np.float32)
    refused(lambda: comm.reduce_scatter(wide[:2 * size].reshape(size, 2),
                                        out=wide[2 * rank + 1:2 * rank + 3]),
            bad, names("reduce_scatter"), "reduce_scatter into a view one element into its row")
    # alltoall: in place or apart.
    both = np.arange(2 * size + 1, dtype=np.float32)
    refused(lambda: comm.alltoall(both[:2 * size].reshape(size, 2),
                                  out=both[1:].reshape(size, 2)),
            bad, names("alltoall"), "alltoall into its input shifted by one")
    # The communicator is still usable after every refusal.
    y = np.ones(3, np.float32)
    comm.allreduce(y)
    if y.tolist() != [size] * 3:
        fail(f"allreduce after the refusals gave {y.tolist()}")
    ok("overlapping buffers refused on every collective and the engine; in place, a rank's own "
       "block, adjacent and empty views work", before)


def check_detected_threads(world):
    """Two threads call one communicator at once (a dup of the world per round): whenever one is
    refused while the other's call holds the communicator, that call must fail too. A refused
    thread reads the other's call number before and after its own call; unchanged, the other's
    call was the one that held the communicator."""
    before = checks.failures
    checked = 0
    for _ in range(400):
        more = np.array([1.0 if checked < 20 else 0.0], np.float32)
        world.allreduce(more, op="max")
        if more[0] == 0.0:
            break
        comm = world.dup()
        current = [-1, -1]
        ok_calls = [set(), set()]
        holder = [None, None]
        stop = threading.Event()
        go = threading.Barrier(2)

        def run(t):
            # Long enough (a copy of 64 KiB in a world of one) for the other thread to take the
            # GIL and run into it.
            src = np.ones(16384, np.float32)
            dst = np.empty(16384, np.float32)
            for k in range(2000):
                try:
                    go.wait()
                except threading.BrokenBarrierError:
                    break
                if stop.is_set():
                    break
                other_before = current[1 - t]
                current[t] = k
                try:
                    comm.allreduce(src, out=dst)
                    ok_calls[t].add(k)
                except tutti.Error as e:
                    stop.set()
                    refusal = e.code == tutti.ErrorCode.INVALID_ARGUMENT and \
                        "another thread" in str(e)
                    if refusal and other_before >= 0 and current[1 - t] == other_before:
                        holder[t] = other_before
                    break
            go.abort()

        threads = [threading.Thread(target=run, args=(t,)) for t in (0, 1)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for t in (0, 1):
            if holder[t] is None:
                continue
            checked += 1
            if holder[t] in ok_calls[1 - t]:
                fail(f"thread {t} was refused while thread {1 - t}'s call {holder[t]} held the "
                     "communicator, and that call returned success")
    if checked == 0:
        fail("two threads never collided in a communicator: nothing was checked")
    ok(f"two threads at once: {checked} refusals, the holding call failed every time", before)


def check_finalized_handles(world):
    before = checks.failures
    bad = tutti.ErrorCode.NOT_INITIALIZED
    x = np.ones(2, np.float32)
    copy = world.dup()
    tutti.finalize()
    for name, comm in (("the world", world), ("a dup", copy)):
        refused(lambda: comm.allreduce(x), bad, ["tutti.finalize()"],
                f"allreduce on {name} after finalize")
        refused(lambda: comm.allreduce(x, timeout=5), bad, ["tutti.finalize()"],
                f"allreduce(timeout=) on {name} after finalize")
        refused(lambda: comm.barrier(), bad, ["tutti.finalize()"], f"barrier on {name}")
        refused(lambda: comm.dup(), bad, ["tutti.finalize()"], f"dup of {name}")
        refused(lambda: comm.rank, bad, ["tutti.finalize()"], f"rank of {name}")
        refused(lambda: comm.allreduce_async("late", x), bad, ["tutti.finalize()"],
                f"allreduce_async on {name}")
        if "finalized" not in repr(comm):
            fail(f"repr of {name} after finalize: {comm!r}")
    refused(lambda: tutti.allreduce(x), bad, ["tutti.init()"], "tutti.allreduce after finalize")
    fresh = tutti.init()
    for name, comm in (("the old world", world), ("an old dup", copy)):
        refused(lambda: comm.allreduce(x), bad, ["tutti.finalize()"],
                f"allreduce on {name} after a new init")
    y = np.ones(2, np.float32)
    fresh.allreduce(y)
    fresh.dup().allreduce(y)
    if y.tolist() != [fresh.size ** 2] * 2:
        fail(f"the new world's allreduce gave {y.tolist()}")
    ok("communicators of a finalized world raise NOT_INITIALIZED, also after a new init", before)
    return fresh


def check_integers(comm):
    before = checks.failures
    bad = tutti.ErrorCode.INVALID_ARGUMENT
    limits = "-2147483648..2147483647"
    x = np.ones(2, np.float32)
    refused(lambda: comm.split(2 ** 40), bad, ["split", "color", "1099511627776", limits],
            "split(2**40)")
    refused(lambda: comm.split(-2 ** 31 - 1), bad, ["color", "-2147483649", limits],
            "split(-2**31 - 1)")
    refused(lambda: comm.split(0, key=2 ** 64), bad, ["key", "18446744073709551616", limits],
            "split(0, key=2**64)")
    refused(lambda: comm.group([0, 2 ** 40]), bad, ["group", "1099511627776", limits],
            "group([0, 2**40])")
    refused(lambda: comm.broadcast(x, root=2 ** 40), bad, ["broadcast", "root", limits],
            "broadcast(root=2**40)")
    refused(lambda: comm.send(x, peer=2 ** 33), bad, ["send", "peer", limits], "send(peer=2**33)")
    refused(lambda: comm.recv(x, peer=0, tag=2 ** 33), bad, ["recv", "tag", limits],
            "recv(tag=2**33)")
    refused(lambda: comm.regroup(2 ** 70), bad, ["regroup", "epoch"], "regroup(2**70)")
    refused(lambda: comm.split("two"), bad, ["split", "color", "str"], "split('two')")
    # Refused before anything was sent: the communicator works on.
    half = comm.split(comm.rank % 2)
    y = np.ones(2, np.float32)
    half.allreduce(y)
    if y.tolist() != [half.size] * 2:
        fail(f"allreduce on a split after the refusals gave {y.tolist()}")
    ok("integers past a C int raise INVALID_ARGUMENT naming the value and the range", before)


def main():
    world = tutti.init()
    checks.rank = world.rank
    for check in (check_overlap, check_detected_threads):
        try:
            check(world)
        except tutti.Error as e:
            fail(f"{check.__name__}: unexpected tutti.Error {e.code}: {e}")
    try:
        world = check_finalized_handles(world)
        check_integers(world)
    except tutti.Error as e:
        fail(f"unexpected tutti.Error {e.code}: {e}")
    tutti.finalize()
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
