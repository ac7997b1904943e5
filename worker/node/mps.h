/* mps.h: NVIDIA's Multi-Process Service for a card shared by small jobs (docs/gpu-share.md).
 * One control daemon per shared card (`nvidia-cuda-mps-control -d`), with its pipe and log
 * directories under DIR (DIR/pipe, DIR/log) and CUDA_VISIBLE_DEVICES naming that card alone;
 * it runs as the user whose jobs share the card (gschedd puts one user's slices on a card at a
 * time), so its pipes are that user's (mode 0700) and nobody else's process can join it. A
 * client (a task) reaches it through CUDA_MPS_PIPE_DIRECTORY=DIR/pipe and is held to its budget
 * by CUDA_MPS_PINNED_DEVICE_MEM_LIMIT and to its share of the card's SMs by
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE.
 * This file uses libc alone: tools/mps-probe builds it by itself on a machine that has only
 * the CUDA toolkit. Errors: 0 / -1 with errno set and a lowercase message in err. */
#ifndef GPOOL_WORKER_MPS_H
#define GPOOL_WORKER_MPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* DIR of card `card` under root: "ROOT/cardN". -1 (ENAMETOOLONG) when it does not fit. */
int gp_mps_dir(const char *root, unsigned card, char *dir, size_t len);

/* Start the control daemon for the card `visible` (a UUID or an ordinal, as
 * CUDA_VISIBLE_DEVICES takes it) with DIR's pipe and log directories, as uid:gid (as this
 * process when uid is its own). `control` is the program (nvidia-cuda-mps-control, looked up in
 * PATH without a slash). Waits up to 10 s for its control pipe. */
int gp_mps_start(const char *control, const char *dir, const char *visible, uid_t uid, gid_t gid,
		 char *err, size_t errlen);

/* Stop it ("quit" on its control pipe) and wait up to 10 s for the daemon to be gone; a DIR
 * with no daemon running is not an error. */
int gp_mps_stop(const char *control, const char *dir, char *err, size_t errlen);

/* A client's CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for a budget in bytes: "0=NNNM" (device 0: the
 * one card CUDA_VISIBLE_DEVICES leaves it). */
void gp_mps_mem_limit(uint64_t budget, char *buf, size_t len);

/* A client's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: its budget's share of the card's VRAM, in
 * percent, 1..100. */
unsigned gp_mps_thread_pct(uint64_t budget, uint64_t vram_total);

#endif
