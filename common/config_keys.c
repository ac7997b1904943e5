/* config_keys.c: every gpool.conf key, in one table. docs/configuration.md mirrors it
 * (`gschedd --help` and `gworkerd --help` print it). */
#include "common/config.h"

#define S GP_SCHED
#define W GP_WORKER
#define C GP_CLI
#define P GP_STEPD

const struct gp_conf_key gp_conf_keys[] = {
    /* shared */
    {"scheduler", W | C, GP_CONF_STR, "tcp://127.0.0.1:7820",
     "endpoint of gschedd that agents and commands connect to, or a comma-separated list of "
     "them (a leader and its standbys: they find the leader, docs/protocol.md)",
     NULL, 0},
    {"log_level", S | W | P, GP_CONF_STR, "info", "err, warn, info or debug",
     "err|error|warn|warning|info|debug", S | W},
    {"log_file", S | W | P, GP_CONF_STR, "", "append log lines here instead of stderr", NULL,
     S | W},
    {"sched_uid", S | W | C, GP_CONF_INT, "0",
     "uid gschedd runs as: agents and commands accept replies and orders only from it", NULL, 0},
    {"agent_uid", S | W, GP_CONF_INT, "0", "uid gworkerd runs as: only it may register nodes", NULL,
     0},
    {"gateway_uid", S, GP_CONF_INT, "-1",
     "uid ggated runs as: gschedd takes the gateways' reports on the replicas "
     "(ServiceQuery.reports: health, requests in flight, draining) from it and root alone, and "
     "ignores anyone else's (logged at most every 10 s) (-1: agent_uid)",
     NULL, 0},
    {"max_message", S | W | C, GP_CONF_SIZE, "80MiB",
     "largest envelope an agent or a command takes (a long listing from gschedd), checked before "
     "the credential is decoded; what gschedd takes is max_request",
     NULL, 0},
    {"uid_min", S | W, GP_CONF_INT, "0",
     "lowest uid a job may run as (0: UID_MIN of this PC's /etc/login.defs, else 1000); gschedd "
     "checks it at submission, every agent again at launch with its own",
     NULL, 0},
    {"uid_max", S | W, GP_CONF_INT, "0",
     "highest uid a job may run as (0: UID_MAX of this PC's /etc/login.defs, else 60000)", NULL, 0},
    {"deny_users", S | W, GP_CONF_STR, "",
     "accounts no job may run as: names or uids, separated by commas (checked as uid_min is)", NULL,
     0},
    /* gschedd */
    {"listen", S, GP_CONF_STR, "tcp://*:7820", "ZeroMQ endpoint gschedd binds", NULL, 0},
    {"sched_peers", S, GP_CONF_STR, "",
     "a standby scheduler (docs/standby.md): every gschedd of the pool as ID@HOST:PORT, separated "
     "by commas (the same list on each; HOST:PORT is its Raft transport, its client endpoint is "
     "tcp://HOST with listen's port); empty: one scheduler, no replication",
     NULL, 0},
    {"sched_id", S, GP_CONF_INT, "0", "this gschedd's ID in sched_peers (with sched_peers)", NULL,
     0},
    {"state_dir", S | W, GP_CONF_STR, "/var/lib/gpool",
     "durable state (gschedd: jobs.db and output; gworkerd: supervisor sockets)", NULL, 0},
    {"heartbeat_interval", S | W, GP_CONF_DURATION, "2s", "agent heartbeat period", NULL, S},
    {"node_timeout", S, GP_CONF_DURATION, "20s",
     "a node silent this long is DOWN and its jobs are requeued, while the scheduler hears a "
     "majority of the pool (else it is UNREACHABLE, its jobs left running); an agent without "
     "word from the scheduler for node_timeout less two heartbeats (its lease) stops its "
     "requeueable jobs unless a majority of its peers answer and none hears the scheduler "
     "(docs/reliability.md, \"Scheduler outages\"; needs node_timeout of 7 heartbeats or more)",
     NULL, S},
    {"requeue", S, GP_CONF_BOOL, "true",
     "requeue the jobs of a node that went DOWN (a job may opt out with --no-requeue)", NULL, S},
    {"max_attempts", S, GP_CONF_INT, "3",
     "attempts a job gets before a node failure ends it NODE_FAIL", NULL, S},
    {"power_cap_watts", S | C, GP_CONF_INT, "0",
     "cluster power cap: a job whose cards would take the running total over it waits (0: none)",
     NULL, S},
    {"default_time_limit", S, GP_CONF_DURATION, "0",
     "time limit of jobs that ask for none (0: unlimited)", NULL, S},
    {"max_time_limit", S, GP_CONF_DURATION, "0", "largest time limit a job may ask (0: none)", NULL,
     S},
    {"kill_grace", S | W, GP_CONF_DURATION, "10s",
     "SIGKILL follows SIGTERM after this, on cancel and time limit", NULL, S | W},
    {"service_drain", S, GP_CONF_DURATION, "2s",
     "a service replica replaced by a rolling update or scaled away is first listed as draining "
     "(gateways send it no new requests and let its requests finish) and stopped this much later "
     "(0: at once), or later while a gateway reports requests in flight there",
     NULL, S},
    {"service_drain_max", S, GP_CONF_DURATION, "30s",
     "the longest a draining replica waits for the requests the gateways report in flight there "
     "(from the drain's start)",
     NULL, S},
    {"commit_delay", S, GP_CONF_DURATION, "2ms",
     "group commit: the longest a transaction stays open while messages keep arriving (it commits "
     "as soon as everything waiting has been read)",
     NULL, S},
    {"sync", S, GP_CONF_STR, "full",
     "SQLite synchronous mode: full (durable before acknowledged), normal, off (benchmarks only)",
     "full|normal|off", 0},
    {"rate_per_addr", S, GP_CONF_INT, "2000",
     "messages per second one source address may send before it is slowed", NULL, S},
    {"bytes_per_addr", S, GP_CONF_SIZE, "32MiB",
     "envelope bytes per second a source address may send on connections that have not yet "
     "shown a credential that decodes (registered agents and users' commands are not counted "
     "once one of their envelopes opened); envelopes past it are dropped unopened (0: no limit)",
     NULL, S},
    {"max_request", S | C, GP_CONF_SIZE, "16MiB",
     "largest envelope gschedd takes (a job script, a batch of agent messages; a staged "
     "chunk's attachment is a frame of its own): ZeroMQ drops a larger frame as it arrives; "
     "commands refuse to send one",
     NULL, 0},
    {"max_jobs", S, GP_CONF_INT, "1000000", "pending and running jobs the queue holds at most",
     NULL, S},
    /* fair share and per-user limits (docs/fairshare.md): read again on SIGHUP */
    {"fairshare_half_life", S, GP_CONF_DURATION, "7d",
     "half-life of the usage behind each user's fair-share factor 2^(-usage/share): a "
     "CPU-second or card-second counts half this much later (0: never decays)",
     NULL, S},
    {"fairshare_card_weight", S, GP_CONF_INT, "1",
     "what a card-second weighs against a CPU-second in a user's usage", NULL, S},
    {"fairshare_shares", S, GP_CONF_STR, "",
     "each user's share, USER:N separated by commas (alice:2,bob:1); a user not listed has 1, "
     "so shares are equal by default; a share of 0 runs only what no one else wants",
     NULL, S},
    {"user_limits", S, GP_CONF_STR, "",
     "per-user limits, USER:jobs=N:cpus=N:cards=N separated by commas (* for every user not "
     "listed; a limit left out or 0: none): running jobs, CPUs and cards a user's jobs hold at "
     "once; a job past one stays PENDING (UserLimit)",
     NULL, S},
    {"share_admins", S, GP_CONF_STR, "",
     "users (names or uids, separated by commas) who may change shares and limits while the "
     "pool runs (gpool share set, gpool limits set), besides root and sched_uid",
     NULL, S},
    {"preempt", S, GP_CONF_BOOL, "false",
     "a pending job blocked for preempt_grace may stop running requeueable jobs of users whose "
     "fair-share factor is lower (and gsub --priority no higher): each gets its --signal first "
     "and its SECONDS (else SIGTERM and kill_grace), then goes back to the queue, the attempt "
     "not counted against max_attempts",
     NULL, S},
    {"preempt_grace", S, GP_CONF_DURATION, "60s",
     "how long a blocked job waits before it preempts, and how long a job runs at least before "
     "it may be preempted",
     NULL, S},
    {"list_records_per_user", S, GP_CONF_INT, "5000000",
     "jobs a user's listings (gstat, gacct, the REST API) may make gschedd walk per second, a "
     "second's worth of burst; past it a listing is refused with when to ask again (root and the "
     "agents' account are not counted; 0: no limit)",
     NULL, S},
    {"output_limit", S, GP_CONF_SIZE, "1GiB", "output kept per job and stream", NULL, S},
    {"job_retention", S, GP_CONF_DURATION, "0",
     "finished jobs older than this leave jobs.db and the output store, in batches; gacct "
     "keeps a summary row of each (0: keep every job)",
     NULL, S},
    {"retention_batch", S, GP_CONF_INT, "256",
     "jobs purged at most per step of the loop (a full step is followed by the next 0.2 s "
     "later)",
     NULL, S},
    {"http_listen", S, GP_CONF_STR, "",
     "address:port of gschedd's HTTP server: REST API, /metrics, dashboard (empty: off)", NULL, 0},
    {"http_tls_cert", S, GP_CONF_STR, "",
     "PEM certificate chain for http_listen: with http_tls_key, the HTTP server speaks only "
     "HTTPS (TLS 1.2 or later; deploy/gpool-ca makes a pool's CA and certificates)",
     NULL, 0},
    {"http_tls_key", S, GP_CONF_STR, "", "PEM private key of http_tls_cert (mode 0600)", NULL, 0},
    {"http_max_conns", S, GP_CONF_INT, "1024",
     "open connections to http_listen at most: one past it is closed when accepted (0: no cap)",
     NULL, 0},
    {"http_max_conns_per_addr", S, GP_CONF_INT, "64",
     "open connections to http_listen from one address at most: one past it is closed when "
     "accepted (0: no cap)",
     NULL, 0},
    {"web_dir", S, GP_CONF_STR, "/usr/share/gpool/web",
     "the dashboard's files, served at / by the HTTP server", NULL, 0},
    {"api_token_ttl", S, GP_CONF_DURATION, "1h",
     "life of a token the REST API issues to a MUNGE-authenticated user", NULL, S},
    /* cost (gpool cost, gpool power) */
    {"price_kwh", S | C, GP_CONF_STR, "0.30", "electricity price per kWh", NULL, S},
    {"cooling_share", S | C, GP_CONF_STR, "0.15",
     "cooling as a share of the electricity cost (0.15: 15 % more)", NULL, S},
    {"depreciation_rate", C, GP_CONF_STR, "0.33",
     "share of a card's purchase price lost per year of use", NULL, 0},
    {"card_prices", C, GP_CONF_STR, "",
     "purchase prices by card model: GeForce GTX 1660 SUPER=229;Radeon RX 6700 XT=479", NULL, 0},
    {"default_card_price", C, GP_CONF_STR, "300", "purchase price of a card not in card_prices",
     NULL, 0},
    {"cloud_gpu_hour", C, GP_CONF_STR, "0.45", "what one GPU-hour costs in the cloud", NULL, 0},
    {"pcie_slot_watts", C, GP_CONF_STR, "3.75", "power of one PCIe slot in use", NULL, 0},
    {"power_margin", C, GP_CONF_STR, "0.20", "margin on a PC's power sum", NULL, 0},
    /* gworkerd */
    {"node_name", W, GP_CONF_STR, "", "this node's name (default: the host name)", NULL, 0},
    {"node_addr", W, GP_CONF_STR, "",
     "the address ranks use to reach this node (default: found from the route to the scheduler)",
     NULL, 0},
    {"peer_port", W, GP_CONF_INT, "7822",
     "TCP port on node_addr where the agent serves its chunk cache to other agents, so staged "
     "files fan out along a chain of the job's nodes (0: off, every node fetches from the "
     "scheduler)",
     NULL, 0},
    {"cpus", W, GP_CONF_INT, "0", "CPUs offered (0: the online CPUs)", NULL, 0},
    {"memory", W, GP_CONF_SIZE, "0", "memory offered (0: physical memory less 5 %)", NULL, 0},
    {"scratch_dir", W, GP_CONF_STR, "/var/tmp/gpool",
     "one working directory per job attempt (jobID.ATTEMPT) is made under this: a real directory "
     "(not a link) owned by root or the agent's uid, not group/other-writable unless sticky, else "
     "gworkerd refuses to start",
     NULL, 0},
    {"private_tmp", W, GP_CONF_STR, "scratch",
     "a job's own /tmp, /var/tmp and /dev/shm (a mount namespace per task over directories the "
     "ranks of the job on this node share, removed when the job ends): scratch (directories "
     "under scratch_dir), tmpfs (one tmpfs of private_tmp_size, its pages charged to the job's "
     "memory) or off (the node's own, shared by every job); a job may ask for the node's with "
     "gsub --no-private-tmp",
     "scratch|tmpfs|off", 0},
    {"private_tmp_keep", W, GP_CONF_STR, "",
     "paths under /tmp, /var/tmp or /dev/shm that every job still sees at their place in its "
     "own (comma-separated: a shared file system mounted there); the job's working directory "
     "and scratch_dir always are",
     NULL, 0},
    {"private_tmp_size", W, GP_CONF_SIZE, "0",
     "with private_tmp = tmpfs: the size of a job's tmpfs (0: the job's memory limit on the "
     "node, or half the node's memory without one)",
     NULL, 0},
    {"image_cache", W, GP_CONF_SIZE, "20GiB",
     "bytes the node's unpacked container images may take (<state_dir>/images, one copy per "
     "image and account), and, apart, the archives pulled from registries (images/pulled); "
     "above it, images no running job uses go, least recently used first (0: no bound)",
     NULL, 0},
    {"container_pull_max", W, GP_CONF_SIZE, "16GiB",
     "the largest container image a node pulls from a registry (gsub --container "
     "HOST:PORT/NAME:TAG): the sizes its manifest declares and every file skopeo writes "
     "(0: no bound)",
     NULL, 0},
    {"container_insecure_registries", W, GP_CONF_STR, "",
     "registries (host:port, or host for any port; comma-separated) the nodes pull from over "
     "plain HTTP; every other registry is spoken to over TLS with its certificate verified",
     NULL, 0},
    {"run_as", W, GP_CONF_STR, "",
     "run every task as this local account (default: the account named like the owner)", NULL, 0},
    {"allow_root", W, GP_CONF_BOOL, "false", "run jobs submitted by root as root", NULL, 0},
    {"cgroups", W, GP_CONF_STR, "auto",
     "enforce limits with cgroups: auto (when writable), v1, v2 or off; on both, a job is denied "
     "the device files of cards it was not given (v1 devices.deny, v2 a BPF device program)",
     "auto|v1|v2|off", 0},
    {"cgroup_favordynmods", W, GP_CONF_BOOL, "true",
     "when cgroups are used and gworkerd is root: put the kernel's cgroup migration lock in its "
     "favordynmods mode at start (cgroup2: remount /sys/fs/cgroup with it; v1: mount the empty "
     "hierarchy name=gpool-dynmods with it), so a task joins its cgroup in microseconds instead "
     "of after an RCU grace period (13 ms measured); forks and exits pay a little more",
     NULL, 0},
    {"fake_cards", W, GP_CONF_STR, "",
     "pretend cards, e.g. nvidia:GeForce GTX 1660 SUPER:6GiB:7.5:125W,amd:RX 6700 "
     "XT:12GiB:gfx1031:230W"
     " (:draw=W:idle=W simulates their power draw)",
     NULL, 0},
    {"psu_watts", W, GP_CONF_INT, "0", "this PC's power supply rating (0: unknown)", NULL, 0},
    {"power_sample_interval", W, GP_CONF_DURATION, "1s",
     "how often the power of cards without an energy counter is sampled (and integrated into "
     "their energy); 10ms to 1h",
     NULL, W},
    {"stepd", W, GP_CONF_STR, "", "path of gstepd (default: beside gworkerd)", NULL, 0},
    {"mps_control", W, GP_CONF_STR, "nvidia-cuda-mps-control",
     "the MPS control program run for each NVIDIA card shared by --gpu-share jobs "
     "(docs/gpu-share.md)",
     NULL, 0},
    {"share_stepd", W, GP_CONF_BOOL, "true",
     "small jobs of one account on this node (an array's tasks, or single-task jobs that are "
     "not arrays) share a supervisor (a task shell), each in its own cgroup; false: a gstepd "
     "per job",
     NULL, 0},
    {"master_ports", W, GP_CONF_STR, "28500-28999",
     "range the agent offers MASTER_PORTs from for jobs whose rank 0 runs here: ports found "
     "free, reserved (bound) only while a job is launched; the default is neither torchrun's "
     "29500 nor in the ephemeral range",
     NULL, 0},
    {"master_port_pool", W, GP_CONF_INT, "32",
     "how many free ports of master_ports the agent offers at once (1 to 4096); it binds none "
     "while idle",
     NULL, 0},
    /* the PC's owner (docs/owner.md): read again on SIGHUP */
    {"owner_policy", W, GP_CONF_STR, "suspend",
     "what running jobs undergo while this PC's owner is active: suspend (their cgroups frozen "
     "within a second, thawed after owner_idle of quiet; a job of several nodes or with gsub "
     "--no-suspend is vacated instead), vacate (the job's checkpoint signal, its grace, then "
     "stopped and queued again elsewhere, not counted against max_attempts) or ignore (the "
     "owner is reported, jobs left alone); no new job is placed while the owner is active",
     "suspend|vacate|ignore", W},
    {"owner_sources", W, GP_CONF_STR, "logind,cards",
     "what says the owner is active, separated by commas: file (owner_file exists), logind "
     "(systemd-logind's IdleHint through sd-bus), cards (a process outside gpool on one of this "
     "PC's cards: NVML, ROCm SMI), cpu (processes outside gpool's cgroups above "
     "owner_cpu_percent); none: the owner is never seen",
     NULL, W},
    {"owner_file", W, GP_CONF_STR, "owner-active",
     "the file source: the owner is active while this file exists (relative: to state_dir)", NULL,
     W},
    {"owner_idle", W, GP_CONF_DURATION, "5m",
     "quiet time after the owner's last activity before jobs are thawed and the PC offered "
     "again",
     NULL, W},
    {"owner_cpu_percent", W, GP_CONF_INT, "50",
     "the cpu source: CPU use of processes outside gpool's cgroups, in percent of one CPU, "
     "above which the owner is active (1 to 100000)",
     NULL, W},
    {"owner_poll", W, GP_CONF_DURATION, "200ms",
     "how often the file source is read (logind, cards and cpu: every second at most); 10ms "
     "to 1s",
     NULL, W},
    {"owner_never", W, GP_CONF_STR, "",
     "windows of local time when the PC is never offered (office hours), as "
     "'Mon-Fri 09:00-18:00; Sat 10:00-12:00' ('*' every day; 22:00-06:00 runs past midnight): "
     "the beginning of one acts as the owner returning",
     NULL, W},
    {"owner_always", W, GP_CONF_STR, "",
     "windows of local time when the PC is offered whatever the owner does (nights, weekends), "
     "as owner_never; owner_never wins where both hold",
     NULL, W},
};

const int gp_conf_nkeys = sizeof(gp_conf_keys) / sizeof(gp_conf_keys[0]);
