/* tok_spm.c - the SentencePiece-style encoder (tokenizer.ggml.model "llama"), as llama.cpp and
 * SentencePiece's BPE model do it: the text (U+2581 for each space, one put first) split into
 * UTF-8 characters, then the adjacent pair whose joined text is a token of the highest score
 * merged, again and again (a priority queue: a long text stays fast), then each symbol's id; a
 * character with no token becomes its bytes' <0xNN> tokens, or the unknown token. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tok_impl.h"

typedef struct {
	uint32_t start, len;
	int32_t prev, next;
	int32_t node; /* its merge tree, to split an unused token again */
} sym_t;

typedef struct {
	int32_t left, right; /* nodes; -1 for a character */
	uint32_t start, len;
} node_t;

typedef struct {
	const gl_tok_t *t;
	const char *s;
	sym_t *sym;
	node_t *node;
	size_t nnode;
	gl_tokheap_t heap;
} spm_t;

/* SentencePiece's pieces_: normal, user-defined and unused tokens take part in merges;
 * control, unknown and byte tokens never come from text */
static int32_t mergeable(const gl_tok_t *t, const char *s, size_t len)
{
	int32_t id = gl_tok_lookup(t, s, len);
	if (id < 0)
		return -1;
	uint8_t ty = t->tok[id].type;
	return ty == GL_TT_NORMAL || ty == GL_TT_USER || ty == GL_TT_UNUSED ? id : -1;
}

static int try_pair(spm_t *m, int32_t left, int32_t right)
{
	if (left < 0 || right < 0)
		return 0;
	const sym_t *l = &m->sym[left], *r = &m->sym[right];
	int32_t id = mergeable(m->t, m->s + l->start, l->len + r->len);
	if (id < 0)
		return 0;
	gl_tokpair_t p = {m->t->tok[id].score, left, right, (int32_t)(l->len + r->len), 0};
	return gl_tokheap_push(&m->heap, p);
}

static void emit_bytes(const gl_tok_t *t, const char *s, size_t len, gl_tokout_t *o)
{
	for (size_t i = 0; i < len; i++)
		if (t->byte_id[(unsigned char)s[i]] < 0) {
			/* SentencePiece without byte fallback: one unknown for the character */
			if (t->unk >= 0)
				gl_tok_emit(o, t->unk);
			return;
		}
	for (size_t i = 0; i < len; i++)
		gl_tok_emit(o, t->byte_id[(unsigned char)s[i]]);
}

/* A symbol's id; an unused token is split into what was merged to make it (SentencePiece's
 * resegmentation). Depth is bounded by the longest token's characters. */
static void resegment(const spm_t *m, int32_t node, gl_tokout_t *o)
{
	const node_t *nd = &m->node[node];
	int32_t id = gl_tok_lookup(m->t, m->s + nd->start, nd->len);
	if (id >= 0 && m->t->tok[id].type != GL_TT_UNUSED && m->t->tok[id].type != GL_TT_CONTROL &&
	    m->t->tok[id].type != GL_TT_BYTE && m->t->tok[id].type != GL_TT_UNKNOWN) {
		gl_tok_emit(o, id);
	} else if (nd->left >= 0) {
		resegment(m, nd->left, o);
		resegment(m, nd->right, o);
	} else {
		emit_bytes(m->t, m->s + nd->start, nd->len, o);
	}
}

/* The text as SentencePiece sees it: U+2581 for every space, one first if PREFIX. */
static char *escape(const char *s, size_t len, int prefix, size_t *out)
{
	size_t spaces = (size_t)prefix;
	for (size_t i = 0; i < len; i++)
		spaces += s[i] == ' ';
	char *e = malloc(len + 2 * spaces + 1);
	if (!e)
		return NULL;
	size_t n = 0;
	if (prefix) {
		memcpy(e, "\xe2\x96\x81", 3);
		n = 3;
	}
	for (size_t i = 0; i < len; i++) {
		if (s[i] == ' ') {
			memcpy(e + n, "\xe2\x96\x81", 3);
			n += 3;
		} else {
			e[n++] = s[i];
		}
	}
	*out = n;
	return e;
}

static int merge_all(spm_t *m)
{
	gl_tokpair_t p;
	while (gl_tokheap_pop(&m->heap, &p)) {
		sym_t *l = &m->sym[p.left], *r = &m->sym[p.right];
		/* stale: one side merged since, or changed size */
		if (!l->len || !r->len || l->next != p.right || l->len + r->len != (uint32_t)p.a)
			continue;
		m->node[m->nnode] = (node_t){l->node, r->node, l->start, l->len + r->len};
		l->node = (int32_t)m->nnode++;
		l->len += r->len;
		r->len = 0;
		l->next = r->next;
		if (r->next >= 0)
			m->sym[r->next].prev = p.left;
		if (try_pair(m, l->prev, p.left) < 0 || try_pair(m, p.left, l->next) < 0)
			return -1;
	}
	return 0;
}

int gl_tok_spm_encode(const gl_tok_t *t, const char *s, size_t len, int prefix, gl_tokout_t *o)
{
	size_t n = 0;
	spm_t m = {.t = t};
	char *e = escape(s, len, prefix, &n);
	m.s = e;
	/* a symbol per character; each merge adds a node, fewer than the characters */
	m.sym = malloc((n ? n : 1) * sizeof(*m.sym));
	m.node = malloc((2 * n + 1) * sizeof(*m.node));
	int rc = -1;
	if (!e || !m.sym || !m.node)
		goto out;
	int32_t nsym = 0;
	for (size_t i = 0; i < n;) {
		int32_t cp;
		size_t k = gl_utf8_next((const unsigned char *)e + i, n - i, &cp);
		m.node[m.nnode] = (node_t){-1, -1, (uint32_t)i, (uint32_t)k};
		m.sym[nsym] = (sym_t){(uint32_t)i, (uint32_t)k, nsym - 1, -1, (int32_t)m.nnode++};
		if (nsym > 0)
			m.sym[nsym - 1].next = nsym;
		nsym++;
		i += k;
	}
	for (int32_t i = 1; i < nsym; i++)
		if (try_pair(&m, i - 1, i) < 0)
			goto out;
	if (merge_all(&m) < 0)
		goto out;
	for (int32_t i = 0; nsym > 0 && i >= 0; i = m.sym[i].next)
		resegment(&m, m.sym[i].node, o);
	rc = 0;
out:
	if (rc < 0)
		errno = ENOMEM;
	free(m.heap.v);
	free(m.node);
	free(m.sym);
	free(e);
	return rc;
}
