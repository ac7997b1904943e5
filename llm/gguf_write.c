/* gguf_write.c - writing a GGUF v3 file (llm/gguf.h): metadata and tensor descriptions are
 * collected, then the file is written to PATH.tmp and renamed, each tensor's bytes copied from
 * the caller's or produced piece by piece by its FILL callback, so a model of many gigabytes
 * passes through a buffer of a few megabytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm/gguf.h"

#define DEFAULT_ALIGNMENT 32
#define MAX_ALIGNMENT	  (1u << 20)
#define FILL_CHUNK	  (4u << 20) /* bytes asked of FILL at once, about (whole rows) */

typedef struct {
	uint8_t *p;
	size_t len, cap;
	int oom;
} buf_t;

struct wkv {
	char *key;
	buf_t val; /* the type and value as they go in the file */
};

struct wtensor {
	char *name;
	int ndims;
	uint64_t dims[GL_GGUF_MAX_DIMS];
	gk_qtype_t type;
	size_t bytes, row;
	void *data; /* a copy, or NULL with FILL */
	gl_gguf_fill_f fill;
	void *arg;
	uint64_t offset; /* in the data section, set when written */
};

struct gl_gguf_writer {
	struct wkv *kv;
	int nkv, capkv;
	struct wtensor *t;
	int nt, capt;
	uint32_t alignment;
};

