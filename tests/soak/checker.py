#!/usr/bin/python3
"""checker.py: the soak's verdict, from the recorded history alone (issue 39).

Reads JSONL files that the soak's clients, tasks and fault runner wrote (docs/reliability.md,
"The soak") and checks gpool's promises over them. It owes nothing to gpool: no gpool module is
imported, nothing is asked of a scheduler; what gpool said is only what the clients recorded.

Events (one JSON object a line, "ev" names the kind; times are the machine's wall clock, which
the netns hosts share):
  meta     {seed, lease_s, kill_grace_s, heartbeat_s, node_timeout_s}   the run's parameters
  submit   {client, name, invoke, complete, outcome: ok|unknown, id?, expect?, after?}
  cancel   {id, invoke, complete, outcome: ok|unknown}
  observe  {invoke, complete, jobs: {ID: [STATE, ATTEMPT]}}  one gstat of every job
  output   {id, text}                                  what glogs printed after the job ended
  final    {id, state, attempt}                        the last gstat, after the drain
  task     {what: start|tick|end, job, attempt, rank, host, name, t}   written by the task
  fault    {kind, target, phase: begin|end, t}          written by the fault runner
  roles    {t, roles: {sK: leader|standby|dead}, cut: [sK...]}

Exit status: 0 no violation, 1 violations (each printed with the seed and the window of the
history that shows it), 2 the history cannot be read.
"""

import argparse
import collections
import gzip
import json
import sys

FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL"}
# the order a job's states go in within one attempt (the attempt counts up at each start, so a
# requeued job is PENDING with the attempt it last ran)
PHASE = {"RUNNING": 1, "COMPLETING": 2, "REQUEUED": 3, "PENDING": 4}
CATEGORIES = [
    "lost",  # acknowledged, not COMPLETED (or CANCELLED after a cancel), or no attempt ended
    "never_final",  # acknowledged, not in a final state after the drain
    "ran_twice",  # two attempts ended, or an attempt started after one had ended
    "overlapping",  # two attempts of one job alive at once
    "wrong_output",  # glogs differs from what the task printed
    "dependency_early",  # started before the job it depends on had ended
    "ran_after_cancel",  # alive after the cancel was acknowledged and the grace ran out
    "ran_on_cut_host",  # started on a cut host, or alive there past its lease
    "state_backwards",  # clients saw a job's state go back
    "duplicate_job",  # one submission became two jobs
    "phantom",  # a task of no submission at all
    "two_leaders",  # two live, reachable schedulers said leader at once, for too long
]


TORN = []  # lines that were not JSON (file:line)


def die(msg):
    print(f"checker: {msg}", file=sys.stderr)
    sys.exit(2)


def load(paths):
    TORN.clear()
    events = []
    for p in paths:
        try:  # a kept run's files may be gzipped (bench/results/soak/)
            f = (gzip.open if p.endswith(".gz") else open)(p, "rt", encoding="utf-8", errors="replace")
        except OSError as e:
            die(f"cannot read '{p}': {e.strerror}")
        with f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    e = json.loads(line)
                except ValueError:
                    # a task killed in the middle of its write leaves a torn line: count it
                    TORN.append(f"{p}:{n}")
                    continue
                if isinstance(e, dict) and "ev" in e:
                    e["_src"] = f"{p}:{n}"
                    events.append(e)
    return events


def when(e):
    return e.get("t", e.get("invoke", e.get("complete", float("inf"))))


class History:
    def __init__(self, events):
        self.meta = {}
        self.submits = []
        self.cancels = collections.defaultdict(list)
        self.observes = []
        self.outputs = collections.defaultdict(list)
        self.final = {}
        self.tasks = collections.defaultdict(list)  # job id -> task events
        self.faults = []
        self.roles = []
        self.events = events
        for e in events:
            ev = e["ev"]
            if ev == "meta":
                self.meta.update(e)
            elif ev == "submit":
                self.submits.append(e)
            elif ev == "cancel":
                self.cancels[int(e["id"])].append(e)
            elif ev == "observe":
                self.observes.append(e)
            elif ev == "output":
                self.outputs[int(e["id"])].append(e)
            elif ev == "final":
                self.final[int(e["id"])] = e
            elif ev == "task":
                self.tasks[int(e["job"])].append(e)
            elif ev == "fault":
                self.faults.append(e)
            elif ev == "roles":
                self.roles.append(e)
        self.observes.sort(key=lambda e: e["invoke"])
        self.roles.sort(key=lambda e: e["t"])
        self.acked = {int(s["id"]): s for s in self.submits if s.get("outcome") == "ok" and "id" in s}
        self.by_name = {s["name"]: s for s in self.submits}


