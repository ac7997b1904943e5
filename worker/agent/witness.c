/* witness.c: the peer rounds of witness.h. */
#include "worker/agent/witness.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/auth.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

#define WITNESS_MAX_REPLY (64 << 10)

struct member {
	char *name;
	char *ep;
	void *sock;
	bool answered;
};

struct witness {
	void *zctx;
	gp_auth_t *auth;
	gp_wire_t *wire;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool running, stop;
	/* the round asked for (under mu) */
	bool asked, busy, done;
	struct member *m;
	size_t n;
	int members;
	struct witness_ask ask;
	/* its outcome (under mu) */
	struct fence_view view;
	char fresh_peer[64];
};

static void members_free(struct member *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].name);
		free(m[i].ep);
	}
	free(m);
}

/* The answers in one envelope from member i. */
static void take_reply(struct witness *w, size_t i, const void *data, size_t len,
		       struct fence_view *v, char *fresh, size_t flen)
{
	struct gp_sender from;
	Gpool__ErrorCode code;
	gp_error_t err;
	Gpool__Batch *b = gp_wire_open(w->wire, data, len, &from, &code, &err);
	if (!b) {
		gp_debug("witness: %s's answer refused: %s", w->m[i].name, err.text);
		return;
	}
	if (from.uid != 0 && from.uid != geteuid()) {
		gp_warn("witness: %s answered as uid %u, not the agents' account: not counted",
			w->m[i].name, (unsigned)from.uid);
	} else {
		for (size_t k = 0; k < b->n_msgs && !w->m[i].answered; k++) {
			const Gpool__Msg *msg = b->msgs[k];
			if (msg->id != i + 1 || msg->m_case != GPOOL__MSG__M_PEER_STATUS_REPLY)
				continue;
			w->m[i].answered = true;
			v->reached++;
			const Gpool__PeerStatusReply *r = msg->peer_status_reply;
			int64_t ago = r->sched_heard_ms_ago;
			if (ago < 0 || ago + w->ask.margin_ms >= w->ask.self_ago_ms)
				continue; /* it does not hear the scheduler later than we do */
			if (r->sched_requeue_in_ms > w->ask.guard_ms) {
				/* alive, but it cannot requeue anything yet: a gschedd that came
				 * back */
				if (!v->waiting++ || r->sched_requeue_in_ms < v->wait_ms)
					v->wait_ms = r->sched_requeue_in_ms;
				if (!v->fresh && !*fresh)
					snprintf(fresh, flen, "%s", w->m[i].name);
			} else if (!v->fresh++) {
				snprintf(fresh, flen, "%s", w->m[i].name);
			}
		}
	}
	gpool__batch__free_unpacked(b, NULL);
}

