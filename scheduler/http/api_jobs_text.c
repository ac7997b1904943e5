/* api_jobs_text.c: the job listing's JSON written straight into a buffer (see api_json.h).
 *
 * A listing of thousands of jobs through jansson builds an object per job and a value per field
 * (malloc and free dominate its profile, bench/api/listing-cost). This writes the same document
 * in one pass: the same keys, values and omissions as api_job_json (a job with a string that is
 * not UTF-8 or a time that is not finite is left out, as json_pack fails on it; an argv item or
 * a task likewise), and reals as jansson prints them (%.17g, ".0" when integral).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/http/api_json.h"
#include "common/names.h"

/* jansson's rule: well-formed UTF-8, no overlong forms, no surrogates, at most U+10FFFF */
static bool utf8_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned c = *p, n;
		uint32_t cp;
		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return false;
		for (unsigned i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

struct w {
	gp_buf_t *b;
	int failed;
};

static void raw(struct w *w, const char *s, size_t n)
{
	if (gp_buf_append(w->b, s, n) < 0)
		w->failed = 1;
}

static void fmt(struct w *w, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void fmt(struct w *w, const char *f, ...)
{
	char tmp[64];
	va_list ap;
	va_start(ap, f);
	int n = vsnprintf(tmp, sizeof(tmp), f, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		w->failed = 1;
	else
		raw(w, tmp, (size_t)n);
}

static void str(struct w *w, const char *s)
{
	raw(w, "\"", 1);
	const char *run = s;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		raw(w, run, (size_t)(s - run));
		run = s + 1;
		switch (c) {
		case '"':
			raw(w, "\\\"", 2);
			break;
		case '\\':
			raw(w, "\\\\", 2);
			break;
		case '\n':
			raw(w, "\\n", 2);
			break;
		case '\t':
			raw(w, "\\t", 2);
			break;
		case '\r':
			raw(w, "\\r", 2);
			break;
		case '\b':
			raw(w, "\\b", 2);
			break;
		case '\f':
			raw(w, "\\f", 2);
			break;
		default:
			fmt(w, "\\u%04X", c);
		}
	}
	raw(w, run, (size_t)(s - run));
	raw(w, "\"", 1);
}

/* as jansson's jsonp_dtostr: %.17g, exponent without '+' and leading zeros, ".0" if integral */
static void real(struct w *w, double v)
{
	char t[40];
	int n = snprintf(t, sizeof(t), "%.17g", v);
	if (n < 0 || (size_t)n >= sizeof(t) - 3) {
		w->failed = 1;
		return;
	}
	char *e = strchr(t, 'e');
	if (e) {
		char *d = e + 1, *src = e + 1;
		if (*src == '+')
			src++;
		else if (*src == '-')
			*d++ = *src++;
		while (*src == '0' && src[1])
			src++;
		memmove(d, src, strlen(src) + 1);
	} else if (!strchr(t, '.')) {
		strcat(t, ".0");
	}
	raw(w, t, strlen(t));
}

static void key(struct w *w, const char *k)
{
	fmt(w, ",\"%s\":", k);
}

static int job(struct w *w, const Gpool__JobInfo *j)
{
	const Gpool__JobSpec *sp = j->spec;
	const char *name = sp && sp->name ? sp->name : "", *user = j->user ? j->user : "";
	const char *reason = j->reason ? j->reason : "", *nodes = j->nodelist ? j->nodelist : "";
	if (!utf8_ok(name) || !utf8_ok(user) || !utf8_ok(reason) || !utf8_ok(nodes) ||
	    !isfinite(j->submit_time) || !isfinite(j->start_time) || !isfinite(j->end_time) ||
	    !isfinite(j->energy_j))
		return 0; /* json_pack refuses it: api_job_json gives NULL */
	fmt(w, "{\"id\":%llu,\"name\":", (unsigned long long)j->id);
	str(w, name);
	raw(w, ",\"user\":", 8);
	str(w, user);
	fmt(w, ",\"uid\":%u,\"state\":", (unsigned)j->uid);
	str(w, gp_job_state_name(j->state));
	fmt(w, ",\"attempt\":%u,\"reason\":", (unsigned)j->attempt);
	str(w, reason);
	key(w, "submit_time");
	real(w, j->submit_time);
	fmt(w, ",\"exit_code\":%d,\"nodelist\":", (int)j->exit_code);
	str(w, nodes);
	key(w, "start_time");
	real(w, j->start_time);
	key(w, "end_time");
	real(w, j->end_time);
	key(w, "energy_j");
	real(w, j->energy_j);
	if (sp) {
		raw(w, ",\"argv\":[", 9);
		bool first = true;
		for (size_t i = 0; i < sp->n_argv; i++) {
			if (!sp->argv[i] || !utf8_ok(sp->argv[i]))
				continue; /* json_string gives NULL: the item is left out */
			if (!first)
				raw(w, ",", 1);
			str(w, sp->argv[i]);
			first = false;
		}
		fmt(w, "],\"ntasks\":%u,\"cpus_per_task\":%u", (unsigned)sp->ntasks,
		    (unsigned)sp->cpus_per_task);
		fmt(w, ",\"gpus_per_task\":%u,\"time_limit_sec\":%u", (unsigned)sp->gpus_per_task,
		    (unsigned)sp->time_limit_sec);
		fmt(w, ",\"priority\":%d", (int)sp->priority);
	}
	if (isfinite(j->cpu_sec)) {
		key(w, "cpu_sec");
		real(w, j->cpu_sec);
	}
	fmt(w, ",\"max_rss_kb\":%llu,\"tasks\":[", (unsigned long long)j->max_rss_kb);
	bool first = true;
	for (size_t i = 0; i < j->n_tasks; i++) {
		const Gpool__TaskPlacement *t = j->tasks[i];
		const char *node = t->node ? t->node : "";
		if (!utf8_ok(node))
			continue;
		fmt(w, "%s{\"rank\":%d,\"node\":", first ? "" : ",", (int)t->rank);
		str(w, node);
		raw(w, ",\"cards\":[", 10);
		for (size_t c = 0; c < t->n_cards; c++)
			fmt(w, "%s%u", c ? "," : "", (unsigned)t->cards[c]);
		raw(w, "]}", 2);
		first = false;
	}
	raw(w, "]}", 2);
	return 1;
}

int api_jobs_text(const Gpool__JobQueryReply *r, gp_buf_t *out)
{
	struct w w = {out, 0};
	raw(&w, "{\"jobs\":[", 9);
	bool first = true;
	for (size_t i = 0; i < r->n_jobs && !w.failed; i++) {
		size_t mark = out->len;
		if (!first)
			raw(&w, ",", 1);
		if (job(&w, r->jobs[i]))
			first = false;
		else
			out->len = mark; /* left out: take back the comma */
	}
	raw(&w, "]}", 2);
	return w.failed ? -1 : 0;
}
