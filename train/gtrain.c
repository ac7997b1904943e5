/* gtrain - gpool's own data-parallel trainer: an MLP classifier trained across the ranks of a
 * job (gsub -n N), gradients averaged with libgcomm, on a card (cuda/hip) or a CPU.
 *
 *   gsub -n 3 -N 3 --stage digits.csv.gz -- gtrain --data digits.csv.gz --layers 64,256,256,10
 *
 * Rank and size come from the job (GPOOL_RANK/GPOOL_SIZE, or RANK/WORLD_SIZE); without them
 * gtrain runs alone. See docs/commands/gtrain.md and docs/training.md. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/opt.h"
#include "model/model.h"
#include "train/trainer.h"

typedef struct {
	gt_conf_t c;
	int help;
} cli_t;

static int parse_long(const char *a, long lo, long hi, long *v, const char *what, gp_error_t *err)
{
	char *end;
	errno = 0;
	long x = strtol(a, &end, 10);
	if (errno || end == a || *end || x < lo || x > hi) {
		errno = EINVAL;
		return gp_errprintf(err, "gtrain: invalid %s '%s'", what, a);
	}
	*v = x;
	return 0;
}

static int parse_double(const char *a, double lo, double hi, double *v, const char *what,
			gp_error_t *err)
{
	char *end;
	errno = 0;
	double x = strtod(a, &end);
	if (errno || end == a || *end || !(x >= lo && x <= hi)) {
		errno = EINVAL;
		return gp_errprintf(err, "gtrain: invalid %s '%s'", what, a);
	}
	*v = x;
	return 0;
}

#define C(ctx) (&((cli_t *)(ctx))->c)

static int set_layers(void *ctx, const char *a, gp_error_t *err)
{
	gt_conf_t *c = C(ctx);
	char buf[512], *save, *tok;
	int n = 0;
	snprintf(buf, sizeof(buf), "%s", a);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long v;
		if (n == 17 || parse_long(tok, 1, 1 << 20, &v, "layer size", err) < 0)
			return n == 17 ? (errno = EINVAL,
					  gp_errprintf(err,
						       "gtrain: at most 17 layer sizes in '%s'", a))
				       : -1;
		c->sizes[n++] = (int)v;
	}
	if (n < 2) {
		errno = EINVAL;
		return gp_errprintf(
		    err, "gtrain: invalid layers '%s': at least an input and an output size", a);
	}
	c->nsizes = n;
	return 0;
}

static int set_scores(void *ctx, const char *a, gp_error_t *err)
{
	gt_conf_t *c = C(ctx);
	char buf[4096], *save, *tok;
	int n = 0;
	snprintf(buf, sizeof(buf), "%s", a);
	for (tok = strtok_r(buf, ",", &save); tok && n < GT_MAX_RANKS;
	     tok = strtok_r(NULL, ",", &save))
		if (parse_double(tok, 1e-6, 1e12, &c->scores[n++], "score", err) < 0)
			return -1;
	return 0;
}

#define LONG_OPT(fn, field, lo, hi, what)                                                          \
	static int fn(void *ctx, const char *a, gp_error_t *err)                                   \
	{                                                                                          \
		long v;                                                                            \
		if (parse_long(a, lo, hi, &v, what, err) < 0)                                      \
			return -1;                                                                 \
		C(ctx)->field = v;                                                                 \
		return 0;                                                                          \
	}
#define DBL_OPT(fn, field, lo, hi, what)                                                           \
	static int fn(void *ctx, const char *a, gp_error_t *err)                                   \
	{                                                                                          \
		double v;                                                                          \
		if (parse_double(a, lo, hi, &v, what, err) < 0)                                    \
			return -1;                                                                 \
		C(ctx)->field = v;                                                                 \
		return 0;                                                                          \
	}
#define STR_OPT(fn, field)                                                                         \
	static int fn(void *ctx, const char *a, gp_error_t *err)                                   \
	{                                                                                          \
		(void)err;                                                                         \
		C(ctx)->field = a;                                                                 \
		return 0;                                                                          \
	}

LONG_OPT(set_epochs, epochs, 1, 1000000, "epoch count")
LONG_OPT(set_batch, global_batch, 1, 1 << 24, "global batch")
LONG_OPT(set_rebalance, rebalance_every, 0, 1000, "re-balance interval")
LONG_OPT(set_diag, diag_every, 0, 1 << 30, "diagnostics interval")
LONG_OPT(set_ckpt_every, ckpt_every, 0, 1 << 30, "checkpoint interval")
LONG_OPT(set_stop, stop_after, 0, 1l << 40, "step")
LONG_OPT(set_scale_window, scale_window, 1, 1 << 30, "loss-scale window")
LONG_OPT(set_blas, blas_threads, 1, 1024, "thread count")
DBL_OPT(set_test_frac, test_frac, 0, 0.99, "test fraction")
DBL_OPT(set_lr, opt.lr, 0, 1e3, "learning rate")
DBL_OPT(set_mom, opt.momentum, 0, 1, "momentum")
DBL_OPT(set_wd, opt.weight_decay, 0, 1e3, "weight decay")
DBL_OPT(set_loss_scale, loss_scale, 1.0 / 65536, 1e30, "loss scale")
DBL_OPT(set_input_scale, input_scale, 0, 1e30, "input scale")
DBL_OPT(set_slow, slow_factor, 1, 1e9, "slow factor")
STR_OPT(set_data, data)
STR_OPT(set_test_data, test_data)
STR_OPT(set_backend, backend)
STR_OPT(set_ckpt, ckpt)
STR_OPT(set_ckpt_cmd, ckpt_cmd)
STR_OPT(set_resume, resume)
STR_OPT(set_resume_cmd, resume_cmd)
STR_OPT(set_model, model)
STR_OPT(set_model_cmd, model_cmd)

static int set_model_dtype(void *ctx, const char *a, gp_error_t *err)
{
	gm_dtype_t t;
	if (gm_dtype_parse(a, &t) < 0)
		return gp_errprintf(err, "gtrain: invalid model type '%s' (f32, f16, bf16)", a);
	C(ctx)->model_dtype = (int)t;
	return 0;
}

static int set_seed(void *ctx, const char *a, gp_error_t *err)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(a, &end, 0);
	if (errno || end == a || *end) {
		errno = EINVAL;
		return gp_errprintf(err, "gtrain: invalid seed '%s'", a);
	}
	C(ctx)->seed = v;
	return 0;
}

static int set_optimizer(void *ctx, const char *a, gp_error_t *err)
{
	if (!strcmp(a, "adamw"))
		C(ctx)->opt.kind = GT_ADAMW;
	else if (!strcmp(a, "sgd"))
		C(ctx)->opt.kind = GT_SGD;
	else
		return errno = EINVAL,
		       gp_errprintf(err, "gtrain: invalid optimizer '%s' (sgd, adamw)", a);
	return 0;
}

static int set_dtype(void *ctx, const char *a, gp_error_t *err)
{
	static const struct {
		const char *name;
		gk_dtype_t t;
		gk_math_t math;
	} tab[] = {{"f32", GK_F32, GK_MATH_DEFAULT},
		   {"tf32", GK_F32, GK_MATH_TF32},
		   {"f16", GK_F16, GK_MATH_DEFAULT},
		   {"bf16", GK_BF16, GK_MATH_DEFAULT}};
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (!strcmp(a, tab[i].name)) {
			C(ctx)->compute = tab[i].t;
			C(ctx)->math = tab[i].math;
			return 0;
		}
	errno = EINVAL;
	return gp_errprintf(err, "gtrain: invalid precision '%s' (f32, tf32, f16, bf16)", a);
}

static int set_bucket(void *ctx, const char *a, gp_error_t *err)
{
	long v;
	if (parse_long(a, 1, 1 << 20, &v, "bucket size (KiB)", err) < 0)
		return -1;
	C(ctx)->bucket_bytes = (size_t)v << 10;
	return 0;
}

static int set_no_overlap(void *ctx, const char *a, gp_error_t *err)
{
	(void)a, (void)err;
	C(ctx)->overlap = 0;
	return 0;
}

/* gp_opt_onoff with gtrain's name ahead of its message, as gtrain's other errors read */
static int onoff(int *out, const char *a, const char *what, gp_error_t *err)
{
	int rc = gp_opt_onoff(out, a, what, err);
	if (rc == 0 || !err)
		return rc;
	char text[sizeof(err->text)];
	snprintf(text, sizeof(text), "%s", err->text);
	errno = EINVAL;
	return gp_errprintf(err, "gtrain: %s", text);
}

