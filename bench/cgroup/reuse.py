#!/usr/bin/env python3
"""reuse.py: what a job's cgroup costs on v1, made new per job or taken again by a rename.

For N jobs, each a forked process that joins the group in the memory, cpuset, pids and freezer
hierarchies and exits (as a task does), three ways:
  new     mkdir in each hierarchy, cpuset.cpus/.mems and memory.limit_in_bytes written, rmdir
  rename  one group kept: renamed to the next job's name in each hierarchy (worker/node/cgroup.c's pool)
  rename+force_empty  the same, with memory.force_empty written before each rename
Prints wall and system time a job (this process's and its children's). Root, cgroup v1.
  usage: bench/cgroup/reuse.py [N]   (default 300)
"""
import os
import sys
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 300
B = "/sys/fs/cgroup"
C = ["memory", "cpuset", "pids", "freezer"]
TOP = "gpool-bench-reuse.%d" % os.getpid()


def wr(path, val):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, val.encode())
    finally:
        os.close(fd)


def rd(path):
    with open(path) as f:
        return f.read().strip()


def join_and_exit(name):
    pid = os.fork()
    if pid == 0:
        for c in C:
            wr(f"{B}/{c}/{TOP}/{name}/cgroup.procs", str(os.getpid()))
        os._exit(0)
    os.waitpid(pid, 0)


def setup(name):
    wr(f"{B}/cpuset/{TOP}/{name}/cpuset.cpus", "0")
    wr(f"{B}/cpuset/{TOP}/{name}/cpuset.mems", MEMS)
    wr(f"{B}/memory/{TOP}/{name}/memory.limit_in_bytes", "1000000000")


def measure(label, body):
    t0, c0 = time.perf_counter(), os.times()
    body()
    t1, c1 = time.perf_counter(), os.times()
    sys_s = (c1.system - c0.system) + (c1.children_system - c0.children_system)
    print(f"{label:20s} wall {(t1 - t0) / N * 1e6:8.0f} us a job, system {sys_s / N * 1e6:8.0f} us a job")


def new_each():
    for i in range(N):
        name = f"j{i}"
        for c in C:
            os.mkdir(f"{B}/{c}/{TOP}/{name}")
        setup(name)
        join_and_exit(name)
        for c in C:
            os.rmdir(f"{B}/{c}/{TOP}/{name}")


def renamed(force_empty):
    def body():
        prev = "pool"
        for c in C:
            os.mkdir(f"{B}/{c}/{TOP}/{prev}")
        setup(prev)
        for i in range(N):
            join_and_exit(prev)
            if force_empty:
                wr(f"{B}/memory/{TOP}/{prev}/memory.force_empty", "0")
            name = f"r{i}"
            for c in C:
                os.rename(f"{B}/{c}/{TOP}/{prev}", f"{B}/{c}/{TOP}/{name}")
            prev = name
        for c in C:
            os.rmdir(f"{B}/{c}/{TOP}/{prev}")
    return body


if os.geteuid() != 0 or not all(os.path.isdir(f"{B}/{c}") for c in C):
    sys.exit("reuse.py: needs root and cgroup v1 memory, cpuset, pids and freezer hierarchies")
MEMS = rd(f"{B}/cpuset/cpuset.mems")
for c in C:
    os.mkdir(f"{B}/{c}/{TOP}")
wr(f"{B}/cpuset/{TOP}/cpuset.cpus", rd(f"{B}/cpuset/cpuset.cpus"))
wr(f"{B}/cpuset/{TOP}/cpuset.mems", MEMS)
try:
    print(f"{N} jobs, {os.cpu_count()} CPUs, kernel {os.uname().release}")
    measure("new", new_each)
    measure("rename", renamed(False))
    measure("rename+force_empty", renamed(True))
finally:
    for c in C:
        os.rmdir(f"{B}/{c}/{TOP}")
