# ddp_train.py: an ordinary PyTorch DDP script, as a user would write it for torchrun: the
# gloo backend, init_method="env://" (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), a small
# model, a few steps on data that differ per rank. Nothing in it knows gpool. Each rank prints
# where it ran and a hash of its parameters at the end: DDP averages the gradients, so every
# rank must end with the same parameters although each saw different data.
import hashlib
import os
import socket
import time

t0 = time.time()
import torch
import torch.distributed as dist
import torch.nn as nn

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
print(f"init rank {rank} of {world} host {socket.gethostname()} "
      f"after {time.time() - t0:.2f} s at {time.time():.3f}", flush=True)

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
data = torch.Generator().manual_seed(1000 + rank)  # each rank its own batches
for step in range(5):
    x = torch.randn(32, 16, generator=data)
    y = x.sum(dim=1, keepdim=True) + torch.randn(32, 1, generator=data)
    opt.zero_grad()
    loss = ((ddp(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    print(f"step {step} rank {rank} loss {loss.item():.6f}", flush=True)

h = hashlib.sha256()
for p in model.parameters():
    h.update(p.detach().numpy().tobytes())
print(f"params rank {rank} host {socket.gethostname()} sha256 {h.hexdigest()}", flush=True)
dist.barrier()
dist.destroy_process_group()
