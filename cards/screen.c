/* screen.c: a screening job's result file, read defensively (see screen.h). */
#include "cards/screen.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gp_screen_path(const char *workdir, uint32_t attempt, uint32_t rank, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/.gpool-screen.%u.%u.json", workdir, attempt, rank);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int bad(gp_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(gp_error_t *err, const char *fmt, ...)
{
	char text[sizeof(err->text)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	errno = EINVAL;
	return gp_errprintf(err, "%s", text);
}

/* A bounded, printable copy: control characters become '?', the rest is cut at len - 1. */
static void copy_text(char *dst, size_t len, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < len; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
	dst[i] = '\0';
}

/* An optional string member: absent or null is "", anything else but a string is an error. */
static int text(json_t *o, const char *key, char *dst, size_t len, const char *where,
		gp_error_t *err)
{
	json_t *v = json_object_get(o, key);
	dst[0] = '\0';
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return bad(err, "%s: '%s' is not a string", where, key);
	copy_text(dst, len, json_string_value(v));
	return 0;
}

/* A number member in [lo, hi]. Absent or null: *out = -1 unless required. */
static int number(json_t *o, const char *key, double lo, double hi, bool required, double *out,
		  const char *where, gp_error_t *err)
{
	json_t *v = o ? json_object_get(o, key) : NULL;
	*out = -1;
	if (!v || json_is_null(v)) {
		if (required)
			return bad(err, "%s: '%s' is missing", where, key);
		return 0;
	}
	if (!json_is_number(v))
		return bad(err, "%s: '%s' is not a number", where, key);
	double d = json_number_value(v);
	if (!isfinite(d) || d < lo || d > hi)
		return bad(err, "%s: '%s' is out of range (%g)", where, key, d);
	*out = d;
	return 0;
}

static int count(json_t *o, const char *key, uint64_t *out, const char *where, gp_error_t *err)
{
	json_t *v = o ? json_object_get(o, key) : NULL;
	*out = 0;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return bad(err, "%s: '%s' is not a count", where, key);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* An optional object member: absent or null is NULL. */
static int member_object(json_t *o, const char *key, json_t **out, const char *where,
			 gp_error_t *err)
{
	json_t *v = json_object_get(o, key);
	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_object(v))
		return bad(err, "%s: '%s' is not an object", where, key);
	*out = v;
	return 0;
}

static int parse_card(json_t *c, size_t i, struct gp_screen_card *out, gp_error_t *err)
{
	static const char *const grades[] = {"good", "warn", "fail"};
	char where[32];
	snprintf(where, sizeof(where), "cards[%zu]", i);
	memset(out, 0, sizeof(*out));
	if (!json_is_object(c))
		return bad(err, "%s is not an object", where);
	json_t *v = json_object_get(c, "card");
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) >= GP_SCREEN_MAX_CARDS)
		return bad(err, "%s: 'card' is not a card index (0..%d)", where,
			   GP_SCREEN_MAX_CARDS - 1);
	out->card = (uint32_t)json_integer_value(v);
	v = json_object_get(c, "grade");
	const char *g = json_is_string(v) ? json_string_value(v) : NULL;
	for (size_t k = 0; g && k < sizeof(grades) / sizeof(grades[0]); k++)
		if (!strcmp(g, grades[k]))
			snprintf(out->grade, sizeof(out->grade), "%s", grades[k]);
	if (!out->grade[0])
		return bad(err, "%s: 'grade' is not good, warn or fail", where);
	json_t *bw, *mt;
	if (text(c, "reason", out->reason, sizeof(out->reason), where, err) < 0 ||
	    text(c, "backend", out->backend, sizeof(out->backend), where, err) < 0 ||
	    text(c, "device", out->device, sizeof(out->device), where, err) < 0 ||
	    member_object(c, "bandwidth", &bw, where, err) < 0 ||
	    member_object(c, "memtest", &mt, where, err) < 0)
		return -1;
	if (!bw)
		return bad(err, "%s: 'bandwidth' is missing", where);
	/* gschedd takes a throughput up to 1e7 GB/s; 1e6 % of fluctuation is nonsense too */
	if (number(bw, "mean_gbps", 0, 1e7, true, &out->bw_mean_gbps, where, err) < 0 ||
	    number(bw, "fluct_pct", 0, 1e6, false, &out->bw_fluct_pct, where, err) < 0 ||
	    count(mt, "errors", &out->mem_errors, where, err) < 0 ||
	    count(mt, "bytes", &out->mem_tested_bytes, where, err) < 0 ||
	    number(c, "f32_gflops", 0, 1e9, false, &out->f32_gflops, where, err) < 0 ||
	    number(c, "f16_gflops", 0, 1e9, false, &out->f16_gflops, where, err) < 0 ||
	    number(c, "temperature_c", -300, 1000, false, &out->temperature_c, where, err) < 0 ||
	    number(c, "power_w", 0, 1e6, false, &out->power_w, where, err) < 0)
		return -1;
	return 0;
}

