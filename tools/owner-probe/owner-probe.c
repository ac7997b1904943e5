/* owner-probe: what the owner sources of gworkerd see on this machine, without the agent
 * (worker/node/owner_sources.c alone, with libc and dlopen: it builds on the GPU machine, where
 * gworkerd does not). Prints the processes NVML or ROCm SMI list on a card, logind's idle
 * hint, and the CPU ticks of processes outside gpool.
 *
 *   cc -D_GNU_SOURCE -I. tools/owner-probe/owner-probe.c worker/node/owner_sources.c common/error.c
 * \ -ldl -o owner-probe owner-probe nvidia 00000000:19:00.0      (the PCI bus id as nvidia-smi
 * prints it) owner-probe amd owner-probe logind | cpu */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "worker/node/owner_sources.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: owner-probe nvidia BUS_ID | amd | logind | cpu\n");
		return 2;
	}
	if (!strcmp(argv[1], "nvidia") || !strcmp(argv[1], "amd")) {
		pid_t pids[64];
		int n = gp_owner_card_pids(argv[1][0] == 'n' ? 1 : 2, argc > 2 ? argv[2] : "", pids,
					   64);
		if (n < 0) {
			printf("card: cannot read its processes\n");
			return 1;
		}
		printf("card: %d process(es):", n);
		for (int i = 0; i < n; i++)
			printf(" %d%s", (int)pids[i],
			       gp_owner_pid_is_gpool("/proc", NULL, pids[i]) ? "(gpool)" : "");
		printf("\n");
		return 0;
	}
	if (!strcmp(argv[1], "logind")) {
		gp_error_t err = {{0}};
		struct gp_logind *l = gp_logind_open(&err);
		bool idle;
		uint64_t since;
		if (!l || gp_logind_idle(l, &idle, &since, &err) < 0) {
			printf("logind: %s\n", err.text);
			return 1;
		}
		printf("logind: idle %d since %llu us\n", idle, (unsigned long long)since);
		gp_logind_close(&l);
		return 0;
	}
	uint64_t a, b;
	if (gp_owner_cpu_ticks("/proc", NULL, &a) < 0)
		return 1;
	sleep(1);
	gp_owner_cpu_ticks("/proc", NULL, &b);
	printf("cpu: %.0f %% of one cpu outside gpool\n",
	       (double)(b - a) * 100.0 / (double)sysconf(_SC_CLK_TCK));
	return 0;
}