def attempts(tasks):
    """attempt -> {start, last, end, hosts}: first start, last sign of life, first end."""
    out = {}
    for t in tasks:
        a = out.setdefault(int(t["attempt"]), {"start": None, "last": None, "end": None, "hosts": set()})
        ts = float(t["t"])
        a["hosts"].add(t.get("host", "?"))
        a["last"] = ts if a["last"] is None else max(a["last"], ts)
        if t["what"] == "start":
            a["start"] = ts if a["start"] is None else min(a["start"], ts)
        elif t["what"] == "end":
            a["end"] = ts if a["end"] is None else min(a["end"], ts)
    for a in out.values():
        if a["start"] is None:  # its start line torn or lost: its first sign of life
            a["start"] = min(float(t["t"]) for t in tasks)
    return out


def cut_windows(h):
    """host -> [(begin, end)] of the faults that cut a host's link (end None: never healed)."""
    w = collections.defaultdict(list)
    open_ = {}
    for f in sorted(h.faults, key=lambda e: e["t"]):
        if f.get("kind") not in ("host_cut",):
            continue
        key = (f["kind"], f["target"])
        if f["phase"] == "begin":
            open_[key] = float(f["t"])
        elif key in open_:
            w[f["target"]].append((open_.pop(key), float(f["t"])))
    for (kind, target), b in open_.items():
        w[target].append((b, None))
    return w


