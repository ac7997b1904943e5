/* vram.c: the card memory a job's processes hold (vram.h). */
#include "worker/node/vram.h"

#include <stdlib.h>

#include "cards/card_procs.h"

#define MAX_PROCS 1024

int gp_vram_used(int vendor, const char *pci_bus_id, const char *fake_path, const pid_t *pids,
		 size_t n, uint64_t *bytes)
{
	*bytes = 0;
	struct gp_card_proc *v = malloc(MAX_PROCS * sizeof(*v));
	if (!v)
		return -1;
	int k = fake_path ? gp_card_procs_fake(fake_path, v, MAX_PROCS)
			  : gp_card_procs(vendor, pci_bus_id, v, MAX_PROCS);
	if (k >= 0)
		*bytes = gp_card_procs_sum(v, (size_t)k, pids, n);
	free(v);
	return k < 0 ? -1 : 0;
}

int gp_vram_fake(const char *path, const pid_t *pids, size_t n, uint64_t *bytes)
{
	return gp_vram_used(0, NULL, path, pids, n, bytes);
}
