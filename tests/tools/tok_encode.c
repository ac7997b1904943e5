/* tok_encode: the tokenizer (llm/tokenizer.h) of a GGUF file over texts from a file, for
 * tests/tools/tok_compare.py, which compares its ids with SentencePiece's and a Python BPE's.
 *   tok-encode MODEL.gguf RECORDS
 * RECORDS: "<flags> <length>\n" then that many bytes, again and again (flags: 1 add BOS,
 * 2 match special tokens). For each record two lines on stdout: the ids, space-separated, then
 * the hex of gl_tok_decode's text of those ids. Exit 1 on any error. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/gguf.h"
#include "llm/tokenizer.h"

static int one(const gl_tok_t *t, const char *s, size_t len, int flags)
{
	int need = gl_tok_encode(t, s, len, flags & 1, flags & 2, NULL, 0);
	if (need < 0)
		return -1;
	int32_t *ids = malloc(((size_t)need + 1) * sizeof(*ids));
	if (!ids || gl_tok_encode(t, s, len, flags & 1, flags & 2, ids, need) != need) {
		free(ids);
		return -1;
	}
	for (int i = 0; i < need; i++)
		printf(i ? " %d" : "%d", ids[i]);
	printf("\n");
	size_t dlen;
	char *d = gl_tok_decode(t, ids, need, &dlen);
	free(ids);
	if (!d)
		return -1;
	for (size_t i = 0; i < dlen; i++)
		printf("%02x", (unsigned char)d[i]);
	printf("\n");
	free(d);
	return 0;
}

int main(int argc, char **argv)
{
	gp_error_t err = {{0}};
	if (argc != 3) {
		fprintf(stderr, "usage: tok-encode MODEL.gguf RECORDS\n");
		return 2;
	}
	gl_gguf_t *g = gl_gguf_open(argv[1], &err);
	gl_tok_t *t = g ? gl_tok_from_gguf(g, &err) : NULL;
	gl_gguf_close(&g);
	if (!t) {
		fprintf(stderr, "tok-encode: %s\n", err.text);
		return 1;
	}
	FILE *f = fopen(argv[2], "rb");
	if (!f) {
		fprintf(stderr, "tok-encode: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	int flags, rc = 0;
	size_t len;
	while (rc == 0 && fscanf(f, "%d %zu", &flags, &len) == 2 && fgetc(f) == '\n') {
		char *s = malloc(len + 1);
		if (!s || fread(s, 1, len, f) != len || one(t, s, len, flags) < 0) {
			fprintf(stderr, "tok-encode: a record of %zu bytes failed\n", len);
			rc = 1;
		}
		free(s);
	}
	fclose(f);
	gl_tok_destroy(&t);
	return rc;
}
