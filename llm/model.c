/* model.c - a llama-family model's shape from its GGUF metadata, every tensor checked against
 * it, and a range of layers' weights put on a backend in the file's own types (the kernels
 * dequantize as they read). Only the tensors of the range are read: a rank holding layers 10..19
 * of a staged file never touches the bytes of the others. */
#include "llm/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/weights.h"

/* Bounds on a shape, before anything is sized from it. */
#define MAX_DIM	   65536
#define MAX_LAYERS 1024
#define MAX_FF	   (1 << 20)
#define MAX_VOCAB  (1 << 22)
#define MAX_HEADS  1024

static const struct {
	const char *name;
	gl_arch_t arch;
	int rope_neox;
	float eps; /* when the file has none */
} archs[] = {
    {"llama", GL_ARCH_LLAMA, 0, 1e-5f},
    {"qwen2", GL_ARCH_QWEN2, 1, 1e-6f},
};

/* An integer key ARCH.SUFFIX into *V: required, or DEF when absent (DEF < 0: required). */
static int get_int(const gl_gguf_t *g, const char *arch, const char *suffix, int def, int max,
		   int *v, gp_error_t *err)
{
	char key[128];
	int64_t x;
	snprintf(key, sizeof key, "%s.%s", arch, suffix);
	if (gl_gguf_get_i64(g, key, &x) < 0) {
		if (errno == ENOENT && def >= 0) {
			*v = def;
			return 0;
		}
		errno = EINVAL;
		return gp_errprintf(err, "model: '%s' is missing or not an integer", key);
	}
	if (x < 1 || x > max) {
		errno = EINVAL;
		return gp_errprintf(err, "model: '%s' is %lld (1..%d)", key, (long long)x, max);
	}
	*v = (int)x;
	return 0;
}

static int get_float(const gl_gguf_t *g, const char *arch, const char *suffix, float def, float *v)
{
	char key[128];
	snprintf(key, sizeof key, "%s.%s", arch, suffix);
	if (gl_gguf_get_f32(g, key, v) < 0)
		*v = def;
	return 0;
}

/* The file's rope scaling: none, or linear (1 / factor; older files: rope.scale_linear);
 * another kind is refused. */
static int read_rope_scaling(const gl_gguf_t *g, const char *arch, gl_hparams_t *hp,
			     gp_error_t *err)
{
	char key[128];
	const char *type = NULL;
	size_t len;
	float factor = 1.0f;
	hp->rope_scale = 1.0f;
	snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
	if (gl_gguf_get_str(g, key, &type, &len) < 0) {
		snprintf(key, sizeof key, "%s.rope.scale_linear", arch);
		if (gl_gguf_get_f32(g, key, &factor) < 0)
			return 0;
		type = "linear";
	} else if (strcmp(type, "none") == 0) {
		return 0;
	} else {
		snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
		gl_gguf_get_f32(g, key, &factor);
	}
	if (strcmp(type, "linear") != 0 || !(factor >= 1.0f && factor <= 1024.0f)) {
		errno = ENOTSUP;
		return gp_errprintf(err, "model: rope scaling '%s' (factor %g) is not supported",
				    type, (double)factor);
	}
	hp->rope_scale = 1.0f / factor;
	return 0;
}

