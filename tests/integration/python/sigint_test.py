"""Ctrl-C during a blocked call, on 2 ranks under tuttirun. Rank 0 waits in a call that rank 1
makes only seconds later, and a SIGINT reaches rank 0 meanwhile (the process sends it to itself,
as a terminal's Ctrl-C would). It used to be delivered only when the call returned, once the peer
arrived (or at the collective timeout, 600 s), and the peer's call succeeded.

- a blocking allreduce (the fast path) and a wait on an engine handle: KeyboardInterrupt within
  2 s of the signal; the peer's call fails within 2 s with tutti.Error ABORTED naming rank 0 and
  SIGINT, never succeeds and never hangs;
- a program with a SIGINT handler of its own keeps its call: it completes when the peer arrives,
  and the handler runs then, as before.

Prints "ok: ..." lines on rank 0 and exits 0, or "FAIL: ..." and exits 1.

    PYTHONPATH=<build>/python tuttirun -np 2 -- python3 sigint_test.py
"""
import os
import signal
import sys
import threading
import time

import numpy as np

import tutti

import checks

PEER_LATE = 4.0  # seconds rank 1 arrives after rank 0 started waiting
SIGNAL_AFTER = 0.5
PROMPT = 2.0  # "within about a second", with room for a loaded machine

fail, ok = checks.fail, checks.ok


def interrupt_soon():
    """Sends this process SIGINT after SIGNAL_AFTER seconds; returns when it will have been sent."""
    sent = []
    timer = threading.Timer(SIGNAL_AFTER, lambda: (sent.append(time.monotonic()),
                                                   os.kill(os.getpid(), signal.SIGINT)))
    timer.start()
    return timer, sent


def interrupted(what, wait):
    """Rank 0: wait() blocks for a peer that is late; Ctrl-C must end it with KeyboardInterrupt."""
    timer, sent = interrupt_soon()
    try:
        wait()
        fail(f"{what}: returned although SIGINT came while it waited")
    except KeyboardInterrupt:
        took = time.monotonic() - sent[0]
        if took > PROMPT:
            fail(f"{what}: KeyboardInterrupt {took:.2f} s after SIGINT, want under {PROMPT} s")
        else:
            ok(f"{what}: KeyboardInterrupt {took:.2f} s after SIGINT")
    except tutti.Error as e:
        fail(f"{what}: tutti.Error {e.code} {e}, want KeyboardInterrupt")
    timer.join()


def aborted_peer(what, call):
    """Rank 1: arrives late; its call must fail promptly, naming rank 0's Ctrl-C."""
    time.sleep(PEER_LATE)
    began = time.monotonic()
    try:
        call()
        fail(f"{what}: the peer's call succeeded after rank 0 was interrupted")
    except tutti.Error as e:
        took = time.monotonic() - began
        if e.code != tutti.ErrorCode.ABORTED or "rank 0" not in str(e) or "SIGINT" not in str(e):
            fail(f"{what}: the peer got {e.code} {e}, want ABORTED naming rank 0 and SIGINT")
        elif took > PROMPT:
            fail(f"{what}: the peer's call failed only after {took:.2f} s")
        else:
            print(f"ok: {what}: rank 1's call failed after {took:.2f} s: {e}", flush=True)


def main():
    world = tutti.init()
    checks.rank = world.rank
    if world.size != 2:
        fail("run on 2 ranks")
        return 1
    plain, engine, own = world.dup(), world.dup(), world.dup()
    x = np.ones(4, np.float32)

    # A blocking allreduce (the fast path: a numpy array, no timeout).
    plain.barrier()
    if checks.rank == 0:
        interrupted("allreduce", lambda: plain.allreduce(x))
        try:
            plain.allreduce(x)
            fail("allreduce on the interrupted communicator succeeded")
        except tutti.Error as e:
            if e.code != tutti.ErrorCode.ABORTED:
                fail(f"the interrupted communicator then gave {e.code} {e}, want ABORTED")
    else:
        aborted_peer("allreduce", lambda: plain.allreduce(x))

    # A wait on the engine's handle (the engine is set up first, by both ranks).
    engine.allreduce_async("warm", np.ones(2, np.float32)).wait()
    if checks.rank == 0:
        handle = engine.allreduce_async("late", np.ones(2, np.float32))
        interrupted("Handle.wait", handle.wait)
    else:
        aborted_peer("allreduce_async", lambda: engine.allreduce_async(
            "late", np.ones(2, np.float32)).wait())

    # A handler of the program's own: the call is left to finish, the handler runs after it.
    own.barrier()
    caught = []
    previous = signal.signal(signal.SIGINT, lambda *_: caught.append(time.monotonic()))
    try:
        y = np.ones(4, np.float32)
        if checks.rank == 0:
            timer, _ = interrupt_soon()
            own.allreduce(y)
            timer.join()
            if not caught:
                fail("the program's own SIGINT handler did not run")
        else:
            time.sleep(2.0)
            own.allreduce(y)
        if y.tolist() != [2.0] * 4:
            fail(f"with a handler of the program's own, the allreduce gave {y.tolist()}")
        else:
            ok("a SIGINT handler of the program's own: the call completed, the handler ran")
    except tutti.Error as e:
        fail(f"with a handler of the program's own, the call failed: {e.code} {e}")
    finally:
        signal.signal(signal.SIGINT, previous)
    tutti.finalize()
    return 1 if checks.failures else 0


if __name__ == "__main__":
    sys.exit(main())
