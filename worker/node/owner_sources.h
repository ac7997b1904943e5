/* owner_sources.h: what tells an agent that its PC's owner is there (docs/owner.md), as
 * plain functions the agent's owner watch (owner.c) calls and the unit tests drive: the
 * policy and source names, the time windows (office hours), the file source, the CPU use of
 * processes outside gpool, the processes on a card (NVML, ROCm SMI, fake cards' files) and
 * systemd-logind's idle hint (sd-bus). */
#ifndef GPOOL_WORKER_OWNER_SOURCES_H
#define GPOOL_WORKER_OWNER_SOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/error.h"

enum gp_owner_source {
	GP_OWNER_FILE = 1 << 0,
	GP_OWNER_LOGIND = 1 << 1,
	GP_OWNER_CARDS = 1 << 2,
	GP_OWNER_CPU = 1 << 3,
};

/* "suspend", "vacate", "ignore" -> Gpool__OwnerPolicy (1, 2, 3); -1 when none of them. */
int gp_owner_policy_parse(const char *s);
const char *gp_owner_policy_name(int policy);
/* "file,logind,cards,cpu" (any of them, "" or "none": none) into a mask. 0 / -1 with err. */
int gp_owner_sources_parse(const char *s, unsigned *mask, gp_error_t *err);

/* A weekly time window: days (bit 0 Monday .. bit 6 Sunday), minutes from..to of the day
 * (to < from: it runs past midnight into the next day). */
struct gp_owner_window {
	uint8_t days;
	uint16_t from, to;
};
/* "Mon-Fri 09:00-18:00; Sat,Sun 10:00-12:00; * 22:00-06:00" (";" between windows, "*" every
 * day). Up to max into w, count in *n. 0 / -1 with err. */
int gp_owner_windows_parse(const char *s, struct gp_owner_window *w, size_t max, size_t *n,
			   gp_error_t *err);
/* Is local time lt inside one of the windows? */
bool gp_owner_windows_on(const struct gp_owner_window *w, size_t n, const struct tm *lt);

/* The file source: the owner is active while the file exists. */
bool gp_owner_file_active(const char *path);

/* Is pid one of gpool's: in a cgroup of gpool's (".../gpool/..."), gworkerd, gstepd, or an MPS
 * daemon the agent started for a shared card (an nvidia-cuda-mps-control or -server whose
 * CUDA_MPS_PIPE_DIRECTORY, or its parent's, lies under mps_root: the agent's SCRATCH_DIR/mps;
 * NULL or "": none is)? The owner's own MPS daemons are not; their clients are on the card
 * anyway. Reads proc_root ("/proc", or a made-up tree in tests). */
bool gp_owner_pid_is_gpool(const char *proc_root, const char *mps_root, pid_t pid);
/* CPU time (clock ticks) used so far by every process under proc_root that is not gpool's
 * (gp_owner_pid_is_gpool with mps_root) and not a kernel thread. 0 / -1 (proc_root
 * unreadable). */
int gp_owner_cpu_ticks(const char *proc_root, const char *mps_root, uint64_t *ticks);

/* Processes on a card, for the cards source: NVIDIA (NVML's compute and graphics lists of the
 * card with that PCI bus id) or AMD (ROCm SMI's processes using a GPU), through the
 * libraries the cards code loads (cards/card_procs.h). Up to max pids into out; returns how many,
 * or -1 when the library or the card cannot be read. */
int gp_owner_card_pids(int vendor, const char *pci_bus_id, pid_t *out, size_t max);
/* A fake card's processes (tests): the pids listed in path, one a line. -1: no file. */
int gp_owner_fake_card_pids(const char *path, pid_t *out, size_t max);

/* systemd-logind through sd-bus: IdleHint and IdleSinceHint of its Manager (every session
 * idle, and since when, realtime µs). 0 / -1 with err (no system bus or logind: the caller logs
 * it once and goes on without this source; a build without libsystemd says so). */
struct gp_logind;
struct gp_logind *gp_logind_open(gp_error_t *err);
void gp_logind_close(struct gp_logind **l);
int gp_logind_idle(struct gp_logind *l, bool *idle, uint64_t *since_us, gp_error_t *err);

#endif
