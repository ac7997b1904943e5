/* mps_probe.c: exercises worker/node/mps.c on a real NVIDIA card without the rest of the agent
 * (the GPU machine has the CUDA toolkit and none of zmq, protobuf-c or munge). It starts the
 * MPS control daemon for one card the way gworkerd does for a shared card, runs the CUDA client
 * (alloc.cu) under a pinned memory limit, checks that the limit refuses an allocation past it
 * while one under it succeeds (and that the same allocation succeeds without MPS, so the
 * refusal is MPS's), checks that a server served the clients, stops the daemon and checks it is
 * gone. One line per check, "PASS ..." or "FAIL ..."; exit 0 when all passed.
 * Built and run by tools/mps-probe/run.sh. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/node/mps.h"

static int failures;

static void check(int ok, const char *what, const char *detail)
{
	printf("%s %s%s%s\n", ok ? "PASS" : "FAIL", what, detail && *detail ? ": " : "",
	       detail ? detail : "");
	fflush(stdout);
	if (!ok)
		failures++;
}

/* run cmd, its output into out (last lines kept), its exit status */
static int run(const char *cmd, char *out, size_t len)
{
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = fread(out, 1, len - 1, p);
	out[n] = 0;
	int st = pclose(p);
	printf("  $ %s\n    ", cmd);
	for (const char *q = out; *q; q++)
		fputs(*q == '\n' ? (q[1] ? "\n    " : "\n") : (char[]){*q, 0}, stdout);
	if (n && out[n - 1] != '\n')
		putchar('\n');
	return st;
}

int main(int argc, char **argv)
{
	const char *control = "nvidia-cuda-mps-control", *client = NULL;
	const char *root = "/tmp/gpool-mps-probe";
	unsigned card = 0, limit_mb = 2048, under_mb = 1024, over_mb = 2867;
	int c;
	static const struct option opts[] = {{"control", required_argument, NULL, 'c'},
					     {"client", required_argument, NULL, 'x'},
					     {"dir", required_argument, NULL, 'd'},
					     {"card", required_argument, NULL, 'g'},
					     {"limit-mb", required_argument, NULL, 'l'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			control = optarg;
			break;
		case 'x':
			client = optarg;
			break;
		case 'd':
			root = optarg;
			break;
		case 'g':
			card = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'l':
			limit_mb = (unsigned)strtoul(optarg, NULL, 10);
			under_mb = limit_mb / 2;
			over_mb = limit_mb * 14 / 10;
			break;
		default:
			fprintf(c == 'h' ? stdout : stderr,
				"usage: mps-probe --client ALLOC [--control PROGRAM] [--dir DIR] "
				"[--card N] [--limit-mb MB]\n");
			return c == 'h' ? 0 : 1;
		}
	}
	if (!client) {
		fprintf(stderr, "mps-probe: --client (the built alloc program) is required\n");
		return 1;
	}
	char dir[1024], err[512] = "", out[8192], cmd[4096], detail[256];
	if (gp_mps_dir(root, card, dir, sizeof(dir)) < 0) {
		fprintf(stderr, "mps-probe: directory name too long\n");
		return 1;
	}
	printf("mps-probe: card %u, limit %u MB, under %u MB, over %u MB, dir %s\n", card, limit_mb,
	       under_mb, over_mb, dir);
	/* the allocation past the limit succeeds without MPS: the card has the room */
	snprintf(cmd, sizeof(cmd),
		 "env -u CUDA_MPS_PIPE_DIRECTORY CUDA_VISIBLE_DEVICES=%u %s %u 2>&1", card, client,
		 over_mb);
	int st = run(cmd, out, sizeof(out));
	snprintf(detail, sizeof(detail), "%u MB without MPS", over_mb);
	check(st == 0 && strstr(out, ": ok"), "baseline", detail);

	gp_mps_stop(control, dir, err, sizeof(err)); /* a daemon left by an earlier run */
	char visible[16];
	snprintf(visible, sizeof(visible), "%u", card);
	int rc = gp_mps_start(control, dir, visible, geteuid(), getegid(), err, sizeof(err));
	check(rc == 0, "start", rc ? err : dir);
	if (rc)
		return 1;
	struct stat sb;
	snprintf(cmd, sizeof(cmd), "%s/pipe", dir);
	check(stat(cmd, &sb) == 0 && (sb.st_mode & 0777) == 0700, "pipe directory mode 0700", cmd);

	char lim[64];
	gp_mps_mem_limit((uint64_t)limit_mb << 20, lim, sizeof(lim));
	const char *envfmt = "env CUDA_VISIBLE_DEVICES=%u CUDA_MPS_PIPE_DIRECTORY=%s/pipe "
			     "CUDA_MPS_LOG_DIRECTORY=%s/log CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=%s "
			     "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%u %s %u 2>&1";
	unsigned pct = 50;
	snprintf(cmd, sizeof(cmd), envfmt, card, dir, dir, lim, pct, client, under_mb);
	st = run(cmd, out, sizeof(out));
	snprintf(detail, sizeof(detail), "%u MB under a %s limit", under_mb, lim);
	check(st == 0 && strstr(out, ": ok"), "under the limit", detail);
	snprintf(cmd, sizeof(cmd), envfmt, card, dir, dir, lim, pct, client, over_mb);
	st = run(cmd, out, sizeof(out));
	snprintf(detail, sizeof(detail), "%u MB past a %s limit", over_mb, lim);
	check(st == 0 && strstr(out, ": refused"), "refused past the limit", detail);

	/* the clients went through an MPS server: the control daemon lists one or had one */
	snprintf(cmd, sizeof(cmd),
		 "echo get_server_list | env CUDA_MPS_PIPE_DIRECTORY=%s/pipe %s 2>&1; "
		 "grep -h -i 'server' %s/log/control.log 2>/dev/null | tail -n 4",
		 dir, control, dir);
	run(cmd, out, sizeof(out));
	check(strstr(out, "Server") || strstr(out, "server"), "a server served the clients", NULL);

	rc = gp_mps_stop(control, dir, err, sizeof(err));
	check(rc == 0, "stop", rc ? err : NULL);
	/* by process name (comm, cut at 15: both daemons are "nvidia-cuda-mps"; a command line
	 * would match this probe's own --control argument), zombies aside: a daemon's exit is
	 * reaped by init, which in a container may never do it */
	snprintf(cmd, sizeof(cmd),
		 "ps -eo pid=,stat=,comm= | awk '$3 == \"nvidia-cuda-mps\" && $2 !~ /^Z/' | "
		 "grep . || echo none");
	run(cmd, out, sizeof(out));
	check(strstr(out, "none") != NULL, "no MPS process left", NULL);
	printf("mps-probe: %s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
