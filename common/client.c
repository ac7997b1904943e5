#include "common/client.h"

#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/endpoint.h"
#include "common/util.h"
#include "common/wire.h"

struct gp_client {
	void *zctx;
	void *sock;
	gp_auth_t *auth;
	gp_endpoint_t *ep; /* over sock: only the scheduler's envelopes are taken */
	uint64_t next_id;
	Gpool__Batch *last; /* holds the returned message */
	int pos;	    /* next unread message in last */
	const void *bulk;   /* last's attachment (in the endpoint), NULL: none */
	size_t bulk_len;
	char user[64];
};

gp_client_t *gp_client_create(const gp_config_t *cfg, gp_error_t *err)
{
	const char *ep = getenv("GPOOL_SCHEDULER");
	if (!ep || !*ep)
		ep = gp_config_str(cfg, "scheduler");
	return gp_client_create_ep(cfg, ep, (uid_t)gp_config_int(cfg, "sched_uid"), err);
}

gp_client_t *gp_client_create_ep(const gp_config_t *cfg, const char *ep, uid_t peer_uid,
				 gp_error_t *err)
{
	gp_client_t *c = calloc(1, sizeof(*c));
	if (!c) {
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	c->next_id = 1;
	struct passwd *pw = getpwuid(getuid());
	snprintf(c->user, sizeof(c->user), "%s", pw ? pw->pw_name : "");
	if (!pw)
		snprintf(c->user, sizeof(c->user), "uid%u", (unsigned)getuid());
	if (!(c->auth = gp_auth_create(NULL, err)))
		goto fail;
	c->zctx = zmq_ctx_new();
	if (!c->zctx || !(c->sock = zmq_socket(c->zctx, ZMQ_DEALER)))
		goto fail;
	struct gp_ep_config ec = {.sock = c->sock,
				  .auth = c->auth,
				  .max_message = (size_t)gp_config_int(cfg, "max_message"),
				  .peer_only = true,
				  .blocking_send = true,
				  .bulk_in = true,
				  .peer_name = "the scheduler"};
	if (!(c->ep = gp_endpoint_create(&ec)))
		goto fail;
	gp_endpoint_set_peer_uid(c->ep, peer_uid);
	/* the peer answers under a key only it can learn (common/wire.h): no MUNGE decode here */
	if (gp_wire_set_reply_key(gp_endpoint_wire(c->ep), peer_uid) < 0) {
		gp_errprintf(err, "cannot make a reply key: %s", strerror(errno));
		goto fail;
	}
	int linger = 200;
	zmq_setsockopt(c->sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(c->sock, ep) < 0) {
		gp_errprintf(err, "cannot connect to scheduler '%s': %s", ep, zmq_strerror(errno));
		goto fail;
	}
	return c;
fail:
	if (!err || !err->text[0])
		gp_errprintf(err, "cannot set up a client: %s", strerror(errno));
	gp_client_destroy(&c);
	return NULL;
}

void gp_client_destroy(gp_client_t **p)
{
	if (!p || !*p)
		return;
	gp_client_t *c = *p;
	if (c->last)
		gpool__batch__free_unpacked(c->last, NULL);
	if (c->sock)
		zmq_close(c->sock);
	if (c->zctx)
		zmq_ctx_term(c->zctx);
	gp_endpoint_destroy(&c->ep);
	gp_auth_destroy(&c->auth);
	free(c);
	*p = NULL;
}

const char *gp_client_user(const gp_client_t *c)
{
	return c->user;
}

int gp_client_send(gp_client_t *c, Gpool__Msg *m, uint64_t *id, gp_error_t *err)
{
	gp_batch_t b = {0};
	m->id = c->next_id++;
	if (gp_batch_add(&b, m) < 0) {
		gp_batch_release(&b);
		return gp_errprintf(err, "out of memory");
	}
	gp_error_t e2 = {{0}};
	int rc = gp_endpoint_send(c->ep, NULL, 0, &b, &e2);
	gp_batch_release(&b);
	if (rc < 0)
		return gp_errprintf(err, "send to scheduler: %s", e2.text);
	if (id)
		*id = m->id;
	return 0;
}

Gpool__Msg *gp_client_recv(gp_client_t *c, uint64_t id, int timeout_ms, gp_error_t *err)
{
	int64_t deadline = gp_mono_ms() + timeout_ms;
	while (1) {
		/* deliver buffered messages of the last batch first */
		while (c->last && c->pos < (int)c->last->n_msgs) {
			Gpool__Msg *m = c->last->msgs[c->pos++];
			if (m->id == id || (id == 0))
				return m;
		}
		int64_t left = deadline - gp_mono_ms();
		if (timeout_ms >= 0 && left <= 0) {
			errno = ETIMEDOUT;
			gp_errprintf(err, "no answer from the scheduler (is gschedd running?)");
			return NULL;
		}
		zmq_pollitem_t pi = {c->sock, 0, ZMQ_POLLIN, 0};
		int rc = zmq_poll(&pi, 1, timeout_ms < 0 ? -1 : (long)left);
		if (rc < 0) {
			if (errno == EINTR)
				continue;
			gp_errprintf(err, "poll: %s", zmq_strerror(errno));
			return NULL;
		}
		if (rc == 0)
			continue;
		struct gp_ep_envelope env;
		gp_error_t e2 = {{0}};
		Gpool__Batch *b = gp_endpoint_recv(c->ep, false, &env, &e2);
		if (!b && errno == EAGAIN)
			continue;
		if (!b) {
			int saved = errno;
			gp_errprintf(err, "reply from the scheduler refused: %s", e2.text);
			errno = saved;
			return NULL;
		}
		if (c->last)
			gpool__batch__free_unpacked(c->last, NULL);
		c->last = b;
		c->pos = 0;
		c->bulk = env.bulk;
		c->bulk_len = env.bulk_len;
	}
}

const void *gp_client_bulk(const gp_client_t *c, size_t *len)
{
	*len = c->bulk ? c->bulk_len : 0;
	return c->bulk;
}

Gpool__Msg *gp_client_call(gp_client_t *c, Gpool__Msg *req, int timeout_ms, gp_error_t *err)
{
	uint64_t id;
	if (gp_client_send(c, req, &id, err) < 0)
		return NULL;
	return gp_client_recv(c, id, timeout_ms, err);
}
