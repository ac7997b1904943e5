#!/usr/bin/env python3
"""hostcut.py: the measuring side of bench/gateway/hostcut.sh.

    hostcut.py poll GSTAT SVC STOPFILE
        every 0.1 s until STOPFILE exists, the service's replicas as gstat sees them, one line
        per replica: TIME INDEX JOB NODE ADDR PORT STATE READY (a line "TIME -" when none);
        TIME is when gstat's answer came
    hostcut.py trial --trial K --cut T --host H --req FILE --poll FILE --pre FILE
                     --sched-log FILE --gw-log FILE --node-timeout S --json FILE
        one trial's figures from the client's log (bench/gateway/cutload.py), the poll, the
        replicas just before the cut (PRE: "node addr port ready job" lines) and gschedd's
        and ggated's logs (their lines read from T-1 s on): printed, and appended to FILE as
        one JSON line
    hostcut.py summary FILE
        the table of every trial in FILE and its medians

Times in the report are milliseconds after the cut (T, seconds since the epoch, taken just
before `ip link set ... down`). The daemons' log stamps are local time to the millisecond:
run this with the TZ they ran with.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3}) ")


def poll(gstat, svc, stopfile):
    while not os.path.exists(stopfile):
        t0 = time.time()
        try:
            out = subprocess.run([gstat, "--json", "-j", svc], capture_output=True,
                                 timeout=5).stdout
            jobs = json.loads(out).get("jobs", [])
        except (subprocess.TimeoutExpired, ValueError):
            jobs = []
        t = time.time()  # what the answer says was so by now at the latest
        lines = []
        for j in jobs:
            if str(j.get("id")) != svc:
                continue
            for r in j.get("replicas", []):
                lines.append("%.3f %s %s %s %s %s %s %s" % (
                    t, r.get("index", 0), r.get("job_id", 0), r.get("node") or "-",
                    r.get("addr") or "-", r.get("port", 0),
                    str(r.get("state", "-")).replace("JOB_STATE_", ""),
                    "yes" if r.get("ready") else "no"))
        print("\n".join(lines) if lines else "%.3f -" % t, flush=True)
        time.sleep(max(0.0, 0.1 - (time.time() - t0)))


def log_lines(path, since):
    """(time, text) of the lines of a daemon's log stamped at or after since"""
    out = []
    try:
        f = open(path, errors="replace")
    except OSError:
        return out
    with f:
        for line in f:
            m = STAMP.match(line)
            if not m:
                continue
            t = time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) + int(m.group(2)) / 1e3
            if t >= since:
                out.append((t, line.rstrip("\n")))
    return out


def first(lines, pattern):
    rx = re.compile(pattern)
    for t, text in lines:
        if rx.search(text):
            return t
    return None


def ms(t, cut):
    return None if t is None else round((t - cut) * 1000.0)


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def target_figures(reqs, cut, host, stall):
    """the figures of one target's requests around the cut"""
    before = [r for r in reqs if r["finish"] < cut]
    inflight = [r for r in reqs if r["send"] < cut <= r["finish"]]
    after = [r for r in reqs if r["send"] >= cut]
    lat = lambda r: r["finish"] - r["send"]
    ok_else = [r for r in after if r["status"] == 200 and r["node"] != host]
    stalled = [r for r in after if lat(r) > stall or r["status"] != 200]
    hit = [r for r in inflight + after if lat(r) > stall or r["status"] != 200]
    base = [lat(r) for r in before]
    return {
        "requests": len(reqs),
        "base_p50_ms": round(pct(base, 50) * 1e3, 2) if base else None,
        "base_p99_ms": round(pct(base, 99) * 1e3, 2) if base else None,
        "base_over_stall": sum(1 for x in base if x > stall),
        "first_ok_ms": ms(min((r["finish"] for r in ok_else), default=None), cut),
        "inflight": len(inflight),
        "inflight_worst_ms": round(max(lat(r) for r in inflight) * 1e3) if inflight else None,
        "inflight_failed": sum(1 for r in inflight if r["status"] != 200),
        "after": len(after),
        "after_stalled": len(stalled),
        "after_last_stalled_sent_ms": ms(max((r["send"] for r in stalled), default=None), cut),
        "after_worst_ms": round(max(lat(r) for r in after) * 1e3) if after else None,
        "after_failed": sum(1 for r in after if r["status"] != 200),
        "after_on_cut_host": sum(1 for r in after if r["node"] == host),
        "settled_ms": ms(max((r["finish"] for r in hit), default=None), cut),
    }


