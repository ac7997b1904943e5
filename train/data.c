/* data.c - loading CSV / IDX tables, the train/test split and the epoch order (see data.h) */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/data.h"
#include "train/gz.h"

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void gt_data_free(gt_data_t *d)
{
	if (!d)
		return;
	free(d->x);
	free(d->y);
	memset(d, 0, sizeof(*d));
}

static void finish(gt_data_t *d)
{
	int classes = 0;
	float m = 0;
	for (size_t i = 0; i < d->n; i++)
		classes = d->y[i] + 1 > classes ? d->y[i] + 1 : classes;
	for (size_t i = 0; i < d->n * d->dim; i++)
		m = fabsf(d->x[i]) > m ? fabsf(d->x[i]) : m;
	d->classes = classes;
	d->max_abs = m;
}

/* grow *p (elements of SIZE) to hold at least NEED */
static int reserve(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 1024;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * size);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

int gt_data_load_csv(const char *path, gt_data_t *d, gp_error_t *err)
{
	gzFile f = gzopen(path, "rb");
	char line[65536];
	size_t xcap = 0, ycap = 0, lineno = 0;
	float *vals = NULL;
	size_t vcap = 0;

	memset(d, 0, sizeof(*d));
	if (!f)
		return gp_errprintf(err, "cannot open '%s': %s", path,
				    strerror(errno ? errno : ENOENT));
	while (gzgets(f, line, sizeof(line))) {
		size_t nv = 0;
		char *p = line, *end;
		lineno++;
		if (!strchr(line, '\n') && !gzeof(f)) {
			gp_errprintf(err, "%s:%zu: line too long", path, lineno);
			goto fail;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '#' || *p == '\n' || *p == '\r' || !*p)
			continue;
		for (;;) {
			errno = 0;
			double v = strtod(p, &end);
			if (end == p || errno == ERANGE || !isfinite(v)) {
				gp_errprintf(err, "%s:%zu: not a number at column %zu", path,
					     lineno, nv + 1);
				goto fail;
			}
			if (reserve((void **)&vals, &vcap, nv + 1, sizeof(float)) < 0)
				goto nomem;
			vals[nv++] = (float)v;
			p = end;
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p == ',') {
				p++;
				continue;
			}
			if (*p == '\n' || *p == '\r' || !*p)
				break;
			gp_errprintf(err, "%s:%zu: unexpected '%c' after column %zu", path, lineno,
				     *p, nv);
			goto fail;
		}
		if (nv < 2) {
			gp_errprintf(err, "%s:%zu: a row needs features and a label", path, lineno);
			goto fail;
		}
		if (!d->dim)
			d->dim = nv - 1;
		if (nv - 1 != d->dim) {
			gp_errprintf(err, "%s:%zu: %zu values, expected %zu", path, lineno, nv,
				     d->dim + 1);
			goto fail;
		}
		float label = vals[nv - 1];
		if (label < 0 || label > 65535 || label != floorf(label)) {
			gp_errprintf(err, "%s:%zu: label '%g' is not an integer 0..65535", path,
				     lineno, (double)label);
			goto fail;
		}
		if (reserve((void **)&d->x, &xcap, (d->n + 1) * d->dim, sizeof(float)) < 0 ||
		    reserve((void **)&d->y, &ycap, d->n + 1, sizeof(int32_t)) < 0)
			goto nomem;
		memcpy(d->x + d->n * d->dim, vals, d->dim * sizeof(float));
		d->y[d->n++] = (int32_t)label;
	}
	{
		int ge;
		const char *msg = gzerror(f, &ge);
		if (ge != Z_OK && ge != Z_STREAM_END) {
			gp_errprintf(err, "%s: %s", path, msg);
			goto fail;
		}
	}
	if (!d->n) {
		gp_errprintf(err, "%s: no rows", path);
		goto fail;
	}
	gzclose(f);
	free(vals);
	finish(d);
	return 0;
nomem:
	gp_errprintf(err, "%s: out of memory", path);
fail:
	gzclose(f);
	free(vals);
	gt_data_free(d);
	errno = EINVAL;
	return -1;
}

