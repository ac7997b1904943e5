/* container.c - the frame of gtrain's files (container.h) */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "model/container.h"
#include "model/model.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gpool writes its model files as the host's floats: little-endian hosts only"
#endif

static int bad(gp_error_t *err, const char *what, const char *why)
{
	errno = EINVAL;
	return gp_errprintf(err, "%s: %s", what, why);
}

json_t *gm_header_parse(const void *buf, size_t len, const char *magic, const char *what,
			const unsigned char **body, gp_error_t *err)
{
	const unsigned char *p = buf;
	size_t ml = strlen(magic);
	if (len < ml || memcmp(p, magic, ml) != 0) {
		gp_errprintf(err, "%s: bad magic (not '%.*s')", what, (int)ml - 1, magic);
		errno = EINVAL;
		return NULL;
	}
	size_t lim = len - ml < GM_MAX_HEADER ? len - ml : GM_MAX_HEADER;
	const unsigned char *nl = memchr(p + ml, '\n', lim);
	if (!nl) {
		bad(err, what, "header line missing or too long");
		return NULL;
	}
	json_error_t je;
	json_t *j =
	    json_loadb((const char *)p + ml, (size_t)(nl - p - ml), JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		gp_errprintf(err, "%s: header is not a JSON object (%s)", what,
			     j ? "not an object" : je.text);
		errno = EINVAL;
		return NULL;
	}
	*body = nl + 1;
	return j;
}

int gm_header_sizes(json_t *j, const char *what, int *sizes, int *nsizes, gp_error_t *err)
{
	json_t *a = json_object_get(j, "layers");
	size_t i;
	json_t *v;
	if (!json_is_array(a) || json_array_size(a) < 2 || json_array_size(a) > GM_MAX_SIZES) {
		errno = EINVAL;
		return gp_errprintf(err, "%s: 'layers' must list 2 to %d widths", what,
				    GM_MAX_SIZES);
	}
	json_array_foreach(a, i, v)
	{
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > GM_MAX_WIDTH) {
			errno = EINVAL;
			return gp_errprintf(err, "%s: layer width %zu is not an integer in 1..%d",
					    what, i, GM_MAX_WIDTH);
		}
		sizes[i] = (int)json_integer_value(v);
	}
	*nsizes = (int)json_array_size(a);
	return 0;
}

json_t *gm_header_sizes_json(const gm_model_t *m)
{
	json_t *a = json_array();
	for (int i = 0; i < gm_model_nsizes(m); i++)
		json_array_append_new(a, json_integer(gm_model_sizes(m)[i]));
	return a;
}

int gm_header_scale(json_t *j, const char *what, int optional, float *scale, gp_error_t *err)
{
	json_t *v = json_object_get(j, "input_scale");
	if (!v && optional) {
		*scale = 1.0f;
		return 0;
	}
	if (!json_is_number(v) || !isfinite(json_number_value(v)))
		return bad(err, what, "'input_scale' must be a finite number");
	*scale = (float)json_number_value(v);
	return 0;
}

int gm_floats_read(float *dst, const unsigned char *p, size_t n, int finite)
{
	memcpy(dst, p, n * sizeof(float));
	for (size_t i = 0; finite && i < n; i++)
		if (!isfinite(dst[i])) {
			errno = EINVAL;
			return -1;
		}
	return 0;
}

int gm_atomic_open(gm_atomic_t *o, const char *path, gp_error_t *err)
{
	int fd;
	o->path = path;
	o->f = NULL;
	snprintf(o->tmp, sizeof(o->tmp), "%s.tmp.%d", path, (int)getpid());
	if ((fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0 ||
	    !(o->f = fdopen(fd, "wb"))) {
		int e = errno;
		if (fd >= 0) {
			close(fd);
			unlink(o->tmp);
		}
		errno = e;
		return gp_errprintf(err, "cannot write '%s': %s", o->tmp, strerror(e));
	}
	return 0;
}

int gm_atomic_close(gm_atomic_t *o, int ok, gp_error_t *err)
{
	int e = 0;
	if (ok && (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0))
		ok = 0, e = errno;
	if (fclose(o->f) != 0 && ok)
		ok = 0, e = errno;
	o->f = NULL;
	if (ok && rename(o->tmp, o->path) != 0)
		ok = 0, e = errno;
	if (!ok) {
		unlink(o->tmp);
		errno = e ? e : EIO;
		return gp_errprintf(err, "cannot write '%s': %s", o->path, strerror(errno));
	}
	return 0;
}

int gm_put_header(FILE *f, const char *magic, json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));
	int ok = s && fputs(magic, f) >= 0 && fputs(s, f) >= 0 && fputc('\n', f) != EOF;
	free(s);
	return ok;
}

void *gm_slurp(const char *path, size_t *len, gp_error_t *err)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	void *buf;
	if (!f || fstat(fileno(f), &st) < 0) {
		int e = errno;
		if (f)
			fclose(f);
		errno = e;
		gp_errprintf(err, "cannot read '%s': %s", path, strerror(e));
		return NULL;
	}
	if (st.st_size > (off_t)4 << 30 || !(buf = malloc((size_t)st.st_size + 1))) {
		fclose(f);
		errno = st.st_size > (off_t)4 << 30 ? EFBIG : ENOMEM;
		gp_errprintf(err, "cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	*len = fread(buf, 1, (size_t)st.st_size, f);
	int rerr = ferror(f);
	fclose(f);
	if (rerr) {
		free(buf);
		errno = EIO;
		gp_errprintf(err, "cannot read '%s': %s", path, strerror(errno));
		return NULL;
	}
	return buf;
}
