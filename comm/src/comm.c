/* comm.c - making and destroying a communicator; the collectives' entry points. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "comm/src/comm_int.h"
#include "gpool/gcomm_rdv.h"
#include "comm/src/sock.h"

static int env_int(const char *name, long dflt, long lo, long hi)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return (int)dflt;
	char *end;
	long x = strtol(v, &end, 10);
	if (*end == 'k' || *end == 'K')
		x *= 1024, end++;
	else if (*end == 'm' || *end == 'M')
		x *= 1024 * 1024, end++;
	if (*end || x < lo || x > hi)
		return (int)dflt;
	return (int)x;
}

static const char *pick(const char *given, const char *env, const char *dflt)
{
	if (given && *given)
		return given;
	const char *v = getenv(env);
	return v && *v ? v : dflt;
}

/* Host name for the layout: gpool's node name, else the kernel's. */
static void host_name(char *buf, size_t len)
{
	const char *n = getenv("GCOMM_HOST");
	if (!n || !*n)
		n = getenv("GPOOL_NODENAME");
	if (n && *n) {
		snprintf(buf, len, "%s", n);
		return;
	}
	if (gethostname(buf, len) < 0)
		snprintf(buf, len, "localhost");
	buf[len - 1] = 0;
}

static int layout(gc_comm_t *c, char **hosts)
{
	c->host_of = calloc((size_t)c->size, sizeof(int));
	if (!c->host_of)
		return gc_fail(c, ENOMEM, "out of memory");
	c->nhosts = 0;
	for (int i = 0; i < c->size; i++) {
		int h = -1;
		for (int k = 0; k < i && h < 0; k++)
			if (!strcmp(hosts[k], hosts[i]))
				h = c->host_of[k];
		c->host_of[i] = h >= 0 ? h : c->nhosts++;
	}
	return 0;
}

/* The rendezvous rdv_spec names (tcp://ADDR:PORT or gpool): *ro, and *spec its address. */
static int rdv_pick(gc_comm_t *c, const char *rdv_spec, const gc_rdv_ops_t **ro, const char **spec)
{
	if (!strncmp(rdv_spec, "tcp://", 6)) {
		*ro = &gc_rdv_tcp;
		*spec = rdv_spec + 6;
		return 0;
	}
	if (!strcmp(rdv_spec, "gpool")) {
#ifdef GCOMM_HAVE_GPOOL_RDV
		*ro = &gc_rdv_gpool;
		*spec = NULL;
		return 0;
#else
		return gc_fail(c, ENOTSUP,
			       "rendezvous 'gpool' is not built into this libgcomm "
			       "(built without gpool's control path): use tcp://ADDR:PORT");
#endif
	}
	return gc_fail(c, EINVAL, "unknown rendezvous '%s' (tcp://ADDR:PORT or gpool)", rdv_spec);
}

