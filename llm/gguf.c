/* gguf.c - GGUF model files: a bounded reader (memory-mapped, header-only with pread, or from
 * memory) and a writer that produces tensors' bytes chunk by chunk (llm/gguf.h).
 *
 * The reader decodes the header, metadata and tensor descriptions from one buffer: the whole
 * mapping, the caller's memory, or (header-only) a prefix of the file read into memory, grown
 * and parsed again while the parse runs off its end. Every value is decoded from the buffer
 * on demand (little-endian, byte by byte), so a handle keeps only offsets into it; strings
 * are copied once, NUL-terminated, because C callers need that. */
#include "llm/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAGIC	  "GGUF"
#define DEFAULT_ALIGNMENT 32
#define MAX_ALIGNMENT	  (1u << 20)
#define HEADER_FIRST_READ (1u << 20) /* header-only: bytes read first, doubled while short */
#define WRITE_CHUNK	  (4u << 20) /* writer: bytes produced by one FILL call, about */

/* ---- values ---- */

static const struct {
	const char *name;
	size_t size; /* bytes of a scalar; 0 for string and array */
	int kind;    /* 'u' unsigned, 's' signed, 'f' float, 'b' bool, 0 other */
} vtypes[] = {
    [GL_GGUF_U8] = {"u8", 1, 'u'},	 [GL_GGUF_I8] = {"i8", 1, 's'},
    [GL_GGUF_U16] = {"u16", 2, 'u'},	 [GL_GGUF_I16] = {"i16", 2, 's'},
    [GL_GGUF_U32] = {"u32", 4, 'u'},	 [GL_GGUF_I32] = {"i32", 4, 's'},
    [GL_GGUF_F32] = {"f32", 4, 'f'},	 [GL_GGUF_BOOL] = {"bool", 1, 'b'},
    [GL_GGUF_STRING] = {"string", 0, 0}, [GL_GGUF_ARRAY] = {"array", 0, 0},
    [GL_GGUF_U64] = {"u64", 8, 'u'},	 [GL_GGUF_I64] = {"i64", 8, 's'},
    [GL_GGUF_F64] = {"f64", 8, 'f'},
};
#define NVTYPES ((uint32_t)(sizeof vtypes / sizeof vtypes[0]))

static uint64_t le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* An integer value at P of type T as sign and magnitude; -1 if T is not an integer type. */
static int int_value(gl_gguf_vtype_t t, const uint8_t *p, int *neg, uint64_t *mag)
{
	if ((uint32_t)t >= NVTYPES || (vtypes[t].kind != 'u' && vtypes[t].kind != 's'))
		return -1;
	size_t n = vtypes[t].size;
	uint64_t v = le(p, n);
	*neg = 0;
	if (vtypes[t].kind == 's' && (v >> (8 * n - 1)) & 1) {
		uint64_t ext = n == 8 ? v : v | (~(uint64_t)0 << (8 * n));
		*neg = 1;
		*mag = ~ext + 1; /* two's complement magnitude, 2^63 for INT64_MIN */
	} else {
		*mag = v;
	}
	return 0;
}

static int float_value(gl_gguf_vtype_t t, const uint8_t *p, double *v)
{
	if (t == GL_GGUF_F32) {
		uint32_t u = (uint32_t)le(p, 4);
		float f;
		memcpy(&f, &u, 4);
		*v = f;
		return 0;
	}
	if (t == GL_GGUF_F64) {
		uint64_t u = le(p, 8);
		memcpy(v, &u, 8);
		return 0;
	}
	return -1;
}

static int to_i64(int neg, uint64_t mag, int64_t *v)
{
	if (neg) {
		if (mag > (uint64_t)INT64_MAX + 1)
			return -1;
		*v = mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag;
	} else {
		if (mag > (uint64_t)INT64_MAX)
			return -1;
		*v = (int64_t)mag;
	}
	return 0;
}

/* ---- the handle ---- */

struct kv {
	char *key;
	gl_gguf_vtype_t type;
	gl_gguf_vtype_t etype; /* arrays */
	uint64_t n;	       /* arrays: elements */
	size_t raw;	       /* offset in the buffer of a scalar's or numeric array's bytes */
	char *str;	       /* strings: NUL-terminated copies, one after another */
	size_t *soff;	       /* arrays of strings: n + 1 offsets into str (each string + NUL) */
	size_t slen;	       /* a string's length */
};

