/* step_bench.c - gt-step-bench: gtrain's training step (train/mlp.c forward and backward,
 * optim.c's fused AdamW with the loss scaler on the card) timed alone, with the data resident
 * on the backend, as a PyTorch practitioner's loop has it (bench/train/torch_amp.py), and
 * optionally captured once as a graph and replayed (-g), optionally with AdamW layer by layer
 * beside backward (-O: optover.h; not for f16, whose step must see the whole gradient).
 *
 * Usage: gt-step-bench [-b BACKEND] [-l 784,4096,4096,10] [-B BATCH] [-p f32|tf32|bf16|f16]
 *                      [-n STEPS] [-w WARMUP] [-g] [-O]
 * Prints one line: "gt-step-bench: ... S samples/s ..." plus the loss of the first and last
 * step (the model must learn the synthetic labels: a check that the step does its work). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train/mlp.h"
#include "train/optim.h"
#include "train/optover.h"

#define NBATCH 8 /* distinct batches resident on the card, taken in turn */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct {
	gk_backend_t *b;
	gt_mlp_t *m;
	gt_optim_t *o;
	gk_amp_t *amp;
	gt_optover_t *ov; /* -O */
	size_t batch;
	gp_error_t err;
} sb_t;

/* everything a step queues after its rows are staged (a graph captures exactly this) */
static int step_body(sb_t *x)
{
	gk_stream_t *s = gt_mlp_stream(x->m);
	gk_dtype_t ct = gt_mlp_grad_dtype(x->m);
	void *wc = gt_mlp_compute_copy(x->m);
	if (x->ov)
		return gt_mlp_forward_staged(x->m, x->batch, &x->err) < 0 ||
			       gt_mlp_backward(x->m, 1.0f / (float)x->batch, gt_optover_ready,
					       x->ov, &x->err) < 0 ||
			       gt_optover_finish(x->ov, &x->err) < 0
			   ? -1
			   : 0;
	if (gt_mlp_forward_staged(x->m, x->batch, &x->err) < 0 ||
	    gt_mlp_backward(x->m, 1.0f / (float)x->batch, NULL, NULL, &x->err) < 0)
		return -1;
	if (gk_find_nonfinite(x->b, ct, gt_mlp_grads_dev(x->m), gt_mlp_nparams(x->m),
			      &x->amp->found, s) < 0)
		return gp_errprintf(&x->err, "check: %s", gk_backend_error(x->b));
	if (gt_optim_step_amp(x->o, gt_mlp_params_dev(x->m), x->amp, ct, wc, ct,
			      gt_mlp_grads_dev(x->m), s, &x->err) < 0)
		return -1;
	if (!wc && ct != GK_F32 && gt_mlp_weights_changed(x->m, &x->err) < 0)
		return -1;
	return 0;
}

static double mean_loss(sb_t *x, const float *xd, const int32_t *yd)
{
	float *loss = malloc(x->batch * sizeof(float));
	double sum = 0;
	if (gt_mlp_forward_dev(x->m, xd, yd, x->batch, &x->err) < 0 ||
	    gt_mlp_outputs(x->m, loss, NULL, &x->err) < 0)
		sum = -1;
	else
		for (size_t i = 0; i < x->batch; i++)
			sum += loss[i] / (double)x->batch;
	free(loss);
	return sum;
}

