/* gguf_dump: a GGUF file as canonical text, for llm/test/test_gguf_py.py, which prints the same
 * text from tests/tools/gguf.py's reader and compares: one line per key (type and value; strings
 * as hex, floats as %.9g of their f32 value), one per array element, one per tensor (name, type,
 * dims, the FNV-1a 64 hash of its bytes). argv[1]: the file; exit 1 when it does not open. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "llm/gguf.h"

static void hex(const char *s, size_t n)
{
	printf("x");
	for (size_t i = 0; i < n; i++)
		printf("%02x", (unsigned char)s[i]);
}

/* A number of type T by the getters: floats as f32, integers as i64. */
static void number(int ok_f, float f, int ok_i, int64_t v)
{
	if (ok_f)
		printf("%.9g", (double)f);
	else if (ok_i)
		printf("%" PRId64, v);
	else
		printf("?");
}

static void value(const gl_gguf_t *g, const char *key)
{
	gl_gguf_vtype_t t, et;
	const char *s;
	size_t len;
	float f = 0;
	int64_t v = 0;
	uint64_t n;
	int b;
	gl_gguf_type(g, key, &t);
	printf("kv %s %d ", key, (int)t);
	if (t == GL_GGUF_STRING) {
		gl_gguf_get_str(g, key, &s, &len);
		hex(s, len);
	} else if (t == GL_GGUF_BOOL) {
		gl_gguf_get_bool(g, key, &b);
		printf("%d", b);
	} else if (t == GL_GGUF_ARRAY) {
		gl_gguf_get_arr(g, key, &et, &n);
		printf("%d %" PRIu64, (int)et, n);
		for (uint64_t i = 0; i < n; i++) {
			printf("\n  ");
			if (et == GL_GGUF_STRING) {
				gl_gguf_arr_str(g, key, i, &s, &len);
				hex(s, len);
			} else if (et == GL_GGUF_F32 || et == GL_GGUF_F64) {
				int okf = gl_gguf_arr_f32(g, key, i, &f) == 0;
				number(okf, f, 0, 0);
			} else if (et == GL_GGUF_BOOL) {
				printf("bool");
			} else {
				int oki = gl_gguf_arr_i64(g, key, i, &v) == 0;
				number(0, 0, oki, v);
			}
		}
	} else {
		int isf = t == GL_GGUF_F32 || t == GL_GGUF_F64;
		int okf = isf && gl_gguf_get_f32(g, key, &f) == 0;
		int oki = !isf && gl_gguf_get_i64(g, key, &v) == 0;
		number(okf, f, oki, v);
	}
	printf("\n");
}

int main(int argc, char **argv)
{
	gp_error_t err;
	gl_gguf_t *g = argc > 1 ? gl_gguf_open(argv[1], &err) : NULL;
	if (!g) {
		fprintf(stderr, "gguf_dump: %s\n", argc > 1 ? err.text : "usage: gguf_dump FILE");
		return 1;
	}
	printf("version %" PRIu32 "\n", gl_gguf_version(g));
	for (int i = 0; i < gl_gguf_nkv(g); i++)
		value(g, gl_gguf_key(g, i));
	for (int i = 0; i < gl_gguf_ntensors(g); i++) {
		const gl_tensor_t *t = gl_gguf_tensor(g, i);
		uint64_t h = 0xcbf29ce484222325ull;
		for (size_t k = 0; k < t->bytes; k++)
			h = (h ^ ((const uint8_t *)t->data)[k]) * 0x100000001b3ull;
		printf("tensor %s %d", t->name, (int)t->type);
		for (int d = 0; d < t->ndims; d++)
			printf(" %" PRIu64, t->dims[d]);
		printf(" %016" PRIx64 "\n", h);
	}
	gl_gguf_close(&g);
	return 0;
}
