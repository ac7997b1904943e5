#!/usr/bin/env bash
# slurm-throughput.sh N PAR — baseline throughput/latency of Debian's Slurm on this one machine.
#
# Self-contained: installs slurm-wlm if missing, writes a private slurm.conf in a temp dir
# (SLURM_CONF points at it; /etc/slurm is not touched), starts slurmctld + slurmd (-D, in the
# background), submits N trivial batch jobs from PAR parallel loops, measures submit rate and
# end-to-end completion rate, then M single-job submit->start latencies, prints ONE JSON line
# on stdout and stops both daemons + removes the temp dir on any exit.
#
# Env knobs (optional):
#   LAT_M=50                   number of latency samples
#   SLURM_SCHED_PARAMS=...     override SchedulerParameters (default: tuned, see below)
#   SLURM_OVERSUBSCRIBE=NO     partition OverSubscribe= (e.g. FORCE:8 = 8 jobs per core)
#   SLURM_BENCH_DEBUG=error    SlurmctldDebug/SlurmdDebug level (e.g. debug)
#   KEEP_TMP=1                 keep the temp dir (logs) after the run
#   ARRAY=1                    one `sbatch --array=1-N` instead of N sbatch (PAR unused);
#                              MaxArraySize and MaxJobCount are raised to fit N
#
# Exit status: 0 ok; 2 JSON printed but some submits failed or some jobs did not end
# COMPLETED; other non-zero: no result (see stderr).
#
# Must run as root (daemons run as SlurmUser=root). Needs munged running.
set -euo pipefail

N=${1:?usage: slurm-throughput.sh N PAR}
PAR=${2:?usage: slurm-throughput.sh N PAR}
LAT_M=${LAT_M:-50}
OVERSUB=${SLURM_OVERSUBSCRIBE:-NO}
# Tuned per Slurm's high-throughput guide: defer per-job scheduling at submit, back off while
# many RPCs are active, throttle the event-driven scheduler, and shorten the batch delay.
SCHED_PARAMS=${SLURM_SCHED_PARAMS-defer,max_rpc_cnt=150,sched_min_interval=100000,batch_sched_delay=1,sched_interval=5}

log() { printf '[slurm-bench] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }

[[ $N =~ ^[0-9]+$ && $N -gt 0 ]] || die "N must be a positive integer"
[[ $PAR =~ ^[0-9]+$ && $PAR -gt 0 ]] || die "PAR must be a positive integer"
[[ $(id -u) -eq 0 ]] || die "must run as root"

# ---- 1-2. install, private config, daemons (lib-slurm.sh) ----------------------------------
# (an if, not `$( [[ ]] && printf )`: that substitution fails without ARRAY, and set -e ended
# the script at once)
SLURM_EXTRA_CONF=""
if [[ -n ${ARRAY:-} ]]; then
    SLURM_EXTRA_CONF=$(printf 'MaxArraySize=%d\nMaxJobCount=%d\n' $((N + 1)) $((N + 10000)))
fi
# shellcheck source=bench/slurm/lib-slurm.sh
. "$(dirname "$0")/lib-slurm.sh"
cd "$T"

# ---- 3. throughput --------------------------------------------------------------------
log "submitting $N jobs from $PAR parallel loops"
t0=$(now)
set +e
if [[ -n ${ARRAY:-} ]]; then
    sbatch --parsable --array="1-$N" --wrap=/bin/true -o /dev/null -J arr >"$T"/submit.ids 2>"$T"/submit.err
    xrc=$?
    nsub=$(( $(grep -c '^[0-9]' "$T"/submit.ids || true) * N ))
else
    seq "$N" | xargs -P "$PAR" -I{} sbatch --parsable --wrap=/bin/true -o /dev/null -J "t{}" \
        >"$T"/submit.ids 2>"$T"/submit.err
    xrc=$?
    nsub=$(grep -c '^[0-9]' "$T"/submit.ids || true)
fi
set -e
t1=$(now)
(( xrc == 0 )) || log "WARNING: some sbatch calls failed (xargs rc=$xrc): $(sort "$T"/submit.err | uniq -c | head -5)"
log "submitted $nsub/$N in $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') s; waiting for completion"

wait_deadline=$(( SECONDS + 1800 ))
while :; do
    if out=$(squeue -h -o %i 2>/dev/null); then
        [[ -z $out ]] && break
    fi
    (( SECONDS < wait_deadline )) || die "jobs still queued after 1800 s"
    sleep 0.2
done
t2=$(now)

# Sanity: the queue is empty, so every accepted job has ended. Records of ended jobs are kept
# only MinJobAge=300 s, so failures can be seen only among jobs that ended in the last 300 s:
# count those not COMPLETED (FAILED, NODE_FAIL, CANCELLED, ...) as a warning.
nbad=$(squeue -h -t all -o '%T' | grep -vc '^COMPLETED$' || true)
ncomp=$nsub
log "all $ncomp accepted jobs ended after $(awk -v a="$t0" -v b="$t2" 'BEGIN{printf "%.2f", b-a}') s ($nbad seen not COMPLETED)"
ok=1
(( nsub == N && nbad == 0 )) || { ok=0; log "WARNING: $nsub of $N submitted, $nbad ended not COMPLETED"; }

SUBMIT_PER_S=$(awk -v n="$nsub" -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", n/(b-a)}')
COMPLETE_PER_S=$(awk -v n="$ncomp" -v a="$t0" -v b="$t2" 'BEGIN{printf "%.2f", n/(b-a)}')

# ---- 4. latency -----------------------------------------------------------------------
log "latency: $LAT_M single jobs, one at a time on an idle node"
: >"$T"/lat.ms
for i in $(seq "$LAT_M"); do
    tc=$(now)
    jid=$(sbatch --parsable -o "$T/lat/$i.out" --wrap='date +%s.%N') || die "sbatch failed (latency $i)"
    ld=$(( SECONDS + 60 ))
    # wait for the job to leave the queue so that the next one meets an idle node
    while [[ -n $(squeue -h -j "$jid" -o %i 2>/dev/null || echo busy) ]]; do
        (( SECONDS < ld )) || die "latency job $jid did not finish in 60 s"
        sleep 0.05
    done
    ts=$(head -n1 "$T/lat/$i.out" 2>/dev/null || true)
    [[ $ts =~ ^[0-9]+\.[0-9]+$ ]] || die "latency job $jid printed '$ts'"
    awk -v a="$tc" -v b="$ts" 'BEGIN{printf "%.1f\n", (b-a)*1000}' >>"$T"/lat.ms
done
sort -n "$T"/lat.ms >"$T"/lat.sorted
pct() { awk -v p="$1" '{v[NR]=$1} END{r=int((p*NR+99)/100); if(r<1)r=1; printf "%.1f", v[r]}' "$T"/lat.sorted; }
P50=$(pct 50); P99=$(pct 99)
log "latency ms: min $(head -n1 "$T"/lat.sorted) p50 $P50 p99 $P99 max $(tail -n1 "$T"/lat.sorted)"

# ---- 5. result ------------------------------------------------------------------------
printf '{"system":"slurm","jobs":%d,"parallel":%d,"submit_per_s":%s,"complete_per_s":%s,"lat_p50_ms":%s,"lat_p99_ms":%s,"version":"%s"}\n' \
    "$N" "$PAR" "$SUBMIT_PER_S" "$COMPLETE_PER_S" "$P50" "$P99" "$VERSION"
(( ok == 1 )) || exit 2
