#!/usr/bin/env python3
"""fairshare_usage.py [--at T] [--cpus]: from `gstat --json -a` on stdin, the seconds each user's
jobs ran (the completed ones whole, the running ones up to T, default now), one "USER SECONDS"
line each, sorted by user. --cpus: CPU-seconds (times ntasks x cpus_per_task) instead."""
import json
import sys
import time

at = time.time()
cpus = False
args = sys.argv[1:]
while args:
    a = args.pop(0)
    if a == "--at":
        at = float(args.pop(0))
    elif a == "--cpus":
        cpus = True
jobs = json.load(sys.stdin).get("jobs", [])
use = {}
for j in jobs:
    start = float(j.get("start_time") or 0)
    if start <= 0 or start > at:
        continue
    end = float(j.get("end_time") or 0)
    if end <= 0 or end > at:
        end = at
    w = 1
    if cpus:
        sp = j.get("spec", {})
        w = max(1, int(sp.get("ntasks") or 1)) * max(1, int(sp.get("cpus_per_task") or 1))
    u = j.get("user", "?")
    use[u] = use.get(u, 0.0) + max(0.0, end - start) * w
for u in sorted(use):
    print("%s %.1f" % (u, use[u]))
