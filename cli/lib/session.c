/* session.c - one command's conversation with gschedd: the configuration, the list of
 * schedulers, finding the leader and the calls made to it (session.h) */
#include "cli/lib/session.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/sched_client.h"
#include "common/config.h"
#include "common/parse.h"
#include "common/util.h"
#include "common/wire.h"

struct gp_session {
	gp_config_t *cfg;
	gp_client_t *client;
	char *endpoint;
	int64_t retry_ms; /* 0: ask once */
	bool said_retry;
};

/* $GPOOL_RETRY_FOR (a duration), else the default. */
static int64_t retry_ms(void)
{
	const char *e = getenv("GPOOL_RETRY_FOR");
	uint32_t sec;
	if (e && *e && gp_parse_duration(e, &sec) == 0)
		return (int64_t)sec * 1000;
	return GP_CLI_RETRY_MS;
}

gp_session_t *gp_session_create(const struct gp_cli_common *common, gp_error_t *err)
{
	gp_session_t *s = calloc(1, sizeof(*s));
	if (!s || !(s->cfg = gp_config_create(GP_CLI))) {
		free(s);
		errno = ENOMEM;
		gp_errprintf(err, "out of memory");
		return NULL;
	}
	if (gp_config_load_file(s->cfg, common ? common->config : NULL, err) < 0)
		goto fail;
	/* the client reads $GPOOL_SCHEDULER before the config key: --scheduler goes there so
	 * that the flag wins over both */
	if (common && common->scheduler && setenv("GPOOL_SCHEDULER", common->scheduler, 1) < 0) {
		gp_errprintf(err, "out of memory");
		goto fail;
	}
	const char *ep = getenv("GPOOL_SCHEDULER");
	if (!ep || !*ep)
		ep = gp_config_str(s->cfg, "scheduler");
	s->retry_ms = retry_ms();
	if (!(s->endpoint = strdup(ep))) {
		gp_errprintf(err, "out of memory");
		goto fail;
	}
	return s;
fail:
	gp_session_destroy(&s);
	return NULL;
}

void gp_session_destroy(gp_session_t **p)
{
	if (!p || !*p)
		return;
	gp_client_destroy(&(*p)->client);
	gp_config_destroy(&(*p)->cfg);
	free((*p)->endpoint);
	free(*p);
	*p = NULL;
}

void gp_session_set_retry(gp_session_t *s, int64_t ms)
{
	s->retry_ms = ms > 0 ? ms : 0;
}

/* After this long without an answer a command that will try again says so. */
#define RETRY_NOTICE_MS 2000

static void say_retry(gp_session_t *s)
{
	if (s->said_retry)
		return;
	if (s->client && gp_client_schedulers(s->client) > 1)
		fprintf(stderr,
			"%s: no leader among the schedulers '%s' yet; trying again for up to %lld "
			"s\n",
			program_invocation_short_name, s->endpoint,
			(long long)(s->retry_ms / 1000));
	else
		fprintf(stderr,
			"%s: no answer from the scheduler at '%s' yet; trying again for up to %lld "
			"s\n",
			program_invocation_short_name, s->endpoint,
			(long long)(s->retry_ms / 1000));
	s->said_retry = true;
}

const char *gp_session_endpoint(const gp_session_t *s)
{
	return s->client ? gp_client_endpoint(s->client) : s->endpoint;
}

static int connect_once(gp_session_t *s, gp_error_t *err)
{
	if (s->client)
		return 0;
	s->client = gp_client_create(s->cfg, err);
	return s->client ? 0 : -1;
}

struct gp_client *gp_session_client(gp_session_t *s, gp_error_t *err)
{
	return connect_once(s, err) < 0 ? NULL : s->client;
}

const char *gp_session_user(gp_session_t *s)
{
	if (connect_once(s, NULL) < 0)
		return "";
	return gp_client_user(s->client);
}

/* The name of a reply kind, for "unexpected reply" messages. */
static const char *case_name(Gpool__Msg__MCase c)
{
	const ProtobufCFieldDescriptor *f =
	    protobuf_c_message_descriptor_get_field(&gpool__msg__descriptor, (unsigned)c);
	return f ? f->name : "nothing";
}

static void pause_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A standby's answer (docs/protocol.md, NOT_LEADER). */
static bool not_leader(const Gpool__Msg *m)
{
	return m && m->m_case == GPOOL__MSG__M_ERROR && m->error &&
	       m->error->code == GPOOL__ERROR_CODE__ERROR_NOT_LEADER;
}

