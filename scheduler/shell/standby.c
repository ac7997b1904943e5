/* standby.c: a scheduler that does not lead answers every request with ERROR_NOT_LEADER and
 * Error.leader (the leader's client endpoint, empty while none is known), so agents and
 * commands given the list of schedulers find the leader themselves; nothing is taken in, no
 * state is kept in memory. Its jobs.db follows the leader through the replication (repl.c). */
#include "scheduler/shell/standby.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "common/log.h"
#include "common/util.h"
#include "scheduler/http/standby_http.h"
#include "scheduler/shell/net.h"
#include "scheduler/store/repl.h"

static void answer(struct gsched *s, const struct net_msg *m, const char *leader)
{
	char text[300];
	snprintf(text, sizeof(text), "this scheduler is a standby: %s%s",
		 *leader ? "the leader is " : "no leader is known now (no quorum or an election)",
		 leader);
	for (size_t i = 0; i < m->batch->n_msgs; i++) {
		const Gpool__Msg *in = m->batch->msgs[i];
		Gpool__Msg out;
		Gpool__Error e;
		gp_msg_error(&out, &e, in->id, GPOOL__ERROR_CODE__ERROR_NOT_LEADER, text);
		e.leader = (char *)leader;
		net_queue(s->net, m->rid, m->rid_len, &out, false);
	}
}

static int serve(struct gsched *s, struct standby_http *http)
{
	char leader[200], was[200] = "-", line[200];
	int64_t next_note = 0;
	while (!s->stop && !repl_leading(s->repl)) {
		if (repl_deposed(s->repl))
			return 1; /* cannot happen before leading; the caller stops */
		zmq_pollitem_t pi = {net_socket(s->net), 0, ZMQ_POLLIN, 0};
		/* the HTTP port is looked at between polls: a short one while it is open */
		if (zmq_poll(&pi, 1, http ? 20 : 100) < 0 && errno != EINTR) {
			gp_err("poll: %s", zmq_strerror(errno));
			return -1;
		}
		repl_leader_endpoint(s->repl, leader, sizeof(leader));
		standby_http_set_leader(http, leader);
		standby_http_poll(http);
		if (strcmp(leader, was)) {
			repl_describe(s->repl, line, sizeof(line));
			gp_info("standby: leader %s (%s)", *leader ? leader : "unknown", line);
			snprintf(was, sizeof(was), "%s", leader);
		}
		for (int i = 0; i < 512; i++) {
			struct net_msg m;
			int rc = net_recv(s->net, &m);
			if (rc == 0)
				break;
			if (rc < 0)
				continue;
			answer(s, &m, leader);
			gpool__batch__free_unpacked(m.batch, NULL);
		}
		net_flush(s->net, true);
		int64_t now = gp_mono_ms();
		if (now >= next_note) {
			repl_describe(s->repl, line, sizeof(line));
			gp_debug("standby: %s", line);
			next_note = now + 10000;
		}
	}
	return s->stop ? 1 : 0;
}

int standby_serve(struct gsched *s)
{
	gp_error_t err;
	struct standby_http *http = standby_http_create(s->cfg, &err);
	if (!http && err.text[0]) /* the standby goes on without it */
		gp_warn("standby: no HTTP answers: %s", err.text);
	int rc = serve(s, http);
	standby_http_destroy(&http); /* http_listen is the leader's server's from now on */
	return rc;
}

int standby_replicate(void *arg, const void *changeset, size_t len, gp_error_t *err)
{
	return repl_replicate(arg, changeset, len, err);
}

void standby_replicated(void *arg)
{
	repl_applied(arg);
}
