#!/usr/bin/env python3
"""PyTorch's gloo allreduce (torch.distributed), timed like tutti-bench, as tutti's peer.

    bench/torch_gloo_bench.py [-np N] [-b 1M] [-e 64M] [-f 4] [-n 10] [-w 3] [-c 1] [--csv FILE]
    bench/torch_gloo_bench.py -np N --rank R --master ADDR:PORT [the options above]
    bench/torch_gloo_bench.py --ratio TUTTI.csv[,...] TORCH.csv[,...]

The first form starts N rank processes on this host (torch.multiprocessing, rendezvous on a free
127.0.0.1 port), runs an in-place float32 sum allreduce at every size from -b to -e (factor -f),
and prints nccl-tests' columns (size count type redop root time algbw busbw #wrong): per size -w
warm-up calls, then -n timed calls after a barrier; the slowest rank's time counts; busbw =
algbw * 2 (N-1) / N. With -c 1 every size is checked once against the exact sum first. --csv
writes tutti-bench's CSV columns (size,count,type,redop,root,nranks,time_us,algbw_gbps,busbw_gbps,
wrong), so the files line up with `tutti-bench --csv`.

With --rank R --master ADDR:PORT this process runs only rank R of the -np N ranks, for ranks on
different hosts or pods (one invocation per rank, e.g. under kubectl exec): they rendezvous at
tcp://ADDR:PORT, which rank 0 hosts (torch's TCPStore), so ADDR must be rank 0's address as the
others reach it. torch's gloo picks its interface from GLOO_SOCKET_IFNAME (else the address the
hostname resolves to). Rank 0 prints the table and writes --csv as the first form does; the other
ranks print nothing unless they fail.

With --case resnet50 (or TxS, e.g. 256x16K) it measures instead, as `tutti-bench engine` does,
steps per second of a gradient sync: (a) one blocking all_reduce per tensor in backward order and
(c) one all_reduce of the whole flat buffer (medians of --rounds rounds of -n steps).

Two processes cannot be interleaved call by call, so the ratio comes from alternating whole runs
(torch, tutti, torch, tutti, ...; see docs/PERFORMANCE.md): the second form pairs the i-th tutti
CSV with the i-th torch CSV (same sizes), computes tutti busbw / torch busbw per size and pair
(tutti's in-place column when the CSV has one), and prints the median ratio per size.

torch is not a dependency of tutti: without it the first form says how to get it and exits 2.
"""
import argparse
import csv
import datetime
import os
import socket
import statistics
import sys
import time


def parse_bytes(text):
    text = text.strip().upper()
    scale = 1
    for suffix, s in (("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            text, scale = text[:-1], s
            break
    return int(float(text) * scale)


def sizes(begin, end, factor):
    out, s = [], max(4, begin)
    while s <= end:
        out.append(s - s % 4)
        s = s * factor if factor > 1 else s + (1 << 20)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def resnet50_sizes():
    """torchvision ResNet-50's 161 parameter sizes (25,557,032 elements), in parameter order."""
    p = [64 * 3 * 7 * 7, 64, 64]
    inp = 64
    for layer, blocks in enumerate((3, 4, 6, 3)):
        width = 64 << layer
        for b in range(blocks):
            p += [width * inp, width, width, width * width * 9, width, width, width * 4 * width,
                  width * 4, width * 4]
            if b == 0:
                p += [width * 4 * inp, width * 4, width * 4]
            inp = width * 4
    return p + [1000 * 2048, 1000]


def case_sizes(text):
    if text == "resnet50":
        return resnet50_sizes()
    t, _, s = text.partition("x")
    return [parse_bytes(s) // 4] * int(t)


def parse_master(text):
    """ADDR:PORT (ADDR may be a bracketed IPv6 address) for --master, as argparse's type."""
    addr, sep, port = text.rpartition(":")
    if not sep or not addr or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"'{text}' is not ADDR:PORT (e.g. 198.18.1.10:29500)")
    return f"{addr}:{int(port)}"


# rank_main and steps_main run one rank of the job; rank 0 hands its result to report(), which
# is a queue's put under torch.multiprocessing and a local list when this process is one rank.
def steps_main(rank, args, init_method, report):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=args.np,
                            timeout=datetime.timedelta(seconds=args.timeout))
    sizes_ = case_sizes(args.case)
    flat = torch.ones(sum(sizes_), dtype=torch.float32)
    views, at = [], 0
    for n in sizes_:
        views.append(flat[at:at + n])
        at += n

    def per_tensor():
        for v in reversed(views):
            dist.all_reduce(v)

    def one_buffer():
        dist.all_reduce(flat)

    def timed(body, steps):
        dist.barrier()
        start = time.perf_counter()
        for _ in range(steps):
            body()
        t = torch.tensor([(time.perf_counter() - start) / steps], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    timed(per_tensor, 1)
    timed(one_buffer, 1)
    a, c = [], []
    for _ in range(args.rounds):
        a.append(1 / timed(per_tensor, args.n))
        c.append(1 / timed(one_buffer, args.n))
    if rank == 0:
        report((statistics.median(a), statistics.median(c), len(sizes_), sum(sizes_)))
    dist.barrier()
    dist.destroy_process_group()


def rank_main(rank, args, init_method, report):
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init_method, rank=rank, world_size=args.np,
                            timeout=datetime.timedelta(seconds=args.timeout))
    n = args.np
    rows = []
    for size in sizes(args.b, args.e, args.f):
        count = size // 4
        buf = torch.empty(count, dtype=torch.float32)
        wrong = 0
        if args.c:
            buf.fill_(rank + 1)
            dist.all_reduce(buf, op=dist.ReduceOp.SUM)
            wrong = int((buf != n * (n + 1) / 2).sum().item())
        buf.fill_(1.0)
        for _ in range(args.w):
            dist.all_reduce(buf)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.n):
            dist.all_reduce(buf)
        elapsed = (time.perf_counter() - start) / args.n
        stats = torch.tensor([elapsed, float(wrong)], dtype=torch.float64)
        dist.all_reduce(stats, op=dist.ReduceOp.MAX)
        rows.append((size, count, stats[0].item(), int(stats[1].item())))
    if rank == 0:
        report(rows)
    dist.barrier()
    dist.destroy_process_group()