static void run_round(struct witness *w, struct fence_view *v, char *fresh, size_t flen)
{
	v->members = w->members;
	v->reached = 1; /* this node */
	v->fresh = v->waiting = 0;
	v->wait_ms = 0;
	fresh[0] = '\0';
	gp_batch_t b = {0};
	gp_buf_t env = {0};
	gp_error_t err;
	int linger = 0;
	int64_t maxmsg = WITNESS_MAX_REPLY;
	zmq_pollitem_t *pi = calloc(w->n ? w->n : 1, sizeof(*pi));
	size_t *who = calloc(w->n ? w->n : 1, sizeof(*who));
	size_t np = 0;
	if (!pi || !who)
		goto out;
	/* a credential of its own for each member: munged decodes a credential once, so one
	 * sealed for all would be refused as a replay by every member sharing a munged */
	for (size_t i = 0; i < w->n; i++) {
		Gpool__PeerStatus q = GPOOL__PEER_STATUS__INIT;
		Gpool__Msg m = GPOOL__MSG__INIT;
		m.id = i + 1;
		m.m_case = GPOOL__MSG__M_PEER_STATUS;
		m.peer_status = &q;
		gp_batch_reset(&b);
		if (gp_batch_add(&b, &m) < 0 || gp_wire_seal(w->wire, &b, &env, &err) < 0) {
			gp_warn("witness: cannot seal a question: %s", err.text);
			goto out;
		}
		void *s = zmq_socket(w->zctx, ZMQ_DEALER);
		if (!s)
			continue;
		zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
		zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
		w->m[i].sock = s;
		if (zmq_connect(s, w->m[i].ep) < 0 ||
		    zmq_send(s, env.data, env.len, ZMQ_DONTWAIT) < 0) {
			gp_debug("witness: cannot ask %s at %s: %s", w->m[i].name, w->m[i].ep,
				 zmq_strerror(errno));
			continue;
		}
		pi[np] = (zmq_pollitem_t){.socket = s, .events = ZMQ_POLLIN};
		who[np++] = i;
	}
	int64_t end = gp_mono_ms() + WITNESS_ROUND_MS;
	size_t left = np;
	while (left > 0) {
		int64_t now = gp_mono_ms();
		if (now >= end)
			break;
		if (zmq_poll(pi, (int)np, (long)(end - now)) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (size_t k = 0; k < np; k++) {
			if (!(pi[k].revents & ZMQ_POLLIN))
				continue;
			zmq_msg_t msg;
			zmq_msg_init(&msg);
			while (zmq_msg_recv(&msg, pi[k].socket, ZMQ_DONTWAIT) >= 0) {
				size_t i = who[k];
				bool before = w->m[i].answered;
				take_reply(w, i, zmq_msg_data(&msg), zmq_msg_size(&msg), v, fresh,
					   flen);
				if (!before && w->m[i].answered)
					left--;
			}
			zmq_msg_close(&msg);
		}
	}
out:
	for (size_t i = 0; i < w->n; i++)
		if (w->m[i].sock) {
			zmq_close(w->m[i].sock);
			w->m[i].sock = NULL;
		}
	free(pi);
	free(who);
	gp_batch_release(&b);
	gp_buf_release(&env);
}

static void *witness_thread(void *arg)
{
	struct witness *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->asked && !w->stop)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->stop)
			break;
		w->asked = false;
		pthread_mutex_unlock(&w->mu);
		/* the members are ours while busy: witness_start refuses to touch them */
		struct fence_view v;
		char fresh[64];
		run_round(w, &v, fresh, sizeof(fresh));
		pthread_mutex_lock(&w->mu);
		w->view = v;
		memcpy(w->fresh_peer, fresh, sizeof(fresh));
		w->busy = false;
		w->done = true;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct witness *witness_create(void *zctx)
{
	struct witness *w = calloc(1, sizeof(*w));
	gp_error_t err;
	if (!w)
		return NULL;
	w->zctx = zctx;
	if (!(w->auth = gp_auth_create(NULL, &err)) ||
	    !(w->wire = gp_wire_create(w->auth, WITNESS_MAX_REPLY))) {
		gp_warn("witness: %s", w->auth ? "out of memory" : err.text);
		goto fail;
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	if (pthread_create(&w->thread, NULL, witness_thread, w) != 0) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		goto fail;
	}
	w->running = true;
	return w;
fail:
	gp_wire_destroy(&w->wire);
	gp_auth_destroy(&w->auth);
	free(w);
	errno = ENOMEM;
	return NULL;
}

void witness_destroy(struct witness **pw)
{
	if (!pw || !*pw)
		return;
	struct witness *w = *pw;
	if (w->running) {
		pthread_mutex_lock(&w->mu);
		w->stop = true;
		pthread_cond_signal(&w->cv);
		pthread_mutex_unlock(&w->mu);
		pthread_join(w->thread, NULL);
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
	}
	members_free(w->m, w->n);
	gp_wire_destroy(&w->wire);
	gp_auth_destroy(&w->auth);
	free(w);
	*pw = NULL;
}

int witness_start(struct witness *w, const Gpool__PoolMembers *pm, const char *self,
		  const struct witness_ask *ask)
{
	pthread_mutex_lock(&w->mu);
	if (w->busy || w->asked) {
		pthread_mutex_unlock(&w->mu);
		return errno = EBUSY, -1;
	}
	struct member *m = calloc(pm->n_members ? pm->n_members : 1, sizeof(*m));
	size_t n = 0;
	bool listed = false;
	for (size_t i = 0; m && i < pm->n_members; i++) {
		const Gpool__PoolMember *x = pm->members[i];
		if (!strcmp(x->name, self)) {
			listed = true;
			continue;
		}
		if (!*x->peer_endpoint)
			continue; /* it counts, but cannot be asked */
		if (!(m[n].name = strdup(x->name)) || !(m[n].ep = strdup(x->peer_endpoint))) {
			members_free(m, n + 1);
			m = NULL;
			break;
		}
		n++;
	}
	if (!m) {
		pthread_mutex_unlock(&w->mu);
		return errno = ENOMEM, -1;
	}
	members_free(w->m, w->n);
	w->m = m;
	w->n = n;
	/* a list from before this node was a member: it is one more; none: not known at all */
	w->members = pm->n_members ? (int)pm->n_members + (listed ? 0 : 1) : 0;
	w->ask = *ask;
	w->asked = w->busy = true;
	w->done = false;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

bool witness_take(struct witness *w, struct fence_view *v, char *fresh_peer, size_t len)
{
	pthread_mutex_lock(&w->mu);
	bool ready = w->done;
	if (ready) {
		*v = w->view;
		snprintf(fresh_peer, len, "%s", w->fresh_peer);
		w->done = false;
	}
	pthread_mutex_unlock(&w->mu);
	return ready;
}
