/* test_file: the model file (model/file.c). Properties: what the writer writes is gtrain's
 * format byte for byte (the magic, the header line with its keys in order, the parameters) and
 * reads back equal; a file of tests/tools/gen-model.py (an independent writer: no input_scale,
 * an unknown key) loads; every malformed header or length is refused with a reason and never
 * half-loaded; a failed write leaves the old file. With OpenBLAS here, the served forward pass
 * on the kernels' cpu backend (model/infer.c) gives bit for bit the probabilities of gserve's
 * former own path, cblas_sgemm on row-major data (serve/model.c before the model library).
 * argv[1]: gen-model.py. Plain asserts. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef GM_TEST_CBLAS
#include <cblas.h>
#endif

#include "model/file.h"
#include "model/infer.h"
#include "model/softmax.h"
#include "model/test/check.h"

static char dir[64];

/* the same bits: the file must give back exactly what was written */
static int same_bits(const void *a, const void *b, size_t nfloats)
{
	return memcmp(a, b, nfloats * sizeof(float)) == 0;
}

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	CHECK(f);
	char *buf = malloc(1 << 20);
	CHECK(buf);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

static gm_model_t *small_model(void)
{
	gp_error_t err = {{0}};
	gm_model_t *m = gm_model_create((int[]){3, 4, 2}, 3, 0.0625f, &err);
	CHECK(m);
	for (size_t i = 0; i < gm_model_nparams(m); i++)
		gm_model_params(m)[i] = (float)i * 0.25f - 3.0f;
	return m;
}

static void round_trip(void)
{
	gp_error_t err = {{0}};
	char path[128];
	snprintf(path, sizeof(path), "%s/m.gpm", dir);
	gm_model_t *m = small_model();
	CHECK(gm_model_write(path, m, &err) == 0);
	size_t len;
	char *buf = slurp(path, &len);
	static const char head[] = "GPMODEL1\n{\"kind\":\"mlp\",\"layers\":[3,4,2],\"activation\":"
				   "\"relu\",\"dtype\":\"f32\",\"input_scale\":0.0625}\n";
	CHECK(len == strlen(head) + 26 * sizeof(float));
	CHECK(memcmp(buf, head, strlen(head)) == 0);
	CHECK(same_bits(buf + strlen(head), gm_model_data(m), 26));
	gm_model_t *back = gm_model_read(path, &err);
	CHECK(back);
	CHECK(strcmp(gm_model_shape(back), "3-4-2") == 0 && gm_model_input_scale(back) == 0.0625f);
	CHECK(same_bits(gm_model_data(back), gm_model_data(m), 26));
	gm_model_destroy(&back);
	/* a write that cannot happen leaves the old file and no temporary */
	char bad[160];
	snprintf(bad, sizeof(bad), "%s/no/such/dir/m.gpm", dir);
	errno = 0;
	CHECK(gm_model_write(bad, m, &err) == -1 && errno == ENOENT && strstr(err.text, bad));
	errno = 0;
	CHECK(!gm_model_read(bad, &err) && errno == ENOENT && err.text[0]);
	/* a truncated copy is refused */
	CHECK(!gm_model_parse(buf, len - 1, &err) && errno == EINVAL);
	CHECK(strstr(err.text, "bytes of parameters") != NULL);
	free(buf);
	gm_model_destroy(&m);
	unlink(path);
}

/* the header HDR then the parameters of LAYERS 2-2 (6 floats) with VALUE at index 3 */
static gm_model_t *try_parse(const char *hdr, size_t nfloats, float value, gp_error_t *err)
{
	char buf[1024];
	size_t n = strlen(hdr);
	CHECK(n + nfloats * 4 < sizeof(buf));
	memcpy(buf, hdr, n);
	for (size_t i = 0; i < nfloats; i++) {
		float v = i == 3 ? value : (float)i;
		memcpy(buf + n + i * 4, &v, 4);
	}
	errno = 0;
	return gm_model_parse(buf, n + nfloats * 4, err);
}

#define GOOD "GPMODEL1\n{\"kind\":\"mlp\",\"layers\":[2,2],\"dtype\":\"f32\"}\n"

