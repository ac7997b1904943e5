# shellcheck shell=bash
# lib-slurm.sh: a private one-node Slurm (Debian's slurm-wlm) on this machine, for the
# benchmarks that run it beside gpool (slurm-throughput.sh, slurm-ctld-down.sh). Sourced, as
# root: installs slurm-wlm if missing, starts munged if it does not answer, writes a private
# slurm.conf in a temp dir (SLURM_CONF; /etc/slurm untouched) on random free ports, starts
# slurmctld and slurmd, waits until the node is idle, and on exit stops both and this run's
# slurmstepd processes and removes the temp dir (KEEP_TMP=1 keeps it).
#
# In: SCHED_PARAMS (SchedulerParameters, may be empty), OVERSUB (OverSubscribe=),
# SLURM_EXTRA_CONF (more slurm.conf lines). Out: T, NODE, VERSION, CTLD_PID, SLURMD_PID, and
# slurm_ctld_start [FLAGS] to start slurmctld again. The caller defines log and die.

. "$(dirname "${BASH_SOURCE[0]}")/conf.sh" # slurm_conf_base, slurm_conf_plugins

# ---- 1. install ------------------------------------------------------------------------
# SLURM_DRY_RUN=1: the caller's arguments and this configuration are made and printed, and
# nothing is installed or started (CI's smoke run: a script broken before its daemons fails)
if [[ ${SLURM_DRY_RUN:-0} == 1 ]]; then
    VERSION=$(slurmctld -V 2>/dev/null | awk '{print $2}' || true)
    VERSION=${VERSION:-"(not installed)"}
else
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

{
    echo "ClusterName=gpoolbench"
    slurm_conf_base
    cat <<EOF
SlurmctldDebug=${SLURM_BENCH_DEBUG:-error}
SlurmdDebug=${SLURM_BENCH_DEBUG:-error}
EOF
    slurm_conf_plugins
    cat <<EOF
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
$( [[ -n $SCHED_PARAMS ]] && echo "SchedulerParameters=$SCHED_PARAMS" )
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MinJobAge=300
${SLURM_EXTRA_CONF:-}
MessageTimeout=30
SlurmctldTimeout=60
SlurmdTimeout=60
ReturnToService=2
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=2 RealMemory=$MEM_MB State=UNKNOWN
PartitionName=bench Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=$OVERSUB
EOF
} >"$T"/slurm.conf
export SLURM_CONF=$T/slurm.conf
if [[ ${SLURM_DRY_RUN:-0} == 1 ]]; then
    log "dry run: Slurm $VERSION, this slurm.conf, no daemon started:"
    cat "$T"/slurm.conf >&2
    exit 0
fi

log "Slurm $VERSION, temp dir $T, ports $CTLD_PORT/$SLURMD_PORT, node $NODE (2 CPUs, ${MEM_MB} MB)"
log "SchedulerParameters=$SCHED_PARAMS"
cd "$T" || exit 1
# slurmctld in the background, its pid in CTLD_PID; "$@": more flags (-i: ignore saved state)
slurm_ctld_start() {
    slurmctld -D "$@" -f "$SLURM_CONF" >>"$T"/slurmctld.out 2>&1 &
    CTLD_PID=$!
}
slurm_ctld_start -i
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