static int read_shape(const gl_gguf_t *g, const char *a, gl_hparams_t *hp, gp_error_t *err)
{
	if (get_int(g, a, "context_length", 2048, 1 << 24, &hp->n_ctx_train, err) < 0 ||
	    get_int(g, a, "embedding_length", -1, MAX_DIM, &hp->dim, err) < 0 ||
	    get_int(g, a, "block_count", -1, MAX_LAYERS, &hp->n_layers, err) < 0 ||
	    get_int(g, a, "feed_forward_length", -1, MAX_FF, &hp->n_ff, err) < 0 ||
	    get_int(g, a, "attention.head_count", -1, MAX_HEADS, &hp->n_heads, err) < 0 ||
	    get_int(g, a, "attention.head_count_kv", hp->n_heads, MAX_HEADS, &hp->n_kv_heads, err) <
		0)
		return -1;
	errno = EINVAL;
	if (hp->dim % hp->n_heads)
		return gp_errprintf(err, "model: embedding length %d is not a multiple of %d heads",
				    hp->dim, hp->n_heads);
	hp->head_dim = hp->dim / hp->n_heads;
	int key_len;
	if (get_int(g, a, "attention.key_length", hp->head_dim, MAX_DIM, &key_len, err) < 0)
		return -1;
	if (key_len != hp->head_dim) { /* Mistral Nemo's: q is not dim wide */
		errno = ENOTSUP;
		return gp_errprintf(err,
				    "model: heads of %d values (key_length) in a width of %d "
				    "are not supported",
				    key_len, hp->dim);
	}
	if (hp->n_heads % hp->n_kv_heads)
		return gp_errprintf(err, "model: %d heads are not a multiple of %d kv heads",
				    hp->n_heads, hp->n_kv_heads);
	if (get_int(g, a, "rope.dimension_count", hp->head_dim, hp->head_dim, &hp->rot_dim, err) <
	    0)
		return -1;
	if (hp->rot_dim % 2)
		return gp_errprintf(err, "model: rope dimension %d is odd", hp->rot_dim);
	get_float(g, a, "rope.freq_base", 10000.0f, &hp->rope_base);
	if (!(hp->rope_base > 1.0f && hp->rope_base < 1e12f))
		return gp_errprintf(err, "model: rope base %g is out of range",
				    (double)hp->rope_base);
	if (!(hp->norm_eps > 0.0f && hp->norm_eps < 1.0f))
		return gp_errprintf(err, "model: rms epsilon %g is out of range",
				    (double)hp->norm_eps);
	return read_rope_scaling(g, a, hp, err);
}

/* Tensor NAME: present (unless OPTIONAL), of dims {D0, D1} (D1 0: a vector), of a type the
 * kernels take (a vector: f32, f16 or bf16; a matrix: any, whole blocks per row). */
static int check_tensor(const gl_gguf_t *g, const char *name, int d0, int d1, int optional,
			gp_error_t *err)
{
	const gl_tensor_t *t = gl_gguf_find(g, name);
	if (!t) {
		if (optional)
			return 0;
		errno = EINVAL;
		return gp_errprintf(err, "model: tensor '%s' is missing", name);
	}
	int nd = d1 ? 2 : 1;
	if (t->ndims != nd || t->dims[0] != (uint64_t)d0 ||
	    (nd == 2 && t->dims[1] != (uint64_t)d1)) {
		errno = EINVAL;
		return gp_errprintf(err, "model: tensor '%s' is not %d x %d", name, d0,
				    d1 ? d1 : 1);
	}
	int vec_ok = t->type == GK_Q_F32 || t->type == GK_Q_F16 || t->type == GK_Q_BF16;
	if ((nd == 1 && !vec_ok) || (nd == 2 && gk_qtype_row_bytes(t->type, (size_t)d0) == 0)) {
		errno = EINVAL;
		return gp_errprintf(err, "model: tensor '%s' of type %s cannot be used", name,
				    gk_qtype_name(t->type));
	}
	return 1;
}

