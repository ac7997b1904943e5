/* vram.h: how much card memory a job's processes hold on a card, for the slices of a shared
 * card (docs/gpu-share.md): reported for every slice (gstat, /metrics), and held to the budget
 * on an AMD card, where no MPS server enforces it. The process lists are the cards library's
 * (cards/card_procs.h: NVML's running processes, ROCm SMI's process info), or for a fake card a
 * file of "PID BYTES" lines a test writes. */
#ifndef GPOOL_WORKER_VRAM_H
#define GPOOL_WORKER_VRAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The card memory of each pid of pids (n of them) on a card, summed: vendor 1 (NVIDIA, the card
 * at pci_bus_id) or 2 (AMD: ROCm SMI counts a process's memory over every AMD card of the PC,
 * which is the one card of a slice's job); fake_path non-NULL: that file's lines instead.
 * 0 / -1 (no library, no such card, no file: nothing known). */
int gp_vram_used(int vendor, const char *pci_bus_id, const char *fake_path, const pid_t *pids,
		 size_t n, uint64_t *bytes);

/* The same from a fake card's file (path): lines "PID BYTES". 0 / -1 (no file: nothing used). */
int gp_vram_fake(const char *path, const pid_t *pids, size_t n, uint64_t *bytes);

#endif