enum { MODE_MAP, MODE_MEM, MODE_HEADER };

struct gl_gguf {
	int mode;
	const uint8_t *buf; /* the mapping, the caller's bytes, or the header read */
	size_t buflen;
	int fd; /* header-only: kept for gl_gguf_read */
	uint32_t version;
	uint64_t file_size, data_offset, alignment;
	int nkv, ntensors;
	struct kv *kv;
	struct kv **kv_by_key;
	gl_tensor_t *t;
	gl_tensor_t **t_by_name;
};

/* ---- parsing ---- */

typedef struct {
	const uint8_t *p;
	size_t len, off;
	int short_buf; /* a read ran off the buffer (header-only: read more and parse again) */
	gp_error_t *err;
} cur_t;

static int fail(cur_t *c, int e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(cur_t *c, int e, const char *fmt, ...)
{
	if (c->err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err->text, sizeof c->err->text, fmt, ap);
		va_end(ap);
	}
	errno = e;
	return -1;
}

static int take(cur_t *c, size_t n, const uint8_t **out, const char *what)
{
	*out = NULL;
	if (n > c->len - c->off) {
		c->short_buf = 1;
		return fail(c, EINVAL, "truncated file: %s at byte %zu needs %zu bytes, %zu left",
			    what, c->off, n, c->len - c->off);
	}
	*out = c->p + c->off;
	c->off += n;
	return 0;
}

static int take_u32(cur_t *c, uint32_t *v, const char *what)
{
	const uint8_t *p;
	if (take(c, 4, &p, what) < 0)
		return -1;
	*v = (uint32_t)le(p, 4);
	return 0;
}

static int take_u64(cur_t *c, uint64_t *v, const char *what)
{
	const uint8_t *p;
	if (take(c, 8, &p, what) < 0)
		return -1;
	*v = le(p, 8);
	return 0;
}

/* A string of at most MAX bytes: its bytes in the buffer and its length. */
static int take_str(cur_t *c, uint64_t max, const uint8_t **s, size_t *len, const char *what)
{
	uint64_t n;
	if (take_u64(c, &n, what) < 0)
		return -1;
	if (n > max)
		return fail(c, EFBIG,
			    "%s at byte %zu is %" PRIu64 " bytes long, more than %" PRIu64, what,
			    c->off - 8, n, max);
	*len = (size_t)n;
	return take(c, *len, s, what);
}

/* A name (key or tensor name): not empty, no NUL, copied. */
static char *take_name(cur_t *c, uint64_t max, const char *what)
{
	const uint8_t *s;
	size_t n;
	if (take_str(c, max, &s, &n, what) < 0)
		return NULL;
	if (n == 0 || memchr(s, 0, n)) {
		fail(c, EINVAL, "%s at byte %zu is empty or holds a NUL", what, c->off - n);
		return NULL;
	}
	char *copy = malloc(n + 1);
	if (!copy) {
		fail(c, ENOMEM, "out of memory");
		return NULL;
	}
	memcpy(copy, s, n);
	copy[n] = 0;
	return copy;
}

static int parse_string_array(cur_t *c, struct kv *kv)
{
	size_t start = c->off, total = 0;
	if (kv->n > (c->len - c->off) / 8) /* each string has at least its length */
		return c->short_buf = 1,
		       fail(c, EINVAL, "truncated file: array '%s' of %" PRIu64 " strings", kv->key,
			    kv->n);
	for (uint64_t i = 0; i < kv->n; i++) {
		const uint8_t *s;
		size_t len;
		if (take_str(c, GL_GGUF_MAX_STRING, &s, &len, "a string in an array") < 0)
			return -1;
		total += len + 1; /* bounded by the buffer */
	}
	kv->soff = malloc((kv->n + 1) * sizeof *kv->soff);
	kv->str = malloc(total ? total : 1);
	if (!kv->soff || !kv->str)
		return fail(c, ENOMEM, "out of memory");
	c->off = start;
	size_t at = 0;
	for (uint64_t i = 0; i < kv->n; i++) {
		const uint8_t *s;
		size_t len;
		take_str(c, GL_GGUF_MAX_STRING, &s, &len, "a string in an array"); /* read above */
		kv->soff[i] = at;
		memcpy(kv->str + at, s, len);
		kv->str[at + len] = 0;
		at += len + 1;
	}
	kv->soff[kv->n] = at;
	return 0;
}