/* the whole of a (possibly gzip'd) file; *len bytes */
static unsigned char *slurp(const char *path, size_t *len, gp_error_t *err)
{
	gzFile f = gzopen(path, "rb");
	unsigned char *buf = NULL;
	size_t cap = 0, n = 0;
	if (!f) {
		gp_errprintf(err, "cannot open '%s': %s", path, strerror(errno ? errno : ENOENT));
		return NULL;
	}
	for (;;) {
		if (reserve((void **)&buf, &cap, n + 65536, 1) < 0) {
			gp_errprintf(err, "%s: out of memory", path);
			break;
		}
		int r = gzread(f, buf + n, 65536);
		if (r < 0) {
			int ge;
			gp_errprintf(err, "%s: %s", path, gzerror(f, &ge));
			break;
		}
		if (r == 0) {
			gzclose(f);
			*len = n;
			return buf;
		}
		n += (size_t)r;
	}
	gzclose(f);
	free(buf);
	errno = EINVAL;
	return NULL;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int gt_data_load_idx(const char *images, const char *labels, gt_data_t *d, gp_error_t *err)
{
	size_t ilen = 0, llen = 0;
	unsigned char *im = NULL, *lb = NULL;
	memset(d, 0, sizeof(*d));
	if (!(im = slurp(images, &ilen, err)) || !(lb = slurp(labels, &llen, err)))
		goto fail;
	if (ilen < 16 || be32(im) != 0x803) {
		gp_errprintf(err, "%s: not an IDX images file (magic 0x00000803)", images);
		goto fail;
	}
	if (llen < 8 || be32(lb) != 0x801) {
		gp_errprintf(err, "%s: not an IDX labels file (magic 0x00000801)", labels);
		goto fail;
	}
	uint64_t n = be32(im + 4), h = be32(im + 8), w = be32(im + 12);
	if (be32(lb + 4) != n) {
		gp_errprintf(err, "%s holds %llu images, %s %u labels", images,
			     (unsigned long long)n, labels, be32(lb + 4));
		goto fail;
	}
	if (!n || !h || !w || h * w > 1u << 20 || n > 1u << 28 || ilen - 16 < n * h * w ||
	    llen - 8 < n) {
		gp_errprintf(err, "%s: truncated or implausible (%llu x %llu x %llu)", images,
			     (unsigned long long)n, (unsigned long long)h, (unsigned long long)w);
		goto fail;
	}
	d->n = n;
	d->dim = h * w;
	d->x = malloc(n * h * w * sizeof(float));
	d->y = malloc(n * sizeof(int32_t));
	if (!d->x || !d->y) {
		gp_errprintf(err, "%s: out of memory", images);
		goto fail;
	}
	for (size_t i = 0; i < n * h * w; i++)
		d->x[i] = im[16 + i];
	for (size_t i = 0; i < n; i++)
		d->y[i] = lb[8 + i];
	free(im);
	free(lb);
	finish(d);
	return 0;
fail:
	free(im);
	free(lb);
	gt_data_free(d);
	errno = EINVAL;
	return -1;
}

int gt_data_load(const char *spec, gt_data_t *d, gp_error_t *err)
{
	const char *comma = strchr(spec, ',');
	if (comma) {
		char images[4096];
		snprintf(images, sizeof(images), "%.*s", (int)(comma - spec), spec);
		return gt_data_load_idx(images, comma + 1, d, err);
	}
	return gt_data_load_csv(spec, d, err);
}

void gt_data_order(size_t n, uint64_t seed, uint64_t epoch, uint32_t *perm)
{
	uint64_t s = splitmix(seed ^ splitmix(epoch + 0x51ed270b27ull));
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n; i > 1; i--) {
		s = splitmix(s);
		size_t j = (size_t)(s % i);
		uint32_t t = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = t;
	}
}

static int take(const gt_data_t *all, const uint32_t *idx, size_t count, gt_data_t *out)
{
	memset(out, 0, sizeof(*out));
	out->n = count;
	out->dim = all->dim;
	out->x = malloc((count ? count : 1) * all->dim * sizeof(float));
	out->y = malloc((count ? count : 1) * sizeof(int32_t));
	if (!out->x || !out->y) {
		gt_data_free(out);
		return -1;
	}
	gt_data_gather(all, idx, count, 1.0f, out->x, out->y);
	out->classes = all->classes;
	out->max_abs = all->max_abs;
	return 0;
}

int gt_data_split(const gt_data_t *all, double test_frac, uint64_t seed, gt_data_t *train,
		  gt_data_t *test, gp_error_t *err)
{
	uint32_t *perm = malloc((all->n ? all->n : 1) * sizeof(uint32_t));
	size_t ntest = (size_t)llround((double)all->n * test_frac);
	if (!perm)
		return gp_errprintf(err, "out of memory");
	if (test_frac < 0 || test_frac >= 1 || ntest >= all->n) {
		free(perm);
		errno = EINVAL;
		return gp_errprintf(err, "test fraction %g leaves no training rows", test_frac);
	}
	/* epoch ~0: an order no training epoch uses */
	gt_data_order(all->n, seed, ~0ull, perm);
	if (take(all, perm, all->n - ntest, train) < 0 ||
	    take(all, perm + all->n - ntest, ntest, test) < 0) {
		gt_data_free(train);
		free(perm);
		return gp_errprintf(err, "out of memory");
	}
	free(perm);
	return 0;
}

void gt_data_gather(const gt_data_t *d, const uint32_t *idx, size_t count, float scale, float *x,
		    int32_t *y)
{
	for (size_t i = 0; i < count; i++) {
		const float *src = d->x + (size_t)idx[i] * d->dim;
		for (size_t j = 0; j < d->dim; j++)
			x[i * d->dim + j] = src[j] * scale;
		y[i] = d->y[idx[i]];
	}
}
