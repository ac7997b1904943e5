/* gllm-mkmodel: write a random-weight GGUF model of a real model's shape (llm/randmodel.h), list
 * the shapes, or show what a GGUF file holds (its metadata, short, and its tensors).
 *   gllm-mkmodel --shape NAME [--type T] [--seed N] [--layers N] OUT.gguf
 *   gllm-mkmodel --list
 *   gllm-mkmodel --info FILE.gguf */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/opt.h"
#include "llm/gguf.h"
#include "llm/randmodel.h"

struct mk {
	const char *shape, *info;
	gk_qtype_t type;
	uint64_t seed;
	int layers;
	bool list, help;
};

#define M(c) ((struct mk *)(c))

static int set_shape(void *c, const char *a, gp_error_t *err)
{
	if (!gl_randmodel_find(a))
		return errno = EINVAL,
		       gp_errprintf(err, "unknown shape '%s' (--list names them)", a);
	M(c)->shape = a;
	return 0;
}

static int set_type(void *c, const char *a, gp_error_t *err)
{
	for (int t = 0; t < 64; t++)
		if (gk_qtype_valid(t) && strcmp(gk_qtype_name((gk_qtype_t)t), a) == 0) {
			M(c)->type = (gk_qtype_t)t;
			return 0;
		}
	return errno = EINVAL,
	       gp_errprintf(err, "unknown type '%s' (f32, f16, bf16, q8_0, q4_0, q4_K, q6_K)", a);
}

static int set_seed(void *c, const char *a, gp_error_t *err)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(a, &end, 0);
	if (errno || end == a || *end || *a == '-')
		return errno = EINVAL, gp_errprintf(err, "invalid seed '%s'", a);
	M(c)->seed = v;
	return 0;
}

static int set_layers(void *c, const char *a, gp_error_t *err)
{
	char *end;
	errno = 0;
	long v = strtol(a, &end, 10);
	if (errno || end == a || *end || v < 1 || v > 4096)
		return errno = EINVAL, gp_errprintf(err, "invalid layer count '%s'", a);
	M(c)->layers = (int)v;
	return 0;
}

static int set_list(void *c, const char *a, gp_error_t *err)
{
	(void)a, (void)err;
	M(c)->list = true;
	return 0;
}

static int set_info(void *c, const char *a, gp_error_t *err)
{
	(void)err;
	M(c)->info = a;
	return 0;
}

static int set_help(void *c, const char *a, gp_error_t *err)
{
	(void)a, (void)err;
	M(c)->help = true;
	return 0;
}

static const struct gp_opt opts[] = {
    {"shape", 's', required_argument, "NAME", "the model's shape (--list names them)", set_shape,
     0},
    {"type", 't', required_argument, "TYPE",
     "the matrices' type: f32, f16 (default), bf16, q8_0, q4_0, q4_K, q6_K", set_type, 0},
    {"seed", 0, required_argument, "N", "the weights' seed (default 1)", set_seed, 0},
    {"layers", 'l', required_argument, "N", "this many layers instead of the shape's", set_layers,
     0},
    {"list", 0, no_argument, NULL, "the shapes", set_list, 0},
    {"info", 'i', required_argument, "FILE", "the metadata and tensors of a GGUF file", set_info,
     0},
    {"help", 'h', no_argument, NULL, "this text", set_help, 0},
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: gllm-mkmodel --shape NAME [--type T] [--seed N] [--layers N] OUT.gguf\n"
	    "       gllm-mkmodel --list\n"
	    "       gllm-mkmodel --info FILE.gguf\n"
	    "Random-weight GGUF models of real shapes, and what a GGUF file holds.\n\noptions:\n");
	gp_opt_usage(opts, GP_NOPTS(opts), f);
}

static int list(void)
{
	int n;
	const gl_randmodel_t *s = gl_randmodel_shapes(&n);
	printf("%-15s %-6s %6s %6s %6s %4s %6s %7s %6s %10s %10s\n", "SHAPE", "ARCH", "DIM",
	       "LAYERS", "HEADS", "KV", "FF", "VOCAB", "CTX", "F16", "Q4_0");
	for (int i = 0; i < n; i++) {
		uint64_t f16 = gl_randmodel_bytes(&s[i], GK_Q_F16),
			 q4 = gl_randmodel_bytes(&s[i], GK_Q_Q4_0);
		printf("%-15s %-6s %6d %6d %6d %4d %6d %7d %6d %9.2fM %9.2fM\n", s[i].name,
		       s[i].arch, s[i].dim, s[i].n_layers, s[i].n_heads, s[i].n_kv_heads, s[i].n_ff,
		       s[i].n_vocab, s[i].n_ctx, (double)f16 / 1048576, (double)q4 / 1048576);
	}
	return 0;
}

/* ---- --info ---- */

