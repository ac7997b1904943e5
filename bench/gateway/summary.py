#!/usr/bin/env python3
"""summary.py LOG: the median and range of each figure of a bench/gateway.sh log: for every
"## LABEL, N connection(s): wrk ..." block, wrk's p50, p99 and requests/s (and the proxy's
CPU time a request where the log has it), grouped by label and
connection count, in the order first seen."""
import re
import statistics
import sys

UNIT = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def ms(text):
    m = re.match(r"([0-9.]+)(us|ms|s)$", text)
    return float(m.group(1)) * UNIT[m.group(2)] if m else None


def main():
    runs = {}
    order = []
    key = None
    for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
        m = re.match(r"## (.*), (\d+) connection\(s\):", line)
        if m:
            key = (m.group(1), int(m.group(2)))
            if key not in runs:
                runs[key] = []
                order.append(key)
            runs[key].append({})
            continue
        if key is None:
            continue
        m = re.match(r"\s+(50|99)%\s+(\S+)", line)
        if m:
            runs[key][-1]["p" + m.group(1)] = ms(m.group(2))
        m = re.match(r"# cpu: (\d+) us a request", line)
        if m:
            runs[key][-1]["cpu"] = float(m.group(1))
        m = re.match(r"\s+Latency\s+\S+\s+\S+\s+(\S+)", line)
        if m:
            runs[key][-1]["max"] = ms(m.group(1))
        m = re.match(r"Requests/sec:\s+([0-9.]+)", line)
        if m:
            runs[key][-1]["rps"] = float(m.group(1))

    def cell(vals, fmt):
        vals = [v for v in vals if v is not None]
        if not vals:
            return "-"
        return "%s (%s-%s)" % (fmt(statistics.median(vals)), fmt(min(vals)), fmt(max(vals)))

    def lat(v):
        return "%.0f us" % (v * 1e3) if v < 1 else "%.2f ms" % v

    print("# summary: median (min-max) of the runs of each figure")
    print("| path | conns | runs | p50 | p99 | max | requests/s | proxy CPU a request |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for k in order:
        rs = [r for r in runs[k] if "rps" in r]
        print("| %s | %d | %d | %s | %s | %s | %s | %s |" % (
            k[0], k[1], len(rs), cell([r.get("p50") for r in rs], lat),
            cell([r.get("p99") for r in rs], lat), cell([r.get("max") for r in rs], lat),
            cell([r.get("rps") for r in rs], lambda v: "{:,.0f}".format(v)),
            cell([r.get("cpu") for r in rs], lambda v: "%.0f us" % v)))


main()
