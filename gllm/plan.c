/* plan.c - the planner (plan.h): a bisection on the slowest stage's time, each candidate
 * checked by filling the ranks in order with as many layers as their time and memory take. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "gllm/plan.h"

static size_t kv_per_layer(const gl_plan_model_t *m)
{
	return m->kv_bytes_token_layer * (size_t)m->kv_tokens;
}

/* Bytes rank I holds besides its layers. */
static size_t fixed_bytes(const gl_plan_model_t *m, int i)
{
	return m->workspace_bytes + (i == 0 ? m->embed_bytes + m->head_bytes : 0);
}

static double ms_of(size_t bytes, double gbs)
{
	return (double)bytes / (gbs * 1e9) * 1e3;
}

/* Fill ranks in order within T_MS each (INFINITY: memory alone). 1 if every layer found a
 * place (P filled), else 0. */
static int fill(const gl_plan_model_t *m, const gl_plan_rank_t *r, int n, double t_ms, gl_plan_t *p)
{
	int l = 0;
	for (int i = 0; i < n; i++) {
		gl_plan_slot_t *s = &p->slot[i];
		size_t fixed = fixed_bytes(m, i);
		s->first = s->last = l;
		s->used = 0;
		s->ms = 0;
		if (fixed > r[i].mem_free) {
			if (i == 0)
				return 0; /* the head rank must hold the embedding and head */
			continue;
		}
		size_t room = r[i].mem_free - fixed, wbytes = i == 0 ? m->head_bytes : 0;
		size_t held = 0;
		while (l < m->n_layers) {
			size_t need = m->layer_bytes[l] + kv_per_layer(m);
			if (need > room - held)
				break;
			if (ms_of(wbytes + m->layer_bytes[l], r[i].speed_gbs) > t_ms)
				break;
			held += need;
			wbytes += m->layer_bytes[l];
			l++;
		}
		s->last = l;
		s->used = s->last > s->first || i == 0 ? fixed + held : 0;
		s->ms = ms_of(wbytes, r[i].speed_gbs);
	}
	return l == m->n_layers;
}

static int check_input(const gl_plan_model_t *m, const gl_plan_rank_t *r, int n, gp_error_t *err)
{
	if (n < 1 || n > GL_PLAN_MAX_RANKS || !m->layer_bytes || m->n_layers < 1 ||
	    m->kv_tokens < 0) {
		gp_errprintf(err, "plan: %d ranks and %d layers", n, m->n_layers);
		return errno = EINVAL, -1;
	}
	for (int i = 0; i < n; i++) {
		if (!(r[i].speed_gbs > 0) || !isfinite(r[i].speed_gbs)) {
			gp_errprintf(err,
				     "plan: rank %d (%s) has no measured speed: it could not open "
				     "the model or its device",
				     i, r[i].host);
			return errno = EINVAL, -1;
		}
	}
	return 0;
}

static double gib(size_t b)
{
	return (double)b / (1024.0 * 1024 * 1024);
}

static int no_fit(const gl_plan_model_t *m, const gl_plan_rank_t *r, int n, gp_error_t *err)
{
	size_t need = m->embed_bytes + m->head_bytes, have = 0;
	for (int l = 0; l < m->n_layers; l++)
		need += m->layer_bytes[l] + kv_per_layer(m);
	for (int i = 0; i < n; i++) {
		need += m->workspace_bytes;
		have += r[i].mem_free;
	}
	if (fixed_bytes(m, 0) > r[0].mem_free)
		gp_errprintf(err,
			     "model '%s' does not fit: rank 0 (%s) has %.2f GiB free, the "
			     "embedding, head and workspace need %.2f GiB",
			     m->name ? m->name : "?", r[0].host, gib(r[0].mem_free),
			     gib(fixed_bytes(m, 0)));
	else
		gp_errprintf(err,
			     "model '%s' does not fit: it needs %.2f GiB with a KV cache of %lld "
			     "tokens, the %d ranks have %.2f GiB free in all",
			     m->name ? m->name : "?", gib(need), m->kv_tokens, n, gib(have));
	return errno = ENOSPC, -1;
}

int gl_plan_make(const gl_plan_model_t *m, const gl_plan_rank_t *r, int n, gl_plan_t *p,
		 gp_error_t *err)
{
	if (check_input(m, r, n, err) < 0)
		return -1;
	memset(p, 0, sizeof(*p));
	p->nranks = n;
	if (!fill(m, r, n, INFINITY, p))
		return no_fit(m, r, n, err);
	/* the slowest stage when the slowest rank holds everything bounds the answer */
	double lo = 0, hi = 0;
	for (int i = 0; i < n; i++)
		hi = fmax(hi, p->slot[i].ms);
	for (int it = 0; it < 100 && hi - lo > hi * 1e-9; it++) {
		double mid = (lo + hi) / 2;
		if (fill(m, r, n, mid, p))
			hi = mid;
		else
			lo = mid;
	}
	fill(m, r, n, hi, p);
	p->bottleneck_ms = 0;
	for (int i = 0; i < n; i++)
		p->bottleneck_ms = fmax(p->bottleneck_ms, p->slot[i].ms);
	return 0;
}

static void layers_text(char *b, size_t cap, const gl_plan_slot_t *s, int rank)
{
	int k;
	if (s->last > s->first)
		k = snprintf(b, cap, "%d-%d (%d)", s->first, s->last - 1, s->last - s->first);
	else
		k = snprintf(b, cap, "none");
	if (rank == 0 && k >= 0 && (size_t)k < cap)
		snprintf(b + k, cap - (size_t)k, " +embed +head");
}

void gl_plan_print(FILE *f, const gl_plan_model_t *m, const gl_plan_rank_t *r, const gl_plan_t *p)
{
	double total = 0;
	for (int i = 0; i < p->nranks; i++)
		total += p->slot[i].ms;
	fprintf(f, "plan: '%s', %d layers on %d ranks, KV cache for %lld tokens\n",
		m->name ? m->name : "?", m->n_layers, p->nranks, m->kv_tokens);
	fprintf(f, "%-4s %-16s %-28s %9s %9s %-24s %6s\n", "rank", "host", "device", "free", "used",
		"layers", "time");
	for (int i = 0; i < p->nranks; i++) {
		char lay[48];
		layers_text(lay, sizeof(lay), &p->slot[i], i);
		fprintf(f, "%-4d %-16.16s %-28.28s %5.2f GiB %5.2f GiB %-24s %5.1f%%\n", i,
			r[i].host, r[i].device, gib(r[i].mem_free), gib(p->slot[i].used), lay,
			total > 0 ? 100.0 * p->slot[i].ms / total : 0.0);
	}
	fprintf(f,
		"slowest stage: %.2f ms a token (decode at most %.1f tokens/s a sequence, "
		"more with batches in flight)\n",
		p->bottleneck_ms, total > 0 ? 1e3 / total : 0.0);
}
