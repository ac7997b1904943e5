/* main.c - gllm: a language model in a GGUF file served OpenAI's way, on one rank or split
 * over the ranks of a gpool job (docs/commands/gllm.md).
 *   gllm serve MODEL.gguf [options]    rank 0 serves HTTP; other ranks run layers
 *   gllm run MODEL.gguf -p PROMPT      generate to stdout (tests, demos)
 *   gllm plan MODEL.gguf               print the plan for the job's ranks, load nothing
 * In a job of several ranks (GPOOL_SIZE/GPOOL_RANK or GCOMM_*: libgcomm's rendezvous) every
 * rank runs the same command line. Exit status: 0, 1 a failure, 2 usage, 3 the ranks failed
 * while serving (the service restarts it). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/opt.h"
#include "common/parse.h"
#include "gllm/server.h"

struct cmd {
	gllm_opts_t o;
	gllm_server_opts_t so;
	const char *chat, *prompt, *peer_auth;
	int ntok, help, port_set;
	float temp;
	long long seed;
	int seeded;
};

static int set_long(const char *arg, long lo, long hi, const char *what, long *v, gp_error_t *err)
{
	if (gp_parse_long(arg, lo, hi, v) < 0)
		return errno = EINVAL,
		       gp_errprintf(err, "%s '%s': a number from %ld to %ld", what, arg, lo, hi);
	return 0;
}

#define INT_SETTER(fn, field, lo, hi, what)                                                        \
	static int fn(void *ctx, const char *arg, gp_error_t *err)                                 \
	{                                                                                          \
		long v;                                                                            \
		if (set_long(arg, lo, hi, what, &v, err) < 0)                                      \
			return -1;                                                                 \
		((struct cmd *)ctx)->field = (int)v;                                               \
		return 0;                                                                          \
	}
static int set_port(void *ctx, const char *arg, gp_error_t *err)
{
	long v;
	if (set_long(arg, 0, 65535, "--port", &v, err) < 0)
		return -1;
	((struct cmd *)ctx)->so.port = (int)v;
	((struct cmd *)ctx)->port_set = 1;
	return 0;
}
INT_SETTER(set_ctx, o.n_ctx, 16, 1 << 20, "--ctx")
INT_SETTER(set_parallel, o.parallel, 1, GL_MAX_BATCH_SEQS, "--parallel")
INT_SETTER(set_mbt, o.max_batch_tokens, 1, 65536, "--max-batch-tokens")
INT_SETTER(set_n, ntok, 1, 1 << 20, "-n")

static int set_timeout(void *ctx, const char *arg, gp_error_t *err)
{
	long v;
	if (set_long(arg, 1, 3600, "--stage-timeout", &v, err) < 0)
		return -1;
	((struct cmd *)ctx)->o.timeout_ms = (int)v * 1000;
	return 0;
}

static int set_host(void *ctx, const char *arg, gp_error_t *err)
{
	(void)err;
	((struct cmd *)ctx)->so.host = arg;
	return 0;
}

static int set_backend(void *ctx, const char *arg, gp_error_t *err)
{
	static const char *const ok[] = {"auto", "cpu", "cuda", "hip"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(arg, ok[i]))
			return ((struct cmd *)ctx)->o.backend = ok[i], 0;
	return errno = EINVAL, gp_errprintf(err, "--backend '%s': auto, cpu, cuda or hip", arg);
}

static int set_chat(void *ctx, const char *arg, gp_error_t *err)
{
	gl_chat_t c;
	if (strcmp(arg, "auto") && gl_chat_parse(arg, &c) < 0)
		return errno = EINVAL,
		       gp_errprintf(
			   err, "--chat-template '%s': auto, llama3, chatml, mistral, none", arg);
	((struct cmd *)ctx)->chat = arg;
	return 0;
}

static int set_name(void *ctx, const char *arg, gp_error_t *err)
{
	(void)err;
	((struct cmd *)ctx)->so.model_id = arg;
	return 0;
}

static int set_keys(void *ctx, const char *arg, gp_error_t *err)
{
	(void)err;
	((struct cmd *)ctx)->so.api_key_file = arg;
	return 0;
}

static int set_wire(void *ctx, const char *arg, gp_error_t *err)
{
	struct cmd *c = ctx;
	if (strcmp(arg, "f32") && strcmp(arg, "f16"))
		return errno = EINVAL, gp_errprintf(err, "--wire '%s': f32 or f16", arg);
	c->o.wire = strcmp(arg, "f16") ? GL_WIRE_F32 : GL_WIRE_F16;
	return 0;
}

static int set_kv(void *ctx, const char *arg, gp_error_t *err)
{
	if (strcmp(arg, "f32") && strcmp(arg, "f16"))
		return errno = EINVAL, gp_errprintf(err, "--kv '%s': f32 or f16", arg);
	((struct cmd *)ctx)->o.kv_f16 = !strcmp(arg, "f16");
	return 0;
}

static int set_prompt(void *ctx, const char *arg, gp_error_t *err)
{
	(void)err;
	((struct cmd *)ctx)->prompt = arg;
	return 0;
}

static int set_temp(void *ctx, const char *arg, gp_error_t *err)
{
	char *end;
	double t = strtod(arg, &end);
	if (*end || !(t >= 0 && t <= 2))
		return errno = EINVAL, gp_errprintf(err, "--temp '%s': 0 to 2", arg);
	((struct cmd *)ctx)->temp = (float)t;
	return 0;
}

static int set_seed(void *ctx, const char *arg, gp_error_t *err)
{
	char *end;
	long long s = strtoll(arg, &end, 10);
	if (*end || !*arg)
		return errno = EINVAL, gp_errprintf(err, "--seed '%s': an integer", arg);
	((struct cmd *)ctx)->seed = s;
	((struct cmd *)ctx)->seeded = 1;
	return 0;
}

static int set_peer_auth(void *ctx, const char *arg, gp_error_t *err)
{
	if (strcmp(arg, "munge") && strcmp(arg, "none"))
		return errno = EINVAL, gp_errprintf(err, "--peer-auth '%s': munge or none", arg);
	((struct cmd *)ctx)->peer_auth = arg;
	return 0;
}

static int set_help(void *ctx, const char *arg, gp_error_t *err)
{
	(void)arg, (void)err;
	((struct cmd *)ctx)->help = 1;
	return 0;
}

static const struct gp_opt opts[] = {
    {"port", 0, required_argument, "P", "serve: the HTTP port (default $GPOOL_PORT, else 8080)",
     set_port, 0},
    {"host", 0, required_argument, "ADDR",
     "serve: the address to listen on (0.0.0.0 with "
     "$GPOOL_PORT, else 127.0.0.1)",
     set_host, 0},
    {"backend", 0, required_argument, "B", "auto, cpu, cuda, hip (default auto)", set_backend, 0},
    {"ctx", 'c', required_argument, "N",
     "tokens a request may hold (default: the model's, "
     "at most 4096)",
     set_ctx, 0},
    {"parallel", 0, required_argument, "N", "requests generating at once (default 8)", set_parallel,
     0},
    {"max-batch-tokens", 0, required_argument, "N", "tokens in one batch (default 512)", set_mbt,
     0},
    {"chat-template", 0, required_argument, "T", "auto, llama3, chatml, mistral, none", set_chat,
     0},
    {"name", 0, required_argument, "ID",
     "serve: the model's name in the API (default: the "
     "file's)",
     set_name, 0},
    {"api-key-file", 0, required_argument, "F",
     "serve: accept only 'Authorization: Bearer "
     "KEY' for a key of F",
     set_keys, 0},
    {"wire", 0, required_argument, "T", "activations between ranks: f32 (default) or f16", set_wire,
     0},
    {"kv", 0, required_argument, "T", "the KV cache: f32 (default) or f16", set_kv, 0},
    {"stage-timeout", 0, required_argument, "S",
     "a batch not back from the ranks in S "
     "seconds: they failed (default 60)",
     set_timeout, 0},
    {"peer-auth", 0, required_argument, "A",
     "ranks prove their uid to each other with MUNGE "
     "(munge, the default) or not (none)",
     set_peer_auth, 0},
    {"prompt", 'p', required_argument, "TEXT", "run: the prompt", set_prompt, 0},
    {"n-predict", 'n', required_argument, "N", "run: tokens to generate (default 64)", set_n, 0},
    {"temp", 0, required_argument, "T", "run: temperature (default 0.8; 0 greedy)", set_temp, 0},
    {"seed", 0, required_argument, "S", "run: the sampler's seed", set_seed, 0},
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gllm serve MODEL.gguf [options]\n"
		   "       gllm run MODEL.gguf -p PROMPT [-n N] [--temp T] [--seed S]\n"
		   "       gllm plan MODEL.gguf [options]\n"
		   "In a gpool job of several ranks every rank runs the same command: rank 0 "
		   "serves, the others hold layers.\n");
	gp_opt_usage(opts, GP_NOPTS(opts), f);
}

/* The job's communicator, or NULL for a job of one rank (no rank variables, or a size of 1). */
static int job_comm(gc_comm_t **c, const char *peer_auth)
{
	static const char *const sizes[] = {"GCOMM_SIZE", "GPOOL_SIZE", "WORLD_SIZE", NULL};
	*c = NULL;
	for (int i = 0; sizes[i]; i++) {
		const char *v = getenv(sizes[i]);
		if (v && *v) {
			if (atoi(v) <= 1)
				return 0;
			/* the stages' port takes only this job's ranks: libgcomm checks a MUNGE
			 * credential of the job's user on every connection (docs/llm.md) */
			setenv("GCOMM_AUTH", peer_auth ? peer_auth : "munge", peer_auth != NULL);
			/* in a gpool job the ranks meet through gschedd (MUNGE-authenticated), not
			 * through rank 0's tcp listener, which checks only GCOMM_TOKEN
			 * (docs/comm.md) */
			if (getenv("GPOOL_JOB_ID"))
				setenv("GCOMM_RDV", "gpool", 0);
			gc_error_t e;
			if (!(*c = gc_comm_from_env(&e))) {
				gp_err("joining the job's ranks: %s", e.text);
				return -1;
			}
			return 0;
		}
	}
	return 0;
}

