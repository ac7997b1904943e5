#!/usr/bin/env python3
"""torch_mlp.py - gtrain's single-rank run in PyTorch on one device, for bench/train/run-on-gpu.sh.

Same model (--layers, ReLU between), same global batch, same optimizer (AdamW, lr 2e-3, betas
0.9/0.999, eps 1e-8, no weight decay), same data: a CSV (gzip'd or plain, features then label),
gtrain's train/test split and per-epoch sample order (ddp_mlp.py's port of train/data.c),
inputs times 1/largest |value| of the training set, f32 (no TF32: PyTorch's default, as
gtrain's cuBLAS sgemm). The test set is evaluated after every epoch inside the timed loop, as
gtrain does; the sample orders are drawn before the clock starts (in Python they would cost
more than gtrain's C). Prints: "torch: ... test accuracy A%, S samples/s, T s".
With WORLD_SIZE > 1 (RANK, MASTER_ADDR, MASTER_PORT as torchrun sets them) it runs as one rank
of DistributedDataParallel over --dist-backend (gloo: the only one that lets several ranks
share one card), each rank taking its equal slice of every global batch, as gtrain's ranks do;
rank 0 evaluates and prints. TORCH_MLP_EPOCH_TIMES=1 prints the clock at the end of each epoch
(the first epoch holds PyTorch's start-up on the card: cuBLAS handle, kernels loaded on use).
"""
import argparse
import gzip
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_mlp import M, mlp, order  # noqa: E402


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        import pandas
        t = torch.tensor(pandas.read_csv(path, header=None).to_numpy(), dtype=torch.float32)
    except ImportError:
        rows = [list(map(float, l.split(","))) for l in opener(path, "rt") if l.strip()]
        t = torch.tensor(rows, dtype=torch.float32)
    return t[:, :-1].contiguous(), t[:, -1].long()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--layers", default="64,256,256,10")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=192)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dist-backend", default="gloo")
    a = ap.parse_args()
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    if world > 1:
        dist.init_process_group(a.dist_backend, init_method="env://")
    dev = torch.device(a.device)
    x_all, y_all = load(a.data)
    n = x_all.shape[0]
    ntest = int(round(n * 0.2))
    perm = order(n, a.seed, M)
    tr, te = torch.tensor(perm[: n - ntest]), torch.tensor(perm[n - ntest:])
    xtr, ytr, xte, yte = x_all[tr], y_all[tr], x_all[te], y_all[te]
    scale = 1.0 / float(xtr.abs().max())
    xtr, xte = (xtr * scale).to(dev), (xte * scale).to(dev)
    ytr, yte = ytr.to(dev), yte.to(dev)
    torch.manual_seed(a.seed)
    model = mlp(a.layers).to(dev)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    share = a.batch // world
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.0)
    lossf = nn.CrossEntropyLoss()
    spe = len(tr) // a.batch
    orders = [torch.tensor(order(len(tr), a.seed, e)[: spe * a.batch], device=dev)
              for e in range(a.epochs)]
    if dev.type == "cuda":
        torch.cuda.synchronize()
    t0 = time.time()
    acc = 0.0
    for epoch in range(a.epochs):
        p = orders[epoch]
        for pos in range(spe):
            first = pos * a.batch + rank * share
            idx = p[first:first + share]
            opt.zero_grad()
            loss = lossf(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
        if rank == 0:
            with torch.no_grad():
                acc = (model(xte).argmax(1) == yte).float().mean().item()
            if os.environ.get("TORCH_MLP_EPOCH_TIMES"):  # .item() above waited for the card
                print("torch: epoch %d done at %.4f s" % (epoch + 1, time.time() - t0), flush=True)
    if world > 1:
        dist.barrier()
    el = time.time() - t0
    if rank != 0:
        return
    print("torch: %d rank%s, %s %s, layers %s, batch %d, %d steps, test accuracy %.2f%%, %.0f samples/s, "
          "%.2f s" % (world, "s" if world > 1 else "", a.device, torch.cuda.get_device_name() if dev.type == "cuda" else "",
                      a.layers, a.batch, spe * a.epochs, 100 * acc, spe * a.epochs * a.batch / el,
                      el), flush=True)


if __name__ == "__main__":
    main()
