/* test_gtrain.c - gtrain's unit tests: the gradient against finite differences, the model file
 * and checkpoint formats (round trip, damage), loss scaling with a forced overflow, the share
 * split, the data readers, and the trainer itself on 1..4 forked ranks over loopback: the same
 * model for every rank count at a fixed global batch, with speed-weighted shares, and after a
 * resume on a different rank count. Data: a synthetic, seeded 4-class set written here. */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "model/file.h"
#include "model/infer.h"
#include "train/ckpt.h"
#include "train/data.h"
#include "train/mlp.h"
#include "train/optim.h"
#include "train/shares.h"
#include "train/trainer.h"

static char dir[256];
static char csv[300]; /* the synthetic training set */

static uint64_t rng_state = 42;
static double urand(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* 4 classes of 12 features: a per-class mean plus noise, integer-ish values 0..16 */
static void write_synthetic(const char *path, int rows)
{
	gzFile f = gzopen(path, "wb");
	assert_non_null(f);
	double mean[4][12];
	for (int c = 0; c < 4; c++)
		for (int j = 0; j < 12; j++)
			mean[c][j] = 16 * urand();
	for (int r = 0; r < rows; r++) {
		int c = r % 4;
		for (int j = 0; j < 12; j++) {
			double v = mean[c][j] + 6 * (urand() - 0.5);
			gzprintf(f, "%g,", round(v < 0 ? 0 : v > 16 ? 16 : v));
		}
		gzprintf(f, "%d\n", c);
	}
	gzclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_gtrain.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(csv, sizeof(csv), "%s/syn.csv.gz", dir);
	write_synthetic(csv, 800);
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- gradient by finite differences ---- */

static double total_loss(gt_mlp_t *m, const float *x, const int32_t *y, size_t rows)
{
	float loss[8];
	gp_error_t err;
	assert_int_equal(gt_mlp_forward(m, x, y, rows, &err), 0);
	assert_int_equal(gt_mlp_outputs(m, loss, NULL, &err), 0);
	double s = 0;
	for (size_t r = 0; r < rows; r++)
		s += loss[r];
	return s;
}

static void gradient_check(void **state)
{
	(void)state;
	const int sizes[] = {5, 7, 6, 3};
	const size_t rows = 6;
	gk_error_t ge;
	gp_error_t err;
	gk_backend_t *b = gk_backend_open("cpu", &ge);
	assert_non_null(b);
	gt_mlp_t *m = gt_mlp_create(b, sizes, 4, rows, GK_F32, &err);
	assert_non_null(m);
	assert_int_equal(gt_mlp_init(m, 7, &err), 0);
	size_t n = gt_mlp_nparams(m);
	assert_int_equal(n, 5 * 7 + 7 + 7 * 6 + 6 + 6 * 3 + 3);
	float *w = malloc(n * sizeof(float)), *g = malloc(n * sizeof(float));
	float x[6 * 5];
	int32_t y[6];
	for (size_t i = 0; i < rows * 5; i++)
		x[i] = (float)(2 * urand() - 1);
	for (size_t r = 0; r < rows; r++)
		y[r] = (int32_t)(r % 3);
	/* biases away from zero so that no ReLU sits on its kink */
	assert_int_equal(gt_mlp_get_params(m, w, &err), 0);
	for (int l = 0; l < 3; l++) {
		size_t off = gt_mlp_layer_offset(m, l) + (size_t)sizes[l] * sizes[l + 1];
		for (int o = 0; o < sizes[l + 1]; o++)
			w[off + o] = (float)(0.1 + 0.2 * urand());
	}
	assert_int_equal(gt_mlp_set_params(m, w, &err), 0);
	total_loss(m, x, y, rows);
	assert_int_equal(gt_mlp_backward(m, 1.0f, NULL, NULL, &err), 0);
	memcpy(g, gt_mlp_grads_dev(m), n * sizeof(float)); /* cpu: device memory is host memory */
	double num = 0, den = 0, worst = 0;
	const float eps = 1e-3f;
	for (size_t i = 0; i < n; i++) {
		float keep = w[i];
		w[i] = keep + eps;
		assert_int_equal(gt_mlp_set_params(m, w, &err), 0);
		double lp = total_loss(m, x, y, rows);
		w[i] = keep - eps;
		assert_int_equal(gt_mlp_set_params(m, w, &err), 0);
		double lm = total_loss(m, x, y, rows);
		w[i] = keep;
		double fd = (lp - lm) / (2.0 * eps);
		num += (fd - g[i]) * (fd - g[i]);
		den += fd * fd;
		worst = fmax(worst, fabs(fd - g[i]));
		if (getenv("GT_DEBUG") && fabs(fd - g[i]) > 1e-3)
			printf("  param %zu: fd %.6f analytic %.6f\n", i, fd, (double)g[i]);
	}
	double rel = sqrt(num / den);
	printf("gradient check: %zu parameters, relative error %.2e, worst %.2e\n", n, rel, worst);
	assert_true(den > 0);
	assert_true(rel < 1e-3);
	free(w);
	free(g);
	gt_mlp_destroy(&m);
	assert_null(m);
	gk_backend_close(&b);
}

/* ---- checkpoint ---- */

static void ckpt_roundtrip(void **state)
{
	(void)state;
	char path[320];
	gp_error_t err;
	gm_model_t *m = gm_model_create((int[]){3, 4, 2}, 3, 0.0625f, &err);
	assert_non_null(m);
	size_t n = gm_model_nparams(m);
	assert_int_equal(n, 3 * 4 + 4 + 4 * 2 + 2);
	for (size_t i = 0; i < n; i++)
		gm_model_params(m)[i] = (float)i - 7.25f;
	FILE *f;
	/* checkpoint round trip and a flipped bit */
	gt_ckpt_t c = {.model = m,
		       .step = 42,
		       .opt_steps = 40,
		       .global_batch = 96,
		       .seed = 5,
		       .loss_scale = 1024,
		       .scale_good = 3,
		       .skipped = 2,
		       .nstate = 2};
	snprintf(c.optimizer, sizeof(c.optimizer), "adamw");
	snprintf(c.dtype, sizeof(c.dtype), "f16");
	for (int i = 0; i < 2; i++) {
		c.state[i] = malloc(n * sizeof(float));
		for (size_t j = 0; j < n; j++)
			c.state[i][j] = (float)(i * 1000 + j) * 0.5f;
	}
	snprintf(path, sizeof(path), "%s/c.ckpt", dir);
	assert_int_equal(gt_ckpt_write(path, &c, &err), 0);
	gt_ckpt_t k;
	assert_int_equal(gt_ckpt_read(path, &k, &err), 0);
	assert_int_equal(k.step, 42);
	assert_int_equal(k.opt_steps, 40);
	assert_int_equal(k.global_batch, 96);
	assert_true(k.loss_scale == 1024);
	assert_int_equal(k.nstate, 2);
	assert_string_equal(k.optimizer, "adamw");
	assert_memory_equal(k.state[1], c.state[1], n * sizeof(float));
	assert_string_equal(gm_model_shape(k.model), "3-4-2");
	assert_true(gm_model_input_scale(k.model) == 0.0625f);
	assert_memory_equal(gm_model_data(k.model), gm_model_data(m), n * sizeof(float));
	gt_ckpt_free(&k);
	f = fopen(path, "r+b");
	assert_non_null(f);
	fseek(f, -20, SEEK_END);
	int ch = fgetc(f);
	fseek(f, -20, SEEK_END);
	fputc(ch ^ 0x10, f);
	fclose(f);
	assert_int_equal(gt_ckpt_read(path, &k, &err), -1);
	assert_non_null(strstr(err.text, "checksum"));
	assert_null(k.model);
	for (int i = 0; i < 2; i++)
		free(c.state[i]);
	gm_model_destroy(&m);
}

/* ---- loss scaling ---- */

static void scaler_rules(void **state)
{
	(void)state;
	gt_scaler_t s;
	gt_scaler_init(&s, 65536, 3, 1);
	assert_int_equal(gt_scaler_update(&s, 1), 0);
	assert_true(s.scale == 32768);
	assert_int_equal(s.skipped, 1);
	for (int i = 0; i < 2; i++)
		assert_int_equal(gt_scaler_update(&s, 0), 1);
	assert_true(s.scale == 32768);
	assert_int_equal(gt_scaler_update(&s, 0), 1);
	assert_true(s.scale == 65536); /* 3 good steps: doubled */
	gt_scaler_init(&s, 1, 3, 0);   /* f32: static, still skips a bad step */
	assert_int_equal(gt_scaler_update(&s, 1), 0);
	assert_true(s.scale == 1);
}

static gt_conf_t base_conf(void)
{
	gt_conf_t c;
	gt_conf_defaults(&c);
	c.data = csv;
	c.sizes[0] = 12, c.sizes[1] = 32, c.sizes[2] = 16, c.sizes[3] = 4;
	c.nsizes = 4;
	c.global_batch = 48;
	c.epochs = 4;
	c.opt.lr = 3e-3f;
	c.quiet = 1;
	c.ckpt_every = 0;
	c.rebalance_every = 0;
	return c;
}

/* A forced overflow: f16 with a loss scale of 1e9 overflows the first steps' gradients; they
 * are skipped (the weights stay as they were) and the scale falls until steps go through. */
static void overflow_skips(void **state)
{
	(void)state;
	gp_error_t err;
	gt_result_t res;
	char m0[320], m1[320];
	gt_conf_t c = base_conf();
	c.compute = GK_F16;
	c.loss_scale = 1e9;
	c.stop_after = 1;
	snprintf(m1, sizeof(m1), "%s/after1.gpm", dir);
	c.model = m1;
	assert_int_equal(gt_train(&c, NULL, &res, &err), 0);
	assert_int_equal(res.skipped, 1);
	assert_true(res.final_scale == 5e8);
	/* the model after the skipped step is the initial one: 0 epochs of training would give
	 * it too (stop before any step is not possible, so compare with a zero-lr step) */
	gt_conf_t z = base_conf();
	z.opt.lr = 0;
	z.stop_after = 1;
	snprintf(m0, sizeof(m0), "%s/init.gpm", dir);
	z.model = m0;
	assert_int_equal(gt_train(&z, NULL, &res, &err), 0);
	gm_model_t *a = gm_model_read(m0, &err), *b = gm_model_read(m1, &err);
	assert_non_null(a);
	assert_non_null(b);
	assert_memory_equal(gm_model_data(a), gm_model_data(b),
			    gm_model_nparams(a) * sizeof(float));
	gm_model_destroy(&a);
	gm_model_destroy(&b);
	/* the whole run: skips until the scale fits, then learns */
	c.stop_after = 0;
	c.model = NULL;
	c.epochs = 8;
	assert_int_equal(gt_train(&c, NULL, &res, &err), 0);
	printf("f16, loss scale 1e9 at start: %ld skipped, final scale %g, test %.1f%%\n",
	       res.skipped, res.final_scale, 100 * res.test_acc);
	assert_true(res.skipped >= 10 && res.skipped <= 20); /* 1e9 / 2^k < 65504 * 48 / ... */
	assert_true(res.final_scale < 1e6);
	assert_true(res.test_acc > 0.9);
	/* bf16 does not overflow at that scale (f32's range) */
	c.compute = GK_BF16;
	assert_int_equal(gt_train(&c, NULL, &res, &err), 0);
	assert_int_equal(res.skipped, 0);
	assert_true(res.test_acc > 0.9);
}

/* ---- shares ---- */

static void share_split(void **state)
{
	(void)state;
	int count[4];
	double eq[4] = {1, 1, 1, 1}, w[4] = {1, 2, 3, 0};
	gt_shares_split(192, 4, eq, count);
	for (int r = 0; r < 4; r++)
		assert_int_equal(count[r], 48);
	gt_shares_split(10, 3, eq, count);
	assert_int_equal(count[0] + count[1] + count[2], 10);
	assert_int_equal(count[0], 4); /* the remainder goes to the lower rank */
	gt_shares_split(100, 4, w, count);
	assert_int_equal(count[0] + count[1] + count[2] + count[3], 100);
	assert_int_equal(count[3], 1); /* at least one row */
	assert_true(count[2] > count[1] && count[1] > count[0]);
	/* rebalance toward speed: rank 1 twice as fast a row */
	double ww[2] = {1, 1}, rows[2] = {100, 100}, ms[2] = {20, 10};
	gt_shares_rebalance(2, ww, rows, ms);
	assert_true(ww[1] > ww[0]);
	double ratio;
	double rows3[3] = {50, 50, 50}, ms3[3] = {10, 11, 40};
	assert_int_equal(gt_shares_slow_rank(3, rows3, ms3, 2.0, &ratio), 2);
	assert_true(ratio > 3.5 && ratio < 3.9);
	ms3[2] = 15;
	assert_int_equal(gt_shares_slow_rank(3, rows3, ms3, 2.0, NULL), -1);
}

/* ---- the trained model, served ---- */

/* What gtrain writes is what gserve answers with: the model file of a run, loaded by the model
 * library and run as gserve runs it (model/infer.h, the kernels' cpu backend), classifies the
 * run's test rows as the run's own evaluation did (one row of slack for a near tie that the
 * softmax rounds to equal probabilities). */
static void trained_model_serves(void **state)
{
	(void)state;
	gp_error_t err;
	gk_error_t ge;
	gt_result_t res;
	char path[320];
	gt_conf_t c = base_conf();
	snprintf(path, sizeof(path), "%s/served.gpm", dir);
	c.model = path;
	assert_int_equal(gt_train(&c, NULL, &res, &err), 0);
	gt_data_t all, tr, te;
	assert_int_equal(gt_data_load(csv, &all, &err), 0);
	assert_int_equal(gt_data_split(&all, c.test_frac, c.seed, &tr, &te, &err), 0);
	assert_int_equal(te.n, res.test_rows);
	gm_model_t *m = gm_model_read(path, &err);
	assert_non_null(m);
	assert_string_equal(gm_model_shape(m), "12-32-16-4");
	gk_backend_t *b = gk_backend_open("cpu", &ge);
	assert_non_null(b);
	gm_infer_t *d = gm_infer_create(b, m, te.n, &err);
	assert_non_null(d);
	float *p = malloc(te.n * 4 * sizeof(float));
	assert_non_null(p);
	assert_int_equal(gm_infer_run(d, te.x, te.n, p), 0);
	size_t correct = 0;
	for (size_t r = 0; r < te.n; r++) {
		int best = 0;
		for (int k = 1; k < 4; k++)
			if (p[r * 4 + (size_t)k] > p[r * 4 + (size_t)best])
				best = k;
		correct += best == te.y[r];
	}
	printf("served: %zu of %zu test rows right, the run counted %zu\n", correct, te.n,
	       res.test_correct);
	assert_true(correct + 1 >= res.test_correct && correct <= res.test_correct + 1);
	assert_true(correct > te.n * 9 / 10);
	free(p);
	gm_infer_destroy(&d);
	gk_backend_close(&b);
	gm_model_destroy(&m);
	gt_data_free(&all);
	gt_data_free(&tr);
	gt_data_free(&te);
	unlink(path);
}

/* ---- data ---- */

static void data_readers(void **state)
{
	(void)state;
	gp_error_t err;
	gt_data_t d, tr, te;
	char path[320];
	assert_int_equal(gt_data_load(csv, &d, &err), 0);
	assert_int_equal(d.n, 800);
	assert_int_equal(d.dim, 12);
	assert_int_equal(d.classes, 4);
	assert_int_equal(gt_data_split(&d, 0.25, 3, &tr, &te, &err), 0);
	assert_int_equal(tr.n, 600);
	assert_int_equal(te.n, 200);
	gt_data_t tr2, te2;
	assert_int_equal(gt_data_split(&d, 0.25, 3, &tr2, &te2, &err), 0);
	assert_memory_equal(te.x, te2.x, te.n * te.dim * sizeof(float)); /* deterministic */
	gt_data_free(&tr), gt_data_free(&te), gt_data_free(&tr2), gt_data_free(&te2);
	gt_data_free(&d);
	/* a bad row is reported with its line */
	snprintf(path, sizeof(path), "%s/bad.csv", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "1,2,0\n1,x,1\n");
	fclose(f);
	assert_int_equal(gt_data_load(path, &d, &err), -1);
	assert_non_null(strstr(err.text, "bad.csv:2: not a number"));
	f = fopen(path, "w");
	fprintf(f, "1,2,0\n1,1\n");
	fclose(f);
	assert_int_equal(gt_data_load(path, &d, &err), -1);
	assert_non_null(strstr(err.text, "2 values, expected 3"));
	assert_int_equal(gt_data_load("/nonexistent/digits.csv.gz", &d, &err), -1);
	assert_non_null(strstr(err.text, "cannot open"));
	/* MNIST IDX: 3 images of 2x2 and their labels */
	char img[320], lab[320];
	snprintf(img, sizeof(img), "%s/i.idx", dir);
	snprintf(lab, sizeof(lab), "%s/l.idx", dir);
	const unsigned char ih[16] = {0, 0, 8, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2};
	const unsigned char lh[8] = {0, 0, 8, 1, 0, 0, 0, 3};
	f = fopen(img, "wb");
	fwrite(ih, 1, 16, f);
	for (int i = 0; i < 12; i++)
		fputc(i * 20, f);
	fclose(f);
	f = fopen(lab, "wb");
	fwrite(lh, 1, 8, f);
	fputc(7, f), fputc(1, f), fputc(9, f);
	fclose(f);
	char spec[700];
	snprintf(spec, sizeof(spec), "%s,%s", img, lab);
	assert_int_equal(gt_data_load(spec, &d, &err), 0);
	assert_int_equal(d.n, 3);
	assert_int_equal(d.dim, 4);
	assert_int_equal(d.classes, 10);
	assert_true(d.x[5] == 100.0f && d.y[2] == 9);
	assert_true(d.max_abs == 220.0f);
	gt_data_free(&d);
	f = fopen(lab, "wb");
	fwrite(lh, 1, 8, f);
	fputc(7, f);
	fclose(f);
	assert_int_equal(gt_data_load(spec, &d, &err), -1); /* labels truncated */
}

/* ---- the trainer on forked ranks over loopback ---- */

static int free_port(void)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
	close(s);
	return ntohs(a.sin_port);
}

/* rank 0's overlap setting when not -2 (the others keep C's): a card rank beside cpu ranks
 * wants buckets during backward where they do not */
static int rank0_overlap = -2;

/* run C on N forked ranks; rank 0's result through a pipe */
static int run_ranks(int n, const gt_conf_t *c, gt_result_t *res)
{
	char rdv[64];
	int fd[2], port = free_port();
	pid_t pids[8];
	snprintf(rdv, sizeof(rdv), "tcp://127.0.0.1:%d", port);
	assert_int_equal(pipe(fd), 0);
	fflush(stdout);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		assert_true(pids[r] >= 0);
		if (pids[r] == 0) {
			gc_error_t ge;
			gp_error_t err;
			gt_result_t mine;
			gc_params_t p = {.rank = r,
					 .size = n,
					 .rdv = rdv,
					 .transport = "tcp",
					 .backend = "cpu",
					 .timeout_ms = 20000};
			gc_comm_t *comm = n > 1 ? gc_comm_create(&p, &ge) : NULL;
			if (n > 1 && !comm) {
				fprintf(stderr, "rank %d: %s\n", r, ge.text);
				_exit(1);
			}
			gt_conf_t cr = *c;
			if (r == 0 && rank0_overlap != -2)
				cr.overlap = rank0_overlap;
			int rc = gt_train(&cr, comm, &mine, &err);
			if (rc < 0)
				fprintf(stderr, "rank %d: %s\n", r, err.text);
			if (r == 0 && write(fd[1], &mine, sizeof(mine)) != sizeof(mine))
				rc = -1;
			gc_comm_destroy(&comm);
			_exit(rc < 0 ? 1 : 0);
		}
	}
	close(fd[1]);
	int ok = 1;
	for (int r = 0; r < n; r++) {
		int st;
		waitpid(pids[r], &st, 0);
		ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	ok = ok && read(fd[0], res, sizeof(*res)) == sizeof(*res);
	close(fd[0]);
	return ok ? 0 : -1;
}

/* largest |a - b| over the largest |a| */
static double model_diff(const char *pa, const char *pb)
{
	gp_error_t err;
	gm_model_t *a = gm_model_read(pa, &err), *b = gm_model_read(pb, &err);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(gm_model_nparams(a), gm_model_nparams(b));
	const float *pa_ = gm_model_data(a), *pb_ = gm_model_data(b);
	double d = 0, m = 0;
	for (size_t i = 0; i < gm_model_nparams(a); i++) {
		d = fmax(d, fabs((double)pa_[i] - pb_[i]));
		m = fmax(m, fabs((double)pa_[i]));
	}
	gm_model_destroy(&a);
	gm_model_destroy(&b);
	return d / m;
}

static void rank_count_invariance(void **state)
{
	(void)state;
	gt_result_t res, ref;
	char m1[320], mn[320];
	gt_conf_t c = base_conf();
	c.epochs = 6;
	snprintf(m1, sizeof(m1), "%s/r1.gpm", dir);
	c.model = m1;
	assert_int_equal(run_ranks(1, &c, &ref), 0);
	printf("1 rank: test %.2f%%, loss %.5f\n", 100 * ref.test_acc, ref.last_loss);
	assert_true(ref.test_acc > 0.9);
	for (int n = 2; n <= 4; n++) {
		snprintf(mn, sizeof(mn), "%s/r%d.gpm", dir, n);
		c.model = mn;
		/* 4 ranks: buckets allreduced during backward (auto leaves it off on cpu),
		 * small buckets so that every layer is one */
		c.overlap = n == 4 ? 1 : -1;
		c.bucket_bytes = 1024;
		assert_int_equal(run_ranks(n, &c, &res), 0);
		double d = model_diff(m1, mn);
		printf("%d ranks: test %.2f%%, loss %.5f, weights differ by %.2e of the largest\n",
		       n, 100 * res.test_acc, res.last_loss, d);
		assert_true(d < 1e-4);
		assert_true(fabs(res.test_acc - ref.test_acc) <= 0.01);
		assert_true(fabs(res.last_loss - ref.last_loss) <= 1e-3 * ref.last_loss);
	}
	/* speed-weighted shares with a throttled rank: other cuts of each batch, same model */
	snprintf(mn, sizeof(mn), "%s/weighted.gpm", dir);
	c.model = mn;
	c.rebalance_every = 3;
	c.throttle_rank = 1;
	c.throttle_ms_per_row = 0.05;
	c.scores[0] = 1, c.scores[1] = 1, c.scores[2] = 3;
	assert_int_equal(run_ranks(3, &c, &res), 0);
	double d = model_diff(m1, mn);
	printf("3 ranks, weighted shares, rank 1 throttled: weights differ by %.2e\n", d);
	assert_true(d < 1e-4);
}

/* Ranks that would choose differently (a card rank overlaps by default, a cpu rank does not:
 * the calls would differ and the ring refuses "different counts") agree before the first step:
 * no overlap unless every rank wants it; the model is the one-rank model. */
static void ranks_agree_on_overlap(void **state)
{
	(void)state;
	gt_result_t res, ref;
	char m1[320], mn[320];
	gt_conf_t c = base_conf();
	c.epochs = 3;
	snprintf(m1, sizeof(m1), "%s/agree1.gpm", dir);
	c.model = m1;
	assert_int_equal(run_ranks(1, &c, &ref), 0);
	snprintf(mn, sizeof(mn), "%s/agree3.gpm", dir);
	c.model = mn;
	c.overlap = -1;
	rank0_overlap = 1;
	int rc = run_ranks(3, &c, &res);
	rank0_overlap = -2;
	assert_int_equal(rc, 0);
	double d = model_diff(m1, mn);
	printf("3 ranks, rank 0 asking for overlap: weights differ by %.2e\n", d);
	assert_true(d < 1e-4);
}

/* AdamW layer by layer beside backward (optover.c) gives exactly the model of one AdamW over
 * the whole vector after it (bf16 and f32, one rank: on the cpu backend the second stream runs
 * in order, so this checks the parts, offsets and the join, not the concurrency a card adds);
 * asked for f16, it is refused with a note and the run is the plain one */
static void optimizer_overlap_exact(void **state)
{
	(void)state;
	static const gk_dtype_t types[] = {GK_BF16, GK_F32, GK_F16};
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		gt_result_t res, ref;
		char m0[320], m1[320];
		gt_conf_t c = base_conf();
		c.epochs = 3;
		c.compute = types[t];
		snprintf(m0, sizeof(m0), "%s/ov0-%zu.gpm", dir, t);
		snprintf(m1, sizeof(m1), "%s/ov1-%zu.gpm", dir, t);
		c.model = m0;
		c.overlap_optimizer = 0;
		assert_int_equal(run_ranks(1, &c, &ref), 0);
		c.model = m1;
		c.overlap_optimizer = 1;
		assert_int_equal(run_ranks(1, &c, &res), 0);
		double d = model_diff(m0, m1);
		printf(
		    "%s: optimizer beside backward: test %.2f%% (plain %.2f%%), weights differ by "
		    "%.2e\n",
		    gk_dtype_name(types[t]), 100 * res.test_acc, 100 * ref.test_acc, d);
		assert_true(d == 0.0);
		assert_int_equal(res.optimizer_overlapped, types[t] != GK_F16);
		assert_int_equal(ref.optimizer_overlapped, 0);
		assert_true(res.test_acc > 0.9);
		assert_int_equal(res.steps, ref.steps);
	}
}