static gl_chat_t chat_of(const struct cmd *c, const gllm_rank_t *r)
{
	gl_chat_t t = GL_CHAT_NONE;
	if (c->chat && strcmp(c->chat, "auto") && gl_chat_parse(c->chat, &t) == 0)
		return t;
	const char *jinja = NULL;
	size_t len;
	if (gl_gguf_get_str(r->g, "tokenizer.chat_template", &jinja, &len) < 0)
		jinja = NULL;
	return gl_chat_detect(jinja);
}

static void run_text(void *arg, const char *text, size_t len, int ntokens)
{
	(void)arg, (void)ntokens;
	fwrite(text, 1, len, stdout);
	fflush(stdout);
}

static void run_done(void *arg, gl_finish_t why, const gl_usage_t *u, const char *error)
{
	int *rc = arg;
	*rc = why == GL_FINISH_ERROR;
	fprintf(stderr,
		"\n[%s: %d prompt tokens, %d generated, first token %.0f ms, %.1f tokens/s]%s%s\n",
		gl_finish_name(why), u->prompt_tokens, u->completion_tokens, u->first_token_ms,
		u->total_ms > u->first_token_ms
		    ? (u->completion_tokens - 1) * 1e3 / (u->total_ms - u->first_token_ms)
		    : 0.0,
		error ? " " : "", error ? error : "");
}