def trial(a):
    cut = a.cut
    reqs = {}
    with open(a.req) as f:
        for line in f:
            p = line.split()
            if len(p) < 6:
                continue
            r = {"send": float(p[2]), "finish": float(p[3]), "status": int(p[4]), "body": p[5]}
            r["node"] = p[5].split(":")[0] if r["status"] == 200 else "-"
            reqs.setdefault(p[0], []).append(r)
    # the replicas before the cut, and the first poll with 3 ready off the cut host
    snaps = {}
    with open(a.poll) as f:
        for line in f:
            p = line.split()
            if len(p) < 8:
                snaps.setdefault(float(p[0]), [])
                continue
            snaps.setdefault(float(p[0]), []).append(
                {"index": p[1], "job": p[2], "node": p[3], "addr": p[4], "port": p[5],
                 "state": p[6], "ready": p[7] == "yes"})
    times = sorted(snaps)
    pre = []
    with open(a.pre) as f:  # node addr port ready job, just before the cut
        for line in f:
            p = line.split()
            if len(p) >= 5:
                pre.append({"node": p[0], "addr": p[1], "port": p[2], "job": p[4]})
    cutrep = next((r for r in pre if r["node"] == a.host), None)
    pre_ids = {"%s:%s" % (r["node"], r["port"]) for r in pre}
    ready3 = newrep = None
    for t in times:
        if t < cut:
            continue
        up = [r for r in snaps[t] if r["ready"] and r["node"] != a.host]
        if newrep is None:
            for r in up:
                if "%s:%s" % (r["node"], r["port"]) not in pre_ids:
                    newrep, newrep_t = r, t
        if ready3 is None and len(up) >= 3:
            ready3 = t
    sched = log_lines(a.sched_log, cut - 1)
    gw = log_lines(a.gw_log, cut - 1)
    job = cutrep["job"] if cutrep else "?"
    cutlabel = "%s:%s" % (cutrep["addr"], cutrep["port"]) if cutrep else "?"
    newid = "%s:%s" % (newrep["node"], newrep["port"]) if newrep else None
    newlabel = "%s:%s" % (newrep["addr"], newrep["port"]) if newrep else "?"
    tl = {
        "gw_ejected": first(gw, r"at %s ejected" % re.escape(cutlabel)),
        "node_down": first(sched, r"node %s is DOWN" % re.escape(a.host)),
        "requeued": first(sched, r"job %s requeued" % job),
        "launched": first(sched, r"job %s attempt \d+ started" % job),
        "ready_gstat": newrep_t if newrep else None,
        "ready3_gstat": ready3,
        "gw_added": first(gw, r"at %s added" % re.escape(newlabel)),
        "gw_healthy": first(gw, r"at %s healthy" % re.escape(newlabel)),
        "gw_removed": first(gw, r"at %s removed" % re.escape(cutlabel)),
    }
    served = [r for r in reqs.get("ggated", []) if r["body"] == newid and r["status"] == 200]
    tl["gw_first_served"] = min((r["finish"] for r in served), default=None)
    res = {
        "trial": a.trial, "cut": cut, "host": a.host, "node_timeout_s": a.node_timeout,
        "cut_replica": cutrep and "%s (job %s)" % (cutlabel, job),
        "replacement": newrep and "%s (job %s)" % (newlabel, newrep["job"]),
        "stall_ms": a.stall_ms,
        "timeline_ms": {k: ms(v, cut) for k, v in tl.items()},
        "targets": {k: target_figures(v, cut, a.host, a.stall_ms / 1e3) for k, v in reqs.items()},
    }
    print("## trial %d: %s cut at %s (its replica %s); replacement %s" % (
        a.trial, a.host, time.strftime("%H:%M:%S", time.gmtime(cut)) + ".%03d" % (cut % 1 * 1000),
        res["cut_replica"], res["replacement"]))
    print("#  timeline (ms after the cut): " + ", ".join(
        "%s %s" % (k, v) for k, v in res["timeline_ms"].items()))
    for k, v in res["targets"].items():
        print("#  %-7s %s" % (k, ", ".join("%s %s" % (x, y) for x, y in v.items())))
    with open(a.json, "a") as f:
        f.write(json.dumps(res) + "\n")