def spawned(target, rank, args, init_method, queue):
    """A torch.multiprocessing child: one rank that reports through the parent's queue."""
    target(rank, args, init_method, queue.put)


def import_torch():
    """torch, or None after saying on stderr why it cannot be imported."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError as e:
        if os.path.isdir("/usr/lib/python3/dist-packages/torch") and \
                sys.executable != "/usr/bin/python3":
            print(f"torch_gloo_bench: {sys.executable} cannot import torch ({e}), but Debian's "
                  "python3-torch is installed: run this script with /usr/bin/python3",
                  file=sys.stderr)
        else:
            print(f"torch_gloo_bench: PyTorch is not installed ({e}). It is not a tutti "
                  "dependency; on Debian 12: apt-get install --no-install-recommends "
                  "python3-torch, then run this script with /usr/bin/python3", file=sys.stderr)
        return None
    if not dist.is_available() or not dist.is_gloo_available():
        print("torch_gloo_bench: this PyTorch has no gloo backend", file=sys.stderr)
        return None
    torch.set_num_threads(1)
    return torch


def run(args):
    torch = import_torch()
    if torch is None:
        return 2
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    init_method = f"tcp://127.0.0.1:{free_port()}"
    target = steps_main if args.case else rank_main
    procs = [ctx.Process(target=spawned, args=(target, r, args, init_method, queue))
             for r in range(args.np)]
    for p in procs:
        p.start()
    rows = queue.get()
    for p in procs:
        p.join(timeout=60)
    failed = [r for r, p in enumerate(procs) if p.exitcode != 0]
    if failed:
        print(f"torch_gloo_bench: ranks {failed} failed", file=sys.stderr)
        return 1
    return print_results(args, torch, rows)


def run_one_rank(args):
    """--rank/--master: this process is one rank; rank 0 prints what run() prints."""
    torch = import_torch()
    if torch is None:
        return 2
    results = []
    target = steps_main if args.case else rank_main
    target(args.rank, args, f"tcp://{args.master}", results.append)
    if args.rank != 0:
        return 0
    return print_results(args, torch, results[0])


def print_results(args, torch, rows):
    """Prints rank 0's result (and writes --csv); the exit code: 1 when a value was wrong."""
    n = args.np
    if args.case:
        a, c, tensors, elements = rows
        print(f"# torch {torch.__version__} gloo, case {args.case} ({tensors} float32 tensors, "
              f"{elements * 4 / (1 << 20):.1f} MiB), {n} ranks, {args.n} steps x {args.rounds} "
              f"rounds, medians")
        print(f"  {'(a) all_reduce per tensor':<28} {a:>12.1f}")
        print(f"  {'(c) one flat all_reduce':<28} {c:>12.1f}")
        return 0
    print(f"# torch {torch.__version__} gloo allreduce, {n} ranks, float32 sum, in place, "
          f"-n {args.n} -w {args.w}")
    print(f"# {'size':>10} {'count':>12} {'type':>8} {'redop':>6} {'root':>6} {'time':>10} "
          f"{'algbw':>7} {'busbw':>7} {'#wrong':>6}")
    print(f"# {'(B)':>10} {'(elements)':>12} {'':>8} {'':>6} {'':>6} {'(us)':>10} "
          f"{'(GB/s)':>7} {'(GB/s)':>7} {'':>6}")
    out = []
    for size, count, seconds, wrong in rows:
        algbw = size / seconds / 1e9
        busbw = algbw * 2 * (n - 1) / n
        print(f"  {size:>10} {count:>12} {'float':>8} {'sum':>6} {-1:>6} {seconds * 1e6:>10.1f} "
              f"{algbw:>7.2f} {busbw:>7.2f} {wrong:>6}")
        out.append({"size": size, "count": count, "type": "float", "redop": "sum", "root": -1,
                    "nranks": n, "time_us": f"{seconds * 1e6:.3f}", "algbw_gbps": f"{algbw:.4f}",
                    "busbw_gbps": f"{busbw:.4f}", "wrong": wrong})
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(out[0].keys()))
            w.writeheader()
            w.writerows(out)
    return 1 if any(r[3] for r in rows) else 0


