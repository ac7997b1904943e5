/* ptyframe.c: the pty stream's frames (ptyframe.h). */
#include "common/ptyframe.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static const char hello_magic[6] = {'G', 'P', 'P', 'T', 'Y', '1'};

/* The least and most payload a frame of type may have; false for an unknown type. */
static bool bounds(uint8_t type, size_t *lo, size_t *hi)
{
	switch (type) {
	case GP_PTY_HELLO:
		*lo = 1, *hi = GP_PTY_HELLO_MAX;
		return true;
	case GP_PTY_ACCEPT:
	case GP_PTY_EOF:
		*lo = 0, *hi = 0;
		return true;
	case GP_PTY_REFUSE:
		*lo = 0, *hi = GP_PTY_REFUSE_MAX;
		return true;
	case GP_PTY_DATA:
		*lo = 1, *hi = GP_PTY_DATA_MAX;
		return true;
	case GP_PTY_WINSIZE:
	case GP_PTY_EXIT:
		*lo = 4, *hi = 4;
		return true;
	case GP_PTY_SIGNAL:
		*lo = 1, *hi = 1;
		return true;
	default:
		return false;
	}
}

ssize_t gp_pty_frame_parse(const uint8_t *buf, size_t n, struct gp_pty_frame *f)
{
	if (n < GP_PTY_HDR)
		return 0;
	size_t lo, hi, len = (size_t)buf[2] << 8 | buf[3];
	if (buf[1] != 0 || !bounds(buf[0], &lo, &hi) || len < lo || len > hi) {
		errno = EPROTO;
		return -1;
	}
	if (n - GP_PTY_HDR < len)
		return 0;
	f->type = buf[0];
	f->data = buf + GP_PTY_HDR;
	f->len = len;
	return (ssize_t)(GP_PTY_HDR + len);
}

ssize_t gp_pty_frame_put(uint8_t *out, size_t room, uint8_t type, const void *data, size_t len)
{
	size_t lo, hi;
	if (!bounds(type, &lo, &hi) || len < lo || len > hi || room < GP_PTY_HDR + len ||
	    (len && !data)) {
		errno = EINVAL;
		return -1;
	}
	out[0] = type;
	out[1] = 0;
	out[2] = (uint8_t)(len >> 8);
	out[3] = (uint8_t)len;
	if (len)
		memcpy(out + GP_PTY_HDR, data, len);
	return (ssize_t)(GP_PTY_HDR + len);
}

void gp_pty_hello_pack(const struct gp_pty_hello *h, uint8_t out[GP_PTY_HELLO_LEN])
{
	memcpy(out, hello_magic, sizeof(hello_magic));
	for (int i = 0; i < 8; i++)
		out[6 + i] = (uint8_t)(h->job_id >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		out[14 + i] = (uint8_t)(h->attempt >> (24 - 8 * i));
	memcpy(out + 18, h->key, GP_PTY_KEY_LEN);
}

int gp_pty_hello_parse(const void *payload, size_t len, struct gp_pty_hello *h)
{
	const uint8_t *p = payload;
	if (!p || len != GP_PTY_HELLO_LEN || memcmp(p, hello_magic, sizeof(hello_magic)) != 0) {
		errno = EPROTO;
		return -1;
	}
	h->job_id = 0;
	for (int i = 0; i < 8; i++)
		h->job_id = h->job_id << 8 | p[6 + i];
	h->attempt = 0;
	for (int i = 0; i < 4; i++)
		h->attempt = h->attempt << 8 | p[14 + i];
	memcpy(h->key, p + 18, GP_PTY_KEY_LEN);
	return 0;
}

bool gp_pty_signal_allowed(int sig)
{
	return sig == SIGINT || sig == SIGQUIT || sig == SIGTSTP || sig == SIGHUP ||
	       sig == SIGTERM || sig == SIGCONT;
}

bool gp_pty_key_eq(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint8_t d = 0;
	for (size_t i = 0; i < n; i++)
		d |= a[i] ^ b[i];
	return d == 0;
}
