# shellcheck shell=bash
# conf.sh: the slurm.conf lines every private benchmark Slurm here shares (lib-slurm.sh,
# slurm-fairshare.sh): the controller and the one node on this host, root, MUNGE, every file
# under the run's temp dir. Sourced; the caller writes its own lines around these.

# slurm_conf_base: those lines, with T, CTLD_PORT and SLURMD_PORT filled in
slurm_conf_base() {
    cat <<EOF
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
EOF
}

# slurm_conf_plugins: a node that tracks, isolates and accounts nothing of its own
slurm_conf_plugins() {
    cat <<EOF
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
EOF
}
