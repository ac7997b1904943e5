#!/usr/bin/python3
"""gloo_allreduce.py — PyTorch torch.distributed (gloo) all_reduce benchmark, nccl-tests style.

The gloo rival of gcomm-bench in the side-by-side benchmark (bench/comm/README.md); the same
method and output columns as mpi_allreduce.c:

  size_bytes count time_us algbw_GBps busbw_GBps check

For each size from --min to --max (doubling): every rank fills a float32 tensor with
rank-dependent small integers (exact in float); warm-up, then timed iterations, each preceded by a
barrier; an iteration's time is the slowest rank's, the reported time the median over iterations;
algbw = bytes / time, busbw = algbw * 2(n-1)/n (GB/s = 1e9 bytes/s); the last result is checked
against the exact sum. all_reduce is in place, so the tensor is refilled (outside the timing)
before every iteration. Big sizes get fewer iterations (about --size-time seconds per size, at
least --min-iters).

Run one process per host with env:// initialisation:
  MASTER_ADDR=198.18.0.201 MASTER_PORT=29500 RANK=r WORLD_SIZE=n \
  GLOO_SOCKET_IFNAME=eth0 python3 gloo_allreduce.py --json out.json
Use Debian's interpreter (/usr/bin/python3) for Debian's python3-torch.
"""
import argparse
import datetime
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist


def parse_size(s):
    s = s.strip()
    if s[-1:] in "bB":
        s = s[:-1]
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    if s and s[-1].lower() in mult:
        return int(s[:-1]) * mult[s[-1].lower()]
    return int(s)


def periodic(vals17, count):
    """a float32 tensor of count elements, element i = vals17[i % 17]"""
    reps = (count + 16) // 17
    return torch.tensor(vals17, dtype=torch.float32).repeat(reps)[:count].contiguous()


def fill(rank, count):
    # value(r, i) = ((7i + 3r) mod 17) + 1, as in mpi_allreduce.c (period 17 in i)
    return periodic([(i * 7 + rank * 3) % 17 + 1 for i in range(17)], count)


def expected(nranks, count):
    return periodic([sum((i * 7 + r * 3) % 17 + 1 for r in range(nranks)) for i in range(17)], count)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--min", default="8", type=parse_size)
    ap.add_argument("--max", default="256M", type=parse_size)
    ap.add_argument("--iters", default=20, type=int)
    ap.add_argument("--warmup", default=5, type=int)
    ap.add_argument("--min-iters", default=5, type=int)
    ap.add_argument("--size-time", default=2.0, type=float)
    ap.add_argument("--json", default=None)
    ap.add_argument("--label", default="gloo")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--timeout", default=600, type=float, help="process group timeout (s)")
    a = ap.parse_args()
    a.min = max(a.min, 4)
    a.min_iters = min(a.min_iters, a.iters)

    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=a.timeout))
    rank, n = dist.get_rank(), dist.get_world_size()

    def tmax(x):
        """max over ranks of a list of floats (float64)"""
        t = torch.tensor(x, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()

    if rank == 0:
        now = datetime.datetime.now().astimezone().strftime("%Y-%m-%dT%H:%M:%S%z")
        print(f"# gloo_allreduce ({a.label}): torch {torch.__version__} gloo all_reduce float sum, "
              f"in-place, nranks={n}, {now}")
        print(f"# iters<={a.iters} warmup<={a.warmup} min-iters={a.min_iters} "
              f"size-time={a.size_time:.1f}s; time = median over iterations of the slowest rank "
              f"(barrier before each)")
        print("# busbw = algbw * 2(n-1)/n; GB/s = 1e9 bytes/s")
        print("#%11s %11s %11s %11s %11s %7s" % ("size_bytes", "count", "time_us", "algbw_GBps",
                                                 "busbw_GBps", "check"))
        sys.stdout.flush()

    # Buffers of the largest size, allocated and touched once; every size uses their prefix
    # (the fill pattern is periodic in the index, so a prefix is that size's own data).
    maxcount = a.max // 4
    src_all = fill(rank, maxcount)
    buf_all = torch.empty_like(src_all)
    buf_all.copy_(src_all)
    exp_all = None if a.no_check else expected(n, maxcount)

    rows, failed = [], False
    size = a.min
    while size <= a.max:
        count = size // 4
        src = src_all[:count]
        buf = buf_all[:count]

        est, warm = 0.0, max(a.warmup, 1)
        for w in range(warm):
            buf.copy_(src)
            t0 = time.perf_counter()  # the budget counts the barrier too
            dist.barrier()
            dist.all_reduce(buf, op=dist.ReduceOp.SUM)
            dt = time.perf_counter() - t0
            est = tmax([dt])[0]  # every rank takes the same decision
            if (w + 1) * est > a.size_time / 2:
                break
        iters = a.iters
        if est > 0 and iters * est > a.size_time:
            iters = max(a.min_iters, int(a.size_time / est))

        times = []
        for _ in range(iters):
            buf.copy_(src)
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(buf, op=dist.ReduceOp.SUM)
            times.append(time.perf_counter() - t0)
        times = tmax(times)
        med = statistics.median(times)
        algbw = size / med / 1e9
        busbw = algbw * 2 * (n - 1) / n

        if a.no_check:
            check = "skip"
        else:
            exp = exp_all[:count]
            e = 0 if torch.equal(buf, exp) else int((buf != exp).sum())
            errs = torch.tensor([e], dtype=torch.int64)
            dist.all_reduce(errs, op=dist.ReduceOp.SUM)
            e = int(errs.item())
            check = "ok" if e == 0 else f"FAIL({e})"
            failed |= e != 0
        row = {"size_bytes": size, "count": count, "time_us": med * 1e6, "algbw_GBps": algbw,
               "busbw_GBps": busbw, "check": check, "iters": iters,
               "time_us_min": min(times) * 1e6, "time_us_max": max(times) * 1e6}
        rows.append(row)
        if rank == 0:
            print("%12d %11d %11.1f %11.2f %11.2f %7s" % (size, count, med * 1e6, algbw, busbw, check))
            sys.stdout.flush()
        size *= 2

    if rank == 0 and a.json:
        doc = {"tool": "gloo_allreduce", "label": a.label, "op": "allreduce", "dtype": "float32",
               "redop": "sum", "nranks": n, "host": socket.gethostname(),
               "torch": torch.__version__,
               "gloo_socket_ifname": os.environ.get("GLOO_SOCKET_IFNAME", ""),
               "time": "median over iterations of the slowest rank, barrier before each",
               "rows": rows}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    dist.barrier()
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
