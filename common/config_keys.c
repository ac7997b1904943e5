/* config_keys.c: every gpool.conf key, in one table. docs/configuration.md mirrors it
 * (`gschedd --help` and `gworkerd --help` print it). */
#include "config.h"

#define S GP_SCHED
#define W GP_WORKER
#define C GP_CLI
#define P GP_STEPD

const struct gp_conf_key gp_conf_keys[] = {
	/* shared */
	{ "scheduler", W | C, GP_CONF_STR, "tcp://127.0.0.1:7820",
	  "endpoint of gschedd that agents and commands connect to" },
	{ "log_level", S | W | P, GP_CONF_STR, "info", "err, warn, info or debug" },
	{ "log_file", S | W | P, GP_CONF_STR, "", "append log lines here instead of stderr" },
	{ "sched_uid", S | W | C, GP_CONF_INT, "0",
	  "uid gschedd runs as: agents and commands accept replies and orders only from it" },
	{ "agent_uid", S | W, GP_CONF_INT, "0", "uid gworkerd runs as: only it may register nodes" },
	{ "max_message", S | W | C, GP_CONF_SIZE, "80MiB",
	  "largest message accepted (checked before the credential is decoded)" },
	/* gschedd */
	{ "listen", S, GP_CONF_STR, "tcp://*:7820", "ZeroMQ endpoint gschedd binds" },
	{ "state_dir", S | W, GP_CONF_STR, "/var/lib/gpool",
	  "durable state (gschedd: jobs.db and output; gworkerd: supervisor sockets)" },
	{ "heartbeat_interval", S | W, GP_CONF_DURATION, "2s", "agent heartbeat period" },
	{ "node_timeout", S, GP_CONF_DURATION, "10s",
	  "a node silent this long is DOWN and its jobs are requeued (agents stop requeueable tasks "
	  "after node_timeout less two heartbeats without word from the scheduler: their lease)" },
	{ "requeue", S, GP_CONF_BOOL, "true",
	  "requeue the jobs of a node that went DOWN (a job may opt out with --no-requeue)" },
	{ "max_attempts", S, GP_CONF_INT, "3",
	  "attempts a job gets before a node failure ends it NODE_FAIL" },
	{ "power_cap_watts", S | C, GP_CONF_INT, "0",
	  "cluster power cap: a job whose cards would take the running total over it waits (0: none)" },
	{ "default_time_limit", S, GP_CONF_DURATION, "0",
	  "time limit of jobs that ask for none (0: unlimited)" },
	{ "max_time_limit", S, GP_CONF_DURATION, "0", "largest time limit a job may ask (0: none)" },
	{ "kill_grace", S | W, GP_CONF_DURATION, "10s",
	  "SIGKILL follows SIGTERM after this, on cancel and time limit" },
	{ "commit_delay", S, GP_CONF_DURATION, "2ms",
	  "group commit: the longest a submission waits for others to share its transaction" },
	{ "sync", S, GP_CONF_STR, "full",
	  "SQLite synchronous mode: full (durable before acknowledged), normal, off (benchmarks only)" },
	{ "rate_per_addr", S, GP_CONF_INT, "2000",
	  "messages per second one source address may send before it is slowed" },
	{ "max_jobs", S, GP_CONF_INT, "1000000", "pending and running jobs the queue holds at most" },
	{ "output_limit", S, GP_CONF_SIZE, "1GiB", "output kept per job and stream" },
	/* cost (gpool cost, gpool power) */
	{ "price_kwh", C, GP_CONF_STR, "0.30", "electricity price per kWh" },
	{ "cooling_share", C, GP_CONF_STR, "0.15",
	  "cooling as a share of the electricity cost (0.15: 15 % more)" },
	{ "depreciation_rate", C, GP_CONF_STR, "0.33",
	  "share of a card's purchase price lost per year of use" },
	{ "card_prices", C, GP_CONF_STR, "",
	  "purchase prices by card model: GeForce GTX 1660 SUPER=229;Radeon RX 6700 XT=479" },
	{ "default_card_price", C, GP_CONF_STR, "300", "purchase price of a card not in card_prices" },
	{ "cloud_gpu_hour", C, GP_CONF_STR, "0.45", "what one GPU-hour costs in the cloud" },
	{ "pcie_slot_watts", C, GP_CONF_STR, "3.75", "power of one PCIe slot in use" },
	{ "power_margin", C, GP_CONF_STR, "0.20", "margin on a PC's power sum" },
	/* gworkerd */
	{ "node_name", W, GP_CONF_STR, "", "this node's name (default: the host name)" },
	{ "node_addr", W, GP_CONF_STR, "",
	  "the address ranks use to reach this node (default: found from the route to the scheduler)" },
	{ "peer_port", W, GP_CONF_INT, "0",
	  "TCP port on node_addr where the agent serves its chunk cache to other agents, so staged "
	  "files fan out, e.g. 7821 (0: off)" },
	{ "cpus", W, GP_CONF_INT, "0", "CPUs offered (0: the online CPUs)" },
	{ "memory", W, GP_CONF_SIZE, "0", "memory offered (0: physical memory less 5 %)" },
	{ "scratch_dir", W, GP_CONF_STR, "/var/tmp/gpool",
	  "per-job scratch directories are made under this" },
	{ "run_as", W, GP_CONF_STR, "",
	  "run every task as this local account (default: the account named like the owner)" },
	{ "allow_root", W, GP_CONF_BOOL, "false", "run jobs submitted by root as root" },
	{ "cgroups", W, GP_CONF_STR, "auto",
	  "enforce limits with cgroups: auto (when writable), v1, v2 or off" },
	{ "fake_cards", W, GP_CONF_STR, "",
	  "pretend cards, e.g. nvidia:GeForce GTX 1660 SUPER:6GiB:7.5:125W,amd:RX 6700 XT:12GiB:gfx1031:230W"
	  " (:draw=W:idle=W simulates their power draw)" },
	{ "psu_watts", W, GP_CONF_INT, "0", "this PC's power supply rating (0: unknown)" },
	{ "power_sample_interval", W, GP_CONF_DURATION, "1s",
	  "how often the power of cards without an energy counter is sampled (and integrated into "
	  "their energy); 10ms to 1h" },
	{ "stepd", W, GP_CONF_STR, "", "path of gstepd (default: beside gworkerd)" },
	{ "master_ports", W, GP_CONF_STR, "29500-29999",
	  "range the agent takes MASTER_PORTs from for jobs whose rank 0 runs here (it holds them "
	  "bound until a job is given one)" },
	{ "master_port_pool", W, GP_CONF_INT, "32",
	  "how many ports of master_ports the agent holds at once (1 to 4096)" },
};

const int gp_conf_nkeys = sizeof(gp_conf_keys) / sizeof(gp_conf_keys[0]);