def busbw_by_size(path, prefer_inplace):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("type", "float") == "float"
                and r.get("redop", "sum") == "sum"]
    key = "inplace_busbw_gbps" if prefer_inplace and rows and "inplace_busbw_gbps" in rows[0] \
        else "busbw_gbps"
    return {int(r["size"]): float(r[key]) for r in rows}


def ratio(args):
    tutti = args.ratio[0].split(",")
    torch_runs = args.ratio[1].split(",")
    if len(tutti) != len(torch_runs):
        print("torch_gloo_bench --ratio: give as many tutti CSVs as torch CSVs (one pair per round)",
              file=sys.stderr)
        return 2
    per_size = {}
    for a, b in zip(tutti, torch_runs):
        ours, theirs = busbw_by_size(a, True), busbw_by_size(b, False)
        for size in sorted(set(ours) & set(theirs)):
            if theirs[size] > 0:
                per_size.setdefault(size, []).append(ours[size] / theirs[size])
    print("| size | ratio tutti / torch gloo (median) | per round |")
    print("|---|---|---|")
    for size, values in sorted(per_size.items()):
        label = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        rounds = " / ".join(f"{v:.2f}" for v in values)
        print(f"| {label} | **{statistics.median(values):.2f}x** | {rounds} |")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-np", type=int, default=2,
                   help="ranks (processes): on this host, or in all with --rank")
    p.add_argument("--rank", type=int,
                   help="run only this rank of -np (0 <= R < N) in this process; needs --master")
    p.add_argument("--master", type=parse_master, metavar="ADDR:PORT",
                   help="with --rank: rendezvous at tcp://ADDR:PORT, hosted by rank 0")
    p.add_argument("-b", type=parse_bytes, default=parse_bytes("1M"), help="smallest size")
    p.add_argument("-e", type=parse_bytes, default=parse_bytes("64M"), help="largest size")
    p.add_argument("-f", type=int, default=4, help="size factor")
    p.add_argument("-n", type=int, default=10, help="timed calls per size")
    p.add_argument("-w", type=int, default=3, help="warm-up calls per size")
    p.add_argument("-c", type=int, default=1, help="check results (1) or not (0)")
    p.add_argument("--csv", help="write the rows to this CSV file")
    p.add_argument("--case", help="steps/s of a gradient sync instead: resnet50 or TxS")
    p.add_argument("--rounds", type=int, default=5, help="rounds for --case (median)")
    p.add_argument("--timeout", type=float, default=300,
                   help="seconds a rank waits for the others (rendezvous and each all_reduce; "
                        "torch's own default is 30 minutes)")
    p.add_argument("--ratio", nargs=2, metavar=("TUTTI_CSVS", "TORCH_CSVS"),
                   help="comma-separated CSV lists, one pair per round: print median ratios")
    args = p.parse_args()
    if args.ratio:
        return ratio(args)
    if args.np < 1:
        p.error("-np must be at least 1")
    if not 0 < args.timeout <= 86400:
        p.error("--timeout must be more than 0 and at most 86400 seconds")
    if (args.rank is None) != (args.master is None):
        p.error("--rank and --master go together: each process runs one rank of -np N and "
                "needs rank 0's ADDR:PORT")
    if args.rank is not None:
        if not 0 <= args.rank < args.np:
            p.error(f"--rank {args.rank} is not a rank of -np {args.np} (0 <= R < {args.np})")
        return run_one_rank(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
