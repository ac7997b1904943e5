#!/usr/bin/python3
"""privtmp-enter.py: what a job's own /tmp adds to each task's start, alone (docs/benchmarks/
security.md). A task's child does, before it execs, what worker/stepd/privtmp.c's
step_privtmp_enter does: unshare(CLONE_NEWNS), "/" made MS_REC|MS_SLAVE, one path bound back
(the scratch directory) and three directories bound over /tmp, /var/tmp and /dev/shm. This
forks N children that do that and exit, against N that only exit, alternating in blocks so the
machine's load falls on both alike, and prints each one's mean and median per child in
microseconds and their difference: up to the child being ready to exec (a task's start) and up
to its exit being reaped (the namespace's teardown, at a task's end). Root only (mounts)."""
import ctypes
import os
import statistics
import sys
import tempfile
import time

CLONE_NEWNS = 0x00020000
MS_BIND, MS_REC, MS_SLAVE = 4096, 16384, 1 << 19

libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p] * 3 + [ctypes.c_ulong, ctypes.c_void_p]


def enter(dirs, keep_src, keep_at):
    if libc.unshare(CLONE_NEWNS) < 0:
        return 1
    if libc.mount(None, b"/", None, MS_REC | MS_SLAVE, None) < 0:
        return 2
    if libc.mount(keep_src, keep_at, None, MS_BIND | MS_REC, None) < 0:
        return 3
    for src, dst in dirs:
        if libc.mount(src, dst, None, MS_BIND | MS_REC, None) < 0:
            return 4
    return 0


def one(work):
    """(fork to the child ready to exec, fork to its exit reaped) in microseconds"""
    r, w = os.pipe()
    t0 = time.perf_counter_ns()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        rc = work() if work else 0
        os.write(w, b"x")
        os._exit(rc)
    os.close(w)
    os.read(r, 1)
    t1 = time.perf_counter_ns()
    os.close(r)
    _, st = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(st) != 0:
        sys.exit(f"child failed: {os.waitstatus_to_exitcode(st)}")
    return (t1 - t0) / 1000, (time.perf_counter_ns() - t0) / 1000


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    root = tempfile.mkdtemp(prefix="gp-privtmp-bench.", dir="/var/tmp")
    dirs = []
    for node, name in (("/tmp", "tmp"), ("/var/tmp", "var-tmp"), ("/dev/shm", "shm")):
        d = os.path.join(root, name)
        os.mkdir(d)
        dirs.append((d.encode(), node.encode()))
    keep = os.path.join(root, "var-tmp", os.path.basename(root))
    os.mkdir(keep)
    work = lambda: enter(dirs, root.encode(), keep.encode())
    plain, private = [], []
    for _ in range(n // 100):
        plain += [one(None) for _ in range(100)]
        private += [one(work) for _ in range(100)]
    os.system(f"rm -rf {root}")
    with open("/proc/self/mountinfo") as f:
        mounts = sum(1 for _ in f)
    print(f"{len(plain)} children each, {mounts} mounts in the namespace, "
          f"{os.cpu_count()} CPUs, load {open('/proc/loadavg').read().split()[0]}")
    for i, what in ((0, "ready to exec"), (1, "exited and reaped")):
        a = [x[i] for x in plain]
        b = [x[i] for x in private]
        print(f"fork to {what}: plain mean {statistics.mean(a):.1f} us, median "
              f"{statistics.median(a):.1f} us; with privtmp mean {statistics.mean(b):.1f} us, "
              f"median {statistics.median(b):.1f} us; privtmp adds median "
              f"{statistics.median(b) - statistics.median(a):.1f} us")


if __name__ == "__main__":
    main()
