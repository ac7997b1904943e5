/* test_gguf: GGUF files (llm/gguf.c, llm/gguf_write.c). Properties: what the writer writes
 * reads back equal, every metadata type and every tensor type (the types the writer has no
 * setter for come from a file built byte by byte here); the getters convert integers of any
 * width where the value fits and refuse where not; gl_gguf_open and gl_gguf_open_header +
 * gl_gguf_read give the same bytes; a FILL callback is asked for whole rows, in order; every
 * malformed file (truncated at each byte, huge lengths and counts, overflowing dims, tensors
 * past the end or overlapping, bad alignment, unknown types, version 1, duplicates) is
 * refused with a message and errno, never a crash. argv[1]: a scratch directory. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm/gguf.h"
#include "llm/test/gguf_check.h"

static char dir[256];

/* ---- a file built byte by byte ---- */
typedef struct {
	uint8_t b[1 << 16];
	size_t n;
} bytes_t;

static void le(bytes_t *b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		b->b[b->n++] = (uint8_t)(v >> (8 * i));
}

static void str(bytes_t *b, const char *s)
{
	le(b, strlen(s), 8);
	memcpy(b->b + b->n, s, strlen(s));
	b->n += strlen(s);
}

static void head(bytes_t *b, uint32_t version, uint64_t nt, uint64_t nkv)
{
	b->n = 0;
	memcpy(b->b, "GGUF", 4);
	b->n = 4;
	le(b, version, 4);
	le(b, nt, 8);
	le(b, nkv, 8);
}

static void kv_int(bytes_t *b, const char *key, gl_gguf_vtype_t t, uint64_t v, int n)
{
	str(b, key);
	le(b, t, 4);
	le(b, v, n);
}

static void tinfo(bytes_t *b, const char *name, int nd, const uint64_t *dims, uint32_t t,
		  uint64_t off)
{
	str(b, name);
	le(b, (uint64_t)nd, 4);
	for (int i = 0; i < nd; i++)
		le(b, dims[i], 8);
	le(b, t, 4);
	le(b, off, 8);
}

static void pad(bytes_t *b, size_t align)
{
	while (b->n % align)
		b->b[b->n++] = 0;
}

static gl_gguf_t *open_bytes(const bytes_t *b, gp_error_t *err)
{
	memset(err, 0, sizeof *err);
	return gl_gguf_open_mem(b->b, b->n, err);
}

/* ---- the writer and the reader ---- */

static const gk_qtype_t all_types[] = {GK_Q_F32,  GK_Q_F16,  GK_Q_BF16, GK_Q_Q8_0,
				       GK_Q_Q4_0, GK_Q_Q4_K, GK_Q_Q6_K};
#define NTYPES (sizeof all_types / sizeof all_types[0])

struct fill_state {
	uint8_t seed;
	size_t at, row, calls;
};

static int fill_pattern(void *arg, void *dst, size_t bytes)
{
	struct fill_state *s = arg;
	CHECK(bytes % s->row == 0); /* whole rows */
	for (size_t i = 0; i < bytes; i++)
		((uint8_t *)dst)[i] = (uint8_t)(s->seed + (s->at + i) * 7);
	s->at += bytes;
	s->calls++;
	return 0;
}

static void pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