static int parse_array(cur_t *c, struct kv *kv)
{
	uint32_t et;
	if (take_u32(c, &et, "an array's element type") < 0 ||
	    take_u64(c, &kv->n, "an array's length") < 0)
		return -1;
	if (et >= NVTYPES || et == GL_GGUF_ARRAY)
		return fail(c, EINVAL, "key '%s': unknown or nested array element type %" PRIu32,
			    kv->key, et);
	kv->etype = (gl_gguf_vtype_t)et;
	if (kv->n > GL_GGUF_MAX_ARRAY)
		return fail(c, EFBIG, "key '%s': array of %" PRIu64 " elements, more than %u",
			    kv->key, kv->n, GL_GGUF_MAX_ARRAY);
	if (et == GL_GGUF_STRING)
		return parse_string_array(c, kv);
	const uint8_t *p;
	kv->raw = c->off;
	return take(c, (size_t)kv->n * vtypes[et].size, &p, "an array's elements");
}

static int parse_kv(cur_t *c, struct kv *kv)
{
	uint32_t t;
	if (!(kv->key = take_name(c, GL_GGUF_MAX_STRING, "a key")))
		return -1;
	if (take_u32(c, &t, "a value type") < 0)
		return -1;
	if (t >= NVTYPES)
		return fail(c, EINVAL, "key '%s': unknown value type %" PRIu32, kv->key, t);
	kv->type = (gl_gguf_vtype_t)t;
	if (t == GL_GGUF_ARRAY)
		return parse_array(c, kv);
	if (t == GL_GGUF_STRING) {
		const uint8_t *s;
		if (take_str(c, GL_GGUF_MAX_STRING, &s, &kv->slen, "a string value") < 0)
			return -1;
		if (!(kv->str = malloc(kv->slen + 1)))
			return fail(c, ENOMEM, "out of memory");
		memcpy(kv->str, s, kv->slen);
		kv->str[kv->slen] = 0;
		return 0;
	}
	const uint8_t *p;
	kv->raw = c->off;
	return take(c, vtypes[t].size, &p, "a value");
}

static int parse_tensor(cur_t *c, gl_tensor_t *t)
{
	uint32_t nd, type;
	char *name = take_name(c, GL_GGUF_MAX_NAME, "a tensor name");
	if (!(t->name = name) || take_u32(c, &nd, "a tensor's dimension count") < 0)
		return -1;
	if (nd < 1 || nd > GL_GGUF_MAX_DIMS)
		return fail(c, EINVAL, "tensor '%s': %" PRIu32 " dimensions (1 to %d)", name, nd,
			    GL_GGUF_MAX_DIMS);
	t->ndims = (int)nd;
	t->nelem = 1;
	for (int i = 0; i < t->ndims; i++) {
		if (take_u64(c, &t->dims[i], "a tensor dimension") < 0)
			return -1;
		if (t->dims[i] == 0 || __builtin_mul_overflow(t->nelem, t->dims[i], &t->nelem) ||
		    t->nelem > (uint64_t)INT64_MAX)
			return fail(c, EINVAL,
				    "tensor '%s': dimension %d is %" PRIu64
				    " (zero, or the product overflows)",
				    name, i, t->dims[i]);
	}
	for (int i = t->ndims; i < GL_GGUF_MAX_DIMS; i++)
		t->dims[i] = 1;
	if (take_u32(c, &type, "a tensor type") < 0 ||
	    take_u64(c, &t->offset, "a tensor offset") < 0)
		return -1;
	if (type > INT32_MAX || !gk_qtype_valid((int)type))
		return fail(c, EINVAL, "tensor '%s': unknown tensor type %" PRIu32, name, type);
	t->type = (gk_qtype_t)type;
	uint64_t block = (uint64_t)gk_qtype_block(t->type), row, bytes;
	if (t->dims[0] % block)
		return fail(c, EINVAL,
			    "tensor '%s': a row of %" PRIu64 " values is not whole %s blocks", name,
			    t->dims[0], gk_qtype_name(t->type));
	if (__builtin_mul_overflow(t->dims[0] / block, (uint64_t)gk_qtype_block_bytes(t->type),
				   &row) ||
	    __builtin_mul_overflow(row, t->nelem / t->dims[0], &bytes) || bytes > SIZE_MAX)
		return fail(c, EINVAL, "tensor '%s': its size overflows", name);
	t->bytes = (size_t)bytes;
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp((*(struct kv *const *)a)->key, (*(struct kv *const *)b)->key);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp((*(gl_tensor_t *const *)a)->name, (*(gl_tensor_t *const *)b)->name);
}

