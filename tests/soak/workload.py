#!/usr/bin/python3
"""workload.py: the soak's clients, recording every call they make (issue 39).

Run as the submitting user, with gsub, gstat, gcancel and glogs on PATH and the cluster in
GPOOL_SCHEDULER / GPOOL_CONF. For --duration seconds CLIENTS threads submit jobs (plain ones,
ones that depend on an earlier job of theirs, ones they cancel a little later), an observer
runs `gstat --json -a` every second, then the drain waits for every acknowledged job to end,
records gstat's last word on each and what glogs prints of each.

Every call goes to DIR/history.jsonl as one line with its invoke and complete times and its
outcome (checker.py says which events). Each job runs task.sh, which appends its own start,
ticks and end to DIR/tasks.jsonl and prints one line, `soak-out NAME HASH`, HASH the first 16
hex digits of the SHA-1 of NAME: computed here again, never read back from gpool, to check
the output. The same --seed makes the same submissions (kinds, durations, cancel delays) in
the same order per client; when each happens depends on the cluster.
"""

import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}
CALL_TIMEOUT = 150  # seconds: past gsub's own 60 s of retries, a call is recorded unknown


class History:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1)
        self.mu = threading.Lock()

    def add(self, **e):
        with self.mu:
            self.f.write(json.dumps(e, sort_keys=True) + "\n")


def call(argv, timeout=CALL_TIMEOUT):
    t0 = time.time()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = None, (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or ""), "timed out"
    return t0, time.time(), rc, out, err


def expected(name):
    return f"soak-out {name} {hashlib.sha1(name.encode()).hexdigest()[:16]}"


class Workload:
    def __init__(self, a):
        self.a = a
        self.h = History(os.path.join(a.dir, "history.jsonl"))
        self.stop = threading.Event()
        self.acked = {}  # id -> name
        self.mu = threading.Lock()

    def submit(self, client, seq, rng, after):
        name = f"soak-{client}-{seq}"
        kind = "plain"
        r = rng.random()
        secs = rng.randint(1, self.a.max_secs)
        if r < 0.15:
            kind, secs = "cancel", 30
        elif r < 0.35 and after is not None:
            kind = "dep"
        argv = ["gsub", "--parsable", "-J", name, "-n", "1"]
        if kind == "dep":
            argv += ["-d", f"afterok:{after}"]
        argv += ["--", "/bin/sh", self.a.task, name, str(secs)]
        t0, t1, rc, out, err = call(argv)
        out = out.strip()
        e = {"ev": "submit", "client": client, "seq": seq, "name": name, "kind": kind, "secs": secs,
             "invoke": t0, "complete": t1, "expect": expected(name)}
        if kind == "dep":
            e["after"] = after
        if rc == 0 and re.fullmatch(r"[0-9]+", out):
            e.update(outcome="ok", id=int(out))
            with self.mu:
                self.acked[int(out)] = name
        else:
            e.update(outcome="unknown", rc=rc, err=(err or out).strip()[-300:])
        self.h.add(**e)
        return e, kind, rng.uniform(2, 6)

    def cancel(self, jid):
        t0, t1, rc, out, err = call(["gcancel", str(jid)])
        self.h.add(ev="cancel", id=jid, invoke=t0, complete=t1, outcome="ok" if rc == 0 else "unknown",
                   rc=rc, err=err.strip()[-300:])

    def client(self, n):
        client = f"c{n}"
        rng = random.Random(f"{self.a.seed}/{client}")
        seq, last_ok, pending_cancels = 0, None, []
        while not self.stop.is_set():
            now = time.time()
            for c in [c for c in pending_cancels if c[0] <= now]:
                pending_cancels.remove(c)
                self.cancel(c[1])
            seq += 1
            e, kind, delay = self.submit(client, seq, rng, last_ok)
            if e["outcome"] == "ok":
                if kind == "cancel":
                    pending_cancels.append((time.time() + delay, e["id"]))
                elif kind == "plain":
                    last_ok = e["id"]
            self.stop.wait(rng.uniform(0.5, 2 * self.a.interval))
        for _, jid in pending_cancels:
            self.cancel(jid)

    def gstat(self, finished=True):
        t0, t1, rc, out, err = call(["gstat", "--json"] + (["-a"] if finished else []), timeout=30)
        if rc != 0:
            return t0, t1, None
        try:
            d = json.loads(out)
        except ValueError:
            return t0, t1, None
        jobs = {}
        for j in d.get("jobs", []):
            if "id" in j and "state" in j:
                jobs[str(j["id"])] = [str(j["state"]).replace("JOB_STATE_", ""), int(j.get("attempt", 0))]
        return t0, t1, jobs

    def observer(self):
        n = 0
        while not self.stop.is_set():
            # the pending and running jobs every time, the finished ones too every tenth: a long
            # run's finished jobs would make every answer large
            t0, t1, jobs = self.gstat(finished=n % 10 == 0)
            n += 1
            if jobs is not None:
                self.h.add(ev="observe", invoke=t0, complete=t1, jobs=jobs)
            else:
                self.h.add(ev="observe_failed", invoke=t0, complete=t1)
            self.stop.wait(self.a.observe_every)

    def drain(self):
        deadline = time.time() + self.a.drain
        jobs = None
        while time.time() < deadline:
            t0, t1, jobs = self.gstat()
            if jobs is not None:
                self.h.add(ev="observe", invoke=t0, complete=t1, jobs=jobs)
                with self.mu:
                    left = [i for i in self.acked if jobs.get(str(i), ["MISSING"])[0] not in FINAL]
                if not left:
                    break
            time.sleep(2)
        while jobs is None and time.time() < deadline + 60:
            _, _, jobs = self.gstat()
        t = time.time()
        with self.mu:
            acked = dict(self.acked)
        for jid in sorted(acked):
            st = (jobs or {}).get(str(jid), ["MISSING", 0])
            self.h.add(ev="final", id=jid, state=st[0], attempt=st[1], t=t)
        for jid in sorted(acked):
            if (jobs or {}).get(str(jid), ["?"])[0] != "COMPLETED":
                continue
            t0, t1, rc, out, err = call(["glogs", str(jid)], timeout=60)
            self.h.add(ev="output", id=jid, invoke=t0, complete=t1, outcome="ok" if rc == 0 else "unknown",
                       text=out if rc == 0 else "", err=err.strip()[-200:])
        left = [i for i in acked if (jobs or {}).get(str(i), ["MISSING"])[0] not in FINAL]
        return len(acked), len(left)

    def run(self):
        threads = [threading.Thread(target=self.client, args=(i + 1,)) for i in range(self.a.clients)]
        threads.append(threading.Thread(target=self.observer))
        for t in threads:
            t.start()
        self.stop.wait(self.a.duration)
        self.stop.set()
        for t in threads:
            t.join()
        n, left = self.drain()
        print(f"workload: {n} jobs acknowledged, {left} not final after the drain", flush=True)
        return 0


def main():
    ap = argparse.ArgumentParser(description="the soak's clients (docs/reliability.md)")
    ap.add_argument("--dir", required=True, help="where history.jsonl goes")
    ap.add_argument("--task", required=True, help="task.sh, run by every job")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=60, help="seconds of submissions")
    ap.add_argument("--drain", type=float, default=120, help="seconds to wait for the jobs to end")
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--interval", type=float, default=1.5, help="mean seconds between a client's submissions")
    ap.add_argument("--max-secs", type=int, default=6, help="longest job, seconds")
    ap.add_argument("--observe-every", type=float, default=1.0)
    return Workload(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