static void write_sample(const char *path, struct fill_state *fs)
{
	gp_error_t err = {{0}};
	gl_gguf_writer_t *w = gl_gguf_writer_create();
	CHECK(w);
	const char *strs[] = {"<unk>", "", "héllo", "▁the"};
	float fl[] = {1.5f, -2.25f, 0.0f};
	int32_t in[] = {-7, 0, 2147483647};
	CHECK(gl_gguf_set_str(w, "general.architecture", "llama") == 0);
	CHECK(gl_gguf_set_u32(w, "general.alignment", 64) == 0);
	CHECK(gl_gguf_set_u32(w, "u32", 4000000000u) == 0);
	CHECK(gl_gguf_set_i32(w, "i32", -5) == 0);
	CHECK(gl_gguf_set_f32(w, "f32", 1e-5f) == 0);
	CHECK(gl_gguf_set_bool(w, "bool", 1) == 0);
	CHECK(gl_gguf_set_arr_str(w, "strs", strs, 4) == 0);
	CHECK(gl_gguf_set_arr_f32(w, "fl", fl, 3) == 0);
	CHECK(gl_gguf_set_arr_i32(w, "in", in, 3) == 0);
	CHECK(gl_gguf_set_arr_i32(w, "empty", in, 0) == 0);
	CHECK(gl_gguf_set_u32(w, "u32", 1) < 0 && errno == EEXIST);
	CHECK(gl_gguf_set_u32(w, "", 1) < 0 && errno == EINVAL);
	CHECK(gl_gguf_set_u32(w, "general.alignment", 48) < 0 && errno == EINVAL);
	CHECK(gl_gguf_set_u32(w, "general.alignment", 128) < 0 && errno == EEXIST);
	CHECK(gl_gguf_set_str(w, "general.alignment", "64") < 0 && errno == EINVAL);
	for (size_t i = 0; i < NTYPES; i++) {
		uint64_t dims[2] = {(uint64_t)gk_qtype_block(all_types[i]) * 2, 3};
		size_t n = gk_qtype_row_bytes(all_types[i], dims[0]) * 3;
		uint8_t *data = malloc(n);
		pattern(data, n, (uint8_t)i);
		char name[32];
		snprintf(name, sizeof name, "t.%s", gk_qtype_name(all_types[i]));
		CHECK(gl_gguf_add_tensor(w, name, 2, dims, all_types[i], data, NULL, NULL) == 0);
		CHECK(gl_gguf_add_tensor(w, name, 2, dims, all_types[i], data, NULL, NULL) < 0 &&
		      errno == EEXIST);
		free(data);
	}
	/* 1.5 MiB of rows of 1000 f32: FILL is asked several times for whole rows */
	uint64_t big[2] = {1000, 1500};
	fs->seed = 99;
	fs->row = 4000;
	CHECK(gl_gguf_add_tensor(w, "filled", 2, big, GK_Q_F32, NULL, fill_pattern, fs) == 0);
	uint64_t bad[2] = {33, 1};
	CHECK(gl_gguf_add_tensor(w, "bad", 2, bad, GK_Q_Q4_0, NULL, fill_pattern, fs) < 0 &&
	      errno == EINVAL);
	CHECK(gl_gguf_write(w, path, &err) == 0);
	gl_gguf_writer_destroy(&w);
	CHECK(w == NULL);
}

static void check_meta(const gl_gguf_t *g)
{
	const char *s;
	size_t len;
	uint32_t u;
	int64_t i;
	float f;
	int b;
	uint64_t n;
	gl_gguf_vtype_t et;
	CHECK(gl_gguf_version(g) == 3);
	CHECK(gl_gguf_nkv(g) == 10);
	CHECK(strcmp(gl_gguf_key(g, 0), "general.architecture") == 0);
	CHECK(gl_gguf_get_str(g, "general.architecture", &s, &len) == 0 && len == 5 &&
	      strcmp(s, "llama") == 0);
	CHECK(gl_gguf_get_u32(g, "u32", &u) == 0 && u == 4000000000u);
	CHECK(gl_gguf_get_i64(g, "u32", &i) == 0 && i == 4000000000);
	CHECK(gl_gguf_get_i64(g, "i32", &i) == 0 && i == -5);
	CHECK(gl_gguf_get_u32(g, "i32", &u) < 0 && errno == EINVAL);
	CHECK(gl_gguf_get_f32(g, "f32", &f) == 0 && f == 1e-5f);
	CHECK(gl_gguf_get_f32(g, "u32", &f) < 0 && errno == EINVAL);
	CHECK(gl_gguf_get_bool(g, "bool", &b) == 0 && b == 1);
	CHECK(gl_gguf_get_u32(g, "nope", &u) < 0 && errno == ENOENT);
	CHECK(gl_gguf_get_str(g, "u32", &s, &len) < 0 && errno == EINVAL);
	CHECK(gl_gguf_get_arr(g, "strs", &et, &n) == 0 && et == GL_GGUF_STRING && n == 4);
	CHECK(gl_gguf_arr_str(g, "strs", 1, &s, &len) == 0 && len == 0 && s[0] == 0);
	CHECK(gl_gguf_arr_str(g, "strs", 2, &s, &len) == 0 && strcmp(s, "héllo") == 0);
	CHECK(gl_gguf_arr_str(g, "strs", 3, &s, &len) == 0 && strcmp(s, "▁the") == 0 && len == 6);
	CHECK(gl_gguf_arr_str(g, "strs", 4, &s, &len) < 0 && errno == EINVAL);
	CHECK(gl_gguf_arr_f32(g, "fl", 1, &f) == 0 && f == -2.25f);
	CHECK(gl_gguf_arr_i64(g, "fl", 1, &i) < 0 && errno == EINVAL); /* not whole */
	CHECK(gl_gguf_arr_i64(g, "fl", 2, &i) == 0 && i == 0);
	CHECK(gl_gguf_arr_i64(g, "in", 0, &i) == 0 && i == -7);
	CHECK(gl_gguf_arr_f32(g, "in", 2, &f) == 0 && f == 2147483647.0f);
	CHECK(gl_gguf_arr_str(g, "in", 0, &s, &len) < 0 && errno == EINVAL);
	CHECK(gl_gguf_get_arr(g, "empty", &et, &n) == 0 && et == GL_GGUF_I32 && n == 0);
	gl_gguf_vtype_t t;
	CHECK(gl_gguf_type(g, "bool", &t) == 0 && t == GL_GGUF_BOOL);
}

