#!/usr/bin/python3
"""faults.py: the soak's seeded fault schedule, and the runner that carries it out (issue 39).

`faults.py plan --seed N --duration S` prints the schedule the seed makes: the same seed,
duration, host count and kinds always give the same schedule (Python's random.Random(seed),
nothing else), so a failing run is replayed from the seed it printed. `faults.py run ...` carries
the schedule out against a gpool-cluster (root) and records each fault's begin and end, and a
sample of the schedulers' roles every second, to a JSONL file for checker.py.

Faults run in lanes, each lane one fault at a time, the lanes at once: "several faults together,
never more than the design claims to survive at once" (docs/reliability.md, "The soak"):
  sched  the leader killed (SIGKILL, started again later) or its link cut (healed later): one
         scheduler of three at a time, so a majority always remains
  host   one host's agent killed (started again within 4 s), its link cut (healed later), or its
         scratch file system filled (emptied later): one host of four at a time, so the others
         are more than half of the members
  owner  a PC's owner back (the file source's owner-active), any host, one at a time
What the schedule names is abstract ("the leader", "h3"); which scheduler led when the fault
began is resolved then and recorded.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time

LANES = {
    "sched": ["sched_kill", "leader_cut"],
    "host": ["agent_kill", "host_cut", "disk_full"],
    "owner": ["owner_back"],
}
# seconds a fault lasts (uniform between), and the quiet after it before its lane's next
DURATION = {
    "sched_kill": (3, 10),
    "leader_cut": (6, 15),
    # shorter than node_timeout (7 s) less a heartbeat and the restart: an agent away longer
    # makes its node DOWN while its tasks run on with nobody to fence them, which the design
    # does not survive (docs/reliability.md, "Found by the soak")
    "agent_kill": (1.5, 4),
    "host_cut": (4, 16),
    "disk_full": (5, 15),
    "owner_back": (4, 12),
}
GAP = {"sched": (8, 16), "host": (4, 12), "owner": (4, 14)}
ALL_KINDS = [k for ks in LANES.values() for k in ks]


def plan(seed, duration, hosts, kinds, warmup=8.0, tail=4.0):
    """[{at, kind, target, dur}] sorted by at; every fault ends by duration - tail"""
    rng = random.Random(seed)
    out = []
    for lane in LANES:  # fixed order: the schedule depends on the seed only
        lk = [k for k in LANES[lane] if k in kinds]
        t = warmup + rng.uniform(0, GAP[lane][1])
        while lk:
            kind = rng.choice(lk)
            dur = round(rng.uniform(*DURATION[kind]), 1)
            if t + dur > duration - tail:
                break
            target = "leader" if lane == "sched" else f"h{rng.randint(1, hosts)}"
            out.append({"at": round(t, 1), "kind": kind, "target": target, "dur": dur})
            t += dur + rng.uniform(*GAP[lane])
    out.sort(key=lambda f: (f["at"], f["kind"]))
    return out


def print_plan(seed, schedule, out):
    print(f"# fault schedule of seed {seed}: {len(schedule)} faults", file=out)
    for f in schedule:
        print(f"#   {f['at']:7.1f} s  {f['kind']:<11} {f['target']:<7} for {f['dur']:.1f} s", file=out)


class Runner:
    def __init__(self, a):
        self.a = a
        self.cluster = a.gpool_cluster
        self.dir = a.cluster_dir
        env = {}
        with open(os.path.join(self.dir, "cluster.env")) as f:
            for line in f:
                if "=" in line:
                    k, v = line.strip().split("=", 1)
                    env[k] = v.strip("'\"")
        self.slot = int(env.get("SLOT", "0") or 0)
        self.nsched = int(env.get("SCHEDULERS", "0") or 0)
        self.out = open(a.out, "a", buffering=1)
        self.mu = threading.Lock()
        self.cut_scheds = set()
        self.stop = threading.Event()

    def rec(self, **e):
        e.setdefault("t", time.time())
        with self.mu:
            self.out.write(json.dumps(e, sort_keys=True) + "\n")

    def sh(self, *argv):
        p = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            print(f"faults: '{' '.join(argv)}' exit {p.returncode}: {p.stderr.strip()[-200:]}", file=sys.stderr)
        return p.returncode, p.stdout.strip()

    def gc(self, *args):
        return self.sh(self.cluster, args[0], "--dir", self.dir, *args[1:])

    def veth(self, host):
        return f"gpv-{host}" if self.slot == 0 else f"gpv{self.slot}-{host}"

    def leader(self):
        rc, out = self.gc("sched-leader")
        return out if rc == 0 and out else None

    def scratch(self, host):
        rc, out = self.gc("path", host, "scratch")
        return out

    def state(self, host):
        rc, out = self.gc("path", host, "state")
        return out

    def begin(self, f):
        kind, target = f["kind"], f["target"]
        if target == "leader":
            target = self.leader()
            waited = time.time()
            while target is None and time.time() - waited < 10:  # an election under way
                time.sleep(0.5)
                target = self.leader()
            if target is None:
                self.rec(ev="fault", kind=kind, target=None, phase="skipped", why="no leader")
                return None
        # recorded before it is done: the checker's windows start no later than the fault
        self.rec(ev="fault", kind=kind, target=target, phase="begin", dur=f["dur"])
        if kind == "sched_kill":
            self.gc("sched-kill", target, "KILL")
        elif kind == "leader_cut":
            with self.mu:
                self.cut_scheds.add(target)
            self.gc("sched-cut", target)
        elif kind == "agent_kill":
            self.gc("agent-kill", target, "KILL")
        elif kind == "host_cut":
            self.sh("ip", "link", "set", self.veth(target), "down")
        elif kind == "disk_full":
            self.gc("exec", target, "sh", "-c", f"dd if=/dev/zero of='{self.scratch(target)}/soak-filler' bs=1M 2>/dev/null; sync; df -h '{self.scratch(target)}' | tail -n 1")
        elif kind == "owner_back":
            self.gc("exec", target, "touch", f"{self.state(target)}/owner-active")
        return target

    def end(self, f, target):
        kind = f["kind"]
        if kind == "sched_kill":
            self.gc("sched-start", target)
        elif kind == "leader_cut":
            self.gc("sched-heal", target)
        elif kind == "agent_kill":
            self.gc("agent-start", target)
        elif kind == "host_cut":
            self.sh("ip", "link", "set", self.veth(target), "up")
        elif kind == "disk_full":
            self.gc("exec", target, "rm", "-f", f"{self.scratch(target)}/soak-filler")
        elif kind == "owner_back":
            self.gc("exec", target, "rm", "-f", f"{self.state(target)}/owner-active")
        # recorded after it is undone: the windows end no earlier than the fault
        self.rec(ev="fault", kind=kind, target=target, phase="end")
        if kind == "leader_cut":
            with self.mu:
                self.cut_scheds.discard(target)

    def roles(self):
        while not self.stop.is_set():
            r = {}
            for k in range(1, self.nsched + 1):
                d = os.path.join(self.dir, f"s{k}")
                alive = False
                try:
                    pid = int(open(os.path.join(d, "gschedd.pid")).read().split()[0])
                    os.kill(pid, 0)
                    alive = open(f"/proc/{pid}/stat").read().split()[2] != "Z"
                except (OSError, ValueError, IndexError):
                    pass
                try:
                    role = open(os.path.join(d, "state", "role")).read().strip() if alive else "dead"
                except OSError:
                    role = "unknown"
                r[f"s{k}"] = role
            with self.mu:
                cut = sorted(self.cut_scheds)
            self.rec(ev="roles", roles=r, cut=cut)
            self.stop.wait(1.0)

    def run(self, schedule):
        t0 = time.time()
        self.rec(ev="meta", seed=self.a.seed, schedule=schedule, lease_s=self.a.lease, kill_grace_s=self.a.kill_grace,
                 node_timeout_s=self.a.node_timeout, heartbeat_s=self.a.heartbeat, started=t0)
        sampler = threading.Thread(target=self.roles)
        if self.nsched:
            sampler.start()
        actions = []
        for i, f in enumerate(schedule):
            actions.append((f["at"], 0, i))
            actions.append((f["at"] + f["dur"], 1, i))
        actions.sort()
        targets = {}
        counts = {}
        for at, what, i in actions:
            delay = t0 + at - time.time()
            if delay > 0:
                time.sleep(delay)
            f = schedule[i]
            if what == 0:
                targets[i] = self.begin(f)
                if targets[i] is not None:
                    counts[f["kind"]] = counts.get(f["kind"], 0) + 1
            elif targets.get(i) is not None:
                self.end(f, targets[i])
        left = t0 + self.a.duration - time.time()
        if left > 0:
            time.sleep(left)
        self.stop.set()
        if self.nsched:
            sampler.join()
        print(f"faults: {sum(counts.values())} injected: "
              f"{' '.join(f'{k} {v}' for k, v in sorted(counts.items())) or 'none'}", flush=True)
        return 0


def main():
    ap = argparse.ArgumentParser(description="the soak's seeded faults (docs/reliability.md)")
    ap.add_argument("cmd", choices=["plan", "run"])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--duration", type=float, required=True, help="seconds")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--kinds", default=",".join(ALL_KINDS), help=f"comma-separated, of {','.join(ALL_KINDS)}")
    ap.add_argument("--cluster-dir", help="run: the gpool-cluster's directory")
    ap.add_argument("--gpool-cluster", default="gpool-cluster", help="run: the gpool-cluster script")
    ap.add_argument("--out", help="run: the JSONL file faults and role samples go to")
    ap.add_argument("--lease", type=float, default=5.0, help="run: the agents' lease, seconds (for the checker)")
    ap.add_argument("--kill-grace", type=float, default=5.0, help="run: the kill grace, seconds (for the checker)")
    ap.add_argument("--node-timeout", type=float, default=7.0, help="run: node_timeout, seconds (for the checker)")
    ap.add_argument("--heartbeat", type=float, default=1.0, help="run: the heartbeat, seconds (for the checker)")
    a = ap.parse_args()
    kinds = [k for k in a.kinds.split(",") if k]
    bad = [k for k in kinds if k not in ALL_KINDS]
    if bad:
        ap.error(f"unknown fault kind '{bad[0]}'")
    schedule = plan(a.seed, a.duration, a.hosts, kinds)
    print_plan(a.seed, schedule, sys.stdout)
    if a.cmd == "plan":
        return 0
    if not a.cluster_dir or not a.out:
        ap.error("run needs --cluster-dir and --out")
    return Runner(a).run(schedule)


if __name__ == "__main__":
    sys.exit(main())
