/* retention.c: purging of old finished jobs (see retention.h). */
#include "scheduler/features/retention.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scheduler/core/core.h"
#include "scheduler/core/gschedd.h"
#include "scheduler/core/jobs.h"
#include "common/log.h"
#include "common/names.h"
#include "scheduler/features/output.h"
#include "scheduler/store/store.h"
#include "common/util.h"

struct retention {
	int64_t age_ms; /* 0: off */
	uint32_t batch;
	int64_t next_ms;
	uint64_t *ids;	   /* candidates of one step (batch of them) */
	uint64_t *pending; /* purged in the open transaction: output removed at its commit */
	size_t npending, cappending;
	uint64_t purged;
};

struct retention *retention_create(void)
{
	struct retention *r = calloc(1, sizeof(*r));
	if (r)
		r->batch = 256;
	return r;
}

void retention_destroy(struct retention **rp)
{
	if (!rp || !*rp)
		return;
	free((*rp)->ids);
	free((*rp)->pending);
	free(*rp);
	*rp = NULL;
}

void retention_set(struct retention *r, int64_t age_ms, uint32_t batch)
{
	if (batch == 0)
		batch = 1;
	if (batch != r->batch) {
		free(r->ids);
		r->ids = NULL;
	}
	r->age_ms = age_ms > 0 ? age_ms : 0;
	r->batch = batch;
	r->next_ms = 0;
}

uint64_t retention_purged(const struct retention *r)
{
	return r ? r->purged : 0;
}

static int pending_add(struct retention *r, uint64_t id)
{
	if (r->npending == r->cappending) {
		size_t nc = r->cappending ? r->cappending * 2 : 256;
		uint64_t *np = realloc(r->pending, nc * sizeof(*np));
		if (!np)
			return -1;
		r->pending = np;
		r->cappending = nc;
	}
	r->pending[r->npending++] = id;
	return 0;
}

int retention_step(struct gsched *s, int64_t now_ms)
{
	struct retention *r = s->retention;
	if (!r || r->age_ms <= 0 || now_ms < r->next_ms)
		return 0;
	r->next_ms = now_ms + RETENTION_IDLE_MS;
	if (!r->ids && !(r->ids = malloc(r->batch * sizeof(*r->ids))))
		return -1;
	double now = gp_now();
	size_t n = 0;
	if (store_purge_candidates(s->store, now - (double)r->age_ms / 1000.0, r->ids, r->batch,
				   &n) < 0) {
		gp_err("retention: cannot read the finished jobs: %s", strerror(errno));
		return -1;
	}
	int done = 0;
	for (size_t i = 0; i < n; i++) {
		struct job *j = jobs_get(s->jobs, r->ids[i]);
		/* memory may be ahead of the store (requeued since) or mid-write: next time */
		if (j && (!gp_job_state_final(j->state) || j->in_txn || !j->durable))
			continue;
		if (pending_add(r, r->ids[i]) < 0)
			break;
		if (store_purge_job(s->store, r->ids[i], now) < 0) {
			r->npending--;
			gp_err("retention: cannot purge job %llu: %s",
			       (unsigned long long)r->ids[i], strerror(errno));
			break;
		}
		if (j)
			sched_forget(s, j);
		done++;
	}
	if (done) {
		if (!s->txn_first_ms)
			s->txn_first_ms = gp_mono_ms();
		r->purged += (uint64_t)done;
		gp_debug("retention: purged %d finished job(s)", done);
	}
	if (n == r->batch)
		r->next_ms = now_ms + RETENTION_BUSY_MS; /* a backlog: the next batch soon */
	return done;
}

void retention_committed(struct gsched *s, bool ok)
{
	struct retention *r = s->retention;
	if (!r || !r->npending)
		return;
	for (size_t i = 0; ok && i < r->npending; i++)
		output_remove(s->output, r->pending[i]);
	if (!ok)
		r->purged -= r->npending;
	r->npending = 0;
}