class Checker:
    def __init__(self, h, leader_overlap_s, start_slack_s):
        self.h = h
        self.v = collections.defaultdict(list)  # category -> [(job or None, text, at)]
        self.known = collections.defaultdict(list)  # a gap docs/ states: counted, not a violation
        self.leader_overlap_s = leader_overlap_s
        self.start_slack_s = start_slack_s
        self.lease_s = float(h.meta.get("lease_s", 5.0))
        self.grace_s = float(h.meta.get("kill_grace_s", 5.0))
        self.hb_s = float(h.meta.get("heartbeat_s", 1.0))
        self.node_timeout_s = float(h.meta.get("node_timeout_s", 7.0))
        self.info = collections.Counter()

    def bad(self, cat, job, text, at=None):
        """a violation; at: the moment that shows it, which its window of history centres on"""
        self.v[cat].append((job, text, at))

    def run(self):
        h = self.h
        self.check_submissions()
        for jid, s in sorted(h.acked.items()):
            self.check_job(jid, s)
        self.check_attempts_everywhere()
        self.check_cut_hosts()
        self.check_observations()
        self.check_leaders()

    def check_submissions(self):
        h = self.h
        ids_of_name = collections.defaultdict(set)
        for jid, ts in h.tasks.items():
            for t in ts:
                ids_of_name[t.get("name", "")].add(jid)
        for name, ids in sorted(ids_of_name.items()):
            s = h.by_name.get(name)
            if s is None:
                self.bad("phantom", min(ids), f"tasks of job(s) {sorted(ids)} named '{name}', which no client submitted")
                continue
            if len(ids) > 1:
                self.bad("duplicate_job", min(ids), f"submission '{name}' ran as jobs {sorted(ids)}")
            if s.get("outcome") == "ok" and int(s["id"]) not in ids:
                self.bad("duplicate_job", min(ids), f"submission '{name}' acknowledged as job {s['id']} ran as {sorted(ids)}")
        # what clients and jobs lived through (measures, not verdicts): the longest a gsub took
        # to be answered, and the longest a running attempt made no progress (between ticks)
        self.info["longest_submit_s"] = round(max((s["complete"] - s["invoke"] for s in h.submits), default=0), 1)
        stall = 0.0
        for ts in h.tasks.values():
            by = collections.defaultdict(list)
            for t in ts:
                if t["what"] != "end":
                    by[(t["attempt"], t.get("rank", 0))].append(float(t["t"]))
            for tt in by.values():
                tt.sort()
                stall = max([stall] + [b - a for a, b in zip(tt, tt[1:])])
        self.info["longest_stall_s"] = round(stall, 1)
        self.info["accepted"] = len(h.acked)
        self.info["torn_lines"] = len(TORN)
        self.info["unknown_submissions"] = sum(1 for s in h.submits if s.get("outcome") != "ok")

    def check_job(self, jid, s):
        h = self.h
        fin = h.final.get(jid)
        st = fin["state"] if fin else "MISSING"
        cancelled = [c for c in h.cancels.get(jid, []) if c.get("outcome") == "ok"]
        att = attempts(h.tasks.get(jid, []))
        ended = sorted(a for a, x in att.items() if x["end"] is not None)
        if st not in FINAL:
            self.bad("never_final", jid, f"job {jid} is {st} after the drain")
        # a cancel whose answer was lost may have been applied all the same
        if cancelled or (h.cancels.get(jid) and st == "CANCELLED"):
            if st not in ("CANCELLED", "COMPLETED"):
                self.bad("lost", jid, f"job {jid} was cancelled but ended {st}")
            elif st == "COMPLETED" and not ended:
                self.bad("lost", jid, f"job {jid} COMPLETED after a cancel, but no attempt ended")
        elif st != "COMPLETED" or not ended:
            self.bad("lost", jid, f"job {jid} ended {st}, attempts ended: {ended or 'none'}")
        self.info[f"final_{st}"] += 1
        self.info["attempts"] += len(att)
        if len(att) > 1:
            self.info["jobs_with_several_attempts"] += 1
        # output: what the task printed (its one line) and nothing else
        expect = s.get("expect")
        if expect is not None and st == "COMPLETED" and ended:
            outs = h.outputs.get(jid, [])
            if not outs:
                self.bad("wrong_output", jid, f"job {jid}: no output recorded")
            else:
                lines = {ln for ln in outs[-1].get("text", "").splitlines() if ln.strip()}
                if not lines and self.output_lost_with_agent(att[ended[0]]):
                    self.known["output_lost_with_agent"].append((jid, f"job {jid}: output empty; its "
                                                               f"agent was killed while it held the "
                                                               f"output for a leader that was away"))
                elif lines != {expect}:
                    self.bad("wrong_output", jid, f"job {jid}: output {sorted(lines)[:3]}, want only '{expect}'")
        # dependency: no attempt starts before the parent's first end
        after = s.get("after")
        if after is not None:
            patt = attempts(h.tasks.get(int(after), []))
            pend = min((x["end"] for x in patt.values() if x["end"] is not None), default=None)
            for a, x in att.items():
                if pend is None or x["start"] < pend:
                    self.bad("dependency_early", jid, f"job {jid} attempt {a} started at {x['start']:.3f}, "
                             f"its parent {after} ended {'never' if pend is None else f'at {pend:.3f}'}", at=x["start"])
        # cancel: nothing alive past the acknowledgement and the kill grace
        if cancelled:
            tc = min(float(c["complete"]) for c in cancelled)
            for a, x in att.items():
                if x["last"] > self.kill_deadline(tc, x["last"], x["hosts"]):
                    self.bad("ran_after_cancel", jid, f"job {jid} attempt {a} alive at {x['last']:.3f}, "
                             f"{x['last'] - tc:.1f} s after its cancel was acknowledged", at=tc)

    def end_unseen(self, jid, x, next_start):
        """The design's limit (docs/reliability.md, "The soak"): an attempt that ends on a host
        whose link is cut or whose agent is away cannot tell the scheduler so; when the node is
        declared DOWN its requeueable job runs again. True when such a fault on the attempt's
        host was on at its end (or began later, before the next start, while the agent still
        held the exit because no leader was there at the end: a leader killed or cut then),
        lasted long enough for the node to be declared DOWN (node_timeout less the heartbeat by
        which it was last heard before), and no client had seen the job final before the next
        start."""
        te = x["end"]
        no_leader = self.sched_fault_at(te)
        for o in self.h.observes:
            st = o.get("jobs", {}).get(str(jid))
            if st and st[0] in FINAL and o["complete"] < next_start:
                return False
        opened = {}
        for f in sorted(self.h.faults, key=lambda e: e["t"]):
            if f.get("kind") not in ("host_cut", "agent_kill") or f.get("target") not in x["hosts"]:
                continue
            key = (f["kind"], f["target"])
            if f["phase"] == "begin":
                opened[key] = float(f["t"])
            elif f["phase"] == "end" and key in opened:
                b, e = opened.pop(key), float(f["t"])
                if (b <= te + 1 or (no_leader and b <= next_start)) and e >= te - 1 and \
                        e - b >= self.node_timeout_s - self.hb_s:
                    return True
        return any(b <= te + 1 or (no_leader and b <= next_start) for b in opened.values())

    def sched_fault_at(self, t):
        """whether a leader was killed or cut (and not yet back) at time t"""
        opened = {}
        for f in sorted(self.h.faults, key=lambda e: e["t"]):
            if f.get("kind") not in ("sched_kill", "leader_cut"):
                continue
            key = (f["kind"], f.get("target"))
            if f["phase"] == "begin":
                opened[key] = float(f["t"])
            elif f["phase"] == "end" and key in opened:
                if opened.pop(key) <= t <= float(f["t"]):
                    return True
        return any(b <= t for b in opened.values())

    def output_lost_with_agent(self, x):
        """A known gap (docs/reliability.md, "The soak"): output an agent forwarded to a leader
        that was away (killed or cut) is kept in the agent's memory only, to be sent again to the
        next leader; the agent killed before it registers there loses it. True when the attempt
        ended on a host whose agent was killed within 30 s after, while a scheduler fault that
        began no later than the kill was on (or ended) no earlier than a second before the end."""
        te = x["end"]
        kills = [f for f in self.h.faults if f.get("kind") == "agent_kill" and f["phase"] == "begin"
                 and f.get("target") in x["hosts"] and te <= float(f["t"]) <= te + 30]
        if not kills:
            return False
        tk = min(float(f["t"]) for f in kills)
        opened = {}
        for f in sorted(self.h.faults, key=lambda e: e["t"]):
            if f.get("kind") not in ("sched_kill", "leader_cut"):
                continue
            key = (f["kind"], f.get("target"))
            if f["phase"] == "begin":
                opened[key] = float(f["t"])
            elif f["phase"] == "end" and key in opened:
                b, e = opened.pop(key), float(f["t"])
                if b <= tk and e >= te - 1:
                    return True
        return any(b <= tk for b in opened.values())

    def kill_deadline(self, tc, last, hosts):
        """when a kill ordered at tc must have ended a task: the kill grace, or, where a fault
        that delays the kill (a scheduler or an agent away, a link cut) overlaps the wait, the
        grace after that fault ended (a cut host: after its lease, docs/reliability.md)"""
        d = tc + self.grace_s + self.start_slack_s
        opened = {}
        for f in sorted(self.h.faults, key=lambda e: e["t"]):
            if f.get("kind") not in ("sched_kill", "leader_cut", "agent_kill", "host_cut"):
                continue
            if f["kind"] in ("agent_kill", "host_cut") and f.get("target") not in hosts:
                continue
            key = (f["kind"], f.get("target"))
            if f["phase"] == "begin":
                opened[key] = float(f["t"])
            elif f["phase"] == "end" and key in opened:
                b, e = opened.pop(key), float(f["t"])
                if b <= last and e >= tc:
                    if f["kind"] == "host_cut":
                        e = min(e, b + self.lease_s)
                    d = max(d, e + self.grace_s + self.start_slack_s + 2 * self.hb_s)
        for (kind, _), b in opened.items():
            if b <= last:
                return float("inf")
        return d

    def check_attempts_everywhere(self):
        # every job that ran, acknowledged or not: attempts never overlap, none after an end
        for jid, ts in sorted(self.h.tasks.items()):
            att = attempts(ts)
            ended = sorted(a for a, x in att.items() if x["end"] is not None)
            if ended:
                first = min(ended, key=lambda a: att[a]["end"])
                first_end = att[first]["end"]
                later = [(a, x) for a, x in att.items() if a != first and x["start"] > first_end]
                for a, x in later:
                    why = f"job {jid}: attempt {a} started at {x['start']:.3f} on {sorted(x['hosts'])}, " \
                          f"after attempt {first} ended at {first_end:.3f} on {sorted(att[first]['hosts'])}"
                    if self.end_unseen(jid, att[first], x["start"]):
                        self.known["ran_again_end_unseen"].append((jid, why))
                    else:
                        self.bad("ran_twice", jid, why, at=x["start"])
                    break
            iv = sorted(att.items(), key=lambda kv: kv[1]["start"])
            for (a1, x1), (a2, x2) in zip(iv, iv[1:]):
                if x2["start"] < x1["last"]:
                    self.bad("overlapping", jid, f"job {jid}: attempt {a2} started at {x2['start']:.3f} on "
                             f"{sorted(x2['hosts'])} while attempt {a1} was alive until {x1['last']:.3f} "
                             f"on {sorted(x1['hosts'])}", at=x2["start"])

    def check_cut_hosts(self):
        # a cut host starts nothing (no launch reaches it) and stops what ran there at its lease
        # (docs/reliability.md: a cut-off node runs until its lease ends, by design)
        w = cut_windows(self.h)
        for jid, ts in sorted(self.h.tasks.items()):
            said = set()  # one violation per attempt and cut, not one per tick
            for t in sorted(ts, key=lambda t: float(t["t"])):
                for b, e in w.get(t.get("host"), []):
                    tt = float(t["t"])
                    if (e is not None and tt >= e) or (t["attempt"], b) in said:
                        continue
                    if t["what"] == "start" and tt > b + self.start_slack_s:
                        said.add((t["attempt"], b))
                        self.bad("ran_on_cut_host", jid, f"job {jid} attempt {t['attempt']} started on "
                                 f"{t['host']} at {tt:.3f}, {tt - b:.1f} s into its cut", at=tt)
                    elif tt > b + self.lease_s + self.start_slack_s:
                        said.add((t["attempt"], b))
                        self.bad("ran_on_cut_host", jid, f"job {jid} attempt {t['attempt']} alive on "
                                 f"{t['host']} at {tt:.3f}, {tt - b:.1f} s into its cut (lease {self.lease_s:g} s)", at=tt)

    def check_observations(self):
        # a client's later gstat (invoked after an earlier one returned) never shows a job
        # further back: an earlier phase of one attempt, an earlier attempt, or another state
        # after a final one
        seen = {}  # job -> (key, state, attempt, complete time, src)
        reported = set()
        for o in self.h.observes:
            for sid, (state, attempt) in o.get("jobs", {}).items():
                jid = int(sid)
                key = (float("inf"), state) if state in FINAL else (int(attempt), PHASE.get(state, 0))
                prev = seen.get(jid)
                if prev is not None and prev[3] < o["invoke"] and jid not in reported:
                    pkey = prev[0]
                    back = False
                    if pkey[0] == float("inf"):
                        back = key != pkey
                    elif key[0] != float("inf"):
                        back = key < pkey
                    if back:
                        reported.add(jid)
                        self.bad("state_backwards", jid, f"job {jid}: {prev[1]} (attempt {prev[2]}) seen by a gstat "
                                 f"that returned at {prev[3]:.3f}, then {state} (attempt {attempt}) by one invoked "
                                 f"at {o['invoke']:.3f}", at=o["invoke"])
                if prev is None or prev[3] < o["invoke"]:
                    seen[jid] = (key, state, attempt, o["complete"], o["_src"])
            self.info["observations"] += 1

    def check_leaders(self):
        # among live schedulers whose link is up, at most one says it leads; a moment of two is
        # the handover (the old one steps down when it hears the new term), too long is not
        since = None
        for r in self.h.roles:
            cut = set(r.get("cut", []))
            leaders = sorted(k for k, v in r.get("roles", {}).items() if v == "leader" and k not in cut)
            if len(leaders) > 1:
                if since is None:
                    since = (r["t"], leaders)
                elif r["t"] - since[0] > self.leader_overlap_s:
                    self.bad("two_leaders", None, f"schedulers {leaders} both said leader, reachable, from "
                             f"{since[0]:.3f} to {r['t']:.3f}")
                    since = None
            else:
                since = None
        self.info["role_samples"] = len(self.h.roles)

    def window(self, jid, limit, at=None):
        """the events that name a job, in time order: the history's minimal view of it"""
        if jid is None:
            return []
        evs = []
        for e in self.h.events:
            ev = e["ev"]
            if ev == "observe":
                st = e.get("jobs", {}).get(str(jid))
                if st is not None:
                    evs.append((e["invoke"], f"observe {st[0]} attempt {st[1]} [{e['invoke']:.3f}, {e['complete']:.3f}]"))
            elif ev == "task" and int(e["job"]) == jid and e["what"] != "tick":
                evs.append((e["t"], f"task {e['what']} attempt {e['attempt']} rank {e.get('rank', 0)} on {e.get('host')}"))
            elif ev in ("submit", "cancel", "output", "final") and str(e.get("id")) == str(jid):
                d = {k: v for k, v in e.items() if not k.startswith("_") and k != "ev"}
                evs.append((when(e), f"{ev} {json.dumps(d, sort_keys=True)[:160]}"))
        ticks = [t for t in self.h.tasks.get(jid, []) if t["what"] == "tick"]
        if ticks:
            by = collections.defaultdict(list)
            for t in ticks:
                by[(t["attempt"], t.get("host"))].append(float(t["t"]))
            for (a, host), tt in by.items():
                evs.append((max(tt), f"task last tick attempt {a} on {host} ({len(tt)} ticks)"))
        for f in self.h.faults:
            evs.append((f["t"], f"fault {f['kind']} {f.get('target')} {f['phase']}"))
        evs.sort()
        # a run of observations of one state is one line: its first and its last
        packed = []
        for t, s in evs:
            if packed and s.startswith("observe ") and packed[-1][1].startswith("observe "):
                key = " ".join(s.split()[:4])
                if " ".join(packed[-1][1].split()[:4]) == key:
                    first = packed[-1][2] if len(packed[-1]) > 2 else packed[-1][0]
                    n = (packed[-1][3] if len(packed[-1]) > 3 else 1) + 1
                    packed[-1] = (t, f"{key} (x{n} from {first:.3f})", first, n)
                    continue
            packed.append((t, s))
        evs = [(p[0], p[1]) for p in packed]
        # the faults only near the job's own events
        own = [t for t, s in evs if not s.startswith("fault")]
        if own:
            lo, hi = min(own) - 15, max(own) + 15
            evs = [(t, s) for t, s in evs if not s.startswith("fault") or lo <= t <= hi]
        if len(evs) > limit:
            if at is None:
                evs = evs[: limit // 2] + [(evs[limit // 2][0], "...")] + evs[-(limit - limit // 2):]
            else:  # the submission, then the events around the moment that shows it
                i = next((k for k, (t, _) in enumerate(evs) if t >= at), len(evs))
                lo = max(1, min(i - (limit - 1) // 2, len(evs) - (limit - 1)))
                evs = evs[:1] + ([(evs[lo][0], "...")] if lo > 1 else []) + evs[lo: lo + limit - 1]
        return evs

    def report(self, out, window_lines):
        h = self.h
        nviol = sum(len(x) for x in self.v.values())
        counts = " ".join(f"{c} {len(self.v.get(c, []))}" for c in CATEGORIES)
        seed = h.meta.get("seed", "?")
        print(f"soak-check: {'PASS' if nviol == 0 else 'FAIL'} seed {seed} accepted {self.info['accepted']} "
              f"{counts}", file=out)
        info = " ".join(f"{k} {v}" for k, v in sorted(self.info.items()) if k != "accepted")
        print(f"# {info}", file=out)
        for k, v in sorted(self.known.items()):
            print(f"# known gap {k}: {len(v)} ({', '.join(str(j) for j, _ in v[:20])})", file=out)
        faults = collections.Counter(f["kind"] for f in h.faults if f.get("phase") == "begin")
        print(f"# faults: {' '.join(f'{k} {v}' for k, v in sorted(faults.items())) or 'none'}", file=out)
        for c in CATEGORIES:
            for jid, text, at in self.v.get(c, [])[:10]:
                print(f"VIOLATION {c} (seed {seed}): {text}", file=out)
                for t, s in self.window(jid, window_lines, at):
                    print(f"#   {'(after)' if t == float('inf') else f'{t:.3f}'} {s}", file=out)
            if len(self.v.get(c, [])) > 10:
                print(f"# ... {len(self.v[c]) - 10} more {c}", file=out)
        return nviol


def main(argv=None):
    ap = argparse.ArgumentParser(description="check a soak's history (docs/reliability.md)")
    ap.add_argument("history", nargs="+", help="JSONL files: clients', tasks', faults'")
    ap.add_argument("--leader-overlap", type=float, default=5.0, metavar="S",
                    help="seconds two reachable leaders may coexist (a handover), default 5")
    ap.add_argument("--slack", type=float, default=1.0, metavar="S",
                    help="seconds of slack on cut and cancel times (the task's tick is 0.5 s), default 1")
    ap.add_argument("--window", type=int, default=16, metavar="N",
                    help="history lines shown with each violation, default 16")
    a = ap.parse_args(argv)
    h = History(load(a.history))
    c = Checker(h, a.leader_overlap, a.slack)
    c.run()
    return 1 if c.report(sys.stdout, a.window) else 0


if __name__ == "__main__":
    sys.exit(main())
