/* card_procs.h: the processes on a card and the card memory each holds, from the vendor
 * libraries the discovery backends load (NVML's compute and graphics running-process lists,
 * ROCm SMI's compute process info; dlopen'd, libc only), or, for a fake card, from a file of
 * "PID BYTES" lines a test writes. One place for what the owner watch (a process outside gpool
 * on a card, worker/node/owner_sources.c) and the shared-card accounting (each slice's memory,
 * worker/node/vram.c) both read. */
#ifndef GPOOL_CARDS_CARD_PROCS_H
#define GPOOL_CARDS_CARD_PROCS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gp_card_proc {
	pid_t pid;
	uint64_t bytes; /* card memory it holds; 0 when the library cannot say */
};

/* The processes on the NVIDIA card at pci_bus_id (as NVML spells it): its compute processes,
 * then its graphics ones (a pid in both is listed once, with the larger figure). At most max;
 * their number, or -1 (no NVML, no such card). */
int gp_card_procs_nvml(const char *pci_bus_id, struct gp_card_proc *out, size_t max);
/* ROCm SMI's compute processes, with the VRAM each holds over every AMD card of the PC. At
 * most max; their number, or -1 (no ROCm SMI). */
int gp_card_procs_rocm(struct gp_card_proc *out, size_t max);
/* A fake card's list: the file's "PID BYTES" lines, one per allocation (a pid may repeat; a bad
 * line ends it). Their number (at most max), or -1 when there is no file. */
int gp_card_procs_fake(const char *path, struct gp_card_proc *out, size_t max);
/* vendor 1 (NVIDIA: pci_bus_id) or 2 (AMD); -1 for another. */
int gp_card_procs(int vendor, const char *pci_bus_id, struct gp_card_proc *out, size_t max);

/* The bytes that the entries of list (n of them) whose pid is one of pids hold, summed. */
uint64_t gp_card_procs_sum(const struct gp_card_proc *list, size_t n, const pid_t *pids,
			   size_t npids);

#endif
