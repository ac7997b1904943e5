/* fuzz_gguf: a GGUF model file (llm/gguf.c) from any bytes, through gl_gguf_open_mem, the
 * parser gl_gguf_open and gl_gguf_open_header share. Properties: a refusal sets errno and says
 * why; a file that opens can be walked whole: every key answers its type's getter, every array
 * element its element type's, and each tensor lies inside the input after the data offset,
 * aligned, no two overlapping, its bytes those gl_gguf_read copies, found again by its name;
 * the tensors' descriptions and the keys of the writer's types written again by
 * gl_gguf_writer read back the same (a second parse of what the first one understood). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "llm/gguf.h"
#include "tests/fuzz/fuzz.h"

static uint64_t walk_array(const gl_gguf_t *g, const char *key)
{
	gl_gguf_vtype_t et;
	uint64_t n, h = 0;
	FUZZ_CHECK(gl_gguf_get_arr(g, key, &et, &n) == 0);
	for (uint64_t i = 0; i < n; i++) {
		const char *s;
		size_t len;
		float f;
		int64_t v = 0;
		if (et == GL_GGUF_STRING) {
			FUZZ_CHECK(gl_gguf_arr_str(g, key, i, &s, &len) == 0 && strlen(s) <= len);
			h += len + (len ? (uint8_t)s[len - 1] : 0);
		} else if (et == GL_GGUF_F32 || et == GL_GGUF_F64) {
			/* an f64 beyond f32's range is refused, nothing else */
			FUZZ_CHECK(gl_gguf_arr_f32(g, key, i, &f) == 0 || errno == EINVAL);
		} else if (et != GL_GGUF_BOOL) {
			FUZZ_CHECK(gl_gguf_arr_f32(g, key, i, &f) == 0);
			FUZZ_CHECK(gl_gguf_arr_i64(g, key, i, &v) == 0 || et == GL_GGUF_U64);
			h += (uint64_t)v;
		}
	}
	const char *s;
	FUZZ_CHECK(gl_gguf_arr_str(g, key, n, &s, NULL) < 0); /* one past the end */
	return h;
}

static uint64_t walk_keys(const gl_gguf_t *g)
{
	uint64_t h = 0;
	for (int i = 0; i < gl_gguf_nkv(g); i++) {
		const char *key = gl_gguf_key(g, i), *s;
		gl_gguf_vtype_t t;
		size_t len;
		float f;
		int64_t v;
		int b;
		FUZZ_CHECK(key && *key && gl_gguf_type(g, key, &t) == 0);
		if (t == GL_GGUF_STRING)
			FUZZ_CHECK(gl_gguf_get_str(g, key, &s, &len) == 0 && strlen(s) <= len);
		else if (t == GL_GGUF_ARRAY)
			h += walk_array(g, key);
		else if (t == GL_GGUF_BOOL)
			FUZZ_CHECK(gl_gguf_get_bool(g, key, &b) == 0 && (b == 0 || b == 1));
		else if (t == GL_GGUF_F32 || t == GL_GGUF_F64)
			FUZZ_CHECK(gl_gguf_get_f32(g, key, &f) == 0 || t == GL_GGUF_F64);
		else
			FUZZ_CHECK(gl_gguf_get_i64(g, key, &v) == 0 || t == GL_GGUF_U64);
	}
	return h;
}