/* f16 and bf16 on 3 ranks: the gradients are allreduced in the compute type (f16 sums round
 * at every hop), the model stays close to the one-rank model and learns */
static void mixed_precision_ranks(void **state)
{
	(void)state;
	gt_result_t res, ref;
	char m1[320], m3[320];
	for (int t = 0; t < 2; t++) {
		gt_conf_t c = base_conf();
		c.compute = t ? GK_BF16 : GK_F16;
		snprintf(m1, sizeof(m1), "%s/mp1-%d.gpm", dir, t);
		snprintf(m3, sizeof(m3), "%s/mp3-%d.gpm", dir, t);
		c.model = m1;
		assert_int_equal(run_ranks(1, &c, &ref), 0);
		c.model = m3;
		assert_int_equal(run_ranks(3, &c, &res), 0);
		double d = model_diff(m1, m3);
		printf("%s: 1 rank test %.2f%%, 3 ranks test %.2f%%, weights differ by %.2e\n",
		       t ? "bf16" : "f16", 100 * ref.test_acc, 100 * res.test_acc, d);
		assert_true(ref.test_acc > 0.9 && res.test_acc > 0.9);
		assert_int_equal(res.skipped, 0);
		assert_true(d < 0.05);
	}
}

/* a run on 3 ranks cut after step 37 (checkpoints every 10: the last at 30) resumes on 2 ranks
 * and ends with the model of an uncut run */