static int check_layer(const gl_gguf_t *g, const gl_hparams_t *hp, int l, gp_error_t *err)
{
	int kvd = hp->n_kv_heads * hp->head_dim, qwen = hp->arch == GL_ARCH_QWEN2;
	const struct {
		const char *suffix;
		int d0, d1, optional;
	} need[] = {
	    {"attn_norm.weight", hp->dim, 0, 0},
	    {"attn_q.weight", hp->dim, hp->dim, 0},
	    {"attn_k.weight", hp->dim, kvd, 0},
	    {"attn_v.weight", hp->dim, kvd, 0},
	    {"attn_output.weight", hp->dim, hp->dim, 0},
	    {"ffn_norm.weight", hp->dim, 0, 0},
	    {"ffn_gate.weight", hp->dim, hp->n_ff, 0},
	    {"ffn_up.weight", hp->dim, hp->n_ff, 0},
	    {"ffn_down.weight", hp->n_ff, hp->dim, 0},
	    {"attn_q.bias", hp->dim, 0, !qwen},
	    {"attn_k.bias", kvd, 0, !qwen},
	    {"attn_v.bias", kvd, 0, !qwen},
	};
	for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
		char name[96];
		snprintf(name, sizeof name, "blk.%d.%s", l, need[i].suffix);
		if (check_tensor(g, name, need[i].d0, need[i].d1, need[i].optional, err) < 0)
			return -1;
	}
	return 0;
}

int gl_hparams_read(const gl_gguf_t *g, gl_hparams_t *hp, gp_error_t *err)
{
	const char *a = NULL, *name = NULL;
	size_t len;
	memset(hp, 0, sizeof *hp);
	if (gl_gguf_get_str(g, "general.architecture", &a, &len) < 0) {
		errno = EINVAL;
		return gp_errprintf(err, "model: no general.architecture");
	}
	size_t ai = 0;
	while (ai < sizeof archs / sizeof archs[0] && strcmp(archs[ai].name, a) != 0)
		ai++;
	if (ai == sizeof archs / sizeof archs[0]) {
		errno = ENOTSUP;
		return gp_errprintf(
		    err, "model: architecture '%.64s' is not supported (llama, qwen2)", a);
	}
	hp->arch = archs[ai].arch;
	hp->rope_neox = archs[ai].rope_neox;
	if (gl_gguf_get_str(g, "general.name", &name, &len) < 0)
		name = a;
	snprintf(hp->name, sizeof hp->name, "%s", name);
	get_float(g, a, "attention.layer_norm_rms_epsilon", archs[ai].eps, &hp->norm_eps);
	if (read_shape(g, a, hp, err) < 0)
		return -1;
	const gl_tensor_t *emb = gl_gguf_find(g, "token_embd.weight");
	if (!emb || emb->ndims != 2 || emb->dims[1] < 1 || emb->dims[1] > MAX_VOCAB) {
		errno = EINVAL;
		return gp_errprintf(err, "model: token_embd.weight is missing or of a bad shape");
	}
	hp->n_vocab = (int)emb->dims[1];
	if (check_tensor(g, "token_embd.weight", hp->dim, hp->n_vocab, 0, err) < 0 ||
	    check_tensor(g, "output_norm.weight", hp->dim, 0, 0, err) < 0)
		return -1;
	int has_out = check_tensor(g, "output.weight", hp->dim, hp->n_vocab, 1, err);
	if (has_out < 0)
		return -1;
	hp->tied_output = !has_out;
	for (int l = 0; l < hp->n_layers; l++)
		if (check_layer(g, hp, l, err) < 0)
			return -1;
	return 0;
}

/* ---- sizes ---- */

static size_t tensor_bytes(const gl_gguf_t *g, const char *name)
{
	const gl_tensor_t *t = gl_gguf_find(g, name);
	return t ? t->bytes : 0;
}

size_t gl_layer_bytes(const gl_gguf_t *g, int l)
{
	size_t sum = 0;
	char prefix[32];
	int n = snprintf(prefix, sizeof prefix, "blk.%d.", l);
	for (int i = 0; i < gl_gguf_ntensors(g); i++) {
		const gl_tensor_t *t = gl_gguf_tensor(g, i);
		if (strncmp(t->name, prefix, (size_t)n) == 0)
			sum += t->bytes;
	}
	return sum;
}

size_t gl_embed_bytes(const gl_gguf_t *g)
{
	return tensor_bytes(g, "token_embd.weight");
}

