#!/usr/bin/env python3
"""torch_amp.py - the PyTorch baseline of bench/train/mixed-on-gpu.sh: the training step of an
MLP (ReLU between layers) as a practitioner writes it today, beside gt-step-bench.

Data resident on the card (8 synthetic batches taken in turn, as gt-step-bench), AdamW(lr 1e-3,
fused=True), zero_grad(set_to_none=True); --prec bf16/f16: torch.autocast with that type
(f16 with torch.amp.GradScaler), f32: IEEE f32 products (PyTorch's default), tf32:
torch.backends.cuda.matmul.allow_tf32 = True. --compile: torch.compile(model) (default mode),
compiled before the clock starts. Prints "torch: ... S samples/s ...".
--peak: the ceiling instead: a large bf16 matrix product's TFLOP/s on this card.
"""
import argparse
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_mlp import mlp  # noqa: E402


def peak(n=8192, reps=50):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        a @ b
    torch.cuda.synchronize()
    t0 = time.time()
    for _ in range(reps):
        a @ b
    torch.cuda.synchronize()
    el = time.time() - t0
    print("torch: peak bf16 matmul %dx%dx%d: %.1f TFLOP/s on %s" % (
        n, n, n, 2.0 * n ** 3 * reps / el / 1e12, torch.cuda.get_device_name()), flush=True)


def infer(layers):
    """gserve's comparison: eval forward of the model in f32 and bf16 (weights cast), a batch of 1
    and of 64, one synchronize a batch as gserve waits for each"""
    sizes = [int(s) for s in layers.split(",")]
    base = mlp(layers)
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        model = base.to("cuda", dt).eval()
        for n in (1, 64):
            x = torch.rand(n, sizes[0], device="cuda", dtype=dt)
            with torch.inference_mode():
                for _ in range(20):
                    model(x).float().softmax(-1).cpu()
                t0 = time.time()
                for _ in range(200):
                    model(x).float().softmax(-1).cpu()
                us = (time.time() - t0) / 200 * 1e6
            print("torch: infer %s %s: a batch of %d rows %.1f us" % (layers, str(dt).split(".")[1], n, us),
                  flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", default="784,4096,4096,10")
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--prec", default="bf16", choices=["f32", "tf32", "bf16", "f16"])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--peak", action="store_true")
    ap.add_argument("--infer", action="store_true")
    a = ap.parse_args()
    if a.peak:
        return peak()
    if a.infer:
        return infer(a.layers)
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = a.prec == "tf32"
    torch.backends.cudnn.allow_tf32 = a.prec == "tf32"
    sizes = [int(s) for s in a.layers.split(",")]
    torch.manual_seed(1)
    model = mlp(a.layers).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=0.0, fused=True)
    lossf = nn.CrossEntropyLoss()
    nb = 8
    xs = torch.rand(nb, a.batch, sizes[0], device=dev)
    proj = torch.rand(sizes[0], sizes[-1], device=dev) * 2 - 1
    ys = ((xs - 0.5) @ proj).argmax(-1)
    amp_dtype = {"bf16": torch.bfloat16, "f16": torch.float16}.get(a.prec)
    scaler = torch.amp.GradScaler("cuda", enabled=a.prec == "f16")
    fwd = torch.compile(model) if a.compile else model

    def step(i):
        x, y = xs[i % nb], ys[i % nb]
        with torch.autocast("cuda", dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = lossf(fwd(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    with torch.no_grad():
        l0 = lossf(model(xs[0]), ys[0]).item()
    tc = time.time()
    for i in range(a.warmup):
        step(i)
    torch.cuda.synchronize()
    tc = time.time() - tc
    t0 = time.time()
    for i in range(a.steps):
        step(a.warmup + i)
    torch.cuda.synchronize()
    el = time.time() - t0
    with torch.no_grad():
        l1 = lossf(model(xs[0]), ys[0]).item()
    print("torch: %s, layers %s, batch %d, %s%s, %d steps in %.3f s, %.0f samples/s, %.3f ms/step, "
          "loss %.4f -> %.4f, warm-up %.1f s (torch %s)" % (
              torch.cuda.get_device_name(), a.layers, a.batch, a.prec,
              ", compiled" if a.compile else "", a.steps, el, a.steps * a.batch / el,
              el * 1e3 / a.steps, l0, l1, tc, torch.__version__), flush=True)


if __name__ == "__main__":
    main()