static void check_tensors(const gl_gguf_t *g, int mapped)
{
	CHECK(gl_gguf_ntensors(g) == (int)NTYPES + 1);
	CHECK(gl_gguf_data_offset(g) % 64 == 0);
	for (size_t i = 0; i < NTYPES; i++) {
		char name[32];
		snprintf(name, sizeof name, "t.%s", gk_qtype_name(all_types[i]));
		const gl_tensor_t *t = gl_gguf_find(g, name);
		CHECK(t && t == gl_gguf_tensor(g, (int)i));
		CHECK(t->type == all_types[i] && t->ndims == 2 && t->dims[1] == 3);
		CHECK(t->nelem == t->dims[0] * 3);
		CHECK(t->bytes == gk_qtype_row_bytes(t->type, t->dims[0]) * 3);
		CHECK(t->offset % 64 == 0 && (t->data != NULL) == mapped);
		uint8_t *want = malloc(t->bytes), *got = malloc(t->bytes);
		pattern(want, t->bytes, (uint8_t)i);
		gp_error_t err;
		CHECK(gl_gguf_read(g, t, got, &err) == 0);
		CHECK(memcmp(want, got, t->bytes) == 0);
		CHECK(!mapped || memcmp(want, t->data, t->bytes) == 0);
		free(want);
		free(got);
	}
	const gl_tensor_t *t = gl_gguf_find(g, "filled");
	CHECK(t && t->bytes == 6000000 && t->dims[0] == 1000 && t->dims[1] == 1500);
	uint8_t *want = malloc(t->bytes), *got = malloc(t->bytes);
	pattern(want, t->bytes, 99);
	CHECK(gl_gguf_read(g, t, got, NULL) == 0 && memcmp(want, got, t->bytes) == 0);
	free(want);
	free(got);
	CHECK(gl_gguf_find(g, "absent") == NULL && errno == ENOENT);
	CHECK(gl_gguf_tensor(g, (int)NTYPES + 1) == NULL);
}

