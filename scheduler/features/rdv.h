/* rdv.h: the rendezvous of a job's ranks (libgcomm's "gpool" rendezvous): put, get and fence
 * of small blobs while a communicator is made (RdvPut, RdvGet, RdvFence in gpool.proto).
 *
 * One in-memory store per (job, attempt), made by the first request and dropped when the
 * attempt stops (the job is being killed, ends, or is requeued); waiting requests then get
 * ERROR_STATE. With one scheduler not durable: after a gschedd restart the store is empty and
 * the ranks fail or retry (docs/reliability.md). With the state replicated every put and fence
 * entry is also a row of jobs.db, replied to once committed, and a new leader starts with the
 * rendezvous of the jobs still running (store_rdv.h, rdv_restore).
 *
 * Who may use it: the job's owner (the credential's uid) or root, while the job is RUNNING
 * with the attempt named. The ranks of one job trust each other: a request's rank is checked
 * against the job's size, not against the host it came from.
 *
 * Bounds (refused with ERROR_TOO_LARGE or ERROR_INVALID, never more memory): keys of 1..128
 * bytes, values of at most 64 KiB, 4 x size + 16 keys and 256 fences per attempt, 1 MiB +
 * 256 KiB x size bytes per attempt (at most 64 MiB), 256 MiB over all jobs (beyond that
 * ERROR_UNAVAILABLE); a wait is held at most 60 s.
 */
#ifndef GPOOL_RDV_H
#define GPOOL_RDV_H

#include <stddef.h>

#include "scheduler/core/gschedd.h"

#define RDV_KEY_MAX	128
#define RDV_VAL_MAX	65536
#define RDV_WAIT_MAX_MS 60000

struct rdv *rdv_create(void);
void rdv_destroy(struct rdv **r);

/* Handlers (handlers.c): each replies, now or when its wait ends. */
void rdv_put(struct req *r);
void rdv_get(struct req *r);
void rdv_fence(struct req *r);

/* The attempt j runs stops: drop its store, answer its waiting requests with ERROR_STATE. */
/* Watch the core's job events (events.h): a stopping attempt's rendezvous ends. 0 / -1. */
int rdv_subscribe(struct gsched *s);
void rdv_job_stopped(struct gsched *s, const struct job *j);
/* A scheduler that takes the lead: the rendezvous of the jobs still running, from the
 * replicated rows (store_rdv.h); rows of attempts that ended are forgotten. 0 / -1. */
int rdv_restore(struct gsched *s);
/* Answer waiting requests whose time is up. */
void rdv_tick(struct gsched *s);

/* Stores held and bytes they account for (statistics and tests). */
size_t rdv_nstores(const struct rdv *r);
size_t rdv_bytes(const struct rdv *r);

#endif
