#!/usr/bin/env python3
"""mixed-table.py LOG... - the table of bench/train/mixed-on-gpu.sh's bench and compile logs:
samples/s of gtrain's step (eager, graph; with the optimizer beside backward, "optover", and
the products' algorithms timed, "tuned", where they ran) and PyTorch's (eager, torch.compile) per model, batch
and precision, the ratios, and TFLOP/s (6 x sum(in x out) per sample) as a fraction of the
measured bf16 peak. Medians where a configuration ran more than once."""
import collections
import re
import statistics
import sys

runs = collections.defaultdict(list)
peak = None
for path in sys.argv[1:]:
    for line in open(path):
        m = re.search(r"peak bf16 matmul .*: ([0-9.]+) TFLOP/s", line)
        if m:
            peak = float(m.group(1))
        m = re.match(r"gt-step-bench: .*layers ([0-9,]+), batch (\d+), (\w+), (eager|graph)((?: optover| tuned)*), .* ([0-9]+) samples/s", line)
        if m:
            runs[(m.group(1), int(m.group(2)), m.group(3), "gtrain " + m.group(4) + m.group(5))].append(float(m.group(6)))
        m = re.match(r"torch: .*layers ([0-9,]+), batch (\d+), (\w+)(, compiled)?, .* ([0-9]+) samples/s", line)
        if m:
            who = "torch compile" if m.group(4) else "torch eager"
            runs[(m.group(1), int(m.group(2)), m.group(3), who)].append(float(m.group(5)))

def flops(layers):
    s = [int(x) for x in layers.split(",")]
    return 6.0 * sum(a * b for a, b in zip(s, s[1:]))

order = ["gtrain eager", "gtrain graph", "gtrain eager optover", "gtrain graph optover",
         "gtrain eager tuned", "gtrain graph tuned", "gtrain eager optover tuned",
         "gtrain graph optover tuned"]
seen = {k[3] for k in runs}
cols = [c for c in order if c in seen] + sorted(c for c in seen if c.startswith("gtrain") and c not in order)
cols += ["torch eager", "torch compile"]
print("| model | batch | prec | " + " | ".join(c + " samples/s" for c in cols) +
      " | best gtrain / torch eager | best gtrain / torch compile | gtrain TFLOP/s | of bf16 peak |")
print("| --- | ---: | --- | " + " | ".join("---:" for _ in cols) + " | ---: | ---: | ---: | ---: |")
for key in sorted({k[:3] for k in runs}, key=lambda k: (k[0], k[1], ["f32", "tf32", "bf16", "f16"].index(k[2]))):
    med = {c: statistics.median(runs[key + (c,)]) for c in cols if runs.get(key + (c,))}
    g = max([v for c, v in med.items() if c.startswith("gtrain")] or [0])
    r1 = "%.2fx" % (g / med["torch eager"]) if g and "torch eager" in med else "-"
    r2 = "%.2fx" % (g / med["torch compile"]) if g and "torch compile" in med else "-"
    tf = g * flops(key[0]) / 1e12
    print("| %s | %d | %s | %s | %s | %s | %.0f | %s |" % (
        key[0].replace(",", "-"), key[1], key[2],
        " | ".join("{:,.0f}".format(med[c]) if c in med else "-" for c in cols), r1, r2, tf,
        "%.0f%%" % (100 * tf / peak) if peak else "-"))
if peak:
    print("\nbf16 peak (torch matmul 8192^3 on the same card): %.0f TFLOP/s" % peak)