size_t gl_head_bytes(const gl_gguf_t *g)
{
	size_t out = tensor_bytes(g, "output.weight");
	return tensor_bytes(g, "output_norm.weight") + (out ? out : gl_embed_bytes(g));
}

/* ---- loading ---- */

typedef struct {
	gk_backend_t *b;
	const gl_gguf_t *g;
	gl_weights_t *w;
	int direct; /* the cpu backend: read straight into its "device" memory */
	void *stage;
	size_t stage_cap;
	gp_error_t *err;
} loader_t;

static void *dev_alloc(loader_t *L, size_t bytes)
{
	gl_weights_t *w = L->w;
	void *p = NULL;
	if (w->nallocs == w->cap) {
		int cap = w->cap ? 2 * w->cap : 64;
		void **a = realloc(w->allocs, (size_t)cap * sizeof *a);
		if (!a) {
			errno = ENOMEM;
			gp_errprintf(L->err, "model: out of memory");
			return NULL;
		}
		w->allocs = a;
		w->cap = cap;
	}
	if (gk_dev_alloc(L->b, bytes ? bytes : 1, &p) < 0) {
		int e = errno;
		gp_errprintf(L->err, "model: %zu bytes on %s: %s", bytes, gk_backend_name(L->b),
			     gk_backend_error(L->b));
		errno = e ? e : ENOMEM;
		return NULL;
	}
	w->allocs[w->nallocs++] = p;
	w->bytes += bytes;
	return p;
}

/* Tensor T's bytes on the device, as they are in the file. */
static void *upload(loader_t *L, const gl_tensor_t *t)
{
	void *d = dev_alloc(L, t->bytes);
	if (!d)
		return NULL;
	if (L->direct)
		return gl_gguf_read(L->g, t, d, L->err) < 0 ? NULL : d;
	if (t->bytes > L->stage_cap) {
		void *s = realloc(L->stage, t->bytes);
		if (!s) {
			errno = ENOMEM;
			gp_errprintf(L->err, "model: out of memory");
			return NULL;
		}
		L->stage = s;
		L->stage_cap = t->bytes;
	}
	if (gl_gguf_read(L->g, t, L->stage, L->err) < 0)
		return NULL;
	if (gk_copy(L->b, d, L->stage, t->bytes, GK_H2D) < 0) {
		gp_errprintf(L->err, "model: copy of '%s': %s", t->name, gk_backend_error(L->b));
		return NULL;
	}
	return d;
}

static int load_mat(loader_t *L, const char *name, gl_mat_t *m)
{
	const gl_tensor_t *t = gl_gguf_find(L->g, name);
	if (!t) {
		errno = EINVAL;
		return gp_errprintf(L->err, "model: tensor '%s' is missing", name);
	}
	m->t = t->type;
	m->cols = (int)t->dims[0];
	m->rows = (int)t->dims[1];
	return (m->w = upload(L, t)) ? 0 : -1;
}

/* A vector as f32 on the device (a file may keep norms in f16 or bf16); absent: *V NULL. */
static int load_vec(loader_t *L, const char *name, float **v)
{
	const gl_tensor_t *t = gl_gguf_find(L->g, name);
	*v = NULL;
	if (!t)
		return 0;
	if (t->type == GK_Q_F32)
		return (*v = upload(L, t)) ? 0 : -1;
	size_t n = (size_t)t->dims[0];
	uint16_t *raw = malloc(t->bytes);
	float *f = malloc(n * sizeof *f);
	int rc = -1;
	if (!raw || !f) {
		errno = ENOMEM;
		gp_errprintf(L->err, "model: out of memory");
	} else if (gl_gguf_read(L->g, t, raw, L->err) == 0) {
		for (size_t i = 0; i < n; i++)
			f[i] = t->type == GK_Q_F16 ? gk_f16_to_f32(raw[i]) : gk_bf16_to_f32(raw[i]);
		*v = dev_alloc(L, n * sizeof *f);
		if (*v && gk_copy(L->b, *v, f, n * sizeof *f, GK_H2D) == 0)
			rc = 0;
		else if (*v)
			gp_errprintf(L->err, "model: copy of '%s': %s", name,
				     gk_backend_error(L->b));
	}
	free(raw);
	free(f);
	return rc;
}

