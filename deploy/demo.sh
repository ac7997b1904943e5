#!/bin/bash
# demo.sh: gpool in two minutes on one machine. Starts a 3-host cluster (network namespaces,
# deploy/gpool-cluster), shows the nodes, runs a 3-rank gang job across the hosts as
# gpool-user, a few more jobs, the accounting view, trains a digits classifier across the 3
# hosts with gtrain, serves a language model as one service replica of 3 ranks (gllm behind
# ggated; the model trained here, models/gpool-fortunes.gguf, when present) and prints a streamed
# completion, and stops the cluster.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/.." && pwd)
export GPOOL_BIN_DIR=${GPOOL_BIN_DIR:-$SRC/build/bin}
CLUSTER=$HERE/gpool-cluster
DIR=${GPOOL_DEMO_DIR:-/tmp/gpool-demo}
USER_=gpool-user

heading() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }
as_user() {
	printf '\033[2m%s$ %s\033[0m\n' "$USER_" "$*"
	runuser -u "$USER_" -- env PATH="$USER_BIN:/usr/bin:/bin" GPOOL_CONF="$GPOOL_CONF" \
		GPOOL_SCHEDULER="$GPOOL_SCHEDULER" "$@"
}

[ "$(id -u)" = 0 ] || echo "demo: not root: the hosts share 127.0.0.1 instead of network namespaces"
trap '"$CLUSTER" stop --dir "$DIR" >/dev/null 2>&1 || true' EXIT

heading "Start a cluster of 3 hosts (gschedd + 3 gworkerd, hosts h1..h3 in 198.18.0.0/24)"
run "$CLUSTER" start -n 3 --dir "$DIR" --fake-cards default
# gpool-user runs the commands: from a copy when the build sits in root's private home
# shellcheck source=deploy/lib-users.sh
. "$HERE/lib-users.sh"
USER_BIN=$(gpool_users_bin "$GPOOL_BIN_DIR" "$DIR/user")
eval "$("$CLUSTER" env --dir "$DIR")"
cd "$DIR"
mkdir -p work && chown "$USER_:" work && cd work

heading "The nodes (gnodes)"
run gnodes

heading "A 3-rank gang job, one rank per host: each prints its host, rank and environment"
as_user gsub -n 3 -N 3 --wait -J gang-demo -- /bin/sh -c \
	'echo "rank $GPOOL_RANK on $(hostname) $(ip -4 -o addr show eth0 2>/dev/null | awk "{print \$4}")"; env | grep -E "^(RANK|WORLD_SIZE|LOCAL_RANK|MASTER_ADDR|MASTER_PORT|GPOOL_NODELIST)=" | sort | sed "s/^/  rank $GPOOL_RANK: /"' |
	sort -s -k2,2n

heading "A few more jobs: a quick one, a failing one, one with a time limit, one held"
as_user gsub -J hello -- /bin/echo "hello from gpool"
as_user gsub -J fails -- /bin/sh -c 'echo about to fail >&2; exit 3'
as_user gsub -J too-slow -t 0:02 -- /bin/sleep 60
held=$(as_user gsub --parsable -J held --hold -- /bin/true | tail -n 1)
as_user gsub -J busy -n 2 -- /bin/sleep 3
sleep 1

heading "The queue (gstat)"
run gstat