static void round_trip(void)
{
	char path[512];
	struct fill_state fs = {0};
	gp_error_t err = {{0}};
	snprintf(path, sizeof path, "%s/rt.gguf", dir);
	write_sample(path, &fs);
	CHECK(fs.calls >= 2 && fs.at == 6000000);
	CHECK(access(path, F_OK) == 0);
	gl_gguf_t *g = gl_gguf_open(path, &err);
	if (!g)
		fprintf(stderr, "%s\n", err.text);
	CHECK(g);
	check_meta(g);
	check_tensors(g, 1);
	gl_gguf_close(&g);
	CHECK(g == NULL);
	gl_gguf_close(&g);
	g = gl_gguf_open_header(path, &err);
	CHECK(g);
	check_meta(g);
	check_tensors(g, 0);
	gl_gguf_close(&g);
	/* neither data nor FILL */
	gl_gguf_writer_t *w = gl_gguf_writer_create();
	uint64_t dims[1] = {32};
	CHECK(gl_gguf_add_tensor(w, "x", 1, dims, GK_Q_F32, NULL, NULL, NULL) < 0 &&
	      errno == EINVAL);
	snprintf(path, sizeof path, "%s/none.gguf", dir);
	CHECK(gl_gguf_write(w, path, &err) == 0); /* an empty model is a valid file */
	gl_gguf_writer_destroy(&w);
	g = gl_gguf_open(path, &err);
	CHECK(g && gl_gguf_ntensors(g) == 0 && gl_gguf_nkv(g) == 0);
	gl_gguf_close(&g);
}

static int fill_fail(void *arg, void *dst, size_t bytes)
{
	(void)arg;
	(void)dst;
	(void)bytes;
	errno = EIO;
	return -1;
}

static void failed_write(void)
{
	char path[512];
	gp_error_t err = {{0}};
	snprintf(path, sizeof path, "%s/fail.gguf", dir);
	gl_gguf_writer_t *w = gl_gguf_writer_create();
	uint64_t dims[1] = {32};
	CHECK(gl_gguf_add_tensor(w, "x", 1, dims, GK_Q_F32, NULL, fill_fail, NULL) == 0);
	CHECK(gl_gguf_write(w, path, &err) < 0 && errno == EIO);
	CHECK(strstr(err.text, "'x'") != NULL);
	CHECK(access(path, F_OK) < 0);
	char tmp[520];
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	CHECK(access(tmp, F_OK) < 0);
	gl_gguf_writer_destroy(&w);
}

/* Every metadata type, the integer getters' ranges, v2. */
static void all_vtypes(void)
{
	bytes_t *b = calloc(1, sizeof *b);
	gp_error_t err;
	head(b, 2, 0, 14);
	kv_int(b, "u8", GL_GGUF_U8, 200, 1);
	kv_int(b, "i8", GL_GGUF_I8, (uint8_t)-100, 1);
	kv_int(b, "u16", GL_GGUF_U16, 60000, 2);
	kv_int(b, "i16", GL_GGUF_I16, (uint16_t)-30000, 2);
	kv_int(b, "u64", GL_GGUF_U64, UINT64_MAX, 8);
	kv_int(b, "u64s", GL_GGUF_U64, 12345, 8);
	kv_int(b, "i64", GL_GGUF_I64, (uint64_t)INT64_MIN, 8);
	double d = 0.1;
	uint64_t db;
	memcpy(&db, &d, 8);
	kv_int(b, "f64", GL_GGUF_F64, db, 8);
	d = 1e300;
	memcpy(&db, &d, 8);
	kv_int(b, "f64big", GL_GGUF_F64, db, 8);
	kv_int(b, "boolarr", GL_GGUF_ARRAY, GL_GGUF_BOOL, 4);
	le(b, 2, 8);
	le(b, 1, 1);
	le(b, 0, 1);
	kv_int(b, "u16arr", GL_GGUF_ARRAY, GL_GGUF_U16, 4);
	le(b, 2, 8);
	le(b, 65535, 2);
	le(b, 7, 2);
	kv_int(b, "f64arr", GL_GGUF_ARRAY, GL_GGUF_F64, 4);
	le(b, 1, 8);
	d = -3.0;
	memcpy(&db, &d, 8);
	le(b, db, 8);
	kv_int(b, "i8arr", GL_GGUF_ARRAY, GL_GGUF_I8, 4);
	le(b, 1, 8);
	le(b, (uint8_t)-128, 1);
	kv_int(b, "bool", GL_GGUF_BOOL, 0, 1);
	gl_gguf_t *g = open_bytes(b, &err);
	CHECK(g && gl_gguf_version(g) == 2 && gl_gguf_nkv(g) == 14);
	uint32_t u;
	int64_t i;
	float f;
	int bo;
	CHECK(gl_gguf_get_u32(g, "u8", &u) == 0 && u == 200);
	CHECK(gl_gguf_get_i64(g, "i8", &i) == 0 && i == -100);
	CHECK(gl_gguf_get_u32(g, "i8", &u) < 0 && errno == EINVAL);
	CHECK(gl_gguf_get_u32(g, "u16", &u) == 0 && u == 60000);
	CHECK(gl_gguf_get_i64(g, "i16", &i) == 0 && i == -30000);
	CHECK(gl_gguf_get_u32(g, "u64", &u) < 0 && errno == EINVAL);
	CHECK(gl_gguf_get_i64(g, "u64", &i) < 0 && errno == EINVAL);
	CHECK(gl_gguf_get_u32(g, "u64s", &u) == 0 && u == 12345);
	CHECK(gl_gguf_get_i64(g, "i64", &i) == 0 && i == INT64_MIN);
	CHECK(gl_gguf_get_f32(g, "f64", &f) == 0 && f == 0.1f);
	CHECK(gl_gguf_get_f32(g, "f64big", &f) < 0 && errno == EINVAL);
	CHECK(gl_gguf_get_i64(g, "f64", &i) < 0 && errno == EINVAL);
	CHECK(gl_gguf_get_bool(g, "bool", &bo) == 0 && bo == 0);
	CHECK(gl_gguf_get_bool(g, "u8", &bo) < 0 && errno == EINVAL);
	CHECK(gl_gguf_arr_i64(g, "boolarr", 0, &i) < 0); /* bools are not numbers */
	CHECK(gl_gguf_arr_i64(g, "u16arr", 0, &i) == 0 && i == 65535);
	CHECK(gl_gguf_arr_f32(g, "u16arr", 1, &f) == 0 && f == 7.0f);
	CHECK(gl_gguf_arr_i64(g, "f64arr", 0, &i) == 0 && i == -3);
	CHECK(gl_gguf_arr_f32(g, "f64arr", 0, &f) == 0 && f == -3.0f);
	CHECK(gl_gguf_arr_i64(g, "i8arr", 0, &i) == 0 && i == -128);
	gl_gguf_close(&g);
	free(b);
}