static int load_layer(loader_t *L, int l, gl_layer_t *ly)
{
	const struct {
		const char *suffix;
		gl_mat_t *m;
		float **v;
	} parts[] = {
	    {"attn_norm.weight", NULL, &ly->attn_norm},
	    {"attn_q.weight", &ly->q, NULL},
	    {"attn_k.weight", &ly->k, NULL},
	    {"attn_v.weight", &ly->v, NULL},
	    {"attn_q.bias", NULL, &ly->bq},
	    {"attn_k.bias", NULL, &ly->bk},
	    {"attn_v.bias", NULL, &ly->bv},
	    {"attn_output.weight", &ly->o, NULL},
	    {"ffn_norm.weight", NULL, &ly->ffn_norm},
	    {"ffn_gate.weight", &ly->gate, NULL},
	    {"ffn_up.weight", &ly->up, NULL},
	    {"ffn_down.weight", &ly->down, NULL},
	};
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		char name[96];
		snprintf(name, sizeof name, "blk.%d.%s", l, parts[i].suffix);
		int rc = parts[i].m ? load_mat(L, name, parts[i].m) : load_vec(L, name, parts[i].v);
		if (rc < 0)
			return -1;
	}
	return 0;
}

gl_weights_t *gl_weights_load(gk_backend_t *b, const gl_gguf_t *g, const gl_hparams_t *hp,
			      int first, int last, int with_embed, int with_head, gp_error_t *err)
{
	if (first < 0 || last > hp->n_layers || first > last) {
		errno = EINVAL;
		gp_errprintf(err, "model: layers %d..%d of %d", first, last, hp->n_layers);
		return NULL;
	}
	gl_weights_t *w = calloc(1, sizeof *w);
	if (!w || !(w->layers = calloc((size_t)(last - first) + 1, sizeof *w->layers))) {
		free(w);
		errno = ENOMEM;
		gp_errprintf(err, "model: out of memory");
		return NULL;
	}
	w->b = b;
	w->first = first;
	w->last = last;
	loader_t L = {
	    .b = b, .g = g, .w = w, .err = err, .direct = strcmp(gk_backend_name(b), "cpu") == 0};
	int rc = 0;
	for (int l = first; l < last && rc == 0; l++)
		rc = load_layer(&L, l, &w->layers[l - first]);
	if (rc == 0 && (with_embed || (with_head && hp->tied_output))) {
		rc = load_mat(&L, "token_embd.weight", &w->embed);
		w->has_embed = with_embed;
	}
	if (rc == 0 && with_head) {
		w->has_head = 1;
		rc = load_vec(&L, "output_norm.weight", &w->out_norm);
		if (rc == 0 && hp->tied_output)
			w->head = w->embed;
		else if (rc == 0)
			rc = load_mat(&L, "output.weight", &w->head);
	}
	free(L.stage);
	if (rc < 0) {
		int e = errno;
		gl_weights_destroy(&w);
		errno = e;
		return NULL;
	}
	return w;
}

void gl_weights_destroy(gl_weights_t **wp)
{
	if (!wp || !*wp)
		return;
	gl_weights_t *w = *wp;
	for (int i = 0; i < w->nallocs; i++)
		gk_dev_free(w->b, w->allocs[i]);
	free(w->allocs);
	free(w->layers);
	free(w);
	*wp = NULL;
}

int gl_weights_first(const gl_weights_t *w)
{
	return w->first;
}

int gl_weights_last(const gl_weights_t *w)
{
	return w->last;
}

size_t gl_weights_device_bytes(const gl_weights_t *w)
{
	return w->bytes;
}
