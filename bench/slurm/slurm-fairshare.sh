#!/bin/bash
# slurm-fairshare.sh [SECONDS]: Slurm's fair share beside gpool's (bench/fairshare.sh): a private
# one-node Slurm 22.05 (Debian's slurm-wlm) with accounting in slurmdbd backed by a private
# MariaDB (Debian's mariadb-server, its own data directory and port on 127.0.0.1),
# PriorityType=priority/multifactor with only the fair-share weight, PriorityDecayHalfLife=1:00:00
# (gpool's fairshare_half_life = 1h), associations gpool-user fairshare=2 and gpool-other
# fairshare=1; 4 CPUs (the gpool run's 2 hosts x 2); both users submit an array of JOBS (default
# 150) one-CPU `sleep 1` jobs at once; every 2 s for SECONDS (default 60) the run time each
# user's jobs had so far (sacct: ended jobs whole, running ones so far), then the order the jobs
# started in (one letter a job: U gpool-user, O gpool-other). As root; needs slurmdbd and
# mariadb-server (apt-get install slurmdbd mariadb-server). Writes OUT (default
# bench/results/fairshare/slurm-fairshare-<date>.txt). Everything it starts is stopped on exit.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
. "$here/bench/slurm/conf.sh" # slurm_conf_base, slurm_conf_plugins
secs=${1:-60}
jobs=${JOBS:-150}
out=${OUT:-$here/bench/results/fairshare/slurm-fairshare-$(date -u +%Y%m%d-%H%M).txt}
mkdir -p "$(dirname "$out")"
log() { echo "slurm-fairshare: $*" >&2; }
die() {
	log "$*"
	exit 1
}
command -v slurmdbd >/dev/null && command -v mariadbd >/dev/null ||
	die "needs slurmdbd and mariadb-server (apt-get install slurmdbd mariadb-server)"
munge -n 2>/dev/null | unmunge >/dev/null 2>&1 || die "munged does not answer"