/* A valid file of two f32 tensors (32 and 64 values) the malformed ones start from. */
static void small_file(bytes_t *b)
{
	head(b, 3, 2, 2);
	str(b, "general.architecture");
	le(b, GL_GGUF_STRING, 4);
	str(b, "llama");
	kv_int(b, "llama.block_count", GL_GGUF_U32, 2, 4);
	tinfo(b, "a", 1, (uint64_t[]){32}, GK_Q_F32, 0);
	tinfo(b, "b", 2, (uint64_t[]){32, 2}, GK_Q_F32, 128);
	pad(b, 32);
	for (int i = 0; i < 96 * 4; i++)
		b->b[b->n++] = (uint8_t)i;
}

static void truncated(void)
{
	bytes_t *b = calloc(1, sizeof *b);
	gp_error_t err;
	small_file(b);
	gl_gguf_t *g = open_bytes(b, &err);
	CHECK(g && gl_gguf_ntensors(g) == 2);
	gl_gguf_close(&g);
	size_t full = b->n;
	for (size_t n = 0; n < full; n++) {
		b->n = n;
		g = open_bytes(b, &err);
		CHECK(g == NULL && errno == EINVAL && err.text[0]);
	}
	free(b);
}

/* One malformed file: refused, errno E, a message containing WHAT. */
static void refused(const bytes_t *b, int e, const char *what)
{
	gp_error_t err;
	gl_gguf_t *g = open_bytes(b, &err);
	if (g || errno != e || !strstr(err.text, what))
		fprintf(stderr, "expected '%s' (errno %d), got errno %d: %s\n", what, e, errno,
			err.text);
	CHECK(g == NULL && errno == e && strstr(err.text, what));
}

