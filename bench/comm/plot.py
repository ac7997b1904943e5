#!/usr/bin/python3
"""plot.py — busbw against message size for one side-by-side results directory.

  plot.py RESULTS_DIR [-o FILE.png] [--logy] [--title TEXT]

One line per peer (Open MPI ob1/tcp, ob1 + yield_when_idle, pml ucx, gloo, gcomm when it ran),
log2 x axis (bytes), busbw in GB/s on y, and the ring ceiling (iperf3 on all links at once) as a
dashed horizontal line. Default output: RESULTS_DIR/busbw.png. Needs python3-matplotlib.
"""
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402

STYLE = {
    "mpi-ob1": dict(color="tab:blue", marker="o", label="Open MPI ob1/tcp (defaults)"),
    "mpi-yield": dict(color="tab:cyan", marker="s", label="Open MPI ob1/tcp, yield_when_idle"),
    "mpi-ucx": dict(color="tab:purple", marker="^", label="Open MPI pml ucx (tcp)"),
    "gloo": dict(color="tab:orange", marker="D", label="PyTorch gloo"),
    "gcomm": dict(color="tab:red", marker="*", label="gcomm", linewidth=2.5, markersize=9),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("-o", "--output")
    ap.add_argument("--logy", action="store_true", help="logarithmic busbw axis")
    ap.add_argument("--title")
    a = ap.parse_args()
    peers, ceiling, meta = compare.load(a.dir)
    if not peers:
        print("plot.py: no peer rows in %s" % a.dir, file=sys.stderr)
        return 1
    out = a.output or os.path.join(a.dir, "busbw.png")

    fig, ax = plt.subplots(figsize=(10, 6), dpi=110)
    allsizes = set()
    for name, _ in compare.PEERS:
        if name not in peers:
            continue
        rows = [peers[name][s] for s in sorted(peers[name])]
        xs = [r["size_bytes"] for r in rows]
        ys = [r["busbw_GBps"] for r in rows]
        allsizes.update(xs)
        st = dict(STYLE.get(name, dict(label=name)))
        st.setdefault("linewidth", 1.5)
        st.setdefault("markersize", 4)
        ax.plot(xs, ys, **st)
        bad = [(r["size_bytes"], r["busbw_GBps"]) for r in rows if r.get("check") not in ("ok", "skip")]
        if bad:
            ax.plot(*zip(*bad), linestyle="none", marker="x", color="black", markersize=10,
                    label="%s: check failed" % name)
    if ceiling:
        ms = ceiling.get("measurements") or [dict(ceiling, file="ceiling.json")]
        for m, ls in zip(ms, ("--", ":")):
            when = {"ceiling.json": "before", "ceiling-end.json": "after"}.get(m["file"], "")
            ax.axhline(m["ceiling_GBps"], color="black", linestyle=ls, linewidth=1.2,
                       label="ring ceiling %s the peers: %.2f GB/s (iperf3, all %d links at once)" % (
                           when, m["ceiling_GBps"], ceiling["nhosts"]))
    ax.set_xscale("log", base=2)
    sizes = sorted(allsizes)
    ticks = [s for s in sizes if (s.bit_length() - 1) % 2 == 1] or sizes  # every other power of 2
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([compare.human(s) for s in ticks], rotation=45)
    if a.logy:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.set_xlabel("message size (bytes, float32 sum)")
    ax.set_ylabel("busbw (GB/s) = algbw * 2(n-1)/n")
    n = meta.get("nhosts") or (ceiling or {}).get("nhosts") or "?"
    ax.set_title(a.title or "allreduce busbw, %s hosts (network namespaces)%s" % (
        n, ", " + meta["started"] if meta.get("started") else ""))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", fontsize=9)
    fig.tight_layout()
    fig.savefig(out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