static int set_overlap(void *ctx, const char *a, gp_error_t *err)
{
	return onoff(&C(ctx)->overlap, a, "overlap", err);
}

static int set_overlap_optimizer(void *ctx, const char *a, gp_error_t *err)
{
	return onoff(&C(ctx)->overlap_optimizer, a, "optimizer overlap", err);
}

static int set_fresh(void *ctx, const char *a, gp_error_t *err)
{
	(void)a, (void)err;
	C(ctx)->fresh = 1;
	return 0;
}

static int set_quiet(void *ctx, const char *a, gp_error_t *err)
{
	(void)a, (void)err;
	C(ctx)->quiet = 1;
	return 0;
}

static int set_throttle(void *ctx, const char *a, gp_error_t *err)
{
	char buf[64], *colon;
	long r;
	double f;
	snprintf(buf, sizeof(buf), "%s", a);
	if (!(colon = strchr(buf, ':')))
		return errno = EINVAL,
		       gp_errprintf(err, "gtrain: invalid throttle '%s' (RANK:MS)", a);
	*colon = '\0';
	if (parse_long(buf, 0, GT_MAX_RANKS - 1, &r, "throttle rank", err) < 0 ||
	    parse_double(colon + 1, 0, 1000, &f, "throttle time", err) < 0)
		return -1;
	C(ctx)->throttle_rank = (int)r;
	C(ctx)->throttle_ms_per_row = f;
	return 0;
}