/* gllm run on rank 0: one prompt, its text to stdout as it comes. */
static int run_prompt(const struct cmd *c, gllm_rank_t *r)
{
	gp_error_t err = {{0}};
	gl_engine_opts_t eo = {.max_seqs = r->o.parallel,
			       .max_batch_tokens = r->o.max_batch_tokens,
			       .n_ctx = r->o.n_ctx};
	gl_engine_t *e = gl_engine_create(r->tok, &r->hp, r->ops, r->exec, &eo, &err);
	int32_t *ids = malloc((size_t)r->o.n_ctx * sizeof(int32_t));
	int n = ids ? gl_tok_encode(r->tok, c->prompt, strlen(c->prompt), gl_tok_add_bos(r->tok), 0,
				    ids, r->o.n_ctx)
		    : -1;
	int rc = 1;
	if (!e || n < 1 || n >= r->o.n_ctx) {
		gp_err("%s", !e ? err.text : "the prompt does not fit the context (--ctx)");
		goto out;
	}
	gl_request_t rq = {.prompt = ids,
			   .nprompt = n,
			   .max_tokens = c->ntok,
			   .on_text = run_text,
			   .on_done = run_done,
			   .arg = &rc};
	gl_sample_defaults(&rq.sp);
	rq.sp.temperature = c->temp;
	rq.sp.seed = c->seeded ? (uint64_t)c->seed : (uint64_t)getpid();
	if (gl_engine_submit(e, &rq, &err) < 0) {
		gp_err("%s", err.text);
		goto out;
	}
	fputs(c->prompt, stdout);
	while (gl_engine_open(e) > 0)
		if (gl_engine_run(e, 1000, &err) < 0)
			gp_err("%s", err.text);
out:
	free(ids);
	gl_engine_destroy(&e);
	return rc;
}