int gp_screen_parse(const char *buf, size_t len, struct gp_screen_result *out, gp_error_t *err)
{
	memset(out, 0, sizeof(*out));
	if (len > GP_SCREEN_MAX) {
		errno = EFBIG;
		return gp_errprintf(err, "result of %zu bytes is over %u", len, GP_SCREEN_MAX);
	}
	json_error_t je;
	json_t *doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return bad(err, "not JSON: %s (line %d)", je.text, je.line);
	int rc = -1;
	if (!json_is_object(doc)) {
		bad(err, "not a JSON object");
		goto out;
	}
	if (text(doc, "node", out->node, sizeof(out->node), "result", err) < 0)
		goto out;
	json_t *cards = json_object_get(doc, "cards");
	if (!json_is_array(cards)) {
		bad(err, "no 'cards' list");
		goto out;
	}
	if (json_array_size(cards) > GP_SCREEN_MAX_CARDS) {
		bad(err, "%zu cards (at most %d)", json_array_size(cards), GP_SCREEN_MAX_CARDS);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(cards); i++) {
		if (parse_card(json_array_get(cards, i), i, &out->cards[i], err) < 0)
			goto out;
		if (gp_screen_find(out, out->cards[i].card)) {
			bad(err, "card %u listed twice", out->cards[i].card);
			goto out;
		}
		out->n = i + 1;
	}
	rc = 0;
out:
	json_decref(doc);
	if (rc < 0) {
		int e = errno;
		memset(out, 0, sizeof(*out));
		errno = e;
	}
	return rc;
}

int gp_screen_read(const char *path, uid_t owner, struct gp_screen_result *out, gp_error_t *err)
{
	memset(out, 0, sizeof(*out));
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		gp_errprintf(err, "cannot open '%s': %s", path,
			     e == ELOOP ? "a symbolic link" : strerror(e));
		errno = e;
		return -1;
	}
	struct stat st;
	char *buf = NULL;
	int rc = -1;
	if (fstat(fd, &st) < 0) {
		gp_errprintf(err, "cannot stat '%s': %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != owner) {
		bad(err, "'%s' is not a regular file of uid %u with one link", path,
		    (unsigned)owner);
		goto out;
	}
	if (st.st_size > (off_t)GP_SCREEN_MAX) {
		errno = EFBIG;
		gp_errprintf(err, "'%s' has %lld bytes (at most %u)", path, (long long)st.st_size,
			     GP_SCREEN_MAX);
		goto out;
	}
	/* one byte more than allowed: a file that grows after the fstat is caught too */
	if (!(buf = malloc(GP_SCREEN_MAX + 1))) {
		gp_errprintf(err, "out of memory");
		goto out;
	}
	size_t len = 0;
	while (len <= GP_SCREEN_MAX) {
		ssize_t k = read(fd, buf + len, GP_SCREEN_MAX + 1 - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			gp_errprintf(err, "cannot read '%s': %s", path, strerror(errno));
			goto out;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	if (gp_screen_parse(buf, len, out, err) < 0) {
		if (err) {
			gp_error_t inner = *err;
			gp_errprintf(err, "'%s': %s", path, inner.text);
		}
		goto out;
	}
	rc = 0;
out : {
	int e = errno;
	free(buf);
	close(fd);
	errno = e;
}
	return rc;
}

const struct gp_screen_card *gp_screen_find(const struct gp_screen_result *r, uint32_t card)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->cards[i].card == card)
			return &r->cards[i];
	return NULL;
}
