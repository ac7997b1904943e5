/* tok_base.c - what the tokenizer's files share, under them all (tok_impl.h): the vocabulary's
 * hash index (built by tokenizer.c, looked up by both encoders), the encoders' merge queue and
 * UTF-8 decoding. */
#include <stdlib.h>
#include <string.h>

#include "llm/tok_impl.h"

static uint64_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

int32_t gl_tok_lookup(const gl_tok_t *t, const char *s, size_t len)
{
	size_t mask = t->nslots - 1;
	for (size_t i = hash_bytes(s, len) & mask;; i = (i + 1) & mask) {
		uint32_t v = t->slots[i];
		if (!v)
			return -1;
		const gl_tokdef_t *d = &t->tok[v - 1];
		if (d->len == len && memcmp(t->arena + d->off, s, len) == 0)
			return (int32_t)(v - 1);
	}
}

/* A later duplicate text takes the slot, as llama.cpp's map does. */
void gl_tok_index(gl_tok_t *t, int32_t id)
{
	const gl_tokdef_t *d = &t->tok[id];
	size_t mask = t->nslots - 1;
	for (size_t i = hash_bytes(t->arena + d->off, d->len) & mask;; i = (i + 1) & mask) {
		uint32_t v = t->slots[i];
		if (!v || (t->tok[v - 1].len == d->len &&
			   memcmp(t->arena + t->tok[v - 1].off, t->arena + d->off, d->len) == 0)) {
			t->slots[i] = (uint32_t)id + 1;
			return;
		}
	}
}

static int better(const gl_tokpair_t *x, const gl_tokpair_t *y)
{
	return x->pri > y->pri || (x->pri == y->pri && x->left < y->left);
}

int gl_tokheap_push(gl_tokheap_t *h, gl_tokpair_t p)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 64;
		gl_tokpair_t *v = realloc(h->v, cap * sizeof(*v));
		if (!v)
			return -1;
		h->v = v;
		h->cap = cap;
	}
	size_t i = h->n++;
	while (i > 0 && better(&p, &h->v[(i - 1) / 2])) {
		h->v[i] = h->v[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->v[i] = p;
	return 0;
}

int gl_tokheap_pop(gl_tokheap_t *h, gl_tokpair_t *p)
{
	if (!h->n)
		return 0;
	*p = h->v[0];
	gl_tokpair_t last = h->v[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && better(&h->v[c + 1], &h->v[c]))
			c++;
		if (!better(&h->v[c], &last))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	h->v[i] = last;
	return 1;
}

size_t gl_utf8_next(const unsigned char *s, size_t n, int32_t *cp)
{
	unsigned c = s[0];
	size_t len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = (int32_t)c;
		return 1;
	} else if (c >= 0xc2 && c < 0xe0) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if (c >= 0xe0 && c < 0xf0) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c < 0xf5) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		*cp = -1;
		return 1;
	}
	if (len > n)
		goto bad;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			goto bad;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v < 0xe000))
		goto bad;
	*cp = (int32_t)v;
	return len;
bad:
	*cp = -1;
	return 1;
}