static void put(buf_t *b, const void *p, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *q = realloc(b->p, cap);
		if (!q) {
			b->oom = 1;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void put_le(buf_t *b, uint64_t v, size_t n)
{
	uint8_t x[8];
	for (size_t i = 0; i < n; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	put(b, x, n);
}

static void put_str(buf_t *b, const char *s)
{
	size_t n = strlen(s);
	put_le(b, n, 8);
	put(b, s, n);
}

gl_gguf_writer_t *gl_gguf_writer_create(void)
{
	gl_gguf_writer_t *w = calloc(1, sizeof *w);
	if (w)
		w->alignment = DEFAULT_ALIGNMENT;
	return w;
}

void gl_gguf_writer_destroy(gl_gguf_writer_t **wp)
{
	if (!wp || !*wp)
		return;
	gl_gguf_writer_t *w = *wp;
	for (int i = 0; i < w->nkv; i++) {
		free(w->kv[i].key);
		free(w->kv[i].val.p);
	}
	for (int i = 0; i < w->nt; i++) {
		free(w->t[i].name);
		free(w->t[i].data);
	}
	free(w->kv);
	free(w->t);
	free(w);
	*wp = NULL;
}

/* A new entry for KEY (not empty, not too long, not already set), its value still empty. */
static buf_t *new_kv(gl_gguf_writer_t *w, const char *key, gl_gguf_vtype_t t)
{
	if (!key || !*key || strlen(key) > GL_GGUF_MAX_STRING || w->nkv >= GL_GGUF_MAX_KV)
		return errno = EINVAL, NULL;
	/* readers take general.alignment as a u32 power of two (gl_gguf_set_u32 checks it) */
	if (strcmp(key, "general.alignment") == 0 && t != GL_GGUF_U32)
		return errno = EINVAL, NULL;
	for (int i = 0; i < w->nkv; i++)
		if (strcmp(w->kv[i].key, key) == 0)
			return errno = EEXIST, NULL;
	if (w->nkv == w->capkv) {
		int cap = w->capkv ? 2 * w->capkv : 16;
		struct wkv *kv = realloc(w->kv, (size_t)cap * sizeof *kv);
		if (!kv)
			return errno = ENOMEM, NULL;
		w->kv = kv;
		w->capkv = cap;
	}
	struct wkv *kv = &w->kv[w->nkv];
	memset(kv, 0, sizeof *kv);
	if (!(kv->key = strdup(key)))
		return errno = ENOMEM, NULL;
	w->nkv++;
	put_le(&kv->val, (uint64_t)t, 4);
	return &kv->val;
}

/* The entry just made is complete: keep it, or drop it when memory ran out. */
static int done_kv(gl_gguf_writer_t *w, buf_t *b)
{
	if (!b->oom)
		return 0;
	w->nkv--;
	free(w->kv[w->nkv].key);
	free(b->p);
	return errno = ENOMEM, -1;
}

int gl_gguf_set_str(gl_gguf_writer_t *w, const char *key, const char *v)
{
	if (strlen(v) > GL_GGUF_MAX_STRING)
		return errno = EINVAL, -1;
	buf_t *b = new_kv(w, key, GL_GGUF_STRING);
	if (!b)
		return -1;
	put_str(b, v);
	return done_kv(w, b);
}

static int set_scalar(gl_gguf_writer_t *w, const char *key, gl_gguf_vtype_t t, uint64_t bits,
		      size_t n)
{
	buf_t *b = new_kv(w, key, t);
	if (!b)
		return -1;
	put_le(b, bits, n);
	return done_kv(w, b);
}

int gl_gguf_set_u32(gl_gguf_writer_t *w, const char *key, uint32_t v)
{
	if (key && strcmp(key, "general.alignment") == 0) {
		if (v == 0 || (v & (v - 1)) || v > MAX_ALIGNMENT)
			return errno = EINVAL, -1;
		if (set_scalar(w, key, GL_GGUF_U32, v, 4) < 0)
			return -1;
		w->alignment = v;
		return 0;
	}
	return set_scalar(w, key, GL_GGUF_U32, v, 4);
}

int gl_gguf_set_i32(gl_gguf_writer_t *w, const char *key, int32_t v)
{
	return set_scalar(w, key, GL_GGUF_I32, (uint32_t)v, 4);
}

int gl_gguf_set_f32(gl_gguf_writer_t *w, const char *key, float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	return set_scalar(w, key, GL_GGUF_F32, u, 4);
}

int gl_gguf_set_bool(gl_gguf_writer_t *w, const char *key, int v)
{
	return set_scalar(w, key, GL_GGUF_BOOL, v != 0, 1);
}

static buf_t *new_arr(gl_gguf_writer_t *w, const char *key, gl_gguf_vtype_t et, uint64_t n)
{
	if (n > GL_GGUF_MAX_ARRAY)
		return errno = EINVAL, NULL;
	buf_t *b = new_kv(w, key, GL_GGUF_ARRAY);
	if (b) {
		put_le(b, (uint64_t)et, 4);
		put_le(b, n, 8);
	}
	return b;
}

int gl_gguf_set_arr_str(gl_gguf_writer_t *w, const char *key, const char *const *v, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (strlen(v[i]) > GL_GGUF_MAX_STRING)
			return errno = EINVAL, -1;
	buf_t *b = new_arr(w, key, GL_GGUF_STRING, n);
	if (!b)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		put_str(b, v[i]);
	return done_kv(w, b);
}

int gl_gguf_set_arr_f32(gl_gguf_writer_t *w, const char *key, const float *v, uint64_t n)
{
	buf_t *b = new_arr(w, key, GL_GGUF_F32, n);
	if (!b)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t u;
		memcpy(&u, &v[i], 4);
		put_le(b, u, 4);
	}
	return done_kv(w, b);
}

int gl_gguf_set_arr_i32(gl_gguf_writer_t *w, const char *key, const int32_t *v, uint64_t n)
{
	buf_t *b = new_arr(w, key, GL_GGUF_I32, n);
	if (!b)
		return -1;
	for (uint64_t i = 0; i < n; i++)
		put_le(b, (uint32_t)v[i], 4);
	return done_kv(w, b);
}

/* The bytes of a tensor of NDIMS DIMS of type T, and of one row; -1 (EINVAL) if the shape is
 * not one a reader accepts. */
static int tensor_size(int ndims, const uint64_t *dims, gk_qtype_t t, size_t *bytes, size_t *row)
{
	if (ndims < 1 || ndims > GL_GGUF_MAX_DIMS || !gk_qtype_valid((int)t))
		return errno = EINVAL, -1;
	uint64_t block = (uint64_t)gk_qtype_block(t), n = 1, r, b;
	for (int i = 0; i < ndims; i++)
		if (dims[i] == 0 || __builtin_mul_overflow(n, dims[i], &n))
			return errno = EINVAL, -1;
	if (dims[0] % block ||
	    __builtin_mul_overflow(dims[0] / block, gk_qtype_block_bytes(t), &r) ||
	    __builtin_mul_overflow(r, n / dims[0], &b) || b > SIZE_MAX)
		return errno = EINVAL, -1;
	*bytes = (size_t)b;
	*row = (size_t)r;
	return 0;
}

int gl_gguf_add_tensor(gl_gguf_writer_t *w, const char *name, int ndims, const uint64_t *dims,
		       gk_qtype_t t, const void *data, gl_gguf_fill_f fill, void *arg)
{
	size_t bytes, row;
	if (!name || !*name || strlen(name) > GL_GGUF_MAX_NAME || (!data && !fill) ||
	    w->nt >= GL_GGUF_MAX_TENSORS || tensor_size(ndims, dims, t, &bytes, &row) < 0)
		return errno = EINVAL, -1;
	for (int i = 0; i < w->nt; i++)
		if (strcmp(w->t[i].name, name) == 0)
			return errno = EEXIST, -1;
	if (w->nt == w->capt) {
		int cap = w->capt ? 2 * w->capt : 16;
		struct wtensor *nt = realloc(w->t, (size_t)cap * sizeof *nt);
		if (!nt)
			return errno = ENOMEM, -1;
		w->t = nt;
		w->capt = cap;
	}
	struct wtensor *x = &w->t[w->nt];
	memset(x, 0, sizeof *x);
	x->name = strdup(name);
	x->data = data ? malloc(bytes) : NULL;
	if (!x->name || (data && !x->data)) {
		free(x->name);
		free(x->data);
		return errno = ENOMEM, -1;
	}
	if (data)
		memcpy(x->data, data, bytes);
	x->ndims = ndims;
	memcpy(x->dims, dims, (size_t)ndims * sizeof *dims);
	x->type = t;
	x->bytes = bytes;
	x->row = row;
	x->fill = fill;
	x->arg = arg;
	w->nt++;
	return 0;
}

/* The header, metadata and tensor descriptions, padded to the alignment; sets the offsets. */
static int header(gl_gguf_writer_t *w, buf_t *b)
{
	put(b, "GGUF", 4);
	put_le(b, 3, 4);
	put_le(b, (uint64_t)w->nt, 8);
	put_le(b, (uint64_t)w->nkv, 8);
	for (int i = 0; i < w->nkv; i++) {
		put_str(b, w->kv[i].key);
		put(b, w->kv[i].val.p, w->kv[i].val.len);
	}
	uint64_t off = 0;
	for (int i = 0; i < w->nt; i++) {
		struct wtensor *x = &w->t[i];
		off = (off + w->alignment - 1) / w->alignment * w->alignment;
		x->offset = off;
		off += x->bytes;
		put_str(b, x->name);
		put_le(b, (uint64_t)x->ndims, 4);
		for (int d = 0; d < x->ndims; d++)
			put_le(b, x->dims[d], 8);
		put_le(b, (uint64_t)x->type, 4);
		put_le(b, x->offset, 8);
	}
	static const uint8_t zero[64];
	for (size_t pad = (w->alignment - b->len % w->alignment) % w->alignment; pad && !b->oom;) {
		size_t k = pad < sizeof zero ? pad : sizeof zero;
		put(b, zero, k);
		pad -= k;
	}
	return b->oom ? (errno = ENOMEM, -1) : 0;
}

static int write_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t r = write(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p = (const uint8_t *)p + r;
		n -= (size_t)r;
	}
	return 0;
}

static int write_zeros(int fd, size_t n)
{
	static const uint8_t zero[4096];
	while (n) {
		size_t k = n < sizeof zero ? n : sizeof zero;
		if (write_all(fd, zero, k) < 0)
			return -1;
		n -= k;
	}
	return 0;
}

/* Tensor X's bytes: its copy, or FILL asked for whole rows, FILL_CHUNK bytes or so at a time. */
static int write_tensor(int fd, struct wtensor *x, uint8_t **chunk, size_t *cap, gp_error_t *err)
{
	if (x->data)
		return write_all(fd, x->data, x->bytes) < 0
			   ? gp_errprintf(err, "cannot write: %s", strerror(errno))
			   : 0;
	size_t rows = FILL_CHUNK / x->row ? FILL_CHUNK / x->row : 1, step = rows * x->row;
	if (step > *cap) {
		uint8_t *c = realloc(*chunk, step);
		if (!c)
			return errno = ENOMEM, gp_errprintf(err, "out of memory");
		*chunk = c;
		*cap = step;
	}
	for (size_t done = 0; done < x->bytes; done += step) {
		size_t n = x->bytes - done < step ? x->bytes - done : step;
		if (x->fill(x->arg, *chunk, n) < 0) {
			if (!errno)
				errno = EIO;
			return gp_errprintf(err, "tensor '%s': its data could not be made: %s",
					    x->name, strerror(errno));
		}
		if (write_all(fd, *chunk, n) < 0)
			return gp_errprintf(err, "cannot write: %s", strerror(errno));
	}
	return 0;
}

static int write_body(gl_gguf_writer_t *w, int fd, gp_error_t *err)
{
	buf_t b = {0};
	if (header(w, &b) < 0) {
		free(b.p);
		return gp_errprintf(err, "out of memory");
	}
	int rc = write_all(fd, b.p, b.len) < 0
		     ? gp_errprintf(err, "cannot write: %s", strerror(errno))
		     : 0;
	free(b.p);
	uint8_t *chunk = NULL;
	size_t cap = 0;
	uint64_t at = 0;
	for (int i = 0; i < w->nt && rc == 0; i++) {
		struct wtensor *x = &w->t[i];
		if (write_zeros(fd, (size_t)(x->offset - at)) < 0)
			rc = gp_errprintf(err, "cannot write: %s", strerror(errno));
		else
			rc = write_tensor(fd, x, &chunk, &cap, err);
		at = x->offset + x->bytes;
	}
	free(chunk);
	return rc;
}

int gl_gguf_write(gl_gguf_writer_t *w, const char *path, gp_error_t *err)
{
	char tmp[4096];
	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
		return errno = ENAMETOOLONG, gp_errprintf(err, "path '%s' is too long", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return gp_errprintf(err, "cannot create '%s': %s", tmp, strerror(errno));
	int rc = write_body(w, fd, err);
	if (rc == 0 && fsync(fd) < 0)
		rc = gp_errprintf(err, "cannot write '%s': %s", tmp, strerror(errno));
	int e = errno;
	if (close(fd) < 0 && rc == 0)
		rc = gp_errprintf(err, "cannot write '%s': %s", tmp, strerror(e = errno));
	if (rc == 0 && rename(tmp, path) < 0)
		rc = gp_errprintf(err, "cannot rename '%s' to '%s': %s", tmp, path,
				  strerror(e = errno));
	if (rc < 0) {
		unlink(tmp);
		errno = e;
	}
	return rc;
}