Gpool__Msg *gp_session_call(gp_session_t *s, Gpool__Msg *req, Gpool__Msg__MCase expect,
			    int timeout_ms, Gpool__ErrorCode *code, gp_error_t *err)
{
	gp_error_t e2 = {{0}};
	uint8_t rid[GP_REQUEST_ID_LEN];
	if (code)
		*code = GPOOL__ERROR_CODE__ERROR_NONE;
	if (connect_once(s, err) < 0)
		return NULL;
	/* one request id for every try, to whichever scheduler: applied once */
	if (gp_client_stamp(req, rid) < 0) {
		gp_errprintf(err, "cannot make a request id: %s", strerror(errno));
		return NULL;
	}
	bool several = gp_client_schedulers(s->client) > 1;
	/* a standby's answer is followed even by a command that asks once */
	int64_t give_up = gp_mono_ms() + (s->retry_ms > timeout_ms ? s->retry_ms : timeout_ms);
	Gpool__Msg *rep = NULL;
	while (1) {
		/* a request sent while gschedd is away waits in the socket and goes when it is
		 * back: say so early, then go on waiting for the same request */
		int first =
		    s->retry_ms && !s->said_retry && timeout_ms > RETRY_NOTICE_MS && !several
			? RETRY_NOTICE_MS
			: timeout_ms;
		uint64_t id;
		if (first < timeout_ms) {
			if (gp_client_send(s->client, req, &id, &e2) < 0)
				break;
			rep = gp_client_recv(s->client, id, first, &e2);
			if (!rep && errno == ETIMEDOUT) {
				say_retry(s);
				rep = gp_client_recv(s->client, id, timeout_ms - first, &e2);
			}
		} else {
			rep = gp_client_ask(s->client, req, timeout_ms, &e2);
		}
		bool standby = not_leader(rep);
		if (!standby && (rep || errno != ETIMEDOUT))
			break;
		if (gp_mono_ms() >= give_up) {
			if (standby) /* said below as the standby's error */
				break;
			errno = ETIMEDOUT;
			rep = NULL;
			break;
		}
		if (standby || several) {
			/* the leader the standby names, else the next of the list */
			int round =
			    gp_client_switch(s->client, standby ? rep->error->leader : NULL, &e2);
			rep = NULL;
			if (round < 0)
				break;
			if (round) { /* every one asked: an election may be under way */
				say_retry(s);
				pause_ms(200);
			}
			continue;
		}
		say_retry(s);
	}
	if (!rep) {
		int saved = errno;
		if (saved == ETIMEDOUT && gp_client_schedulers(s->client) > 1)
			gp_errprintf(err,
				     "no answer from any scheduler of '%s' (is a gschedd running?)",
				     s->endpoint);
		else if (saved == ETIMEDOUT)
			gp_errprintf(err,
				     "no answer from the scheduler at '%s' (is gschedd running?)",
				     s->endpoint);
		else
			gp_errprintf(err, "%s", e2.text);
		errno = saved;
		return NULL;
	}
	if (rep->m_case == GPOOL__MSG__M_ERROR) {
		if (code)
			*code = rep->error ? rep->error->code : GPOOL__ERROR_CODE__ERROR_UNEXPECTED;
		gp_errprintf(err, "%s",
			     rep->error && rep->error->text && *rep->error->text
				 ? rep->error->text
				 : gp_error_code_name(rep->error ? rep->error->code : 0));
		errno = EPROTO;
		return NULL;
	}
	if (rep->m_case != expect) {
		gp_errprintf(err, "unexpected reply '%s' from the scheduler (wanted '%s')",
			     case_name(rep->m_case), case_name(expect));
		errno = EPROTO;
		return NULL;
	}
	return rep;
}

const struct gp_config *gp_session_config(const gp_session_t *s)
{
	return s->cfg;
}

int gp_cli_set_config(void *ctx, const char *arg, gp_error_t *err)
{
	((struct gp_cli_common *)ctx)->config = arg;
	return 0;
}

int gp_cli_set_scheduler(void *ctx, const char *arg, gp_error_t *err)
{
	((struct gp_cli_common *)ctx)->scheduler = arg;
	return 0;
}

Gpool__JobQueryReply *gp_session_job_query(gp_session_t *s, Gpool__JobQuery *q, gp_error_t *err)
{
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_JOB_QUERY;
	m.job_query = q;
	Gpool__Msg *r =
	    gp_session_call(s, &m, GPOOL__MSG__M_JOB_QUERY_REPLY, GP_CLI_TIMEOUT_MS, NULL, err);
	return r ? r->job_query_reply : NULL;
}

Gpool__NodeQueryReply *gp_session_node_query(gp_session_t *s, Gpool__NodeQuery *q, gp_error_t *err)
{
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.m_case = GPOOL__MSG__M_NODE_QUERY;
	m.node_query = q;
	Gpool__Msg *r =
	    gp_session_call(s, &m, GPOOL__MSG__M_NODE_QUERY_REPLY, GP_CLI_TIMEOUT_MS, NULL, err);
	return r ? r->node_query_reply : NULL;
}