/* Rank 0's part of a command; the others serve as stages. */
static int head(const char *verb, struct cmd *c, gllm_rank_t *r)
{
	if (!strcmp(verb, "run"))
		return run_prompt(c, r);
	c->so.chat = chat_of(c, r);
	gp_error_t err = {{0}};
	if (gllm_serve(r, &c->so, &err) < 0) {
		gp_err("%s", err.text);
		return 3;
	}
	return 0;
}

static int go(const char *verb, const char *model, struct cmd *c)
{
	gc_comm_t *comm;
	if (job_comm(&comm, c->peer_auth) < 0)
		return 1;
	c->o.model = model;
	gp_error_t err = {{0}};
	int plan_only = !strcmp(verb, "plan");
	gllm_rank_t *r = gllm_rank_open(comm, &c->o, !plan_only, plan_only ? stdout : stderr, &err);
	int rc = 0;
	if (!r) {
		gp_err("%s", err.text);
		rc = 1;
	} else if (!plan_only && r->rank == 0) {
		rc = head(verb, c, r);
	} else if (!plan_only && gllm_rank_stage(r, &err) < 0) {
		gp_err("%s", err.text);
		rc = 3;
	}
	gllm_rank_close(&r);
	gc_comm_destroy(&comm);
	return rc;
}

int main(int argc, char **argv)
{
	gp_log_init("gllm", GP_LOG_INFO);
	signal(SIGPIPE, SIG_IGN);
	struct cmd c = {.temp = 0.8f, .ntok = 64};
	gllm_opts_default(&c.o);
	c.so.port = 8080;
	gp_error_t err = {{0}};
	char **ops = NULL;
	int nops = 0;
	if (argc < 2 ||
	    (strcmp(argv[1], "serve") && strcmp(argv[1], "run") && strcmp(argv[1], "plan"))) {
		if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))
			return usage(stdout), 0;
		usage(stderr);
		return 2;
	}
	if (gp_opt_parse_mixed(opts, GP_NOPTS(opts), argc - 1, argv + 1, &c, &ops, &nops, &err) <
	    0) {
		fprintf(stderr, "gllm: %s\n", err.text);
		return 2;
	}
	if (c.help) {
		free(ops);
		return usage(stdout), 0;
	}
	if (nops != 1 || (!strcmp(argv[1], "run") && !c.prompt)) {
		fprintf(stderr, "gllm: %s\n",
			nops != 1 ? "one model file, please" : "run needs -p");
		free(ops);
		return 2;
	}
	/* a service replica: the port the agent gave rank 0, reachable by the gateways */
	const char *gp = getenv("GPOOL_PORT");
	long gport;
	if (!c.port_set && gp && *gp && gp_parse_long(gp, 1, 65535, &gport) == 0) {
		c.so.port = (int)gport;
		if (!c.so.host)
			c.so.host = "0.0.0.0";
	}
	int rc = go(argv[1], ops[0], &c);
	free(ops);
	return rc;
}