int main(int argc, char **argv)
{
	const char *backend = "cuda", *layers = "784,4096,4096,10", *prec = "bf16";
	int sizes[GT_MAX_LAYERS + 1], nsizes = 0, steps = 200, warmup = 20, graph = 0, over = 0;
	int opt;
	sb_t x = {0};
	x.batch = 512;
	while ((opt = getopt(argc, argv, "b:l:B:p:n:w:gO")) != -1) {
		switch (opt) {
		case 'b':
			backend = optarg;
			break;
		case 'l':
			layers = optarg;
			break;
		case 'B':
			x.batch = strtoul(optarg, NULL, 10);
			break;
		case 'p':
			prec = optarg;
			break;
		case 'n':
			steps = atoi(optarg);
			break;
		case 'w':
			warmup = atoi(optarg);
			break;
		case 'g':
			graph = 1;
			break;
		case 'O':
			over = 1;
			break;
		default:
			fprintf(stderr,
				"usage: gt-step-bench [-b BACKEND] [-l SIZES] [-B BATCH] "
				"[-p f32|tf32|bf16|f16] [-n STEPS] [-w WARMUP] [-g] [-O]\n");
			return 2;
		}
	}
	for (const char *p = layers; *p && nsizes <= GT_MAX_LAYERS; nsizes++) {
		sizes[nsizes] = (int)strtol(p, (char **)&p, 10);
		if (*p == ',')
			p++;
	}
	gk_dtype_t ct = GK_F32;
	gk_math_t math = GK_MATH_DEFAULT;
	if (!strcmp(prec, "bf16"))
		ct = GK_BF16;
	else if (!strcmp(prec, "f16"))
		ct = GK_F16;
	else if (!strcmp(prec, "tf32"))
		math = GK_MATH_TF32;
	else if (strcmp(prec, "f32")) {
		fprintf(stderr, "gt-step-bench: invalid precision '%s'\n", prec);
		return 2;
	}
	if (over && ct == GK_F16) {
		fprintf(stderr, "gt-step-bench: -O needs a scaler that is not dynamic: not f16\n");
		return 2;
	}
	gk_error_t ge;
	if (!(x.b = gk_backend_open(backend, &ge))) {
		fprintf(stderr, "gt-step-bench: backend '%s': %s\n", backend, ge.text);
		return 1;
	}
	gt_optim_conf_t oc = {
	    .kind = GT_ADAMW, .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f};
	if (!(x.m = gt_mlp_create_ex(x.b, sizes, nsizes, x.batch, ct, math, &x.err)) ||
	    !(x.o = gt_optim_create(x.b, &oc, gt_mlp_nparams(x.m), &x.err)) ||
	    gt_mlp_init(x.m, 1, &x.err) < 0) {
		fprintf(stderr, "gt-step-bench: %s\n", x.err.text);
		return 1;
	}
	/* synthetic data on the card: uniform inputs, labels from a fixed random linear map of
	 * their first (up to) 64 features (learnable, and cheap to make), NBATCH batches */
	size_t in = (size_t)sizes[0], k = (size_t)sizes[nsizes - 1], rows = NBATCH * x.batch;
	size_t used = in < 64 ? in : 64;
	float *hx = malloc(rows * in * sizeof(float)), *proj = malloc(in * k * sizeof(float));
	int32_t *hy = malloc(rows * sizeof(int32_t));
	uint64_t r = 88172645463325252ull;
#define RND() ((r ^= r << 13, r ^= r >> 7, r ^= r << 17), (double)(r >> 11) / 9007199254740992.0)
	for (size_t i = 0; i < in * k; i++)
		proj[i] = (float)(RND() * 2 - 1);
	for (size_t i = 0; i < rows; i++) {
		double best = -1e30;
		for (size_t j = 0; j < in; j++)
			hx[i * in + j] = (float)RND();
		for (size_t c = 0; c < k; c++) {
			double z = 0;
			for (size_t j = 0; j < used; j++)
				z += (hx[i * in + j] - 0.5) * proj[c * in + j];
			if (z > best)
				best = z, hy[i] = (int32_t)c;
		}
	}
	float *dx;
	int32_t *dy;
	gk_amp_t a;
	gk_amp_init(&a, 65536.0f, ct == GK_F16, 2000, oc.beta1, oc.beta2);
	if (gk_dev_alloc(x.b, rows * in * sizeof(float), (void **)&dx) < 0 ||
	    gk_dev_alloc(x.b, rows * sizeof(int32_t), (void **)&dy) < 0 ||
	    gk_dev_alloc(x.b, sizeof(a), (void **)&x.amp) < 0 ||
	    gk_copy(x.b, dx, hx, rows * in * sizeof(float), GK_H2D) < 0 ||
	    gk_copy(x.b, dy, hy, rows * sizeof(int32_t), GK_H2D) < 0 ||
	    gk_copy(x.b, x.amp, &a, sizeof(a), GK_H2D) < 0) {
		fprintf(stderr, "gt-step-bench: %s\n", gk_backend_error(x.b));
		return 1;
	}
	gt_mlp_set_amp(x.m, x.amp);
	if (over && !(x.ov = gt_optover_create(x.b, x.m, x.o, x.amp, &x.err))) {
		fprintf(stderr, "gt-step-bench: %s\n", x.err.text);
		return 1;
	}
	double loss0 = mean_loss(&x, dx, dy);
	gk_graph_t *gr = NULL;
	const char *how = "eager";
	int total = warmup + steps;
	double t0 = 0;
	for (int i = 0; i < total; i++) {
		size_t bi = (size_t)(i % NBATCH);
		if (i == warmup) {
			if (gt_mlp_sync(x.m, &x.err) < 0)
				break;
			t0 = now_s();
		}
		if (gt_mlp_stage_dev(x.m, dx + bi * x.batch * in, dy + bi * x.batch, x.batch,
				     &x.err) < 0)
			break;
		/* the graph is captured after one eager step (the products' plans are made) */
		if (graph && i == 1) {
			gk_stream_t *s = gt_mlp_stream(x.m);
			if (gk_graph_begin(x.b, s) < 0 || step_body(&x) < 0 ||
			    gk_graph_end(x.b, s, &gr) < 0) {
				fprintf(stderr,
					"gt-step-bench: capture failed (%s%s), eager steps\n",
					x.err.text, gk_backend_error(x.b));
				graph = 0;
				gr = NULL;
				if (step_body(&x) < 0)
					break;
				continue;
			}
			how = "graph";
		}
		if (gr) {
			if (gk_graph_launch(x.b, gr, gt_mlp_stream(x.m)) < 0) {
				fprintf(stderr, "gt-step-bench: %s\n", gk_backend_error(x.b));
				return 1;
			}
		} else if (step_body(&x) < 0) {
			break;
		}
	}
	if (gt_mlp_sync(x.m, &x.err) < 0 || x.err.text[0]) {
		fprintf(stderr, "gt-step-bench: %s\n", x.err.text);
		return 1;
	}
	double el = now_s() - t0;
	double loss1 = mean_loss(&x, dx, dy);
	gk_copy(x.b, &a, x.amp, sizeof(a), GK_D2H);
	gk_device_info_t di;
	gk_device_info(x.b, &di);
	const char *tune = getenv("GPOOL_KERNELS_LT_TUNE");
	printf("gt-step-bench: %s %s, layers %s, batch %zu, %s, %s%s%s, %d steps in %.3f s, %.0f "
	       "samples/s, %.3f ms/step, loss %.4f -> %.4f, %d skipped, scale %g\n",
	       gk_backend_name(x.b), di.name, layers, x.batch, prec, how, x.ov ? " optover" : "",
	       tune && !strcmp(tune, "1") ? " tuned" : "", steps, el, steps * (double)x.batch / el,
	       el * 1e3 / steps, loss0, loss1, a.skipped, (double)a.scale);
	gk_graph_destroy(x.b, &gr);
	gt_optover_destroy(&x.ov);
	gt_optim_destroy(&x.o);
	gt_mlp_destroy(&x.m);
	gk_backend_close(&x.b);
	free(hx), free(hy), free(proj);
	return 0;
}
