/* gp-probe: send hostile or odd envelopes to gschedd's ROUTER port and say what came back.
 *
 * The system tests use it to check that the scheduler refuses what it must (garbage,
 * truncated and oversized messages, a wrong protocol version, a replayed or expired
 * credential) and keeps serving. Every mode prints one line per reply:
 *     reply: ERROR_REPLAY (3): replayed message (uid 1000, sequence 1)
 *     reply: ok job_query_reply
 * or "no reply" when nothing came back within --timeout.
 * Exit status: 0 a reply came, 3 no reply (dropped), 1 a local failure, 2 usage.
 *
 * The payload of each mode is a JobQuery for the caller's own jobs: harmless when accepted;
 * relay's is a CardReport that claims to relay a screening job's result, as only an agent may.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "common/auth.h"
#include "common/config.h"
#include "common/opt.h"
#include "proto/gpool.pb-c.h"
#include "common/util.h"
#include "common/wire.h"

struct probe {
	void *zctx;
	void *sock;
	gp_auth_t *auth;
	int timeout_ms;
	uint64_t epoch;
	uint64_t seq;
	const char *hint; /* Envelope.hint, NULL: none */
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: gp-probe [--scheduler EP] [--timeout MS] [--ttl S] MODE [ARG]\n"
	    "modes:\n"
	    "  valid               a sealed JobQuery (the baseline)\n"
	    "  random N            N random bytes\n"
	    "  truncated           a valid envelope cut in half\n"
	    "  oversized N         a valid envelope padded to N bytes\n"
	    "  version V           a sealed envelope that claims protocol version V\n"
	    "  register-version V NAME  a NodeRegister for NAME sealed as protocol version V\n"
	    "  nocred              an envelope without a credential\n"
	    "  tampered            a valid envelope whose body is changed after sealing\n"
	    "  badbody             a sealed envelope whose body is not a Batch\n"
	    "  replay              one valid envelope sent twice (both replies printed)\n"
	    "  expired WAIT        a credential with --ttl (default 1 s), sent after WAIT s\n"
	    "  empty               a zero-length message\n"
	    "  relay NODE:CARD:JOB a CardReport grading NODE's CARD 'fail' that claims to relay\n"
	    "                      screening job JOB's result, as the node's agent would\n"
	    "  svc-report JOB:RESTARTS  a ServiceQuery whose report, as a gateway's, says that\n"
	    "                      replica JOB (at that restart count) fails its health checks\n"
	    "                      and drains with 1000 requests in flight\n"
	    "  flood SECS          sealed JobQuery envelopes (a fresh sequence number each) as "
	    "fast\n"
	    "                      as they can be sealed, for SECS seconds, replies drained "
	    "without\n"
	    "                      waiting; prints sent, answered, refused (by error code) and no "
	    "reply\n"
	    "  hostile SECS KIND   an attacker for SECS seconds, never waiting: max_request-sized\n"
	    "                      envelopes of zeros (big) or of empty messages (empties), no\n"
	    "                      credential; empties-cred: each sealed with a credential;\n"
	    "                      oversized: max_message-sized frames\n"
	    "  impostor HOW        be the scheduler instead: bind EP, take one envelope, say\n"
	    "                      whether its credential decodes here, and answer it with a\n"
	    "                      JobQueryReply sealed with this uid's credential (HOW cred) or\n"
	    "                      under the command's reply key if this side learned it, else a\n"
	    "                      guessed one (HOW mac)\n");
}