static void print_elem(const gl_gguf_t *g, const char *key, gl_gguf_vtype_t et, uint64_t i)
{
	const char *s;
	size_t len;
	float f;
	int64_t v;
	if (et == GL_GGUF_STRING && gl_gguf_arr_str(g, key, i, &s, &len) == 0)
		printf("\"%.24s%s\"", s, len > 24 ? "..." : "");
	else if ((et == GL_GGUF_F32 || et == GL_GGUF_F64) && gl_gguf_arr_f32(g, key, i, &f) == 0)
		printf("%g", (double)f);
	else if (gl_gguf_arr_i64(g, key, i, &v) == 0)
		printf("%" PRId64, v);
	else
		printf("?");
}

static void print_value(const gl_gguf_t *g, const char *key)
{
	gl_gguf_vtype_t t, et;
	const char *s;
	size_t len;
	float f;
	int64_t v;
	int b;
	uint64_t n;
	gl_gguf_type(g, key, &t);
	if (t == GL_GGUF_STRING && gl_gguf_get_str(g, key, &s, &len) == 0) {
		printf("\"%.60s%s\"", s, len > 60 ? "..." : "");
	} else if (t == GL_GGUF_ARRAY && gl_gguf_get_arr(g, key, &et, &n) == 0) {
		printf("[%" PRIu64 "]", n);
		for (uint64_t i = 0; i < n && i < 4; i++) {
			printf(i ? ", " : " ");
			print_elem(g, key, et, i);
		}
		if (n > 4)
			printf(", ...");
	} else if (t == GL_GGUF_BOOL && gl_gguf_get_bool(g, key, &b) == 0) {
		printf("%s", b ? "true" : "false");
	} else if (gl_gguf_get_f32(g, key, &f) == 0) {
		printf("%g", (double)f);
	} else if (gl_gguf_get_i64(g, key, &v) == 0) {
		printf("%" PRId64, v);
	} else {
		printf("(a u64 past i64)");
	}
}

static int info(const char *path)
{
	gp_error_t err = {{0}};
	gl_gguf_t *g = gl_gguf_open_header(path, &err);
	if (!g) {
		fprintf(stderr, "gllm-mkmodel: %s\n", err.text);
		return 1;
	}
	printf("%s: GGUF v%" PRIu32 ", %d keys, %d tensors, data at %" PRIu64 ", %" PRIu64
	       " bytes\n",
	       path, gl_gguf_version(g), gl_gguf_nkv(g), gl_gguf_ntensors(g),
	       gl_gguf_data_offset(g), gl_gguf_file_size(g));
	for (int i = 0; i < gl_gguf_nkv(g); i++) {
		printf("  %s = ", gl_gguf_key(g, i));
		print_value(g, gl_gguf_key(g, i));
		printf("\n");
	}
	printf("%-32s %-5s %-24s %12s %12s\n", "TENSOR", "TYPE", "DIMS", "OFFSET", "BYTES");
	for (int i = 0; i < gl_gguf_ntensors(g); i++) {
		const gl_tensor_t *t = gl_gguf_tensor(g, i);
		char dims[64];
		int at = 0;
		for (int d = 0; d < t->ndims; d++)
			at += snprintf(dims + at, sizeof dims - (size_t)at, "%s%" PRIu64,
				       d ? " x " : "", t->dims[d]);
		printf("%-32s %-5s %-24s %12" PRIu64 " %12zu\n", t->name, gk_qtype_name(t->type),
		       dims, t->offset, t->bytes);
	}
	gl_gguf_close(&g);
	return 0;
}

static int make(struct mk *m, const char *out)
{
	gl_randmodel_t shape = *gl_randmodel_find(m->shape);
	gp_error_t err = {{0}};
	if (m->layers)
		shape.n_layers = m->layers;
	uint64_t bytes = gl_randmodel_bytes(&shape, m->type);
	fprintf(stderr, "gllm-mkmodel: %s, %d layers, %s: %.1f MiB of weights to '%s'\n",
		shape.name, shape.n_layers, gk_qtype_name(m->type), (double)bytes / 1048576, out);
	if (gl_randmodel_write(out, &shape, m->type, m->seed, &err) < 0) {
		fprintf(stderr, "gllm-mkmodel: %s\n", err.text);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct mk m = {.type = GK_Q_F16, .seed = 1};
	gp_error_t err = {{0}};
	char **operands = NULL;
	int nop = 0, rc;
	if (gp_opt_parse_mixed(opts, GP_NOPTS(opts), argc, argv, &m, &operands, &nop, &err) < 0) {
		fprintf(stderr, "gllm-mkmodel: %s\n", err.text);
		usage(stderr);
		return 2;
	}
	if (m.help) {
		usage(stdout);
		rc = 0;
	} else if (m.list && !m.info && !m.shape && nop == 0) {
		rc = list();
	} else if (m.info && !m.list && !m.shape && nop == 0) {
		rc = info(m.info);
	} else if (m.shape && !m.list && !m.info && nop == 1) {
		rc = make(&m, operands[0]);
	} else {
		fprintf(stderr,
			"gllm-mkmodel: give one of --list, --info FILE, --shape NAME OUT.gguf\n");
		usage(stderr);
		rc = 2;
	}
	free(operands);
	return rc;
}
