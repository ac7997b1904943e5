#!/usr/bin/env python3
"""replica.py - one process of bench/gpu-share.sh on the card PyTorch sees first.

--mode infer: an inference replica. A stack of --layers Linear(H, H) + GELU layers in fp16
(H = --hidden), requests of --batch rows answered one at a time in a closed loop (a request is
sent when the previous answer is back on the host): each request's latency from its start to its
answer synchronised, for --seconds after the start barrier.
--mode train: a training process. An MLP (784-H-H-10, f32, AdamW) on random data kept on the
card, steps of --batch rows for --seconds after the barrier; samples/s.

Start barrier: after warming up, the process creates DIR/ready.N and waits for DIR/go, so that
every replica of a run measures the same interval. Prints one JSON line on stdout.
"""
import argparse
import json
import os
import time

import torch
import torch.nn as nn


def barrier(d, n):
    open(os.path.join(d, f"ready.{n}"), "w").close()
    go = os.path.join(d, "go")
    while not os.path.exists(go):
        time.sleep(0.005)


def infer(a):
    dev = torch.device("cuda")
    layers = []
    for _ in range(a.layers):
        layers += [nn.Linear(a.hidden, a.hidden), nn.GELU()]
    model = nn.Sequential(*layers).to(dev).half().eval()
    x = torch.randn(a.batch, a.hidden, device=dev, dtype=torch.float16)
    with torch.inference_mode():
        for _ in range(50):
            model(x).sum().item()
        torch.cuda.synchronize()
        barrier(a.sync, a.index)
        lat = []
        t0 = time.perf_counter()
        end = t0 + a.seconds
        while True:
            s = time.perf_counter()
            if s >= end:
                break
            model(x).sum().item()  # the answer back on the host
            lat.append(time.perf_counter() - s)
        wall = time.perf_counter() - t0
    lat.sort()
    n = len(lat)
    return {
        "mode": "infer", "index": a.index, "requests": n, "seconds": round(wall, 3),
        "rps": round(n / wall, 1),
        "p50_ms": round(1e3 * lat[n // 2], 3) if n else None,
        "p99_ms": round(1e3 * lat[min(n - 1, int(n * 0.99))], 3) if n else None,
        "mem_mb": torch.cuda.max_memory_allocated() >> 20,
    }


def train(a):
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    model = nn.Sequential(nn.Linear(784, a.hidden), nn.ReLU(), nn.Linear(a.hidden, a.hidden),
                          nn.ReLU(), nn.Linear(a.hidden, 10)).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.0)
    lossf = nn.CrossEntropyLoss()
    xs = torch.randn(64, a.batch, 784, device=dev)
    ys = torch.randint(0, 10, (64, a.batch), device=dev)

    def step(i):
        opt.zero_grad(set_to_none=True)
        loss = lossf(model(xs[i % 64]), ys[i % 64])
        loss.backward()
        opt.step()
        return loss

    for i in range(20):
        step(i)
    torch.cuda.synchronize()
    barrier(a.sync, a.index)
    t0 = time.perf_counter()
    end = t0 + a.seconds
    steps = 0
    while time.perf_counter() < end:
        for _ in range(10):
            loss = step(steps)
            steps += 1
        loss.item()
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    return {"mode": "train", "index": a.index, "steps": steps, "seconds": round(wall, 3),
            "samples_per_s": round(steps * a.batch / wall, 1), "loss": round(loss.item(), 4),
            "mem_mb": torch.cuda.max_memory_allocated() >> 20}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["infer", "train"], required=True)
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--sync", required=True)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--layers", type=int, default=12)
    a = p.parse_args()
    r = infer(a) if a.mode == "infer" else train(a)
    r["mps"] = bool(os.environ.get("CUDA_MPS_PIPE_DIRECTORY"))
    r["thread_pct"] = os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "")
    r["mem_limit"] = os.environ.get("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "")
    print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
