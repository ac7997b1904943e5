#!/bin/bash
# ring-ceiling.sh — the ring ceiling: iperf3 on every link of the ring at once.
#
#   ring-ceiling.sh [--time S] [--port P] [--json FILE] NS:IP NS:IP [NS:IP...]
#   (hosts may also be given as one comma-separated list: NS:IP,NS:IP,...)
#
# Host i sends to host i+1 (mod n) — one TCP stream per link, all n streams at the same time,
# for S seconds (default 10; the first second is omitted as TCP ramp-up). Every host is a
# network namespace (NS) with address IP; iperf3 binds to those addresses on both ends, so no
# other address carries traffic. Prints each link's GB/s (1e9 bytes/s, receiver side) and the
# minimum: the ceiling for a ring allreduce's busbw (each link of a ring allreduce carries
# 2(n-1)/n of the buffer, which is what busbw counts). With n = 2 the ring is h1->h2 and h2->h1
# at once. One pair alone overstates the ceiling: the links share CPUs and the bridge.
set -euo pipefail

SECS=10 PORT=5301 JSON="" HOSTS=()
while [ $# -gt 0 ]; do
	case $1 in
	--time) SECS=$2; shift 2 ;;
	--port) PORT=$2; shift 2 ;;
	--json) JSON=$2; shift 2 ;;
	-h | --help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) IFS=, read -r -a more <<<"$1"; HOSTS+=("${more[@]}"); shift ;;
	esac
done
n=${#HOSTS[@]}
[ "$n" -ge 2 ] || { echo "ring-ceiling.sh: need at least 2 hosts (NS:IP)" >&2; exit 2; }
command -v iperf3 >/dev/null || { echo "ring-ceiling.sh: iperf3 not installed" >&2; exit 2; }
NS=() IP=()
for h in "${HOSTS[@]}"; do
	[[ $h == *:* ]] || { echo "ring-ceiling.sh: host '$h' is not NS:IP" >&2; exit 2; }
	NS+=("${h%%:*}") IP+=("${h#*:}")
done

TMP=$(mktemp -d /tmp/gcb-ring.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$TMP"
}
trap cleanup EXIT

# one one-shot server per host (it receives from its predecessor)
for i in $(seq 0 $((n - 1))); do
	ip netns exec "${NS[$i]}" iperf3 -s -1 -B "${IP[$i]}" -p "$PORT" >"$TMP/server$i.log" 2>&1 &
	PIDS+=($!)
done
# wait until every server listens
for i in $(seq 0 $((n - 1))); do
	for _ in $(seq 1 50); do
		ip netns exec "${NS[$i]}" ss -Hltn "src ${IP[$i]}:$PORT" 2>/dev/null | grep -q . && break
		sleep 0.1
	done
done

CLIENTS=()
for i in $(seq 0 $((n - 1))); do
	j=$(((i + 1) % n))
	ip netns exec "${NS[$i]}" iperf3 -c "${IP[$j]}" -B "${IP[$i]}" -p "$PORT" -t "$SECS" -O 1 -J \
		>"$TMP/client$i.json" 2>"$TMP/client$i.err" &
	CLIENTS+=($!)
	PIDS+=($!)
done
rc=0
for p in "${CLIENTS[@]}"; do wait "$p" || rc=1; done
if [ $rc != 0 ]; then
	for i in $(seq 0 $((n - 1))); do cat "$TMP/client$i.err" "$TMP/server$i.log" >&2 || true; done
	echo "ring-ceiling.sh: an iperf3 client failed" >&2
fi

/usr/bin/python3 - "$TMP" "$n" "$SECS" "${JSON:-}" "${HOSTS[@]}" <<'EOF'
import json, sys
tmp, n, secs, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
hosts = sys.argv[5:]
links, bad = [], False
print("# ring ceiling: iperf3 on all %d links of the ring at once, %g s each (1 s omitted)" % (n, secs))
print("# %-28s %10s %12s" % ("link", "GBps", "retransmits"))
for i in range(n):
    j = (i + 1) % n
    frm, to = hosts[i].split(":", 1)[0], hosts[j].split(":", 1)[0]
    try:
        d = json.load(open("%s/client%d.json" % (tmp, i)))
        if "error" in d:
            raise ValueError(d["error"])
        end = d["end"]
        gbps = end["sum_received"]["bits_per_second"] / 8e9
        retr = end.get("sum_sent", {}).get("retransmits", 0)
    except Exception as e:  # noqa
        print("ring-ceiling: link %s->%s: %s" % (frm, to, e), file=sys.stderr)
        gbps, retr, bad = 0.0, -1, True
    links.append({"from": frm, "to": to, "from_ip": hosts[i].split(":", 1)[1],
                  "to_ip": hosts[j].split(":", 1)[1], "GBps": gbps, "retransmits": retr})
    print("  %-28s %10.3f %12d" % (frm + "->" + to, gbps, retr))
m = min(l["GBps"] for l in links)
print("ceiling_GBps %.3f" % m)
if out:
    with open(out, "w") as f:
        json.dump({"tool": "ring-ceiling", "nhosts": n, "seconds": secs, "links": links,
                   "ceiling_GBps": m}, f, indent=1)
        f.write("\n")
sys.exit(1 if bad else 0)
EOF