def med(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    m = statistics.median(xs)
    return "%g (%g-%g)" % (m, min(xs), max(xs)) if len(xs) > 1 else "%g" % m


def summary(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    if not rows:
        print("# no trials")
        return
    stall = rows[0]["stall_ms"]
    print("\n# summary: %d trial(s), node_timeout %s s; ms after the cut; median (min-max)" % (
        len(rows), rows[0]["node_timeout_s"]))
    print("\n## route-around, per path (stalled: answered after more than %g ms, or failed)" % stall)
    cols = [("first_ok_ms", "first answer from another replica to a request sent after the cut"),
            ("inflight", "requests in flight at the cut"),
            ("inflight_worst_ms", "worst latency of those"),
            ("inflight_failed", "of those failed"),
            ("after_stalled", "requests sent after the cut that stalled"),
            ("after_last_stalled_sent_ms", "last of those sent at"),
            ("after_worst_ms", "worst latency of a request sent after the cut"),
            ("after_failed", "requests sent after the cut that failed"),
            ("settled_ms", "last stalled request answered at"),
            ("base_p99_ms", "p99 latency before the cut")]
    names = sorted({k for r in rows for k in r["targets"]})
    print("| figure | " + " | ".join(names) + " |")
    print("| --- | " + " | ".join("---" for _ in names) + " |")
    for key, label in cols:
        print("| %s | %s |" % (label, " | ".join(
            med([r["targets"].get(n, {}).get(key) for r in rows]) for n in names)))
    if len(names) > 1 and "ggated" in names:
        for n in names:
            if n == "ggated":
                continue
            for key in ("settled_ms",):
                g = [r["targets"]["ggated"].get(key) for r in rows if n in r["targets"]]
                o = [r["targets"][n].get(key) for r in rows if n in r["targets"]]
                g = [x for x in g if x is not None]
                o = [x for x in o if x is not None]
                if g and o and statistics.median(g) > 0:
                    print("# %s / ggated, %s (medians): %.1f" % (n, key, statistics.median(o) /
                                                                   statistics.median(g)))
    print("\n## back to 3 replicas (ms after the cut)")
    steps = [("gw_ejected", "ggated ejects the cut replica (health check failed)"),
             ("node_down", "gschedd: node DOWN (node_timeout)"),
             ("requeued", "gschedd: replica requeued"),
             ("launched", "gschedd: replacement launched (placed, sent to its agent)"),
             ("ready_gstat", "gstat: replacement ready (running, port known)"),
             ("ready3_gstat", "gstat: 3 replicas ready off the cut host"),
             ("gw_added", "ggated: replacement added (its poll of gschedd)"),
             ("gw_healthy", "ggated: replacement's first health check passed"),
             ("gw_first_served", "a client's request answered by the replacement through ggated"),
             ("gw_removed", "ggated: cut replica removed")]
    print("| step | " + " | ".join("trial %d" % r["trial"] for r in rows) + " | median |")
    print("| --- | " + " | ".join("---:" for _ in rows) + " | ---: |")
    for key, label in steps:
        vals = [r["timeline_ms"].get(key) for r in rows]
        print("| %s | %s | %s |" % (label, " | ".join("-" if v is None else str(v) for v in vals),
                                    med(vals)))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "poll":
        poll(*sys.argv[2:5])
        return
    if len(sys.argv) > 2 and sys.argv[1] == "summary":
        summary(sys.argv[2])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["trial"])
    ap.add_argument("--trial", type=int, required=True)
    ap.add_argument("--cut", type=float, required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--req", required=True)
    ap.add_argument("--poll", required=True)
    ap.add_argument("--pre", required=True)
    ap.add_argument("--sched-log", required=True)
    ap.add_argument("--gw-log", required=True)
    ap.add_argument("--node-timeout", required=True)
    ap.add_argument("--stall-ms", type=float, default=200.0)
    ap.add_argument("--json", required=True)
    trial(ap.parse_args())


if __name__ == "__main__":
    main()
