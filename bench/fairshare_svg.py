#!/usr/bin/env python3
"""fairshare_svg.py TABLE SVG: bench/fairshare.sh's table as an SVG plot (no plotting library
needed): each user's run time so far against time, and gpool-user's part of it against its
share's target."""
import sys

rows = []
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    t, u, o, part, target = line.split()
    rows.append((float(t), float(u), float(o), float(part), float(target)))
if not rows:
    sys.exit("fairshare_svg: no rows")
W, H, L, R, T, B = 720, 420, 60, 60, 30, 50
tmax = max(r[0] for r in rows)
ymax = max(max(r[1], r[2]) for r in rows) or 1


def x(t):
    return L + (W - L - R) * t / tmax


def y(v):
    return H - B - (H - T - B) * v / ymax


def yp(p):
    return H - B - (H - T - B) * p


def line(pts, colour, dash=""):
    d = " ".join("%.1f,%.1f" % p for p in pts)
    extra = ' stroke-dasharray="%s"' % dash if dash else ""
    return '<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>' % (colour, extra, d)


out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
       '<rect width="100%" height="100%" fill="white"/>',
       '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - R, H - B),
       '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - B),
       '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (W - R, T, W - R, H - B)]
for i in range(0, 6):
    v = ymax * i / 5
    out.append('<text x="%d" y="%.1f" text-anchor="end">%.0f</text>' % (L - 4, y(v) + 4, v))
    out.append('<text x="%d" y="%.1f">%.1f</text>' % (W - R + 4, yp(i / 5) + 4, i / 5))
    tt = tmax * i / 5
    out.append('<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>' % (x(tt), H - B + 16, tt))
out.append(line([(x(r[0]), y(r[1])) for r in rows], "#1f77b4"))
out.append(line([(x(r[0]), y(r[2])) for r in rows], "#ff7f0e"))
out.append(line([(x(r[0]), yp(r[3])) for r in rows], "#2ca02c"))
out.append(line([(x(0), yp(rows[0][4])), (x(tmax), yp(rows[0][4]))], "#2ca02c", "6,4"))
out.append('<text x="%d" y="%d" text-anchor="middle">seconds since both users flooded the queue</text>' % ((L + W - R) // 2, H - 12))
out.append('<text x="%d" y="%d" fill="#1f77b4">gpool-user run time (s, left)</text>' % (L + 10, T + 14))
out.append('<text x="%d" y="%d" fill="#ff7f0e">gpool-other run time (s, left)</text>' % (L + 10, T + 30))
out.append('<text x="%d" y="%d" fill="#2ca02c">gpool-user part (right), target %.3f dashed</text>' % (L + 10, T + 46, rows[0][4]))
out.append("</svg>")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