heading "Output of the job 'hello' (glogs)"
hello=$(gstat --json -a 2>/dev/null | python3 -c 'import json,sys
d=json.load(sys.stdin)
def jobs(x):
    if isinstance(x,dict):
        if "state" in x and "id" in x: yield x
        for v in x.values(): yield from jobs(v)
    elif isinstance(x,list):
        for v in x: yield from jobs(v)
print(max((j["id"] for j in jobs(d) if j.get("spec",{}).get("name")=="hello"), default=""))' 2>/dev/null || true)
[ -n "$hello" ] && as_user glogs "$hello"

heading "Cancel the held job, wait for the rest"
[ -n "$held" ] && as_user gcancel "$held"
sleep 4

heading "Every job, finished ones too (gstat -a)"
run gstat -a

heading "Train a digits classifier across the 3 hosts (gtrain: data-parallel, libgcomm allreduce)"
# the data: Debian's python3-sklearn ships the 1,797 8x8 digits; only that file is unpacked
if "$SRC/train/fetch-digits.sh" "$DIR/work/digits.csv.gz"; then
	chown "$USER_:" "$DIR/work/digits.csv.gz"
	# --stage copies the file to every node's scratch directory (no shared disk); rank 0
	# writes the model where the job's user can collect it on its host
	as_user gsub -n 3 -N 3 --wait -J gtrain-digits -t 5 --stage digits.csv.gz -- \
		gtrain --data digits.csv.gz --layers 64,256,256,10 --epochs 20 --batch 192 \
		--model "$DIR/work/digits.gpm" || echo "demo: the training job failed"
	[ -s "$DIR/work/digits.gpm" ] && {
		echo "collected model: $DIR/work/digits.gpm ($(wc -c <"$DIR/work/digits.gpm") bytes):"
		head -n 2 "$DIR/work/digits.gpm" | sed 's/^/  /'
	}
else
	echo "demo: skipping the training part: the digits set could not be fetched (see above)"
fi

heading "A language model across the 3 hosts (gllm: one service replica of 3 ranks, behind ggated)"
# the model trained here on Debian's fortunes (tools/llm/train.py); a random-weight one of the
# same family where it is not in the tree (its text is noise, the path it takes is the same)
MODEL=$SRC/models/gpool-fortunes.gguf
PROMPT="The meaning of life is"
if [ -s "$MODEL" ]; then
	cp "$MODEL" "$DIR/work/model.gguf"
else
	echo "demo: no models/gpool-fortunes.gguf here: a random-weight model (its text is noise)"
	"$GPOOL_BIN_DIR/gllm-mkmodel" --shape test-llama --layers 6 --type q8_0 "$DIR/work/model.gguf" >/dev/null
fi
chown "$USER_:" "$DIR/work/model.gguf"
GW=127.0.0.1:$((18000 + 200 * ${GPOOL_SLOT:-0}))
"$GPOOL_BIN_DIR/ggated" --listen "$GW" --config "$GPOOL_CONF" --scheduler "$GPOOL_SCHEDULER" \
	--health-interval 300 --poll-interval 300 >"$DIR/ggated.log" 2>&1 &
gw=$!
trap 'kill $gw 2>/dev/null; "$CLUSTER" stop --dir "$DIR" >/dev/null 2>&1 || true' EXIT
# the file is staged lazily: each host fetches only the chunks of its rank's layers; the ranks
# meet through gschedd's MUNGE-authenticated rendezvous and check each other's MUNGE
# credential (docs/llm.md)
llm=$(as_user gsub --parsable --service -N 3 --health-path /health -J llm \
	--stage-lazy model.gguf -- gllm serve model.gguf --backend cpu --ctx 256 --parallel 4 | tail -n 1)
up=0
for _ in $(seq 120); do
	[ "$(curl -s -m 1 "http://$GW/svc/llm/health" 2>/dev/null)" = ok ] && { up=1; break; }
	sleep 0.5
done
if [ "$up" = 1 ]; then
	rjob=$(gstat --json -j "$llm" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["replicas"][0]["job_id"])' 2>/dev/null || true)
	[ -n "$rjob" ] && as_user glogs "$rjob" 2>/dev/null | grep -E -A5 '^plan:' | head -n 6
	[ -n "$rjob" ] && as_user glogs "$rjob" 2>/dev/null | grep 'lazily staged' | sort | head -n 3
	body="{\"prompt\": \"$PROMPT\", \"max_tokens\": 32, \"stream\": true, \"temperature\": 0.7, \"seed\": 1}"
	printf '\033[2m$ curl -N http://%s/svc/llm/v1/completions -d %s\033[0m\n' "$GW" "'$body'"
	curl -N -s -m 60 "http://$GW/svc/llm/v1/completions" -d "$body" |
		python3 -u -c '
import json, sys
# the events as they come: each chunk'"'"'s text printed at once, then how the stream ended
for line in sys.stdin:
    if not line.startswith("data: "):
        continue
    d = line[6:].strip()
    if d == "[DONE]":
        print("\n[DONE]")
        break
    for c in json.loads(d).get("choices", []):
        print(c.get("text", ""), end="", flush=True)
        if c.get("finish_reason"):
            print("\n(finish_reason: %s)" % c["finish_reason"], end="")
'
else
	echo "demo: the model service did not come up; its replica:"
	as_user gstat -l -j "$llm" || true
fi
as_user gcancel "$llm" || true
kill "$gw" 2>/dev/null || true

heading "Stop the cluster"
run "$CLUSTER" stop --dir "$DIR"
trap - EXIT
