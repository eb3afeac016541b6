"""The hang report (TUTTI_STALL_REPORT) under the real tuttirun, judged by a driver that reads
tuttirun's output as it comes:

    stall_report_test.py skip TUTTIRUN PYTHON   4 ranks; rank 2 sleeps 8 s before the third
        allreduce while the others are in it. With TUTTI_STALL_REPORT=2, within 5 s of the others
        entering it one line (rank 0's) names rank 2, the call and its sequence number, and rank 2
        says that ranks 0, 1, 3 wait for it; the job then ends well.
    stall_report_test.py long TUTTIRUN PYTHON   4 ranks over TCP in one allreduce sized to take
        about 3 s here (up to 1 GiB a rank), every rank in it: with TUTTI_STALL_REPORT=0.5 the ranks
        look at it (an info line) and report nothing. Exit 77 (skipped) where even 1 GiB takes
        under 1.2 s.

    stall_report_test.py torchrun - PYTHON      skip's case under torchrun (PYTHON's torch 2.x,
        `-m torch.distributed.run`) with backend "tutti" and all_reduce on tensors: the same lines.

The ranks run this file too (argument "rank"). Prints "OK: ..." and exits 0, or "FAIL: ...".
"""
import os
import re
import subprocess
import sys
import time


def torch_rank_main():
    import torch
    import torch.distributed as dist

    import tutti.torch  # noqa: F401  registers backend "tutti"

    dist.init_process_group("tutti")
    rank = dist.get_rank()
    x = torch.ones(4)
    for call in range(1, 4):
        if call == 3:
            if rank == 2:
                time.sleep(8)
            else:
                print(f"[{rank}] entering allreduce #{call}", flush=True)
        dist.all_reduce(x)
    dist.destroy_process_group()


def rank_main(mode):
    if mode == "torchrun":
        torch_rank_main()
        return
    import numpy as np

    import tutti

    world = tutti.init()
    if mode == "skip":
        x = np.ones(4, np.float32)
        for call in range(1, 4):
            if call == 3:
                if world.rank == 2:
                    time.sleep(8)
                else:
                    print(f"entering allreduce #{call}", flush=True)
            world.allreduce(x, tutti.SUM)
    else:
        # A call that lasts about 3 s on this machine, whatever its speed: a 64 MiB allreduce
        # times the link (the slowest rank's time, which all share), then the long one is sized
        # from it, in place, up to 1 GiB a rank.
        probe = np.ones(16 << 20, np.float32)
        world.barrier()
        started = time.monotonic()
        world.allreduce(probe, tutti.SUM, out=probe)
        took = world.allreduce(np.array([time.monotonic() - started]), tutti.MAX)[0]
        count = int(min(3.0 / max(took, 1e-6) * probe.size, 256 << 20))
        expected = took * count / probe.size
        if expected < 1.2:
            if world.rank == 0:
                print(f"TOO FAST: 1 GiB would take {expected:.2f} s here", flush=True)
            tutti.finalize()
            return
        del probe
        x = np.ones(count, np.float32)
        world.barrier()
        print("entering the long allreduce", flush=True)
        started = time.monotonic()
        world.allreduce(x, tutti.SUM, out=x)
        print(f"the long allreduce took {time.monotonic() - started:.1f} s", flush=True)
    tutti.finalize()


def fail(message, lines):
    print("\n".join(text for _, text in lines))
    print(f"FAIL: {message}")
    sys.exit(1)


def driver(mode, tuttirun, python):
    env = dict(os.environ)
    env["TUTTI_STALL_REPORT"] = "0.5" if mode == "long" else "2"
    command = [tuttirun, "-np", "4", "--", python, os.path.abspath(__file__), "rank", mode]
    if mode == "torchrun":
        command = [python, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "4",
                   os.path.abspath(__file__), "rank", mode]
    if mode == "long":
        # Over TCP 256 MiB take seconds here; info shows the watch's look at the call.
        env["TUTTI_TRANSPORT"] = "tcp"
        env["TUTTI_LOG_LEVEL"] = "info"
    start = time.monotonic()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
    lines = []
    for text in process.stdout:
        lines.append((time.monotonic() - start, text.rstrip("\n")))
    rc = process.wait(timeout=120)
    if rc != 0:
        fail(f"tuttirun exited {rc}", lines)
    stalls = [(t, text) for t, text in lines if "stall:" in text]
    if mode == "long":
        # (A rank still starting while another waits in the first barrier is a real stall.)
        fast = [text for _, text in lines if "TOO FAST" in text]
        if fast:
            print(f"SKIP: no allreduce lasts long enough here to be looked at ({fast[0]})")
            sys.exit(77)
        took = [text for _, text in lines if "the long allreduce took" in text]
        looked = [text for _, text in lines if "allreduce #5" in text and "not a stall" in text]
        if [text for _, text in stalls if "allreduce #5" in text]:
            fail("a long call that every rank was in was reported as a stall", lines)
        if not looked:
            fail("no rank looked at the long allreduce (it took less than TUTTI_STALL_REPORT?)",
                 lines)
        print("\n".join(took + looked[:1]))
        print("OK: a long allreduce that every rank was in was looked at and not reported")
        return
    # (torchrun passes the ranks' output through unprefixed: two ranks' lines may share one.)
    entered = [t for t, text in lines for _ in range(text.count("entering allreduce #3"))]
    if len(entered) != 3:
        fail(f"{len(entered)} ranks said they entered allreduce #3, 3 expected", lines)
    waiting = [(t, text) for t, text in stalls if "has waited" in text]
    if len(waiting) != 1:
        fail(f"{len(waiting)} lines named the missing rank, one expected", lines)
    at, text = waiting[0]
    # Under torchrun the process group's calls are numbered by the communicator (init makes some).
    call = r"allreduce #\d+" if mode == "torchrun" else "allreduce #3"
    if "tutti rank 0 warn" not in text or not re.search(call + r" .*for rank 2 \(host ", text) \
            or "ranks 0, 1, 3 are in it" not in text:
        fail(f"the report is not rank 0's naming {call}, rank 2 and ranks 0, 1, 3: {text}",
             lines)
    delay = at - max(entered)
    if delay > 5:
        fail(f"the report came {delay:.1f} s after the last rank entered, 5 s at most", lines)
    own = [text for _, text in stalls if "tutti rank 2 warn" in text
           and re.search("wait in " + call, text) and "ranks 0, 1, 3" in text
           and "for this rank" in text]
    if len(own) != 1:
        fail("rank 2 did not say once that ranks 0, 1, 3 wait for it in allreduce #3", lines)
    print(text)
    print(own[0])
    print(f"OK: rank 2 named {delay:.1f} s after the others entered allreduce #3 "
          f"(TUTTI_STALL_REPORT=2, {mode}), and rank 2 said the others wait for it")


if __name__ == "__main__":
    if sys.argv[1] == "rank":
        rank_main(sys.argv[2])
    else:
        driver(sys.argv[1], sys.argv[2], sys.argv[3])
