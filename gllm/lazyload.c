/* lazyload.c: a rank's bytes of a lazily staged model (gsub --stage-lazy, docs/llm.md "Split
 * across PCs"): the header first, then, once the plan is known, only the tensors this rank
 * loads, asked of the job's gstepd (common/lazy.h) before gl_weights_load reads them. A whole
 * file (a local one, or staged whole) is read as it is: gp_lazy_fetch says it is not lazy. */
#include "gllm/lazyload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/lazy.h"
#include "common/util.h"

#define HEADER_FIRST (4u << 20) /* one chunk: a header with a 32k vocabulary fits in it */
#define MERGE_GAP    4096	/* tensors closer than this are fetched as one span */

static int fetch(const char *path, uint64_t off, uint64_t len, uint64_t *got, gp_error_t *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gp_errprintf(err, "cannot open '%s': %s", path, strerror(errno));
	uint64_t f = 0;
	int rc = gp_lazy_fetch(fd, off, len, &f, err);
	close(fd);
	if (got)
		*got += f;
	return rc;
}

int gllm_lazy_header(const char *path, gp_error_t *err)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return gp_errprintf(err, "cannot open '%s': %s", path, strerror(errno));
	int rc = fetch(path, 0, 0, NULL, err);
	if (rc <= 0)
		return rc; /* a whole file, or no answer */
	uint64_t size = (uint64_t)st.st_size, want = HEADER_FIRST;
	for (;;) {
		if (want > size)
			want = size;
		if (fetch(path, 0, want, NULL, err) < 0)
			return -1;
		gl_gguf_t *g = gl_gguf_open_header(path, err);
		/* parsed within what is there: every byte it read was the file's, not a hole's */
		uint64_t need = g ? gl_gguf_data_offset(g) : want + 1;
		gl_gguf_close(&g);
		if (need <= want)
			return 1;
		if (want == size)
			return -1;
		want = need > 2 * want ? need : 2 * want;
	}
}

struct span {
	uint64_t off, end;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Does a rank with layers [first, last) (and the embedding and head when head) load t? The
 * same tensors gl_weights_load reads: a layer's are all "blk.N.", the rest the head's. */
static int needed(const gl_tensor_t *t, int first, int last, int head)
{
	int l;
	if (sscanf(t->name, "blk.%d.", &l) == 1)
		return l >= first && l < last;
	return head &&
	       (!strcmp(t->name, "token_embd.weight") || !strcmp(t->name, "output_norm.weight") ||
		!strcmp(t->name, "output.weight"));
}

int gllm_lazy_layers(const char *path, const gl_gguf_t *g, int first, int last, int head,
		     gp_error_t *err)
{
	int n = gl_gguf_ntensors(g), k = 0;
	struct span *s = calloc((size_t)(n ? n : 1), sizeof(*s));
	if (!s)
		return errno = ENOMEM, gp_errprintf(err, "out of memory");
	uint64_t bytes = 0, got = 0;
	for (int i = 0; i < n; i++) {
		const gl_tensor_t *t = gl_gguf_tensor(g, i);
		if (needed(t, first, last, head))
			s[k++] = (struct span){t->offset, t->offset + t->bytes};
	}
	qsort(s, (size_t)k, sizeof(*s), span_cmp);
	int m = 0;
	for (int i = 0; i < k; i++) {
		if (m && s[i].off <= s[m - 1].end + MERGE_GAP) {
			if (s[i].end > s[m - 1].end)
				s[m - 1].end = s[i].end;
		} else {
			s[m++] = s[i];
		}
	}
	double t0 = gp_now();
	int rc = 0;
	for (int i = 0; i < m && rc >= 0; i++) {
		rc = fetch(path, s[i].off, s[i].end - s[i].off, &got, err);
		bytes += s[i].end - s[i].off;
	}
	free(s);
	if (rc < 0)
		return -1;
	fprintf(stderr,
		"gllm: lazily staged '%s': layers %d-%d%s: %.1f MiB in %d spans, %.1f MiB "
		"fetched, %.2f s\n",
		path, first, last - 1, head ? " +embed +head" : "", (double)bytes / (1 << 20), m,
		(double)got / (1 << 20), gp_now() - t0);
	return 0;
}
