/* stage.c - encoding and checking the frames pipeline ranks exchange (stage.h). Sizes come
 * from the header's counts, each bounded first; nothing past a bound is ever read. */
#include <errno.h>
#include <string.h>

#include "common/le.h"
#include "gllm/stage.h"
#include "kernels/gk_scalar.h"

static size_t wire_size(gl_wire_t w)
{
	return w == GL_WIRE_F16 ? 2 : 4;
}

size_t gl_stage_body_size(gl_stage_kind_t kind, int nseq, int ntok, int dim, gl_wire_t w)
{
	if (nseq < 0 || ntok < 0 || dim < 0)
		return (size_t)-1;
	if (kind == GL_STAGE_RELEASE)
		return (size_t)nseq * 4;
	if (kind == GL_STAGE_STEP)
		return (size_t)nseq * 12 + (size_t)ntok * (size_t)dim * wire_size(w);
	return 0;
}

void gl_stage_hdr_make(gl_stage_hdr_t *h, gl_stage_kind_t kind, uint64_t batch,
		       const gl_batch_t *bt, int dim, gl_wire_t w)
{
	*h = (gl_stage_hdr_t){.kind = kind, .batch = batch, .wire = w};
	if (bt && kind != GL_STAGE_SHUTDOWN) {
		h->nseq = bt->nseq;
		h->ntok = kind == GL_STAGE_STEP ? bt->ntok : 0;
		h->dim = kind == GL_STAGE_STEP ? dim : 0;
	}
	h->body_bytes = gl_stage_body_size(kind, h->nseq, h->ntok, h->dim, w);
}

void gl_stage_hdr_encode(const gl_stage_hdr_t *h, uint8_t out[GL_STAGE_HDR_SIZE])
{
	gp_le_put32(out, GL_STAGE_MAGIC);
	gp_le_put32(out + 4, (uint32_t)GL_STAGE_VERSION | (uint32_t)h->kind << 16);
	gp_le_put64(out + 8, h->batch);
	gp_le_put32(out + 16, (uint32_t)h->nseq);
	gp_le_put32(out + 20, (uint32_t)h->ntok);
	gp_le_put32(out + 24, (uint32_t)h->dim);
	gp_le_put32(out + 28, (uint32_t)h->wire);
	gp_le_put64(out + 32, h->body_bytes);
}

static int bad(gp_error_t *err, int e, const char *what, uint64_t got, uint64_t limit)
{
	gp_errprintf(err, "stage frame: %s %llu, at most %llu", what, (unsigned long long)got,
		     (unsigned long long)limit);
	errno = e;
	return -1;
}

/* The counts a header of KIND may carry within LIM. */
static int check_counts(gl_stage_kind_t kind, uint32_t nseq, uint32_t ntok, uint32_t dim,
			const gl_stage_limits_t *lim, gp_error_t *err)
{
	uint32_t max_seqs =
	    lim->max_seqs < GL_MAX_BATCH_SEQS ? (uint32_t)lim->max_seqs : GL_MAX_BATCH_SEQS;
	uint32_t want_tok = kind == GL_STAGE_STEP ? (uint32_t)lim->max_tokens : 0;
	uint32_t want_dim = kind == GL_STAGE_STEP ? (uint32_t)lim->dim : 0;
	uint32_t want_seq = kind == GL_STAGE_SHUTDOWN ? 0 : max_seqs;
	if (nseq > want_seq)
		return bad(err, EMSGSIZE, "sequences", nseq, want_seq);
	if (ntok > want_tok)
		return bad(err, EMSGSIZE, "tokens", ntok, want_tok);
	if (dim != want_dim) {
		gp_errprintf(err, "stage frame: width %u, the model's is %u", dim, want_dim);
		return errno = EMSGSIZE, -1;
	}
	if (kind == GL_STAGE_STEP && (nseq == 0 || ntok < nseq)) {
		gp_errprintf(err, "stage frame: a step of %u sequences and %u tokens", nseq, ntok);
		return errno = EMSGSIZE, -1;
	}
	if (kind == GL_STAGE_RELEASE && nseq == 0) {
		gp_errprintf(err, "stage frame: a release of no sequence");
		return errno = EMSGSIZE, -1;
	}
	return 0;
}

int gl_stage_hdr_decode(const uint8_t *buf, size_t len, const gl_stage_limits_t *lim,
			gl_stage_hdr_t *h, gp_error_t *err)
{
	if (len != GL_STAGE_HDR_SIZE)
		return bad(err, EPROTO, "header of bytes", len, GL_STAGE_HDR_SIZE);
	if (gp_le_get32(buf) != GL_STAGE_MAGIC) {
		gp_errprintf(err, "stage frame: not a frame (magic %08x)", gp_le_get32(buf));
		return errno = EPROTO, -1;
	}
	uint32_t vk = gp_le_get32(buf + 4);
	uint32_t kind = vk >> 16, wire = gp_le_get32(buf + 28);
	if ((vk & 0xffff) != GL_STAGE_VERSION) {
		gp_errprintf(err, "stage frame: version %u, this rank speaks %d", vk & 0xffff,
			     GL_STAGE_VERSION);
		return errno = EPROTO, -1;
	}
	if (kind < GL_STAGE_STEP || kind > GL_STAGE_SHUTDOWN || wire > GL_WIRE_F16) {
		gp_errprintf(err, "stage frame: unknown kind %u or activation type %u", kind, wire);
		return errno = EPROTO, -1;
	}
	uint32_t nseq = gp_le_get32(buf + 16), ntok = gp_le_get32(buf + 20),
		 dim = gp_le_get32(buf + 24);
	if (check_counts((gl_stage_kind_t)kind, nseq, ntok, dim, lim, err) < 0)
		return -1;
	size_t want = gl_stage_body_size((gl_stage_kind_t)kind, (int)nseq, (int)ntok, (int)dim,
					 (gl_wire_t)wire);
	if (gp_le_get64(buf + 32) != want)
		return bad(err, EMSGSIZE, "body bytes", gp_le_get64(buf + 32), want);
	*h = (gl_stage_hdr_t){.kind = (gl_stage_kind_t)kind,
			      .batch = gp_le_get64(buf + 8),
			      .nseq = (int)nseq,
			      .ntok = (int)ntok,
			      .dim = (int)dim,
			      .wire = (gl_wire_t)wire,
			      .body_bytes = want};
	return 0;
}