static int set_help(void *ctx, const char *a, gp_error_t *err)
{
	(void)a, (void)err;
	((cli_t *)ctx)->help = 1;
	return 0;
}

static const struct gp_opt opts[] = {
    {"data", 'd', required_argument, "FILE",
     "training data: CSV (gzip or plain; features then label) or IMAGES,LABELS (MNIST IDX)",
     set_data, 0},
    {"test-data", 0, required_argument, "FILE", "a separate test set (default: a split of --data)",
     set_test_data, 0},
    {"test-fraction", 0, required_argument, "F", "share of --data held out for testing (0.2)",
     set_test_frac, 0},
    {"layers", 'l', required_argument, "N,N,...", "layer sizes, input first (64,256,256,10)",
     set_layers, 0},
    {"epochs", 'e', required_argument, "N", "epochs (20)", set_epochs, 0},
    {"batch", 'b', required_argument, "N", "global batch, split over the ranks (192)", set_batch,
     0},
    {"optimizer", 0, required_argument, "NAME", "adamw (default) or sgd (with momentum)",
     set_optimizer, 0},
    {"lr", 0, required_argument, "X", "learning rate (2e-3)", set_lr, 0},
    {"momentum", 0, required_argument, "X", "SGD momentum (0.9)", set_mom, 0},
    {"weight-decay", 0, required_argument, "X", "weight decay (0)", set_wd, 0},
    {"seed", 0, required_argument, "N", "seed of the split, the order and the weights (1)",
     set_seed, 0},
    {"precision", 'p', required_argument, "T",
     "compute type f32 (default), tf32, f16 or bf16 (f32 master weights; loss scaling for f16)",
     set_dtype, 0},
    {"loss-scale", 0, required_argument, "X", "initial loss scale for f16/bf16 (65536)",
     set_loss_scale, 0},
    {"scale-window", 0, required_argument, "N", "good steps before the loss scale doubles (200)",
     set_scale_window, 0},
    {"input-scale", 0, required_argument, "X",
     "multiply raw inputs by X (default 1/largest |value| of the training data)", set_input_scale,
     0},
    {"backend", 0, required_argument, "NAME", "kernels backend: cpu (default), cuda, hip, auto",
     set_backend, 0},
    {"blas-threads", 0, required_argument, "N", "OpenBLAS threads a rank (1)", set_blas, 0},
    {"bucket-kb", 0, required_argument, "N", "gradient bucket size, KiB (64)", set_bucket, 0},
    {"overlap", 0, required_argument, "MODE",
     "allreduce buckets during backward: auto (on for a card, off on cpu), on, off", set_overlap,
     0},
    {"no-overlap", 0, no_argument, NULL, "the same as --overlap off", set_no_overlap, 0},
    {"overlap-optimizer", 0, required_argument, "MODE",
     "AdamW layer by layer beside backward on one rank (not f16): auto (off), on, off",
     set_overlap_optimizer, 0},
    {"rebalance", 0, required_argument, "K",
     "re-balance shares from measured speed every K steps (10; 0 never)", set_rebalance, 0},
    {"scores", 0, required_argument, "S,S,...", "initial share weights by rank (default equal)",
     set_scores, 0},
    {"slow-factor", 0, required_argument, "X",
     "name a rank X times slower a row than the median (2)", set_slow, 0},
    {"diag", 0, required_argument, "N", "per-step diagnostics every N steps (0: per epoch)",
     set_diag, 0},
    {"ckpt", 0, required_argument, "FILE",
     "checkpoint file (rank 0); resumed from when present at start", set_ckpt, 0},
    {"ckpt-every", 0, required_argument, "N", "steps between checkpoints (50)", set_ckpt_every, 0},
    {"ckpt-cmd", 0, required_argument, "CMD",
     "run after each checkpoint (sh -c; $GTRAIN_CKPT, $GTRAIN_STEP)", set_ckpt_cmd, 0},
    {"resume", 0, required_argument, "FILE", "resume from this checkpoint (must exist)", set_resume,
     0},
    {"resume-cmd", 0, required_argument, "CMD",
     "run before start to fetch the checkpoint into $GTRAIN_CKPT (sh -c)", set_resume_cmd, 0},
    {"fresh", 0, no_argument, NULL, "ignore an existing --ckpt file", set_fresh, 0},
    {"model", 'o', required_argument, "FILE", "write the trained model here (rank 0)", set_model,
     0},
    {"model-dtype", 0, required_argument, "f32|f16|bf16",
     "the model file's storage type (f32); gserve serves f16/bf16 ones in that type on a card",
     set_model_dtype, 0},
    {"model-cmd", 0, required_argument, "CMD", "run after writing the model ($GTRAIN_MODEL)",
     set_model_cmd, 0},
    {"stop-after", 0, required_argument, "STEP", "stop after this global step (tests)", set_stop,
     GP_OPT_HIDDEN},
    {"throttle", 0, required_argument, "RANK:MS",
     "make RANK slower: it sleeps MS ms a row of its share after forward (tests, demos)",
     set_throttle, 0},
    {"quiet", 'q', no_argument, NULL, "no progress lines", set_quiet, 0},
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

static int env_size(void)
{
	const char *v = getenv("GPOOL_SIZE");
	if (!v)
		v = getenv("WORLD_SIZE");
	if (!v)
		v = getenv("OMPI_COMM_WORLD_SIZE");
	return v ? atoi(v) : 0;
}

int main(int argc, char **argv)
{
	cli_t cli;
	gp_error_t err = {{0}};
	char **ops = NULL;
	int nops = 0;
	gt_result_t res;

	memset(&cli, 0, sizeof(cli));
	gt_conf_defaults(&cli.c);
	if (gp_opt_parse_mixed(opts, GP_NOPTS(opts), argc, argv, &cli, &ops, &nops, &err) < 0) {
		fprintf(stderr, "%s\n", err.text);
		return 2;
	}
	if (cli.help) {
		printf("usage: gtrain --data FILE [OPTIONS]\n");
		gp_opt_usage(opts, GP_NOPTS(opts), stdout);
		free(ops);
		return 0;
	}
	if (nops > 0) {
		fprintf(stderr, "gtrain: unexpected argument '%s'\n", ops[0]);
		free(ops);
		return 2;
	}
	free(ops);
	if (!cli.c.data) {
		fprintf(stderr, "gtrain: no training data (--data FILE; train/fetch-digits.sh "
				"fetches the digits set)\n");
		return 2;
	}
	gc_comm_t *comm = NULL;
	if (env_size() > 1) {
		gc_error_t ge;
		if (!getenv("GCOMM_BACKEND"))
			setenv("GCOMM_BACKEND", cli.c.backend, 1);
		if (!(comm = gc_comm_from_env(&ge))) {
			fprintf(stderr, "gtrain: cannot join the job's ranks: %s\n", ge.text);
			return 1;
		}
	}
	int rc = gt_train(&cli.c, comm, &res, &err);
	if (rc < 0)
		fprintf(stderr, "gtrain: rank %d: %s\n", comm ? gc_rank(comm) : 0, err.text);
	gc_comm_destroy(&comm);
	return rc < 0 ? 1 : 0;
}