T=$(mktemp -d /tmp/gp-owneradmin-slurmfs.XXXXXX)
chmod 755 "$T"
DB_PID="" DBD_PID="" CTLD_PID="" SLURMD_PID=""
cleanup() {
	set +e
	trap - EXIT
	if [ -n "$CTLD_PID" ] && kill -0 "$CTLD_PID" 2>/dev/null; then
		scancel --quiet --user=gpool-user >/dev/null 2>&1
		scancel --quiet --user=gpool-other >/dev/null 2>&1
		scontrol shutdown >/dev/null 2>&1
	fi
	for p in $SLURMD_PID $CTLD_PID $DBD_PID $DB_PID; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$p" 2>/dev/null && kill -TERM "$p" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$p" 2>/dev/null && kill -KILL "$p" 2>/dev/null
	done
	for p in $(pgrep -x slurmstepd 2>/dev/null); do
		tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null | grep -q "$T" && kill -KILL "$p"
		tr '\0' '\n' </proc/"$p"/environ 2>/dev/null | grep -qx "SLURM_CONF=$T/slurm.conf" &&
			kill -KILL "$p"
	done
	[ "${KEEP_TMP:-0}" = 1 ] && log "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port_free() { ! ss -Hltn "sport = :$1" | grep -q .; }
BASE=$((20000 + RANDOM % 20000))
while ! port_free "$BASE" || ! port_free $((BASE + 1)) || ! port_free $((BASE + 2)) ||
	! port_free $((BASE + 3)); do BASE=$((BASE + 4)); done
DB_PORT=$BASE DBD_PORT=$((BASE + 1)) CTLD_PORT=$((BASE + 2)) SLURMD_PORT=$((BASE + 3))

# ---- MariaDB, private
mkdir -p "$T/db"
chown mysql:mysql "$T/db"
mariadb-install-db --user=mysql --datadir="$T/db" --auth-root-authentication-method=normal \
	>"$T/db-install.log" 2>&1 || die "mariadb-install-db failed: $(tail -3 "$T/db-install.log")"
runuser -u mysql -- mariadbd --no-defaults --datadir="$T/db" --socket="$T/db/db.sock" \
	--port="$DB_PORT" --bind-address=127.0.0.1 --pid-file="$T/db/db.pid" --skip-log-bin \
	--innodb-buffer-pool-size=64M >"$T/db.log" 2>&1 &
DB_PID=$!
for _ in $(seq 100); do mariadb --no-defaults -S "$T/db/db.sock" -uroot -e 'select 1' >/dev/null 2>&1 && break; sleep 0.2; done
mariadb --no-defaults -S "$T/db/db.sock" -uroot -e "CREATE DATABASE slurm_acct_db;
CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'fsbench';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" || die "cannot set the database up: $(tail -3 "$T/db.log")"

# ---- slurmdbd (it reads slurmdbd.conf beside $SLURM_CONF)
cat >"$T/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
LogFile=$T/slurmdbd.log
PidFile=$T/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=fsbench
StorageLoc=slurm_acct_db
EOF
chmod 600 "$T/slurmdbd.conf"
SLURM_CONF=$T/slurm.conf
NODE=$(hostname -s)
mkdir -p "$T/state" "$T/spool"
: >"$T/plugstack.conf"
{
    echo "ClusterName=fsbench"
    slurm_conf_base
    cat <<EOF
SlurmctldDebug=info
SlurmdDebug=error
EOF
    slurm_conf_plugins
    cat <<EOF
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=defer,max_rpc_cnt=150,sched_min_interval=100000,batch_sched_delay=1,sched_interval=5
SlurmdParameters=config_overrides
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
AccountingStorageEnforce=associations
JobCompType=jobcomp/none
PriorityType=priority/multifactor
PriorityDecayHalfLife=1:00:00
PriorityCalcPeriod=1
PriorityWeightFairshare=100000
PriorityWeightAge=0
PriorityWeightJobSize=0
PriorityWeightPartition=0
PriorityWeightQOS=0
MinJobAge=600
MessageTimeout=30
ReturnToService=2
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=fs Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
} >"$T/slurm.conf"
export SLURM_CONF
slurmdbd -D >"$T/slurmdbd.out" 2>&1 &
DBD_PID=$!
for _ in $(seq 100); do sacctmgr -n list cluster >/dev/null 2>&1 && break; sleep 0.3; done
sacctmgr -i add cluster fsbench >/dev/null || die "sacctmgr add cluster: $(tail -3 "$T/slurmdbd.log")"
sacctmgr -i add account fsbench Cluster=fsbench >/dev/null
sacctmgr -i add user gpool-user Account=fsbench Fairshare=2 >/dev/null
sacctmgr -i add user gpool-other Account=fsbench Fairshare=1 >/dev/null
sacctmgr -i add user root Account=fsbench Fairshare=1 >/dev/null
slurmctld -D -i -f "$SLURM_CONF" >"$T/slurmctld.out" 2>&1 &
CTLD_PID=$!
slurmd -D -f "$SLURM_CONF" -N "$NODE" >"$T/slurmd.out" 2>&1 &
SLURMD_PID=$!
state=""
for _ in $(seq 300); do
	state=$(sinfo -h -N -n "$NODE" -o '%t' 2>/dev/null)
	[ "$state" = idle ] && break
	sleep 0.2
done
[ "$state" = idle ] || die "node never idle ('$state'): $(tail -5 "$T/slurmctld.log")"
VERSION=$(slurmctld -V | awk '{print $2}')

cd /tmp || exit 1
as() {
	local u=$1
	shift
	runuser -u "$u" -- env SLURM_CONF="$SLURM_CONF" "$@"
}
a=$(as gpool-user sbatch --parsable -D /tmp -o /dev/null --array=0-$((jobs - 1)) --wrap 'sleep 1')
b=$(as gpool-other sbatch --parsable -D /tmp -o /dev/null --array=0-$((jobs - 1)) --wrap 'sleep 1')
t0=$(date +%s.%N)
[ -n "$a" ] && [ -n "$b" ] || die "sbatch failed"
# run time so far per user at time NOW, from sacct's start and end times
usage() {
	sacct -a -n -P -X -o User,Start,End -S "$(date -d @"${t0%.*}" +%FT%T)" 2>/dev/null | python3 -c '
import sys, time, datetime
now = float(sys.argv[1]); use = {}
def ts(s):
    try: return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").timestamp()
    except ValueError: return None
for line in sys.stdin:
    u, s, e = line.rstrip("\n").split("|")
    s, e = ts(s), ts(e)
    if s is None: continue
    use[u] = use.get(u, 0) + max(0, (e if e is not None else now) - s)
print(use.get("gpool-user", 0), use.get("gpool-other", 0))' "$1"
}
{
	echo "# Slurm $VERSION fair share: associations gpool-user fairshare=2, gpool-other fairshare=1,"
	echo "# priority/multifactor (PriorityWeightFairshare only, PriorityDecayHalfLife=1:00:00,"
	echo "# PriorityCalcPeriod=1), 4 CPUs, $jobs one-CPU 'sleep 1' jobs per user submitted at once"
	echo "# ($(date -u +%FT%TZ), $(nproc) cores); sacct's times have 1 s resolution"
	echo "# T USER_S OTHER_S USER_PART TARGET"
	for t in $(seq 2 2 "$secs"); do
		sleep "$(python3 -c "print(max(0, $t0 + $t - __import__('time').time()))")"
		read -r u o <<<"$(usage "$(date +%s.%N)")"
		python3 -c "u, o = ${u:-0}, ${o:-0}; print('%d %.1f %.1f %.4f 0.6667' % ($t, u, o, u / max(1e-9, u + o)))"
	done
	echo "# sshare at the end:"
	sshare -a -l 2>&1 | sed 's/^/# /'
	echo "# sprio of the pending jobs (first lines):"
	sprio -l 2>&1 | head -6 | sed 's/^/# /'
	echo "# the order jobs started in (U gpool-user, O gpool-other), first 120:"
	sacct -a -n -P -X -o Start,User,JobID -S "$(date -d @"${t0%.*}" +%FT%T)" 2>/dev/null |
		grep -v '^Unknown' | sort | head -120 |
		awk -F'|' '{printf "%s", ($2 == "gpool-user" ? "U" : "O")} END {print ""}' | sed 's/^/# /'
} | tee "$out"
log "written $out"