static void malformed(void)
{
	bytes_t *b = calloc(1, sizeof *b);
	head(b, 1, 0, 0);
	refused(b, EINVAL, "version 1");
	head(b, 3, 0, 0);
	memcpy(b->b, "GGUX", 4);
	refused(b, EINVAL, "not a GGUF file");
	head(b, 3, 0, 1);
	str(b, "k");
	le(b, GL_GGUF_STRING, 4);
	le(b, UINT64_MAX, 8);
	refused(b, EFBIG, "more than");
	head(b, 3, 0, 1);
	str(b, "k");
	le(b, GL_GGUF_STRING, 4);
	le(b, 1000, 8);
	refused(b, EINVAL, "truncated");
	head(b, 3, UINT64_MAX, 0);
	refused(b, EFBIG, "tensors");
	head(b, 3, 1000, 0);
	refused(b, EINVAL, "truncated");
	head(b, 3, 0, (uint64_t)GL_GGUF_MAX_KV + 1);
	refused(b, EFBIG, "keys");
	head(b, 3, 0, 1);
	kv_int(b, "arr", GL_GGUF_ARRAY, GL_GGUF_U32, 4);
	le(b, (uint64_t)1 << 40, 8);
	refused(b, EFBIG, "array of");
	head(b, 3, 0, 1);
	kv_int(b, "arr", GL_GGUF_ARRAY, GL_GGUF_ARRAY, 4);
	le(b, 1, 8);
	refused(b, EINVAL, "nested");
	head(b, 3, 0, 1);
	kv_int(b, "k", 13, 0, 4);
	refused(b, EINVAL, "unknown value type");
	head(b, 3, 0, 2);
	kv_int(b, "k", GL_GGUF_U8, 0, 1);
	kv_int(b, "k", GL_GGUF_U8, 0, 1);
	refused(b, EINVAL, "'k' appears twice");
	head(b, 3, 0, 1);
	kv_int(b, "general.alignment", GL_GGUF_U32, 24, 4);
	refused(b, EINVAL, "general.alignment");
	head(b, 3, 0, 1);
	kv_int(b, "general.alignment", GL_GGUF_U32, 0, 4);
	refused(b, EINVAL, "general.alignment");
	/* tensors */
	head(b, 3, 1, 0);
	tinfo(b, "x", 2, (uint64_t[]){(uint64_t)1 << 32, (uint64_t)1 << 32}, GK_Q_F32, 0);
	refused(b, EINVAL, "overflows");
	head(b, 3, 1, 0);
	tinfo(b, "x", 4, (uint64_t[]){1 << 16, 1 << 16, 1 << 16, 1 << 16}, GK_Q_F32, 0);
	refused(b, EINVAL, "overflows");
	head(b, 3, 1, 0);
	tinfo(b, "x", 1, (uint64_t[]){(uint64_t)1 << 62}, GK_Q_F32, 0);
	refused(b, EINVAL, "overflows");
	head(b, 3, 1, 0);
	tinfo(b, "x", 5, (uint64_t[]){1, 1, 1, 1, 1}, GK_Q_F32, 0);
	refused(b, EINVAL, "dimensions");
	head(b, 3, 1, 0);
	tinfo(b, "x", 1, (uint64_t[]){0}, GK_Q_F32, 0);
	refused(b, EINVAL, "dimension 0");
	head(b, 3, 1, 0);
	tinfo(b, "x", 1, (uint64_t[]){32}, 3 /* q4_1: not ours */, 0);
	refused(b, EINVAL, "unknown tensor type 3");
	head(b, 3, 1, 0);
	tinfo(b, "x", 1, (uint64_t[]){40}, GK_Q_Q4_0, 0);
	refused(b, EINVAL, "not whole q4_0 blocks");
	head(b, 3, 1, 0);
	tinfo(b, "x", 1, (uint64_t[]){32}, GK_Q_F32, 0);
	pad(b, 32);
	le(b, 0, 8);
	refused(b, EINVAL, "past the end");
	head(b, 3, 1, 0);
	tinfo(b, "x", 1, (uint64_t[]){8}, GK_Q_F32, UINT64_MAX - 31);
	pad(b, 32);
	refused(b, EINVAL, "past the end");
	head(b, 3, 1, 0);
	tinfo(b, "x", 1, (uint64_t[]){8}, GK_Q_F32, 4);
	pad(b, 32);
	b->n += 64;
	refused(b, EINVAL, "not aligned");
	head(b, 3, 2, 0);
	tinfo(b, "x", 1, (uint64_t[]){16}, GK_Q_F32, 0);
	tinfo(b, "y", 1, (uint64_t[]){16}, GK_Q_F32, 32);
	pad(b, 32);
	b->n += 128;
	refused(b, EINVAL, "overlap");
	head(b, 3, 2, 0);
	tinfo(b, "x", 1, (uint64_t[]){8}, GK_Q_F32, 0);
	tinfo(b, "x", 1, (uint64_t[]){8}, GK_Q_F32, 32);
	pad(b, 32);
	b->n += 64;
	refused(b, EINVAL, "'x' appears twice");
	head(b, 3, 1, 0);
	str(b, "");
	b->n += 64;
	refused(b, EINVAL, "empty");
	head(b, 3, 1, 0);
	le(b, GL_GGUF_MAX_NAME + 1, 8);
	b->n += 64;
	refused(b, EFBIG, "tensor name");
	free(b);
}