/* Swap addresses through the rendezvous and connect the transport. */
static int wire_up(gc_comm_t *c, const gc_params_t *p, const char *rdv_spec, const char *token)
{
	int any_gpu = 0;
	const gc_rdv_ops_t *ro = NULL;
	const char *spec = rdv_spec;
	if (rdv_pick(c, rdv_spec, &ro, &spec) < 0)
		return -1;
	gc_error_t e = {""};
	gc_rdv_t *r = ro->open(spec, c->rank, c->size, token, c->timeout_ms, &e);
	if (!r)
		return gc_fail(c, errno ? errno : EIO, "%s", e.text);
	int rc = -1;
	void **vals = calloc((size_t)c->size, sizeof(void *));
	size_t *lens = calloc((size_t)c->size, sizeof(size_t));
	char **hosts = calloc((size_t)c->size, sizeof(char *));
	const void **blobs = calloc((size_t)c->size, sizeof(void *));
	size_t *blens = calloc((size_t)c->size, sizeof(size_t));
	void *kv = NULL;
	size_t kl = 0;
	uint64_t key = 0;
	if (!vals || !lens || !hosts || !blobs || !blens) {
		gc_fail(c, ENOMEM, "out of memory");
		goto out;
	}
	if (c->rank == 0) {
		if (getrandom(&key, sizeof(key), 0) != sizeof(key))
			key = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)gc_now_ms();
		if (ro->put(r, "key", &key, sizeof(key)) < 0)
			goto rdv_failed;
	}
	if (ro->get(r, "key", &kv, &kl) < 0)
		goto rdv_failed;
	if (kl != sizeof(key)) {
		gc_fail(c, EPROTO, "rendezvous: bad communicator key");
		goto out;
	}
	memcpy(&key, kv, sizeof(key));
	const char *addr = pick(p->addr, "GCOMM_ADDR", NULL);
	if (!addr && ro->local_addr && *ro->local_addr(r))
		addr = ro->local_addr(r);
	gc_tp_params_t tpp = {.rank = c->rank,
			      .size = c->size,
			      .timeout_ms = c->timeout_ms,
			      .spin_us = c->spin_us,
			      .local_pull = c->local_pull,
			      .addr = addr ? addr : "0.0.0.0",
			      .token = token,
			      .comm_key = key};
	const char *auth = getenv("GCOMM_AUTH");
	if (auth && *auth && strcmp(auth, "none") && strcmp(auth, "munge")) {
		gc_fail(c, EINVAL, "GCOMM_AUTH '%s': munge or none", auth);
		goto out;
	}
	tpp.auth_munge = auth && !strcmp(auth, "munge");
	if (tpp.auth_munge && strcmp(c->tpo->name, "tcp")) {
		gc_fail(c, ENOTSUP, "GCOMM_AUTH=munge: only the tcp transport checks credentials");
		goto out;
	}
	/* what every rank publishes: 'g' (it has a GPU backend) or 'c', its host name, the
	 * transport's blob */
	char mine[GC_TP_BLOB_MAX + 256];
	mine[0] = c->gpu ? 'g' : 'c';
	host_name(mine + 1, 200);
	size_t hl = 1 + strlen(mine + 1) + 1, bl = 0;
	c->tp = c->tpo->create(&tpp, mine + hl, &bl, &e);
	if (!c->tp) {
		gc_fail(c, errno ? errno : EIO, "%s", e.text);
		goto out;
	}
	char name[32];
	snprintf(name, sizeof(name), "r%d", c->rank);
	if (ro->put(r, name, mine, hl + bl) < 0 || ro->fence(r) < 0)
		goto rdv_failed;
	for (int i = 0; i < c->size; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		if (ro->get(r, name, &vals[i], &lens[i]) < 0)
			goto rdv_failed;
		char *v = vals[i];
		size_t h = lens[i] > 1 ? strnlen(v + 1, lens[i] - 1) : lens[i];
		if (lens[i] < 2 || (v[0] != 'g' && v[0] != 'c') || h >= lens[i] - 1) {
			gc_fail(c, EPROTO, "rendezvous: rank %d published a bad address", i);
			goto out;
		}
		any_gpu |= v[0] == 'g';
		hosts[i] = v + 1;
		blobs[i] = v + 1 + h + 1;
		blens[i] = lens[i] - 1 - h - 1;
	}
	/* the pipeline chunk is part of the wire format: every rank must cut alike, so a
	 * communicator with a card anywhere uses the device chunk for all its ranks */
	c->chunk_default = any_gpu ? GC_CHUNK_DEV : GC_CHUNK_HOST;
	if (layout(c, hosts) < 0)
		goto out;
	if (c->tpo->connect(c->tp, blobs, blens, c->host_of, &e) < 0) {
		gc_fail(c, errno ? errno : EIO, "%s", e.text);
		goto out;
	}
	rc = 0;
	goto out;
rdv_failed:
	gc_fail(c, errno ? errno : EIO, "%s", ro->error(r));