static void resume_other_rank_count(void **state)
{
	(void)state;
	gt_result_t res;
	char full[320], cut[320], ck[320];
	gt_conf_t c = base_conf();
	c.epochs = 6; /* 800 * 0.8 / 48 = 13 steps an epoch: 78 steps */
	snprintf(full, sizeof(full), "%s/full.gpm", dir);
	snprintf(cut, sizeof(cut), "%s/resumed.gpm", dir);
	snprintf(ck, sizeof(ck), "%s/run.ckpt", dir);
	c.model = full;
	assert_int_equal(run_ranks(3, &c, &res), 0);
	c.model = cut;
	c.ckpt = ck;
	c.ckpt_every = 10;
	c.stop_after = 37;
	assert_int_equal(run_ranks(3, &c, &res), 0);
	gt_ckpt_t k;
	gp_error_t err;
	assert_int_equal(gt_ckpt_read(ck, &k, &err), 0);
	assert_int_equal(k.step, 30);
	gt_ckpt_free(&k);
	c.stop_after = 0;
	assert_int_equal(run_ranks(2, &c, &res), 0);
	assert_int_equal(res.steps, 78 - 30);
	double d = model_diff(full, cut);
	printf("cut at step 37 on 3 ranks, resumed at 30 on 2: weights differ by %.2e\n", d);
	assert_true(d < 1e-4);
	/* a checkpoint of another global batch is refused */
	c.global_batch = 64;
	c.quiet = 1;
	assert_int_equal(run_ranks(1, &c, &res), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(gradient_check),
	    cmocka_unit_test(ckpt_roundtrip),
	    cmocka_unit_test(trained_model_serves),
	    cmocka_unit_test(scaler_rules),
	    cmocka_unit_test(overflow_skips),
	    cmocka_unit_test(share_split),
	    cmocka_unit_test(data_readers),
	    cmocka_unit_test(rank_count_invariance),
	    cmocka_unit_test(ranks_agree_on_overlap),
	    cmocka_unit_test(mixed_precision_ranks),
	    cmocka_unit_test(optimizer_overlap_exact),
	    cmocka_unit_test(resume_other_rank_count),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