static void refusals(void)
{
	static const struct {
		const char *hdr, *why;
	} cases[] = {
	    {"GPMODEL2\n{\"kind\":\"mlp\",\"layers\":[2,2],\"dtype\":\"f32\"}\n", "bad magic"},
	    {"GPMODEL1\n{\"kind\":\"mlp\",\"layers\":[2,2],\"dtype\":\"f32\"}", "header line"},
	    {"GPMODEL1\n[1,2]\n", "not a JSON object"},
	    {"GPMODEL1\n{\"kind\":\"mlp\",\"kind\":\"mlp\",\"layers\":[2,2],\"dtype\":\"f32\"}\n",
	     "not a JSON object"},
	    {"GPMODEL1\n{\"kind\":\"cnn\",\"layers\":[2,2],\"dtype\":\"f32\"}\n", "kind 'cnn'"},
	    {"GPMODEL1\n{\"layers\":[2,2],\"dtype\":\"f32\"}\n", "kind ''"},
	    {"GPMODEL1\n{\"kind\":\"mlp\",\"activation\":\"tanh\",\"layers\":[2,2],\"dtype\":"
	     "\"f32\"}"
	     "\n",
	     "activation 'tanh'"},
	    {"GPMODEL1\n{\"kind\":\"mlp\",\"activation\":7,\"layers\":[2,2],\"dtype\":\"f32\"}\n",
	     "activation ''"},
	    {"GPMODEL1\n{\"kind\":\"mlp\",\"layers\":[2,2],\"dtype\":\"f64\"}\n", "dtype 'f64'"},
	    {"GPMODEL1\n{\"kind\":\"mlp\",\"layers\":[2,2],\"dtype\":\"f16\"}\n",
	     "the header needs 12"},
	    {"GPMODEL1\n{\"kind\":\"mlp\",\"layers\":[2],\"dtype\":\"f32\"}\n", "'layers'"},
	    {"GPMODEL1\n{\"kind\":\"mlp\",\"layers\":[2,0],\"dtype\":\"f32\"}\n", "layer width 1"},
	    {"GPMODEL1\n{\"kind\":\"mlp\",\"layers\":[2,2.5],\"dtype\":\"f32\"}\n",
	     "layer width 1"},
	    {"GPMODEL1\n{\"kind\":\"mlp\",\"layers\":[2,2],\"dtype\":\"f32\",\"input_scale\":\"x\"}"
	     "\n",
	     "'input_scale'"},
	};
	gp_error_t err;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err.text[0] = '\0';
		gm_model_t *m = try_parse(cases[i].hdr, 6, 1.0f, &err);
		if (m || errno != EINVAL || !strstr(err.text, cases[i].why))
			fprintf(stderr, "case %zu: '%s', want '%s'\n", i, err.text, cases[i].why);
		CHECK(!m && errno == EINVAL && strstr(err.text, cases[i].why));
		CHECK(strncmp(err.text, "model file: ", 12) == 0);
	}
	/* the lengths around the right one, and parameters that are not finite */
	CHECK(!try_parse(GOOD, 5, 1.0f, &err) && strstr(err.text, "24"));
	CHECK(!try_parse(GOOD, 7, 1.0f, &err) && strstr(err.text, "28 bytes"));
	CHECK(!try_parse(GOOD, 6, NAN, &err) && strstr(err.text, "not all finite"));
	CHECK(!try_parse(GOOD, 6, INFINITY, &err) && errno == EINVAL);
	CHECK(!gm_model_parse("", 0, &err) && errno == EINVAL);
	/* activation and input_scale may be left out */
	gm_model_t *m = try_parse(GOOD, 6, 1.5f, &err);
	CHECK(m && gm_model_input_scale(m) == 1.0f && gm_model_data(m)[3] == 1.5f);
	gm_model_destroy(&m);
}

/* a model stored as bf16 / f16: its file says so, holds 2 bytes a parameter (little-endian
 * patterns), reads back the same values; a value beyond f16's range is refused on writing */
static void storage_types(void)
{
	static const gm_dtype_t types[] = {GM_BF16, GM_F16};
	const int sizes[3] = {3, 4, 2};
	gp_error_t err;
	char path[512];
	gm_dtype_t t;
	CHECK(gm_dtype_parse("bf16", &t) == 0 && t == GM_BF16);
	CHECK(gm_dtype_parse("f64", &t) < 0 && errno == EINVAL);
	for (int k = 0; k < 2; k++) {
		gm_model_t *m = gm_model_create(sizes, 3, 0.25f, &err);
		CHECK(m);
		size_t n = gm_model_nparams(m);
		for (size_t i = 0; i < n; i++)
			gm_model_params(m)[i] = 0.1f * (float)i - 0.7f;
		CHECK(gm_model_set_dtype(m, types[k], &err) == 0);
		CHECK(gm_model_data(m)[1] != 0.1f * 1.0f - 0.7f); /* rounded */
		snprintf(path, sizeof(path), "%s/half.gpm", dir);
		CHECK(gm_model_write(path, m, &err) == 0);
		size_t len = 0;
		char *buf = slurp(path, &len);
		char want[64];
		snprintf(want, sizeof(want), "\"dtype\":\"%s\"", gm_dtype_name(types[k]));
		CHECK(buf && strstr(buf, want));
		const char *body = strchr(strchr(buf, '\n') + 1, '\n') + 1;
		CHECK((size_t)(buf + len - body) == n * 2);
		gm_model_t *r = gm_model_read(path, &err);
		CHECK(r && gm_model_dtype(r) == types[k] && gm_model_nparams(r) == n);
		CHECK(memcmp(gm_model_data(r), gm_model_data(m), n * sizeof(float)) == 0);
		gm_model_destroy(&r);
		free(buf);
		unlink(path);
		gm_model_params(m)[0] = 1e6f;
		CHECK(types[k] != GM_F16 || (gm_model_set_dtype(m, GM_F16, &err) < 0 &&
					     errno == EINVAL && strstr(err.text, "overflow")));
		gm_model_destroy(&m);
	}
}