void gl_stage_body_encode(const gl_stage_hdr_t *h, const gl_batch_t *bt, const float *x,
			  uint8_t *out)
{
	if (h->kind == GL_STAGE_RELEASE) {
		for (int i = 0; i < h->nseq; i++)
			gp_le_put32(out + 4 * i, (uint32_t)bt->seq[i]);
		return;
	}
	if (h->kind != GL_STAGE_STEP)
		return;
	for (int i = 0; i < h->nseq; i++) {
		gp_le_put32(out + 12 * i, (uint32_t)bt->seq[i]);
		gp_le_put32(out + 12 * i + 4, (uint32_t)bt->n[i]);
		gp_le_put32(out + 12 * i + 8, (uint32_t)bt->ctx[i]);
	}
	uint8_t *a = out + 12 * (size_t)h->nseq;
	size_t nv = (size_t)h->ntok * (size_t)h->dim;
	if (h->wire == GL_WIRE_F32) {
		memcpy(a, x, nv * 4); /* every target of gpool is little-endian */
		return;
	}
	for (size_t i = 0; i < nv; i++) {
		uint16_t v = gk_sw_f32_to_f16(x[i]);
		a[2 * i] = (uint8_t)v;
		a[2 * i + 1] = (uint8_t)(v >> 8);
	}
}

/* The sequence table of a step or release: ids in range, each once; a step's tokens add up
 * to ntok, each sequence brings 1.. of them and holds at most n_ctx after the step. */
static int decode_table(const gl_stage_hdr_t *h, const uint8_t *buf, const gl_stage_limits_t *lim,
			gl_batch_t *bt, gp_error_t *err)
{
	uint8_t seen[GL_MAX_BATCH_SEQS] = {0};
	int step = h->kind == GL_STAGE_STEP, stride = step ? 12 : 4;
	int64_t sum = 0;
	for (int i = 0; i < h->nseq; i++) {
		const uint8_t *p = buf + (size_t)stride * i;
		uint32_t id = gp_le_get32(p);
		if (id >= (uint32_t)lim->max_seqs || id >= GL_MAX_BATCH_SEQS || seen[id]) {
			gp_errprintf(err, "stage frame: sequence %u out of range or twice", id);
			return errno = EPROTO, -1;
		}
		seen[id] = 1;
		bt->seq[i] = (int32_t)id;
		bt->n[i] = bt->ctx[i] = 0;
		if (!step)
			continue;
		uint32_t n = gp_le_get32(p + 4), ctx = gp_le_get32(p + 8);
		if (n < 1 || n > (uint32_t)h->ntok || ctx < n || ctx > (uint32_t)lim->n_ctx) {
			gp_errprintf(err,
				     "stage frame: sequence %u brings %u tokens to a context of %u",
				     id, n, ctx);
			return errno = EPROTO, -1;
		}
		bt->n[i] = (int32_t)n;
		bt->ctx[i] = (int32_t)ctx;
		sum += n;
	}
	if (step && sum != h->ntok) {
		gp_errprintf(err, "stage frame: sequences bring %lld tokens, the step says %d",
			     (long long)sum, h->ntok);
		return errno = EPROTO, -1;
	}
	return 0;
}

int gl_stage_body_decode(const gl_stage_hdr_t *h, const uint8_t *buf, size_t len,
			 const gl_stage_limits_t *lim, gl_batch_t *bt, float *x, gp_error_t *err)
{
	if (len != h->body_bytes ||
	    len != gl_stage_body_size(h->kind, h->nseq, h->ntok, h->dim, h->wire))
		return bad(err, EPROTO, "body bytes", len, h->body_bytes);
	memset(bt, 0, sizeof(*bt));
	if (h->kind == GL_STAGE_SHUTDOWN)
		return 0;
	if (decode_table(h, buf, lim, bt, err) < 0)
		return -1;
	bt->nseq = h->nseq;
	bt->ntok = h->ntok;
	if (h->kind != GL_STAGE_STEP)
		return 0;
	const uint8_t *a = buf + 12 * (size_t)h->nseq;
	size_t nv = (size_t)h->ntok * (size_t)h->dim;
	if (h->wire == GL_WIRE_F32) {
		memcpy(x, a, nv * 4);
		return 0;
	}
	for (size_t i = 0; i < nv; i++)
		x[i] = gk_sw_f16_to_f32((uint16_t)(a[2 * i] | a[2 * i + 1] << 8));
	return 0;
}