out:
	ro->close(r);
	for (int i = 0; vals && i < c->size; i++)
		free(vals[i]);
	free(vals);
	free(lens);
	free(hosts);
	free(blobs);
	free(blens);
	free(kv);
	return rc;
}

static int open_backends(gc_comm_t *c, const gc_params_t *p)
{
	gk_error_t ge = {""};
	c->cpu = gk_backend_open("cpu", &ge);
	if (!c->cpu)
		return gc_fail(c, errno ? errno : EIO, "kernels: %s", ge.text);
	const char *b = pick(p->backend, "GCOMM_BACKEND", "cpu");
	if (!strcmp(b, "cpu")) {
		c->gk = c->cpu;
		return 0;
	}
	int dev = p->device >= 0 ? p->device : env_int("GCOMM_DEVICE", 0, 0, 1024);
	c->gk = gk_backend_open_device(b, dev, &ge);
	if (!c->gk)
		return gc_fail(c, errno ? errno : EIO, "kernels backend %s: %s", b, ge.text);
	c->gpu = strcmp(gk_backend_name(c->gk), "cpu") != 0;
	if (c->gpu && gk_stream_create(c->gk, &c->stream) < 0)
		return gc_fail(c, EIO, "kernels: stream: %s", gk_backend_error(c->gk));
	return 0;
}

static gc_comm_t *comm_new(const gc_params_t *p)
{
	gc_comm_t *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->rank = p->rank;
	c->size = p->size;
	c->timeout_ms =
	    p->timeout_ms > 0 ? p->timeout_ms : env_int("GCOMM_TIMEOUT", 10000, 100, 86400000);
	c->chunk = (size_t)env_int("GCOMM_CHUNK", 0, 64, 1 << 30); /* 0: chunk_default */
	c->chunk_default = GC_CHUNK_HOST;
	c->window = env_int("GCOMM_WINDOW", 8, 1, 1024);
	c->small = (size_t)env_int("GCOMM_SMALL", 32 * 1024, 0, 1 << 30);
	c->ring2_min = (size_t)env_int("GCOMM_RING2_MIN", 2 << 20, 0, INT32_MAX);
	c->ring2_max = (size_t)env_int("GCOMM_RING2_MAX", 16 << 20, 0, INT32_MAX);
	c->spin_us = env_int("GCOMM_SPIN", 1000, 0, 1000000);
	c->local_pull = env_int("GCOMM_CMA", 1, 0, 1);
	c->wire = GC_F32;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	return c;
}

static int apply_env_choices(gc_comm_t *c)
{
	const char *a = getenv("GCOMM_ALGO");
	if (a && *a && gc_algo_parse(a, &c->algo) < 0)
		return gc_fail(c, EINVAL, "GCOMM_ALGO=%s: expected auto, ring, ring2, rhd or hier",
			       a);
	const char *w = getenv("GCOMM_WIRE");
	if (w && *w) {
		gc_dtype_t t;
		if (gc_dtype_parse(w, &t) < 0 || (t != GC_F32 && t != GC_F16 && t != GC_BF16))
			return gc_fail(c, EINVAL, "GCOMM_WIRE=%s: expected f32, f16 or bf16", w);
		c->wire = t;
	}
	return 0;
}

