#!/usr/bin/python3
"""compare.py — the side-by-side table of one results directory (run-side-by-side.sh).

  compare.py RESULTS_DIR [--markdown] [--json FILE] [--goal-from 1M]

Reads every peer's rows (PEER.json when present, else the rows of PEER.txt: lines of
`size_bytes count time_us algbw_GBps busbw_GBps check`, '#' comments and other lines ignored)
and the ring ceiling (ceiling.json and ceiling-end.json: the higher minimum is used). Prints, per size: each peer's busbw (GB/s), the best peer
(gcomm excluded), and when gcomm rows exist the ratios gcomm/best and gcomm/ceiling; then each
peer's 8-byte latency (median time, µs), and gcomm's goals (issue 6) when gcomm ran.
"""
import argparse
import json
import os
import sys

# peer name -> column title, in table order; gcomm is the subject, the others its rivals
PEERS = [
    ("mpi-ob1", "ompi-ob1"),
    ("mpi-yield", "ompi-yield"),
    ("mpi-ucx", "ompi-ucx"),
    ("gloo", "gloo"),
    ("gcomm", "gcomm"),
]
SUBJECT = "gcomm"


def human(n):
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d%s" % (n >> shift, unit)
    return "%dB" % n


def parse_size(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.rstrip("bB")
    if s and s[-1].lower() in mult:
        return int(s[:-1]) * mult[s[-1].lower()]
    return int(s)


def rows_from_text(path):
    rows = []
    with open(path, errors="replace") as f:
        for line in f:
            p = line.split()
            if len(p) < 6 or line.lstrip().startswith("#"):  # gcomm-bench adds an algo column
                continue
            try:
                rows.append({"size_bytes": int(p[0]), "count": int(p[1]), "time_us": float(p[2]),
                             "algbw_GBps": float(p[3]), "busbw_GBps": float(p[4]), "check": p[5]})
            except ValueError:
                continue
    return rows


def load_peer(d, name):
    """rows of one peer keyed by size, or None when it did not run"""
    j, t = os.path.join(d, name + ".json"), os.path.join(d, name + ".txt")
    rows = None
    if os.path.exists(j):
        try:
            with open(j) as f:
                rows = json.load(f).get("rows")
        except (OSError, ValueError):
            rows = None
    if not rows and os.path.exists(t):
        rows = rows_from_text(t)
    if not rows:
        return None
    return {r["size_bytes"]: r for r in rows}


def load(d):
    peers = {}
    for name, _ in PEERS:
        r = load_peer(d, name)
        if r:
            peers[name] = r
    # the ring ceiling, measured before (ceiling.json) and after (ceiling-end.json) the peers:
    # the higher of the two is used (the harder bar); both are kept under "measurements"
    meas = []
    for fn in ("ceiling.json", "ceiling-end.json"):
        cj = os.path.join(d, fn)
        if os.path.exists(cj):
            try:
                with open(cj) as f:
                    m = json.load(f)
                m["file"] = fn
                meas.append(m)
            except (OSError, ValueError):
                pass
    ceiling = None
    if meas:
        ceiling = dict(max(meas, key=lambda m: m["ceiling_GBps"]))
        ceiling["measurements"] = [{"file": m["file"], "ceiling_GBps": m["ceiling_GBps"],
                                    "links": m["links"]} for m in meas]
    meta = {}
    mj = os.path.join(d, "run.json")
    if os.path.exists(mj):
        try:
            with open(mj) as f:
                meta = json.load(f)
        except (OSError, ValueError):
            meta = {}
    return peers, ceiling, meta


def build(d, goal_from=1 << 20):
    peers, ceiling, meta = load(d)
    ceil = ceiling["ceiling_GBps"] if ceiling else None
    sizes = sorted({s for p in peers.values() for s in p})
    names = [n for n, _ in PEERS if n in peers]
    rivals = [n for n in names if n != SUBJECT]
    table = []
    for s in sizes:
        row = {"size_bytes": s, "busbw_GBps": {}, "check": {}}
        for n in names:
            r = peers[n].get(s)
            if r is not None:
                row["busbw_GBps"][n] = r["busbw_GBps"]
                row["check"][n] = r.get("check", "?")
        cands = [(row["busbw_GBps"][n], n) for n in rivals
                 if n in row["busbw_GBps"] and row["check"].get(n) in ("ok", "skip")]
        if cands:
            bw, n = max(cands)
            row["best"], row["best_GBps"] = n, bw
        g = row["busbw_GBps"].get(SUBJECT)
        if g is not None and row.get("best_GBps"):
            row["gcomm_over_best"] = g / row["best_GBps"]
        if g is not None and ceil:
            row["gcomm_over_ceiling"] = g / ceil
        table.append(row)

    lat = {}
    for n in names:
        r = peers[n].get(8) or peers[n].get(min(peers[n]))
        lat[n] = {"size_bytes": r["size_bytes"], "time_us": r["time_us"]}

    goals = None
    if SUBJECT in peers:
        big = [t for t in table if t["size_bytes"] >= goal_from and "gcomm_over_best" in t]
        at64 = next((t for t in table if t["size_bytes"] == 64 << 20), None)
        best_lat = min((lat[n]["time_us"], n) for n in rivals) if rivals else None
        goals = {
            "busbw_ahead_of_best_from": goal_from,
            "busbw_ahead_of_best": bool(big) and all(t["gcomm_over_best"] > 1 for t in big),
            "sizes_behind": [t["size_bytes"] for t in big if t["gcomm_over_best"] <= 1],
            "ceiling_ratio_64M": at64.get("gcomm_over_ceiling") if at64 else None,
            "ceiling_80pct_at_64M": bool(at64 and at64.get("gcomm_over_ceiling", 0) >= 0.8),
            "latency_8B_us": lat[SUBJECT]["time_us"],
            "best_peer_latency_8B_us": best_lat[0] if best_lat else None,
            "best_peer_latency_8B": best_lat[1] if best_lat else None,
            "latency_no_worse": bool(best_lat) and lat[SUBJECT]["time_us"] <= best_lat[0],
            "checks_ok": all(r.get("check") in ("ok", "skip") for r in peers[SUBJECT].values()),
        }
    failed = sorted({(n, s) for n in names for s, r in peers[n].items()
                     if r.get("check") not in ("ok", "skip")})
    return {"dir": os.path.abspath(d), "nranks": meta.get("nhosts"), "meta": meta,
            "peers": names, "ceiling": ceiling, "ceiling_GBps": ceil, "table": table,
            "latency": lat, "goals": goals, "check_failures": [list(x) for x in failed]}


def fmt_bw(bw):
    return "%.3f" % bw if bw >= 0.001 or bw == 0 else "%.1e" % bw


def title(n):
    return dict(PEERS).get(n, n)


def render(c, markdown=False):
    names, out = c["peers"], []
    has_g = SUBJECT in names
    cols = ["size", "bytes"] + ["%s" % title(n) for n in names] + ["best peer", "best"]
    if has_g:
        cols += ["gcomm/best", "gcomm/ceil"]
    lines = []
    for t in c["table"]:
        v = [human(t["size_bytes"]), str(t["size_bytes"])]
        for n in names:
            bw = t["busbw_GBps"].get(n)
            ck = t["check"].get(n, "ok")
            v.append("-" if bw is None else fmt_bw(bw) + ("" if ck in ("ok", "skip") else "!"))
        v += [title(t["best"]) if "best" in t else "-",
              fmt_bw(t["best_GBps"]) if "best_GBps" in t else "-"]
        if has_g:
            v += ["%.2f" % t["gcomm_over_best"] if "gcomm_over_best" in t else "-",
                  "%.2f" % t["gcomm_over_ceiling"] if "gcomm_over_ceiling" in t else "-"]
        lines.append(v)
    meta = c.get("meta") or {}
    head = "busbw (GB/s) by size, %s hosts" % (c["nranks"] or "?")
    if c["ceiling_GBps"] is not None:
        head += ("; ring ceiling %.3f GB/s (min link, iperf3 on all links at once; higher of the "
                 "runs before and after)" % c["ceiling_GBps"])
    if meta.get("started"):
        head += "; run %s" % meta["started"]
    if markdown:
        out.append("**%s**\n" % head)
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "|".join("---:" for _ in cols) + "|")
        for v in lines:
            out.append("| " + " | ".join(v) + " |")
    else:
        w = [max(len(cols[i]), *(len(v[i]) for v in lines)) if lines else len(cols[i])
             for i in range(len(cols))]
        out.append("# " + head)
        out.append("  ".join(cols[i].rjust(w[i]) for i in range(len(cols))))
        for v in lines:
            out.append("  ".join(v[i].rjust(w[i]) for i in range(len(cols))))
    out.append("")
    if c["ceiling"]:
        for m in c["ceiling"].get("measurements", [c["ceiling"]]):
            links = ", ".join("%s->%s %.3f" % (l["from"], l["to"], l["GBps"]) for l in m["links"])
            when = {"ceiling.json": "before the peers", "ceiling-end.json": "after the peers"}.get(
                m.get("file"), "")
            out.append(("ring links %s (GB/s): %s; min %.3f" % (when, links, m["ceiling_GBps"])) +
                       ("\n" if markdown else ""))
    lat = "; ".join("%s %.1f" % (title(n), c["latency"][n]["time_us"]) for n in names)
    out.append("8-byte allreduce latency (median, us): " + lat)
    if c["check_failures"]:
        out.append("")
        out.append("CHECK FAILURES (marked !): " +
                   ", ".join("%s@%s" % (title(n), human(s)) for n, s in c["check_failures"]))
    g = c["goals"]
    if g:
        out.append("")
        out.append("gcomm goals (issue 6):")
        out.append("  busbw > best peer at every size >= %s: %s%s" % (
            human(g["busbw_ahead_of_best_from"]), "yes" if g["busbw_ahead_of_best"] else "NO",
            "" if not g["sizes_behind"] else " (behind at %s)" % ", ".join(human(s) for s in g["sizes_behind"])))
        r = g["ceiling_ratio_64M"]
        out.append("  >= 80%% of the ring ceiling at 64M: %s (%s)" % (
            "yes" if g["ceiling_80pct_at_64M"] else "NO", "-" if r is None else "%.0f%%" % (100 * r)))
        if g["best_peer_latency_8B_us"] is not None:
            out.append("  8-byte latency <= best peer's: %s (gcomm %.1f us, %s %.1f us)" % (
                "yes" if g["latency_no_worse"] else "NO", g["latency_8B_us"],
                title(g["best_peer_latency_8B"]), g["best_peer_latency_8B_us"]))
        out.append("  correctness checks: %s" % ("ok" if g["checks_ok"] else "FAILED"))
    if markdown:
        out = [l if not l.startswith("  ") else "- " + l.strip() for l in out]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--json", help="also write the comparison as JSON to this file")
    ap.add_argument("--goal-from", default="1M", help="smallest size of the busbw goal (1M)")
    a = ap.parse_args()
    c = build(a.dir, parse_size(a.goal_from))
    if not c["peers"]:
        print("compare.py: no peer rows in %s" % a.dir, file=sys.stderr)
        return 1
    sys.stdout.write(render(c, a.markdown))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(c, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