static int cmp_offset(const void *a, const void *b)
{
	uint64_t x = (*(gl_tensor_t *const *)a)->offset, y = (*(gl_tensor_t *const *)b)->offset;
	return x < y ? -1 : x > y;
}

static struct kv *kv_find(const gl_gguf_t *g, const char *key)
{
	int lo = 0, hi = g->nkv - 1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2, r = strcmp(key, g->kv_by_key[mid]->key);
		if (r == 0)
			return g->kv_by_key[mid];
		if (r < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* The sorted indexes, refusing duplicates; general.alignment. */
static int index_kv(gl_gguf_t *g, cur_t *c)
{
	if (!(g->kv_by_key = malloc((size_t)(g->nkv ? g->nkv : 1) * sizeof *g->kv_by_key)))
		return fail(c, ENOMEM, "out of memory");
	for (int i = 0; i < g->nkv; i++)
		g->kv_by_key[i] = &g->kv[i];
	qsort(g->kv_by_key, (size_t)g->nkv, sizeof *g->kv_by_key, cmp_key);
	for (int i = 1; i < g->nkv; i++)
		if (strcmp(g->kv_by_key[i - 1]->key, g->kv_by_key[i]->key) == 0)
			return fail(c, EINVAL, "key '%s' appears twice", g->kv_by_key[i]->key);
	g->alignment = DEFAULT_ALIGNMENT;
	struct kv *a = kv_find(g, "general.alignment");
	if (a) {
		int neg;
		uint64_t mag;
		if (a->type == GL_GGUF_ARRAY ||
		    int_value(a->type, g->buf + a->raw, &neg, &mag) < 0 || neg || mag == 0 ||
		    (mag & (mag - 1)) || mag > MAX_ALIGNMENT)
			return fail(c, EINVAL, "general.alignment is not a power of two up to %u",
				    MAX_ALIGNMENT);
		g->alignment = mag;
	}
	return 0;
}

/* Every tensor aligned, inside the file, none overlapping another; names unique. */
static int check_tensors(gl_gguf_t *g, cur_t *c)
{
	size_t n = (size_t)(g->ntensors ? g->ntensors : 1);
	gl_tensor_t **by_off = malloc(n * sizeof *by_off);
	g->t_by_name = malloc(n * sizeof *g->t_by_name);
	if (!by_off || !g->t_by_name) {
		free(by_off);
		return fail(c, ENOMEM, "out of memory");
	}
	int rc = 0;
	for (int i = 0; i < g->ntensors; i++)
		g->t_by_name[i] = by_off[i] = &g->t[i];
	for (int i = 0; i < g->ntensors && rc == 0; i++) {
		gl_tensor_t *t = &g->t[i];
		uint64_t end;
		if (t->offset % g->alignment)
			rc = fail(c, EINVAL,
				  "tensor '%s': offset %" PRIu64 " is not aligned to %" PRIu64,
				  t->name, t->offset, g->alignment);
		else if (__builtin_add_overflow(g->data_offset, t->offset, &end) ||
			 __builtin_add_overflow(end, (uint64_t)t->bytes, &end) ||
			 end > g->file_size)
			rc = fail(c, EINVAL,
				  "tensor '%s': %zu bytes at offset %" PRIu64
				  " lie past the end of the file (%" PRIu64 " bytes)",
				  t->name, t->bytes, t->offset, g->file_size);
		else
			t->offset += g->data_offset;
	}
	if (rc == 0) {
		qsort(g->t_by_name, (size_t)g->ntensors, sizeof *g->t_by_name, cmp_name);
		qsort(by_off, (size_t)g->ntensors, sizeof *by_off, cmp_offset);
	}
	for (int i = 1; i < g->ntensors && rc == 0; i++) {
		if (strcmp(g->t_by_name[i - 1]->name, g->t_by_name[i]->name) == 0)
			rc = fail(c, EINVAL, "tensor '%s' appears twice", g->t_by_name[i]->name);
		else if (by_off[i - 1]->offset + by_off[i - 1]->bytes > by_off[i]->offset)
			rc = fail(c, EINVAL, "tensors '%s' and '%s' overlap", by_off[i - 1]->name,
				  by_off[i]->name);
	}
	free(by_off);
	return rc;
}

static int parse_counts(gl_gguf_t *g, cur_t *c, uint64_t *nt, uint64_t *nkv)
{
	const uint8_t *magic;
	if (take(c, 4, &magic, "the magic") < 0)
		return -1;
	if (memcmp(magic, GGUF_MAGIC, 4) != 0)
		return fail(c, EINVAL, "not a GGUF file (no magic)");
	if (take_u32(c, &g->version, "the version") < 0)
		return -1;
	if (g->version != 2 && g->version != 3)
		return fail(c, EINVAL, "GGUF version %" PRIu32 " is not supported (2 and 3 are)",
			    g->version);
	if (take_u64(c, nt, "the tensor count") < 0 || take_u64(c, nkv, "the key count") < 0)
		return -1;
	if (*nt > GL_GGUF_MAX_TENSORS)
		return fail(c, EFBIG, "%" PRIu64 " tensors, more than %d", *nt,
			    GL_GGUF_MAX_TENSORS);
	if (*nkv > GL_GGUF_MAX_KV)
		return fail(c, EFBIG, "%" PRIu64 " keys, more than %d", *nkv, GL_GGUF_MAX_KV);
	/* each key and tensor takes some bytes: a short file cannot make us allocate much */
	if (*nkv > (c->len - c->off) / 13 || *nt > (c->len - c->off - *nkv * 13) / 28)
		return c->short_buf = 1, fail(c, EINVAL,
					      "truncated file: %" PRIu64 " keys and %" PRIu64
					      " tensors do not fit in %zu bytes",
					      *nkv, *nt, c->len);
	return 0;
}

/* Parse the buffer G->buf[0..G->buflen) of a file of G->file_size bytes. */
static int parse(gl_gguf_t *g, cur_t *c)
{
	uint64_t nt = 0, nkv = 0; /* set by parse_counts (gcc -O3 cannot see it) */
	c->p = g->buf;
	c->len = g->buflen < GL_GGUF_MAX_META ? g->buflen : GL_GGUF_MAX_META;
	if (parse_counts(g, c, &nt, &nkv) < 0)
		return -1;
	g->kv = calloc((size_t)(nkv ? nkv : 1), sizeof *g->kv);
	g->t = calloc((size_t)(nt ? nt : 1), sizeof *g->t);
	if (!g->kv || !g->t)
		return fail(c, ENOMEM, "out of memory");
	for (uint64_t i = 0; i < nkv; i++, g->nkv++)
		if (parse_kv(c, &g->kv[i]) < 0) {
			g->nkv++; /* freed with the others */
			return -1;
		}
	if (index_kv(g, c) < 0)
		return -1;
	for (uint64_t i = 0; i < nt; i++, g->ntensors++)
		if (parse_tensor(c, &g->t[i]) < 0) {
			g->ntensors++;
			return -1;
		}
	g->data_offset = (c->off + g->alignment - 1) / g->alignment * g->alignment;
	return check_tensors(g, c);
}

/* parse(), saying EFBIG where the metadata runs past GL_GGUF_MAX_META */
static int parse_bounded(gl_gguf_t *g, cur_t *c)
{
	if (parse(g, c) == 0)
		return 0;
	if (c->short_buf && g->buflen > GL_GGUF_MAX_META)
		return fail(c, EFBIG, "the header and metadata are larger than %u bytes",
			    GL_GGUF_MAX_META);
	return -1;
}

static void free_parsed(gl_gguf_t *g)
{
	for (int i = 0; i < g->nkv; i++) {
		free(g->kv[i].key);
		free(g->kv[i].str);
		free(g->kv[i].soff);
	}
	for (int i = 0; i < g->ntensors; i++)
		free((char *)g->t[i].name);
	free(g->kv);
	free(g->kv_by_key);
	free(g->t);
	free(g->t_by_name);
	g->kv = NULL;
	g->kv_by_key = NULL;
	g->t = NULL;
	g->t_by_name = NULL;
	g->nkv = g->ntensors = 0;
}

void gl_gguf_close(gl_gguf_t **gp)
{
	if (!gp || !*gp)
		return;
	gl_gguf_t *g = *gp;
	free_parsed(g);
	if (g->mode == MODE_MAP && g->buf)
		munmap((void *)g->buf, g->buflen);
	if (g->mode == MODE_HEADER)
		free((void *)g->buf);
	if (g->fd >= 0)
		close(g->fd);
	free(g);
	*gp = NULL;
}

static gl_gguf_t *handle(int mode)
{
	gl_gguf_t *g = calloc(1, sizeof *g);
	if (g) {
		g->mode = mode;
		g->fd = -1;
	}
	return g;
}

/* ERR's text after "'PATH': " (PATH NULL: as it is). Keeps errno. */
static void prefix_path(gp_error_t *err, const char *path)
{
	if (err && path) {
		char text[sizeof err->text];
		snprintf(text, sizeof text, "%s", err->text);
		gp_errprintf(err, "'%s': %s", path, text);
	}
}

/* Parse G's buffer; on failure close G, keeping errno, prefixing ERR's text with WHERE. */
static gl_gguf_t *finish(gl_gguf_t *g, const char *where, gp_error_t *err)
{
	cur_t c = {.err = err};
	if (parse_bounded(g, &c) == 0) {
		if (g->mode != MODE_HEADER)
			for (int i = 0; i < g->ntensors; i++)
				g->t[i].data = g->buf + g->t[i].offset;
		return g;
	}
	int e = errno;
	prefix_path(err, where);
	gl_gguf_close(&g);
	errno = e;
	return NULL;
}

gl_gguf_t *gl_gguf_open_mem(const void *buf, size_t len, gp_error_t *err)
{
	gl_gguf_t *g = handle(MODE_MEM);
	if (!g)
		return errno = ENOMEM, gp_errprintf(err, "out of memory"), NULL;
	g->buf = buf;
	g->buflen = len;
	g->file_size = len;
	return finish(g, NULL, err);
}

static int open_file(const char *path, uint64_t *size, gp_error_t *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return gp_errprintf(err, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int e = errno ? errno : EINVAL;
		close(fd);
		errno = S_ISREG(st.st_mode) ? e : EINVAL;
		return gp_errprintf(err, "'%s' is not a regular file", path);
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

gl_gguf_t *gl_gguf_open(const char *path, gp_error_t *err)
{
	uint64_t size;
	int fd = open_file(path, &size, err);
	if (fd < 0)
		return NULL;
	gl_gguf_t *g = handle(MODE_MAP);
	if (!g) {
		close(fd);
		return errno = ENOMEM, gp_errprintf(err, "out of memory"), NULL;
	}
	if (size == 0 || size > SIZE_MAX) {
		close(fd);
		free(g);
		return errno = EINVAL, gp_errprintf(err, "'%s': truncated file (empty)", path),
		       NULL;
	}
	void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
	int e = errno;
	close(fd);
	if (m == MAP_FAILED) {
		free(g);
		errno = e;
		return gp_errprintf(err, "cannot map '%s': %s", path, strerror(e)), NULL;
	}
	g->buf = m;
	g->buflen = (size_t)size;
	g->file_size = size;
	return finish(g, path, err);
}

/* Read the file's first LEN bytes into a new buffer. */
static uint8_t *read_prefix(int fd, size_t len, const char *path, gp_error_t *err)
{
	uint8_t *b = malloc(len ? len : 1);
	if (!b)
		return errno = ENOMEM, gp_errprintf(err, "out of memory"), NULL;
	for (size_t got = 0; got < len;) {
		ssize_t r = pread(fd, b + got, len - got, (off_t)got);
		if (r <= 0) {
			int e = r < 0 ? errno : EIO;
			free(b);
			errno = e;
			return gp_errprintf(err, "cannot read '%s': %s", path, strerror(e)), NULL;
		}
		got += (size_t)r;
	}
	return b;
}

gl_gguf_t *gl_gguf_open_header(const char *path, gp_error_t *err)
{
	uint64_t size;
	int fd = open_file(path, &size, err);
	if (fd < 0)
		return NULL;
	uint64_t limit =
	    size < (uint64_t)GL_GGUF_MAX_META + 1 ? size : (uint64_t)GL_GGUF_MAX_META + 1;
	size_t want = HEADER_FIRST_READ < limit ? HEADER_FIRST_READ : (size_t)limit;
	for (;;) {
		gl_gguf_t *g = handle(MODE_HEADER);
		if (!g) {
			close(fd);
			errno = ENOMEM;
			return gp_errprintf(err, "out of memory"), NULL;
		}
		if (!(g->buf = read_prefix(fd, want, path, err))) {
			int e = errno;
			free(g);
			close(fd);
			errno = e;
			return NULL;
		}
		g->buflen = want;
		g->file_size = size;
		cur_t c = {.err = err};
		if (parse_bounded(g, &c) == 0) {
			g->fd = fd;
			return g;
		}
		/* a parse that ran off a prefix shorter than the file: read twice as much */
		int e = errno, again = c.short_buf && want < limit;
		gl_gguf_close(&g);
		if (!again) {
			close(fd);
			prefix_path(err, path);
			errno = e;
			return NULL;
		}
		want = (uint64_t)want * 2 < limit ? want * 2 : (size_t)limit;
	}
}

/* ---- accessors ---- */

uint32_t gl_gguf_version(const gl_gguf_t *g)
{
	return g->version;
}

uint64_t gl_gguf_file_size(const gl_gguf_t *g)
{
	return g->file_size;
}

uint64_t gl_gguf_data_offset(const gl_gguf_t *g)
{
	return g->data_offset;
}

int gl_gguf_ntensors(const gl_gguf_t *g)
{
	return g->ntensors;
}

const gl_tensor_t *gl_gguf_tensor(const gl_gguf_t *g, int i)
{
	if (i < 0 || i >= g->ntensors)
		return errno = ENOENT, NULL;
	return &g->t[i];
}

const gl_tensor_t *gl_gguf_find(const gl_gguf_t *g, const char *name)
{
	int lo = 0, hi = g->ntensors - 1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2, r = strcmp(name, g->t_by_name[mid]->name);
		if (r == 0)
			return g->t_by_name[mid];
		if (r < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	errno = ENOENT;
	return NULL;
}

int gl_gguf_read(const gl_gguf_t *g, const gl_tensor_t *t, void *dst, gp_error_t *err)
{
	if (g->mode != MODE_HEADER) {
		memcpy(dst, g->buf + t->offset, t->bytes);
		return 0;
	}
	for (size_t got = 0; got < t->bytes;) {
		ssize_t r =
		    pread(g->fd, (uint8_t *)dst + got, t->bytes - got, (off_t)(t->offset + got));
		if (r <= 0) {
			errno = r < 0 ? errno : EIO;
			return gp_errprintf(err, "tensor '%s': cannot read: %s", t->name,
					    r < 0 ? strerror(errno)
						  : "the file is shorter than it was");
		}
		got += (size_t)r;
	}
	return 0;
}

int gl_gguf_nkv(const gl_gguf_t *g)
{
	return g->nkv;
}

const char *gl_gguf_key(const gl_gguf_t *g, int i)
{
	if (i < 0 || i >= g->nkv)
		return errno = ENOENT, NULL;
	return g->kv[i].key;
}

/* KEY's entry, of type T (or any type with T negative); errno ENOENT / EINVAL. */
static const struct kv *get(const gl_gguf_t *g, const char *key, int t)
{
	const struct kv *kv = kv_find(g, key);
	if (!kv)
		return errno = ENOENT, NULL;
	if (t >= 0 && (int)kv->type != t)
		return errno = EINVAL, NULL;
	return kv;
}

int gl_gguf_type(const gl_gguf_t *g, const char *key, gl_gguf_vtype_t *t)
{
	const struct kv *kv = get(g, key, -1);
	if (!kv)
		return -1;
	*t = kv->type;
	return 0;
}

static int scalar_int(const gl_gguf_t *g, const char *key, int *neg, uint64_t *mag)
{
	const struct kv *kv = get(g, key, -1);
	if (!kv)
		return -1;
	if (int_value(kv->type, g->buf + kv->raw, neg, mag) < 0)
		return errno = EINVAL, -1;
	return 0;
}

int gl_gguf_get_u32(const gl_gguf_t *g, const char *key, uint32_t *v)
{
	int neg;
	uint64_t mag;
	if (scalar_int(g, key, &neg, &mag) < 0)
		return -1;
	if (neg || mag > UINT32_MAX)
		return errno = EINVAL, -1;
	*v = (uint32_t)mag;
	return 0;
}

int gl_gguf_get_i64(const gl_gguf_t *g, const char *key, int64_t *v)
{
	int neg;
	uint64_t mag;
	if (scalar_int(g, key, &neg, &mag) < 0)
		return -1;
	if (to_i64(neg, mag, v) < 0)
		return errno = EINVAL, -1;
	return 0;
}

static int narrow_f32(double d, float *v)
{
	if (isfinite(d) && fabs(d) > FLT_MAX)
		return errno = EINVAL, -1;
	*v = (float)d;
	return 0;
}

int gl_gguf_get_f32(const gl_gguf_t *g, const char *key, float *v)
{
	const struct kv *kv = get(g, key, -1);
	double d;
	if (!kv)
		return -1;
	if (float_value(kv->type, g->buf + kv->raw, &d) < 0)
		return errno = EINVAL, -1;
	return narrow_f32(d, v);
}

int gl_gguf_get_bool(const gl_gguf_t *g, const char *key, int *v)
{
	const struct kv *kv = get(g, key, GL_GGUF_BOOL);
	if (!kv)
		return -1;
	*v = g->buf[kv->raw] != 0;
	return 0;
}

int gl_gguf_get_str(const gl_gguf_t *g, const char *key, const char **s, size_t *len)
{
	const struct kv *kv = get(g, key, GL_GGUF_STRING);
	if (!kv)
		return -1;
	*s = kv->str;
	if (len)
		*len = kv->slen;
	return 0;
}

int gl_gguf_get_arr(const gl_gguf_t *g, const char *key, gl_gguf_vtype_t *et, uint64_t *n)
{
	const struct kv *kv = get(g, key, GL_GGUF_ARRAY);
	if (!kv)
		return -1;
	if (et)
		*et = kv->etype;
	if (n)
		*n = kv->n;
	return 0;
}

/* Element I of array KEY: its entry, EINVAL if out of range. */
static const struct kv *elem(const gl_gguf_t *g, const char *key, uint64_t i)
{
	const struct kv *kv = get(g, key, GL_GGUF_ARRAY);
	if (kv && i >= kv->n)
		return errno = EINVAL, NULL;
	return kv;
}

int gl_gguf_arr_str(const gl_gguf_t *g, const char *key, uint64_t i, const char **s, size_t *len)
{
	const struct kv *kv = elem(g, key, i);
	if (!kv)
		return -1;
	if (kv->etype != GL_GGUF_STRING)
		return errno = EINVAL, -1;
	*s = kv->str + kv->soff[i];
	if (len)
		*len = kv->soff[i + 1] - kv->soff[i] - 1;
	return 0;
}

int gl_gguf_arr_f32(const gl_gguf_t *g, const char *key, uint64_t i, float *v)
{
	const struct kv *kv = elem(g, key, i);
	if (!kv)
		return -1;
	const uint8_t *p = g->buf + kv->raw + (size_t)i * vtypes[kv->etype].size;
	double d;
	int neg;
	uint64_t mag;
	if (float_value(kv->etype, p, &d) == 0)
		return narrow_f32(d, v);
	if (int_value(kv->etype, p, &neg, &mag) == 0) {
		*v = neg ? -(float)mag : (float)mag;
		return 0;
	}
	return errno = EINVAL, -1;
}

int gl_gguf_arr_i64(const gl_gguf_t *g, const char *key, uint64_t i, int64_t *v)
{
	const struct kv *kv = elem(g, key, i);
	if (!kv)
		return -1;
	const uint8_t *p = g->buf + kv->raw + (size_t)i * vtypes[kv->etype].size;
	double d;
	int neg;
	uint64_t mag;
	if (int_value(kv->etype, p, &neg, &mag) == 0)
		return to_i64(neg, mag, v) < 0 ? (errno = EINVAL, -1) : 0;
	/* a float that is a whole number in range */
	if (float_value(kv->etype, p, &d) == 0 && d == floor(d) && d >= -0x1p63 && d < 0x1p63) {
		*v = (int64_t)d;
		return 0;
	}
	return errno = EINVAL, -1;
}
