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

# ---- 1. install ------------------------------------------------------------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v sbatch >/dev/null; then
    log "installing slurm-wlm (Debian package)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends slurm-wlm >&2
fi
VERSION=$(slurmctld -V | awk '{print $2}')

# MUNGE must work (deploy/install-deps.sh starts it; else, as root: mkdir -p /run/munge,
# chown munge:munge /run/munge, runuser -u munge -- /usr/sbin/munged).
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    log "munged not answering; starting it"
    mkdir -p /run/munge && chown munge:munge /run/munge
    runuser -u munge -- /usr/sbin/munged
    sleep 0.5
    munge -n | unmunge >/dev/null 2>&1 || die "munge still not working"
fi

# ---- 2. private config + daemons ---------------------------------------------------------
T=$(mktemp -d /tmp/slurm-bench.XXXXXX)
chmod 755 "$T"
CTLD_PID=""; SLURMD_PID=""

cleanup() {
    local rc=$?
    set +e
    trap - EXIT INT TERM
    if [[ -n $CTLD_PID ]] && kill -0 "$CTLD_PID" 2>/dev/null; then
        scancel --quiet --user=root >/dev/null 2>&1   # only jobs of this private cluster
        scontrol shutdown >/dev/null 2>&1              # stops slurmctld and slurmd
    fi
    for p in $SLURMD_PID $CTLD_PID; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$p" 2>/dev/null && { kill -TERM "$p"; sleep 1; kill -KILL "$p" 2>/dev/null; }
        wait "$p" 2>/dev/null
    done
    # slurmstepd processes detach from slurmd; end only the ones belonging to this run.
    for p in $(pgrep -x slurmstepd 2>/dev/null); do
        if { tr '\0' '\n' </proc/"$p"/environ | grep -qx "SLURM_CONF=$T/slurm.conf" ||
             tr '\0' ' ' </proc/"$p"/cmdline | grep -q "$T"; } 2>/dev/null; then
            kill -KILL "$p" 2>/dev/null
        fi
    done
    if [[ $rc -ne 0 ]]; then
        log "failed (rc=$rc); last log lines:"
        tail -n 20 "$T"/slurmctld.log "$T"/slurmd.log >&2 2>/dev/null
    fi
    if [[ ${KEEP_TMP:-0} == 1 ]]; then log "kept $T"; else rm -rf "$T"; fi
    exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }
BASE=$(( 20000 + (RANDOM % 20000) ))
while ! port_free "$BASE" || ! port_free $((BASE + 1)); do BASE=$((BASE + 2)); done
CTLD_PORT=$BASE; SLURMD_PORT=$((BASE + 1))

NODE=$(hostname -s)
MEM_MB=$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 * 0.95}' /proc/meminfo)
mkdir -p "$T"/state "$T"/spool "$T"/lat
: >"$T"/plugstack.conf

cat >"$T"/slurm.conf <<EOF
ClusterName=gpoolbench
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
PlugStackConfig=$T/plugstack.conf
SlurmctldDebug=${SLURM_BENCH_DEBUG:-error}
SlurmdDebug=${SLURM_BENCH_DEBUG:-error}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
$( [[ -n $SCHED_PARAMS ]] && echo "SchedulerParameters=$SCHED_PARAMS" )
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=300
$( [[ -n ${ARRAY:-} ]] && printf 'MaxArraySize=%d\nMaxJobCount=%d\n' $((N + 1)) $((N + 10000)) )
MessageTimeout=30
SlurmctldTimeout=60
SlurmdTimeout=60
ReturnToService=2
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=2 RealMemory=$MEM_MB State=UNKNOWN
PartitionName=bench Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=$OVERSUB
EOF
export SLURM_CONF=$T/slurm.conf

log "Slurm $VERSION, temp dir $T, ports $CTLD_PORT/$SLURMD_PORT, node $NODE (2 CPUs, ${MEM_MB} MB)"
log "SchedulerParameters=$SCHED_PARAMS"
cd "$T"
slurmctld -D -i -f "$SLURM_CONF" >"$T"/slurmctld.out 2>&1 &
CTLD_PID=$!
slurmd -D -f "$SLURM_CONF" -N "$NODE" >"$T"/slurmd.out 2>&1 &
SLURMD_PID=$!

deadline=$(( SECONDS + 60 ))
state=""
while (( SECONDS < deadline )); do
    kill -0 "$CTLD_PID" 2>/dev/null || { cat "$T"/slurmctld.out >&2; die "slurmctld exited"; }
    kill -0 "$SLURMD_PID" 2>/dev/null || { cat "$T"/slurmd.out >&2; die "slurmd exited"; }
    state=$(sinfo -h -N -n "$NODE" -o '%t' 2>/dev/null || true)
    [[ $state == idle ]] && break
    sleep 0.2
done
[[ $state == idle ]] || die "node never became idle (state '$state')"
log "node $NODE idle"

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
