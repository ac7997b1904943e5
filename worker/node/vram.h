/* vram.h: how much of a card's memory each process uses, for the budgets of slices of a shared
 * AMD card (docs/gpu-share.md): ROCm SMI's compute process list (loaded with dlopen, as the
 * cards code does), or for a fake card a file of "PID BYTES" lines a test writes. */
#ifndef GPOOL_WORKER_VRAM_H
#define GPOOL_WORKER_VRAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The VRAM of each pid of pids (n of them) that ROCm SMI lists, summed: the bytes a job's
 * processes hold. ROCm SMI counts a process's memory over every AMD card of the PC, which is
 * the one card of a slice's job (its tasks see only theirs). 0 / -1 (no library). */
int gp_vram_rocm(const pid_t *pids, size_t n, uint64_t *bytes);

/* The same from a fake card's file (path): lines "PID BYTES". 0 / -1 (no file: nothing used). */
int gp_vram_fake(const char *path, const pid_t *pids, size_t n, uint64_t *bytes);

#endif
