# lib-service.sh: helpers of the service tests (t08xx), sourced after lib.sh.
# shellcheck shell=bash

# replicas SVC: one line per replica: "index job node addr port state ready restarts crash_loop"
replicas() {
	gstat --json -j "$1" 2>/dev/null | "$PY" -c '
import json, sys
try:
    d = json.load(sys.stdin)
except Exception:
    sys.exit(0)
for j in d.get("jobs", []):
    if str(j.get("id")) != sys.argv[1]:
        continue
    for r in j.get("replicas", []):
        st = str(r.get("state", "")).replace("JOB_STATE_", "")
        print(r.get("index", 0), r.get("job_id", 0), r.get("node") or "-", r.get("addr") or "-",
              r.get("port", 0), st, "yes" if r.get("ready") else "no", r.get("restarts", 0),
              "yes" if r.get("crash_loop") else "no")
' "$1"
}
# ready_count SVC: replicas that are ready (running, port known)
ready_count() { replicas "$1" | awk '$7 == "yes"' | wc -l; }
# wait_ready SVC N TIMEOUT: until exactly N replicas are ready
wait_ready() {
	local deadline=$((SECONDS + $3))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(ready_count "$1")" = "$2" ] && [ "$(replicas "$1" | wc -l)" = "$2" ] && return 0
		sleep 0.3
	done
	return 1
}
# http_get URL: the status code (000: no answer), within 2 s; loopback or 198.18.0.x only
http_get() { curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" 2>/dev/null; }