static void walk_tensors(const gl_gguf_t *g, const uint8_t *data, size_t size)
{
	uint64_t align = 32;
	uint32_t a;
	if (gl_gguf_get_u32(g, "general.alignment", &a) == 0)
		align = a;
	FUZZ_CHECK(gl_gguf_data_offset(g) % align == 0);
	for (int i = 0; i < gl_gguf_ntensors(g); i++) {
		const gl_tensor_t *t = gl_gguf_tensor(g, i);
		FUZZ_CHECK(t && gk_qtype_valid((int)t->type) && t->ndims >= 1 && t->ndims <= 4);
		FUZZ_CHECK(t->offset >= gl_gguf_data_offset(g) && t->offset <= size &&
			   t->bytes <= size - t->offset);
		FUZZ_CHECK((t->offset - gl_gguf_data_offset(g)) % align == 0);
		FUZZ_CHECK(t->data == data + t->offset);
		FUZZ_CHECK(t->bytes ==
			   gk_qtype_row_bytes(t->type, t->dims[0]) * (t->nelem / t->dims[0]));
		FUZZ_CHECK(gl_gguf_find(g, t->name) == t);
		uint8_t *copy = malloc(t->bytes ? t->bytes : 1);
		FUZZ_CHECK(copy && gl_gguf_read(g, t, copy, NULL) == 0);
		FUZZ_CHECK(memcmp(copy, t->data, t->bytes) == 0);
		free(copy);
		for (int j = 0; j < i; j++) {
			const gl_tensor_t *u = gl_gguf_tensor(g, j);
			FUZZ_CHECK(u->offset + u->bytes <= t->offset ||
				   t->offset + t->bytes <= u->offset);
		}
	}
}

/* The keys of the writer's types and every tensor, written again, read back the same. */
static void rewrite(const gl_gguf_t *g)
{
	gl_gguf_writer_t *w = gl_gguf_writer_create();
	FUZZ_CHECK(w);
	int nkv = 0;
	for (int i = 0; i < gl_gguf_nkv(g); i++) {
		const char *key = gl_gguf_key(g, i), *s;
		gl_gguf_vtype_t t;
		size_t len;
		uint32_t u;
		gl_gguf_type(g, key, &t);
		/* a string with a NUL inside cannot be passed to the setter as C text */
		if (t == GL_GGUF_STRING && gl_gguf_get_str(g, key, &s, &len) == 0 &&
		    strlen(s) == len)
			nkv += gl_gguf_set_str(w, key, s) == 0;
		else if (t == GL_GGUF_U32 && gl_gguf_get_u32(g, key, &u) == 0)
			nkv += gl_gguf_set_u32(w, key, u) == 0;
	}
	for (int i = 0; i < gl_gguf_ntensors(g); i++) {
		const gl_tensor_t *t = gl_gguf_tensor(g, i);
		FUZZ_CHECK(gl_gguf_add_tensor(w, t->name, t->ndims, t->dims, t->type, t->data, NULL,
					      NULL) == 0);
	}
	char path[64];
	gp_error_t err;
	snprintf(path, sizeof path, "/tmp/fuzz_gguf.%d.gguf", (int)getpid());
	FUZZ_CHECK(gl_gguf_write(w, path, &err) == 0);
	gl_gguf_writer_destroy(&w);
	gl_gguf_t *back = gl_gguf_open(path, &err);
	unlink(path);
	FUZZ_CHECK(back && gl_gguf_nkv(back) == nkv &&
		   gl_gguf_ntensors(back) == gl_gguf_ntensors(g));
	for (int i = 0; i < gl_gguf_ntensors(g); i++) {
		const gl_tensor_t *t = gl_gguf_tensor(g, i), *b = gl_gguf_tensor(back, i);
		FUZZ_CHECK(strcmp(t->name, b->name) == 0 && t->type == b->type &&
			   t->bytes == b->bytes);
		FUZZ_CHECK(memcmp(t->dims, b->dims, sizeof t->dims) == 0);
		FUZZ_CHECK(memcmp(t->data, b->data, t->bytes) == 0);
	}
	gl_gguf_close(&back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gp_error_t err = {{0}};
	errno = 0;
	gl_gguf_t *g = gl_gguf_open_mem(data, size, &err);
	if (!g) {
		FUZZ_CHECK(errno == EINVAL || errno == EFBIG || errno == ENOMEM);
		FUZZ_CHECK(err.text[0] != 0);
		return 0;
	}
	FUZZ_CHECK(gl_gguf_version(g) == 2 || gl_gguf_version(g) == 3);
	FUZZ_CHECK(gl_gguf_file_size(g) == size);
	volatile uint64_t h = walk_keys(g);
	(void)h;
	walk_tensors(g, data, size);
	rewrite(g);
	gl_gguf_close(&g);
	return 0;
}