/* a model file Python wrote loads: the server's reference generator, with an extra key */
static void foreign(const char *gen)
{
	char path[128], cmd[512];
	gp_error_t err = {{0}};
	snprintf(path, sizeof(path), "%s/py.gpm", dir);
	snprintf(cmd, sizeof(cmd), "python3 '%s' write '%s' --layers 6,5,3 --extra-key", gen, path);
	CHECK(system(cmd) == 0);
	gm_model_t *m = gm_model_read(path, &err);
	if (!m)
		fprintf(stderr, "%s\n", err.text);
	CHECK(m && strcmp(gm_model_shape(m), "6-5-3") == 0 && gm_model_input_scale(m) == 1.0f);
	gm_model_destroy(&m);
	unlink(path);
}

#ifdef GM_TEST_CBLAS
/* gserve's forward pass before the model library (serve/model.c's gs_model_forward) */
static void former_forward(const gm_model_t *m, const float *x, size_t n, float *probs)
{
	const int *w = gm_model_sizes(m), nl = gm_model_nsizes(m) - 1;
	int widest = 0;
	for (int l = 0; l <= nl; l++)
		widest = w[l] > widest ? w[l] : widest;
	float *a = malloc(n * (size_t)widest * sizeof(float));
	float *b = malloc(n * (size_t)widest * sizeof(float));
	CHECK(a && b);
	for (size_t i = 0; i < n * (size_t)w[0]; i++)
		a[i] = x[i] * gm_model_input_scale(m);
	for (int l = 0; l < nl; l++) {
		const float *W = gm_model_data(m) + gm_model_layer_offset(m, l);
		const float *bias = W + (size_t)w[l] * w[l + 1];
		float *y = l + 1 == nl ? probs : b;
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, w[l + 1], w[l], 1.0f,
			    a, w[l], W, w[l], 0.0f, y, w[l + 1]);
		for (size_t r = 0; r < n; r++)
			for (int k = 0; k < w[l + 1]; k++) {
				float *v = &y[r * (size_t)w[l + 1] + (size_t)k];
				*v += bias[k];
				if (l + 1 < nl && *v < 0)
					*v = 0;
			}
		float *t = a;
		a = b;
		b = t;
	}
	gm_softmax_rows(probs, n, (size_t)w[nl]);
	free(a);
	free(b);
}

static void same_answers(const char *gen)
{
	char path[128], cmd[512];
	gp_error_t err = {{0}};
	gk_error_t ge;
	snprintf(path, sizeof(path), "%s/digits.gpm", dir);
	snprintf(cmd, sizeof(cmd), "python3 '%s' write '%s' --layers 64,128,64,10 --seed 3", gen,
		 path);
	CHECK(system(cmd) == 0);
	gm_model_t *m = gm_model_read(path, &err);
	CHECK(m);
	gk_backend_t *b = gk_backend_open("cpu", &ge);
	CHECK(b);
	gm_infer_t *d = gm_infer_create(b, m, 48, &err);
	CHECK(d);
	float x[48 * 64], got[48 * 10], want[48 * 10];
	unsigned seed = 11;
	for (size_t i = 0; i < 48 * 64; i++) {
		seed = seed * 1103515245u + 12345u;
		x[i] = (float)((seed >> 8) & 0xff) / 16.0f;
	}
	static const size_t batches[] = {1, 5, 48};
	for (size_t t = 0; t < 3; t++) {
		CHECK(gm_infer_run(d, x, batches[t], got) == 0);
		former_forward(m, x, batches[t], want);
		CHECK(same_bits(got, want, batches[t] * 10));
	}
	printf("ok: the kernels' cpu backend answers gserve's former cblas path bit for bit\n");
	gm_infer_destroy(&d);
	gk_backend_close(&b);
	gm_model_destroy(&m);
	unlink(path);
}
#endif

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	snprintf(dir, sizeof(dir), "/tmp/test_model_file.XXXXXX");
	CHECK(mkdtemp(dir));
	round_trip();
	refusals();
	storage_types();
	foreign(argv[1]);
#ifdef GM_TEST_CBLAS
	same_answers(argv[1]);
#endif
	rmdir(dir);
	printf("ok: model file\n");
	return 0;
}