/* Metadata larger than gl_gguf_open_header's first read (1 MiB): it reads more and parses
 * again, and finds what the mapping finds. */
static void big_header(void)
{
	char path[512];
	gp_error_t err = {{0}};
	enum { N = 200000 };
	static char text[N][16];
	static const char *strs[N];
	for (int i = 0; i < N; i++) {
		snprintf(text[i], sizeof text[i], "piece%07d", i);
		strs[i] = text[i];
	}
	gl_gguf_writer_t *w = gl_gguf_writer_create();
	CHECK(gl_gguf_set_arr_str(w, "tokenizer.ggml.tokens", strs, N) == 0);
	float one[32] = {1};
	uint64_t dims[1] = {32};
	CHECK(gl_gguf_add_tensor(w, "t", 1, dims, GK_Q_F32, one, NULL, NULL) == 0);
	snprintf(path, sizeof path, "%s/big.gguf", dir);
	CHECK(gl_gguf_write(w, path, &err) == 0);
	gl_gguf_writer_destroy(&w);
	gl_gguf_t *a = gl_gguf_open(path, &err), *b = gl_gguf_open_header(path, &err);
	CHECK(a && b && gl_gguf_data_offset(a) > (2u << 20));
	CHECK(gl_gguf_data_offset(a) == gl_gguf_data_offset(b));
	const char *s;
	size_t len;
	CHECK(gl_gguf_arr_str(b, "tokenizer.ggml.tokens", N - 1, &s, &len) == 0 &&
	      strcmp(s, "piece0199999") == 0);
	float got[32];
	CHECK(gl_gguf_read(b, gl_gguf_find(b, "t"), got, &err) == 0 && got[0] == 1 && got[1] == 0);
	gl_gguf_close(&a);
	gl_gguf_close(&b);
}

static void open_errors(void)
{
	gp_error_t err;
	char path[512];
	CHECK(gl_gguf_open("/nonexistent/x.gguf", &err) == NULL && errno == ENOENT);
	CHECK(strstr(err.text, "/nonexistent/x.gguf"));
	CHECK(gl_gguf_open_header(dir, &err) == NULL);
	snprintf(path, sizeof path, "%s/empty.gguf", dir);
	FILE *f = fopen(path, "w");
	fclose(f);
	CHECK(gl_gguf_open(path, &err) == NULL && errno == EINVAL);
	CHECK(gl_gguf_open_header(path, &err) == NULL && errno == EINVAL);
	/* the file's name leads the message */
	snprintf(path, sizeof path, "%s/v1.gguf", dir);
	f = fopen(path, "w");
	fwrite("GGUF\1\0\0\0", 1, 8, f);
	fclose(f);
	CHECK(gl_gguf_open(path, &err) == NULL && strstr(err.text, path) &&
	      strstr(err.text, "version 1"));
	CHECK(gl_gguf_open_header(path, &err) == NULL && strstr(err.text, "version 1"));
}

int main(int argc, char **argv)
{
	snprintf(dir, sizeof dir, "%s", argc > 1 ? argv[1] : "/tmp");
	snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/test_gguf.%d", (int)getpid());
	char cmd[512];
	snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
	CHECK(system(cmd) == 0);
	round_trip();
	failed_write();
	all_vtypes();
	truncated();
	malformed();
	open_errors();
	big_header();
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
	printf("test_gguf: ok\n");
	return 0;
}
