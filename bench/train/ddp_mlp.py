#!/usr/bin/env python3
"""ddp_mlp.py - the PyTorch DDP (gloo) twin of gtrain's digits run, for bench/train/.

Same model (64-256-256-10, ReLU), same global batch (split equally over the ranks), same
optimizer (AdamW, lr 2e-3, betas 0.9/0.999, eps 1e-8, no weight decay), same data: the digits
CSV, gtrain's train/test split and per-epoch sample order (its splitmix64 shuffles, ported
below), inputs times 1/16. Rank 0 evaluates the test set after every epoch, as gtrain does,
inside the timed loop. Prints one line: "ddp: N ranks ... test accuracy A% ... S samples/s".
Rank and rendezvous from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (gpool sets them).
"""
import argparse
import gzip
import os
import subprocess
import time

import torch
import torch.distributed as dist
import torch.nn as nn

M = (1 << 64) - 1


def mlp(layers):
    """The MLP of a layer list ("64,256,256,10") as gtrain builds it: a Linear layer between each
    two sizes and a ReLU after every one but the last, created in that order (so that a seed
    gives the same weights in every script that builds it)"""
    sizes = [int(s) for s in layers.split(",")]
    mods = []
    for i in range(len(sizes) - 1):
        mods.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            mods.append(nn.ReLU())
    return nn.Sequential(*mods)


def splitmix(x):
    x = (x + 0x9E3779B97F4A7C15) & M
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M
    return x ^ (x >> 31)


def order(n, seed, epoch):
    """train/data.c gt_data_order"""
    s = splitmix(seed ^ splitmix((epoch + 0x51ED270B27) & M))
    perm = list(range(n))
    for i in range(n, 1, -1):
        s = splitmix(s)
        j = s % i
        perm[i - 1], perm[j] = perm[j], perm[i - 1]
    return perm


def split_counts(total, n):
    """train/shares.c gt_shares_split with equal weights"""
    base = [1 + (total - n) // n] * n
    for r in range((total - n) % n):
        base[r] += 1
    return base


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="digits.csv.gz")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=192)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--throttle", default="",
                    help="RANK:MS: that rank sleeps MS ms a row after forward (gtrain's --throttle)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    rank, size = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    if size > 1:
        if "GLOO_SOCKET_IFNAME" not in os.environ:
            # the test hosts' interface (gloo picks loopback from the host name otherwise)
            out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True,
                                 text=True).stdout
            for line in out.splitlines():
                f = line.split()
                if f[3].startswith("198.18.0."):
                    os.environ["GLOO_SOCKET_IFNAME"] = f[1]
        dist.init_process_group("gloo", rank=rank, world_size=size)
    rows = [list(map(float, l.split(","))) for l in gzip.open(a.data, "rt") if l.strip()]
    x_all = torch.tensor([r[:-1] for r in rows], dtype=torch.float32)
    y_all = torch.tensor([int(r[-1]) for r in rows], dtype=torch.long)
    n = len(rows)
    ntest = int(round(n * 0.2))
    perm = order(n, a.seed, M)  # epoch ~0: the split's own order
    tr, te = perm[: n - ntest], perm[n - ntest:]
    xtr, ytr, xte, yte = x_all[tr], y_all[tr], x_all[te], y_all[te]
    scale = 1.0 / float(xtr.abs().max())
    xtr, xte = xtr * scale, xte * scale
    torch.manual_seed(a.seed)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    net = nn.parallel.DistributedDataParallel(model) if size > 1 else model
    opt = torch.optim.AdamW(net.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.0)
    lossf = nn.CrossEntropyLoss()
    counts = split_counts(a.batch, size)
    slow_ms = 0.0
    if a.throttle:
        r, ms = a.throttle.split(":")
        slow_ms = float(ms) if int(r) == rank else 0.0
    first = sum(counts[:rank])
    spe = len(tr) // a.batch
    if size > 1:
        dist.barrier()
    t0 = time.time()
    acc = 0.0
    for epoch in range(a.epochs):
        p = order(len(tr), a.seed, epoch)
        for pos in range(spe):
            idx = p[pos * a.batch + first: pos * a.batch + first + counts[rank]]
            opt.zero_grad()
            loss = lossf(net(xtr[idx]), ytr[idx])
            if slow_ms:
                time.sleep(slow_ms * len(idx) / 1e3)
            loss.backward()
            opt.step()
        if rank == 0:
            with torch.no_grad():
                acc = (model(xte).argmax(1) == yte).float().mean().item()
    el = time.time() - t0
    if rank == 0:
        print("ddp: %d rank%s, %d steps, test accuracy %.2f%%, %.0f samples/s, %.2f s"
              % (size, "s" if size > 1 else "", spe * a.epochs, 100 * acc,
                 spe * a.epochs * a.batch / el, el), flush=True)
    if size > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