gc_comm_t *gc_comm_create(const gc_params_t *p, gc_error_t *err)
{
	if (!p) {
		errno = EINVAL;
		return NULL;
	}
	gc_comm_t *c = comm_new(p);
	if (!c) {
		if (err)
			snprintf(err->text, sizeof(err->text), "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	const char *tname = pick(p->transport, "GCOMM_TRANSPORT", "tcp");
	if (open_backends(c, p) < 0 || apply_env_choices(c) < 0)
		goto fail;
	if (!strcmp(tname, "mpi")) {
#ifdef GCOMM_HAVE_MPI
		if (gc_mpi_open(c, err) < 0) {
			if (err)
				snprintf(c->err, sizeof(c->err), "%s", err->text);
			goto fail;
		}
		c->coll = &gc_coll_mpi;
		return c;
#else
		gc_fail(c, ENOTSUP,
			"transport 'mpi' is not built into this libgcomm (no mpi.h at "
			"build time)");
		goto fail;
#endif
	}
	if (p->size < 1 || p->rank < 0 || p->rank >= p->size) {
		gc_fail(c, EINVAL, "rank %d of %d is not a valid rank", p->rank, p->size);
		goto fail;
	}
	c->tpo = gc_tp_find(tname);
	if (!c->tpo) {
		gc_fail(c, EINVAL, "unknown transport '%s' (built in: tcp%s%s)", tname,
#ifdef GCOMM_HAVE_UCX
			", ucx",
#else
			"",
#endif
#ifdef GCOMM_HAVE_MPI
			", mpi"
#else
			""
#endif
		);
		goto fail;
	}
	char rdv[300];
	const char *given = pick(p->rdv, "GCOMM_RDV", NULL);
	if (given) {
		snprintf(rdv, sizeof(rdv), "%s", given);
	} else {
		const char *ma = getenv("MASTER_ADDR"), *mp = getenv("MASTER_PORT");
		if (!ma || !*ma || !mp || !*mp) {
			gc_fail(c, EINVAL,
				"no rendezvous: set GCOMM_RDV=tcp://ADDR:PORT (or run as a "
				"gpool job, which sets MASTER_ADDR and MASTER_PORT)");
			goto fail;
		}
		snprintf(rdv, sizeof(rdv), "tcp://%s:%s", ma, mp);
	}
	const char *token = pick(p->token, "GCOMM_TOKEN", "");
	if (wire_up(c, p, rdv, token) < 0)
		goto fail;
	c->coll = &gc_coll_native;
	return c;
fail:
	if (err)
		snprintf(err->text, sizeof(err->text), "%s", c->err);
	int e = errno;
	gc_comm_destroy(&c);
	errno = e;
	return NULL;
}

void gc_comm_destroy(gc_comm_t **cp)
{
	if (!cp || !*cp)
		return;
	gc_comm_t *c = *cp;
	gc_nb_stop(c);
	if (c->coll && c->coll->destroy)
		c->coll->destroy(c);
	if (c->tp)
		c->tpo->destroy(c->tp);
	for (int i = 0; i < GC_NBUF; i++) {
		if (c->bufs[i][0].p)
			gk_host_free(c->gk, c->bufs[i][0].p);
		if (c->bufs[i][1].p)
			gk_dev_free(c->gk, c->bufs[i][1].p);
	}
	if (c->stream)
		gk_stream_destroy(c->gk, &c->stream);
	if (c->gk && c->gk != c->cpu)
		gk_backend_close(&c->gk);
	gk_backend_close(&c->cpu);
	free(c->host_of);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
	free(c);
	*cp = NULL;
}

int gc_rank(const gc_comm_t *c)
{
	return c ? c->rank : -1;
}

int gc_size(const gc_comm_t *c)
{
	return c ? c->size : -1;
}

const char *gc_error(const gc_comm_t *c)
{
	return c ? c->err : "no communicator";
}

int gc_host_count(const gc_comm_t *c)
{
	return c ? c->nhosts : -1;
}

const char *gc_transport(const gc_comm_t *c)
{
	return c->tpo ? c->tpo->name : "mpi";
}

int gc_set_algo(gc_comm_t *c, gc_algo_t a)
{
	if (!c || a < GC_ALGO_AUTO || a > GC_ALGO_LAST)
		return errno = EINVAL, -1;
	c->algo = a;
	return 0;
}

int gc_set_wire(gc_comm_t *c, gc_dtype_t w)
{
	if (!c || (w != GC_F32 && w != GC_F16 && w != GC_BF16))
		return errno = EINVAL, -1;
	c->wire = w;
	return 0;
}