/* impostor: a scheduler that is not one (the reply-key check of t0160). 0 answered, 3 none. */
static int impostor(struct probe *p, const char *ep, const char *how)
{
	if (!how || (strcmp(how, "cred") && strcmp(how, "mac"))) {
		fprintf(stderr, "gp-probe: impostor needs cred or mac\n");
		return 2;
	}
	void *sock = zmq_socket(p->zctx, ZMQ_ROUTER);
	if (!sock || zmq_bind(sock, ep) < 0) {
		fprintf(stderr, "gp-probe: cannot bind '%s': %s\n", ep, zmq_strerror(errno));
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	zmq_pollitem_t pi = {sock, 0, ZMQ_POLLIN, 0};
	if (zmq_poll(&pi, 1, p->timeout_ms) != 1) {
		printf("no request\n");
		zmq_close(sock);
		return 3;
	}
	uint8_t rid[256], data[65536];
	int rl = zmq_recv(sock, rid, sizeof(rid), 0);
	int dl = rl > 0 ? zmq_recv(sock, data, sizeof(data), 0) : -1;
	if (rl <= 0 || dl < 0 || dl > (int)sizeof(data)) {
		fprintf(stderr, "gp-probe: unreadable request\n");
		zmq_close(sock);
		return 1;
	}
	gp_wire_t *w = gp_wire_create(p->auth, sizeof(data));
	struct gp_sender from;
	Gpool__ErrorCode code;
	gp_error_t err = {{0}};
	Gpool__Batch *b = gp_wire_open(w, data, (size_t)dl, &from, &code, &err);
	printf("decode: %s%s\n", b ? "ok" : err.text,
	       b && from.has_key ? ", reply key learned" : "");
	uint64_t id = b && b->n_msgs ? b->msgs[0]->id : 1;
	uint8_t key[GP_WIRE_KEY_LEN];
	if (b && from.has_key)
		memcpy(key, from.key, sizeof(key));
	else
		for (size_t i = 0; i < sizeof(key); i += 8) {
			uint64_t r = gp_random64();
			memcpy(key + i, &r, 8);
		}
	if (b)
		gpool__batch__free_unpacked(b, NULL);
	Gpool__JobQueryReply r = GPOOL__JOB_QUERY_REPLY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = id;
	m.m_case = GPOOL__MSG__M_JOB_QUERY_REPLY;
	m.job_query_reply = &r;
	gp_batch_t out = {0};
	gp_buf_t sealed = {0};
	int rc =
	    gp_batch_add(&out, &m) < 0 ||
		    (!strcmp(how, "cred") ? gp_wire_seal(w, &out, &sealed, &err)
					  : gp_wire_seal_mac(w, &out, key, &sealed, &err)) < 0 ||
		    zmq_send(sock, rid, (size_t)rl, ZMQ_SNDMORE) < 0 ||
		    zmq_send(sock, sealed.data, sealed.len, 0) < 0
		? 1
		: 0;
	printf("%s\n", rc ? "not answered" : "answered");
	fflush(stdout);
	gp_batch_release(&out);
	gp_buf_release(&sealed);
	gp_wire_destroy(&w);
	int linger = 1000;
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_close(sock);
	return rc;
}

/* A Batch holding one JobQuery for the caller's jobs. */
static int query_body(gp_buf_t *body)
{
	Gpool__JobQuery q = GPOOL__JOB_QUERY__INIT;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = 1;
	m.m_case = GPOOL__MSG__M_JOB_QUERY;
	m.job_query = &q;
	gp_batch_t b = {0};
	if (gp_batch_add(&b, &m) < 0)
		return -1;
	*body = b.body;
	return 0;
}

/* A Batch holding one NodeRegister of a node named name (as an agent's first message). */
static int register_body(const char *name, gp_buf_t *body)
{
	Gpool__NodeRegister nr = GPOOL__NODE_REGISTER__INIT;
	nr.name = (char *)name;
	nr.version = "0.0.0";
	nr.cpus = 1;
	nr.mem_mb = 1024;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = 1;
	m.m_case = GPOOL__MSG__M_NODE_REGISTER;
	m.node_register = &nr;
	gp_batch_t b = {0};
	if (gp_batch_add(&b, &m) < 0)
		return -1;
	*body = b.body;
	return 0;
}

/* A Batch holding one CardReport "NODE:CARD:JOB": a relayed screening result, forged. */
static int relay_body(const char *arg, gp_buf_t *body)
{
	char node[64];
	unsigned card;
	unsigned long long job;
	if (!arg || sscanf(arg, "%63[^:]:%u:%llu", node, &card, &job) != 3) {
		fprintf(stderr, "gp-probe: relay needs NODE:CARD:JOB\n");
		return -1;
	}
	Gpool__CardReport c = GPOOL__CARD_REPORT__INIT;
	c.node = node;
	c.card = card;
	c.grade = "fail";
	c.reason = "forged by gp-probe";
	c.job_id = job;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = 1;
	m.m_case = GPOOL__MSG__M_CARD_REPORT;
	m.card_report = &c;
	gp_batch_t b = {0};
	if (gp_batch_add(&b, &m) < 0)
		return -1;
	*body = b.body;
	return 0;
}

/* A Batch holding one ServiceQuery whose reports say, as a gateway named "gp-probe" would,
 * that replica "JOB:RESTARTS" is failing its health checks, draining, with 1000 requests in
 * flight: forged health and drain state. */
static int svc_report_body(const char *arg, gp_buf_t *body)
{
	unsigned long long job;
	unsigned restarts;
	if (!arg || sscanf(arg, "%llu:%u", &job, &restarts) != 2) {
		fprintf(stderr, "gp-probe: svc-report needs JOB:RESTARTS\n");
		return -1;
	}
	Gpool__ReplicaReport r = GPOOL__REPLICA_REPORT__INIT, *pr = &r;
	r.job_id = job;
	r.restarts = restarts;
	r.healthy = false;
	r.draining = true;
	r.outstanding = 1000;
	r.errors = 1000;
	Gpool__ServiceQuery q = GPOOL__SERVICE_QUERY__INIT;
	q.gateway = "gp-probe";
	q.reports = &pr;
	q.n_reports = 1;
	Gpool__Msg m = GPOOL__MSG__INIT;
	m.id = 1;
	m.m_case = GPOOL__MSG__M_SERVICE_QUERY;
	m.service_query = &q;
	gp_batch_t b = {0};
	if (gp_batch_add(&b, &m) < 0)
		return -1;
	*body = b.body;
	return 0;
}

/* Seal body as version `version`; with_cred 0 leaves the credential out. */
static int seal(struct probe *p, uint32_t version, const gp_buf_t *body, int with_cred,
		gp_buf_t *out)
{
	Gpool__Envelope env = GPOOL__ENVELOPE__INIT;
	char *cred = NULL;
	gp_error_t err = {{0}};
	env.version = version;
	env.epoch = p->epoch;
	env.seq = p->seq++;
	env.body.data = body->data;
	env.body.len = body->len;
	env.hint = (char *)p->hint;
	if (with_cred) {
		uint8_t h[32];
		gp_wire_digest(version, env.epoch, env.seq, body->data, body->len, h);
		if (gp_auth_encode(p->auth, h, sizeof(h), &cred, &err) < 0) {
			fprintf(stderr, "gp-probe: cannot encode a credential: %s\n", err.text);
			return -1;
		}
		env.cred.data = (uint8_t *)cred;
		env.cred.len = strlen(cred);
	}
	out->len = 0;
	if (gp_buf_reserve(out, gpool__envelope__get_packed_size(&env)) < 0) {
		free(cred);
		return -1;
	}
	out->len = gpool__envelope__pack(&env, out->data);
	free(cred);
	return 0;
}

static int send_bytes(struct probe *p, const void *data, size_t len)
{
	if (zmq_send(p->sock, data, len, 0) < 0) {
		fprintf(stderr, "gp-probe: send: %s\n", zmq_strerror(errno));
		return -1;
	}
	return 0;
}

/* Wait for one reply and print it. 0 a reply, 3 none. The reply's credential is not checked:
 * the probe reports what the scheduler said, not whether to believe it. */
static int print_reply(struct probe *p)
{
	zmq_pollitem_t pi = {p->sock, 0, ZMQ_POLLIN, 0};
	int64_t deadline = gp_mono_ms() + p->timeout_ms;
	while (1) {
		int64_t left = deadline - gp_mono_ms();
		if (left <= 0) {
			printf("no reply\n");
			fflush(stdout);
			return 3;
		}
		int rc = zmq_poll(&pi, 1, (long)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			continue;
		zmq_msg_t zm;
		zmq_msg_init(&zm);
		if (zmq_msg_recv(&zm, p->sock, 0) < 0) {
			zmq_msg_close(&zm);
			continue;
		}
		Gpool__Envelope *env =
		    gpool__envelope__unpack(NULL, zmq_msg_size(&zm), zmq_msg_data(&zm));
		zmq_msg_close(&zm);
		if (!env) {
			printf("reply: undecodable envelope\n");
			fflush(stdout);
			return 0;
		}
		Gpool__Batch *b = gpool__batch__unpack(NULL, env->body.len, env->body.data);
		gpool__envelope__free_unpacked(env, NULL);
		if (!b || b->n_msgs == 0) {
			printf("reply: undecodable batch\n");
		} else {
			Gpool__Msg *m = b->msgs[0];
			if (m->m_case == GPOOL__MSG__M_ERROR && m->error) {
				const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(
				    &gpool__error_code__descriptor, m->error->code);
				printf("reply: %s (%d): %s\n", ev ? ev->name : "ERROR_?",
				       (int)m->error->code, m->error->text ? m->error->text : "");
			} else {
				const ProtobufCFieldDescriptor *fd =
				    protobuf_c_message_descriptor_get_field(&gpool__msg__descriptor,
									    m->m_case);
				printf("reply: ok %s\n", fd ? fd->name : "?");
			}
		}
		if (b)
			gpool__batch__free_unpacked(b, NULL);
		fflush(stdout);
		return 0;
	}
}

/* Take every reply that is waiting now; count ok replies and refusals. */
static void drain(struct probe *p, uint64_t *ok, uint64_t *refused)
{
	zmq_msg_t zm;
	zmq_msg_init(&zm);
	while (zmq_msg_recv(&zm, p->sock, ZMQ_DONTWAIT) >= 0) {
		Gpool__Envelope *env =
		    gpool__envelope__unpack(NULL, zmq_msg_size(&zm), zmq_msg_data(&zm));
		Gpool__Batch *b =
		    env ? gpool__batch__unpack(NULL, env->body.len, env->body.data) : NULL;
		if (b && b->n_msgs > 0 && b->msgs[0]->m_case == GPOOL__MSG__M_ERROR)
			(*refused)++;
		else
			(*ok)++;
		if (b)
			gpool__batch__free_unpacked(b, NULL);
		if (env)
			gpool__envelope__free_unpacked(env, NULL);
	}
	zmq_msg_close(&zm);
}

/* flood SECS: as many sealed, valid JobQuery envelopes as can be sealed (each its own
 * credential and sequence number, so none is a replay), never waiting for a reply. The send
 * high-water mark is raised so that zmq queues rather than blocks; a send that would block is
 * counted as not sent. */
static int flood(struct probe *p, uint32_t version, const gp_buf_t *body, long secs)
{
	int hwm = 100000;
	zmq_setsockopt(p->sock, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(p->sock, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	gp_buf_t env = {0};
	uint64_t sent = 0, blocked = 0, ok = 0, refused = 0;
	int64_t t0 = gp_mono_ms(), end = t0 + secs * 1000;
	while (gp_mono_ms() < end) {
		if (seal(p, version, body, 1, &env) < 0)
			return 1;
		if (zmq_send(p->sock, env.data, env.len, ZMQ_DONTWAIT) < 0)
			blocked++;
		else
			sent++;
		if ((sent & 63) == 0)
			drain(p, &ok, &refused);
	}
	/* what is still in flight may answer within a second */
	int64_t grace = gp_mono_ms() + 1000;
	while (gp_mono_ms() < grace) {
		drain(p, &ok, &refused);
		usleep(20000);
	}
	double el = (gp_mono_ms() - t0) / 1000.0;
	printf(
	    "flood: sent %llu (%.0f/s), blocked %llu, answered %llu, refused %llu, no reply %llu\n",
	    (unsigned long long)sent, sent / (el > 0 ? el - 1 : 1), (unsigned long long)blocked,
	    (unsigned long long)ok, (unsigned long long)refused,
	    (unsigned long long)(sent > ok + refused ? sent - ok - refused : 0));
	fflush(stdout);
	gp_buf_release(&env);
	return 0;
}

/* hostile SECS KIND: what an attacker on the LAN sends, continuously for SECS seconds, never
 * waiting for a reply: envelopes of the largest size the scheduler takes (max), whose body is
 * zeros (KIND big) or as many empty messages as fit (empties: 8 million at 16 MiB), without a
 * credential; empties-cred seals each with this user's credential (the count is refused after
 * it); oversized sends frames of max_message (over max_request: ZeroMQ drops each as it
 * comes and closes the connection). Prints what was sent and what came back. */
static int hostile(struct probe *p, const char *kind, long secs, size_t max, size_t over)
{
	bool empties = !strcmp(kind, "empties") || !strcmp(kind, "empties-cred");
	bool cred = !strcmp(kind, "empties-cred");
	if (!strcmp(kind, "oversized"))
		max = over;
	else if (!empties && strcmp(kind, "big")) {
		fprintf(stderr,
			"gp-probe: hostile KIND is big, empties, empties-cred or oversized\n");
		return 2;
	}
	gp_buf_t body = {0}, env = {0};
	size_t n = max > 256 ? max - 256 : 0;
	if (gp_buf_reserve(&body, n) < 0)
		return 1;
	memset(body.data, 0, n);
	for (size_t i = 0; empties && i + 1 < n; i += 2)
		body.data[i] = 0x0a; /* Batch.msgs, an empty Msg */
	body.len = n & ~(size_t)1;
	int hwm = 2, tmo = 1000;
	zmq_setsockopt(p->sock, ZMQ_SNDHWM, &hwm, sizeof(hwm));
	zmq_setsockopt(p->sock, ZMQ_SNDTIMEO, &tmo, sizeof(tmo));
	uint64_t sent = 0, blocked = 0, ok = 0, refused = 0;
	int64_t t0 = gp_mono_ms(), end = t0 + secs * 1000;
	if (seal(p, GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION, &body, cred, &env) < 0)
		return 1;
	while (gp_mono_ms() < end) {
		if (cred && sent &&
		    seal(p, GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION, &body, 1, &env) < 0)
			return 1;
		if (zmq_send(p->sock, env.data, env.len, 0) < 0)
			blocked++;
		else
			sent++;
		drain(p, &ok, &refused);
	}
	double el = (gp_mono_ms() - t0) / 1000.0;
	printf("hostile %s: sent %llu envelopes of %zu bytes (%.1f MB/s), blocked %llu, answered "
	       "%llu, refused %llu\n",
	       kind, (unsigned long long)sent, env.len, sent * (double)env.len / 1e6 / el,
	       (unsigned long long)blocked, (unsigned long long)ok, (unsigned long long)refused);
	fflush(stdout);
	gp_buf_release(&body);
	gp_buf_release(&env);
	return 0;
}

static long arg_long(const char *s, const char *what)
{
	char *end;
	errno = 0;
	long v = strtol(s ? s : "", &end, 10);
	if (!s || errno || *end || v < 0) {
		fprintf(stderr, "gp-probe: invalid %s '%s'\n", what, s ? s : "");
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct probe p = {.timeout_ms = 3000, .epoch = gp_random64() | 1, .seq = 1};
	const char *ep = NULL;
	int ttl = 1;
	static const struct option opts[] = {
	    {"scheduler", required_argument, NULL, 's'},
	    {"timeout", required_argument, NULL, 't'},
	    {"ttl", required_argument, NULL, 'T'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;
	while ((c = getopt_long(argc, argv, "+s:t:T:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			ep = optarg;
			break;
		case 't':
			p.timeout_ms = (int)arg_long(optarg, "timeout");
			break;
		case 'T':
			ttl = (int)arg_long(optarg, "ttl");
			break;
		case 'h':
		default:
			return gp_opt_usage_status(usage, c == 'h', 2);
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	const char *mode = argv[optind];
	const char *arg = optind + 1 < argc ? argv[optind + 1] : NULL;

	gp_error_t err = {{0}};
	gp_config_t *cfg = gp_config_create(GP_CLI);
	if (!cfg || gp_config_load_file(cfg, NULL, &err) < 0) {
		fprintf(stderr, "gp-probe: %s\n", err.text);
		return 1;
	}
	if (!ep)
		ep = getenv("GPOOL_SCHEDULER");
	if (!ep || !*ep)
		ep = gp_config_str(cfg, "scheduler");
	if (!(p.auth = gp_auth_create(NULL, &err))) {
		fprintf(stderr, "gp-probe: %s\n", err.text);
		return 1;
	}
	p.zctx = zmq_ctx_new();
	if (!strcmp(mode, "impostor")) {
		int rc = impostor(&p, ep, arg);
		zmq_ctx_term(p.zctx);
		gp_auth_destroy(&p.auth);
		gp_config_destroy(&cfg);
		return rc;
	}
	p.sock = zmq_socket(p.zctx, ZMQ_DEALER);
	int linger = 500;
	zmq_setsockopt(p.sock, ZMQ_LINGER, &linger, sizeof(linger));
	if (zmq_connect(p.sock, ep) < 0) {
		fprintf(stderr, "gp-probe: cannot connect to '%s': %s\n", ep, zmq_strerror(errno));
		return 1;
	}

	const uint32_t V = GPOOL__PROTOCOL_VERSION__PROTOCOL_VERSION;
	gp_buf_t body = {0}, env = {0};
	int rc = 0;
	if (query_body(&body) < 0)
		return 1;
	if (!strcmp(mode, "valid")) {
		if (seal(&p, V, &body, 1, &env) < 0 || send_bytes(&p, env.data, env.len) < 0)
			return 1;
		rc = print_reply(&p);
	} else if (!strcmp(mode, "random")) {
		long n = arg_long(arg, "size");
		uint8_t *junk = malloc(n ? n : 1);
		for (long i = 0; i < n; i += 8) {
			uint64_t r = gp_random64();
			memcpy(junk + i, &r, n - i < 8 ? n - i : 8);
		}
		if (send_bytes(&p, junk, n) < 0)
			return 1;
		free(junk);
		rc = print_reply(&p);
	} else if (!strcmp(mode, "truncated")) {
		if (seal(&p, V, &body, 1, &env) < 0 || send_bytes(&p, env.data, env.len / 2) < 0)
			return 1;
		rc = print_reply(&p);
	} else if (!strcmp(mode, "oversized")) {
		long n = arg_long(arg, "size");
		if (seal(&p, V, &body, 1, &env) < 0)
			return 1;
		if ((size_t)n > env.len) {
			/* pad inside the body field's reach: an unknown field 15 of n bytes */
			uint8_t *big = calloc(1, n);
			if (!big)
				return 1;
			memcpy(big, env.data, env.len);
			memset(big + env.len, 0x78, n - env.len);
			if (send_bytes(&p, big, n) < 0)
				return 1;
			free(big);
		} else if (send_bytes(&p, env.data, env.len) < 0) {
			return 1;
		}
		rc = print_reply(&p);
	} else if (!strcmp(mode, "version")) {
		if (seal(&p, (uint32_t)arg_long(arg, "version"), &body, 1, &env) < 0 ||
		    send_bytes(&p, env.data, env.len) < 0)
			return 1;
		rc = print_reply(&p);
	} else if (!strcmp(mode, "register-version")) {
		const char *name = optind + 2 < argc ? argv[optind + 2] : "probe";
		gp_buf_t rb = {0};
		p.hint = name; /* as an agent names itself */
		if (register_body(name, &rb) < 0 ||
		    seal(&p, (uint32_t)arg_long(arg, "version"), &rb, 1, &env) < 0 ||
		    send_bytes(&p, env.data, env.len) < 0)
			return 1;
		rc = print_reply(&p);
	} else if (!strcmp(mode, "nocred")) {
		if (seal(&p, V, &body, 0, &env) < 0 || send_bytes(&p, env.data, env.len) < 0)
			return 1;
		rc = print_reply(&p);
	} else if (!strcmp(mode, "tampered")) {
		if (seal(&p, V, &body, 1, &env) < 0)
			return 1;
		/* the body is the last field: flip its last byte (the JobQuery's content) */
		env.data[env.len - 1] ^= 0x01;
		if (send_bytes(&p, env.data, env.len) < 0)
			return 1;
		rc = print_reply(&p);
	} else if (!strcmp(mode, "badbody")) {
		gp_buf_t junk = {0};
		uint8_t bad[] = {0x0a, 0x7f, 0x01,
				 0x02}; /* a field claiming 127 bytes, 2 present */
		gp_buf_append(&junk, bad, sizeof(bad));
		if (seal(&p, V, &junk, 1, &env) < 0 || send_bytes(&p, env.data, env.len) < 0)
			return 1;
		rc = print_reply(&p);
	} else if (!strcmp(mode, "replay")) {
		if (seal(&p, V, &body, 1, &env) < 0 || send_bytes(&p, env.data, env.len) < 0)
			return 1;
		int r1 = print_reply(&p);
		if (send_bytes(&p, env.data, env.len) < 0)
			return 1;
		int r2 = print_reply(&p);
		rc = r1 ? r1 : r2;
	} else if (!strcmp(mode, "expired")) {
		long wait = arg_long(arg, "wait");
		gp_auth_set_ttl(p.auth, ttl);
		if (seal(&p, V, &body, 1, &env) < 0)
			return 1;
		sleep((unsigned)wait);
		if (send_bytes(&p, env.data, env.len) < 0)
			return 1;
		rc = print_reply(&p);
	} else if (!strcmp(mode, "flood")) {
		rc = flood(&p, V, &body, arg_long(arg, "seconds"));
	} else if (!strcmp(mode, "hostile")) {
		const char *kind = optind + 2 < argc ? argv[optind + 2] : "big";
		rc = hostile(&p, kind, arg_long(arg, "seconds"),
			     (size_t)gp_config_int(cfg, "max_request"),
			     (size_t)gp_config_int(cfg, "max_message"));
	} else if (!strcmp(mode, "empty")) {
		if (send_bytes(&p, "", 0) < 0)
			return 1;
		rc = print_reply(&p);
	} else if (!strcmp(mode, "relay")) {
		gp_buf_t rb = {0};
		if (relay_body(arg, &rb) < 0)
			return 2;
		if (seal(&p, V, &rb, 1, &env) < 0 || send_bytes(&p, env.data, env.len) < 0)
			return 1;
		gp_buf_release(&rb);
		rc = print_reply(&p);
	} else if (!strcmp(mode, "svc-report")) {
		gp_buf_t rb = {0};
		if (svc_report_body(arg, &rb) < 0)
			return 2;
		if (seal(&p, V, &rb, 1, &env) < 0 || send_bytes(&p, env.data, env.len) < 0)
			return 1;
		gp_buf_release(&rb);
		rc = print_reply(&p);
	} else {
		fprintf(stderr, "gp-probe: unknown mode '%s'\n", mode);
		usage(stderr);
		return 2;
	}
	gp_buf_release(&body);
	gp_buf_release(&env);
	zmq_close(p.sock);
	zmq_ctx_term(p.zctx);
	gp_auth_destroy(&p.auth);
	gp_config_destroy(&cfg);
	return rc;
}
