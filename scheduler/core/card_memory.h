/* card_memory.h: the card memory each slice of a shared card holds (gsub --gpu-share,
 * docs/gpu-share.md), as the agents report it in their heartbeats (Heartbeat.card_memory,
 * sampled every second from the card library's process list). Kept in memory only, per running
 * job attempt, node and card: a heartbeat replaces what its node said before; an entry of an
 * attempt that no longer runs is dropped. Shown in gstat -l (JobInfo.card_memory) and /metrics
 * (gpool_job_card_memory_bytes). */
#ifndef GPOOL_SCHED_CARD_MEMORY_H
#define GPOOL_SCHED_CARD_MEMORY_H

#include <stddef.h>

#include "scheduler/core/gschedd.h"

struct card_mem;

struct card_mem *card_mem_create(void);
void card_mem_destroy(struct card_mem **m);

/* Node's heartbeat said v (n of them): they replace what it said before. Entries of attempts
 * not running on that node are left out. */
void card_mem_report(struct gsched *s, int node, Gpool__CardMemory *const *v, size_t n);
/* Fill ji->card_memory for job j (running: its current attempt's): one block of entries and
 * their pointers, which jobinfo_release frees. */
void card_mem_info_fill(struct gsched *s, const struct job *j, Gpool__JobInfo *ji);

/* Each entry of a running attempt, in report order: *v (into m) of them, *n; NULL when none. */
struct card_mem_entry {
	uint64_t job;
	uint32_t attempt, card;
	int node;
	uint64_t bytes, peak, budget;
};
const struct card_mem_entry *card_mem_entries(struct gsched *s, size_t *n);

#endif
