/* frame.c: encoding and decoding the exec-proxy's frames (see frame.h). */
#include "launch/frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static const uint32_t known_types[] = {
    GP_FRAME_AUTH, GP_FRAME_EXEC, GP_FRAME_HOLD, GP_FRAME_SIGNAL, GP_FRAME_CHALLENGE,
    GP_FRAME_OUT,  GP_FRAME_ERR,  GP_FRAME_EXIT, GP_FRAME_OK,	  GP_FRAME_FAIL,
};

static int known(uint32_t t)
{
	for (size_t i = 0; i < sizeof(known_types) / sizeof(known_types[0]); i++)
		if (known_types[i] == t)
			return 1;
	return 0;
}

int gp_frame_parse(const uint8_t *buf, size_t len, struct gp_frame *f)
{
	if (len < GP_FRAME_HDR)
		return 0;
	uint32_t type = get32(buf), n = get32(buf + 4);
	if (!known(type)) {
		errno = EPROTO;
		return -1;
	}
	if (n > GP_FRAME_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	if (len - GP_FRAME_HDR < n)
		return 0;
	f->type = type;
	f->data = buf + GP_FRAME_HDR;
	f->len = n;
	return (int)(GP_FRAME_HDR + n);
}

int gp_frame_put(gp_buf_t *b, uint32_t type, const void *data, size_t len)
{
	if (len > GP_FRAME_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	uint8_t h[GP_FRAME_HDR];
	put32(h, type);
	put32(h + 4, (uint32_t)len);
	if (gp_buf_reserve(b, GP_FRAME_HDR + len) < 0)
		return -1;
	gp_buf_append(b, h, sizeof(h));
	if (len)
		gp_buf_append(b, data, len);
	return 0;
}

int gp_frame_put_u32(gp_buf_t *b, uint32_t type, uint32_t v)
{
	uint8_t p[4];
	put32(p, v);
	return gp_frame_put(b, type, p, sizeof(p));
}

int gp_frame_u32(const struct gp_frame *f, uint32_t *v)
{
	if (f->len != 4) {
		errno = EPROTO;
		return -1;
	}
	*v = get32(f->data);
	return 0;
}

int gp_frame_put_argv(gp_buf_t *b, char *const *argv)
{
	gp_buf_t p = {0};
	for (size_t i = 0; argv[i]; i++) {
		if (gp_buf_append(&p, argv[i], strlen(argv[i]) + 1) < 0) {
			gp_buf_release(&p);
			return -1;
		}
	}
	int rc = gp_frame_put(b, GP_FRAME_EXEC, p.data, p.len);
	gp_buf_release(&p);
	return rc;
}

void gp_frame_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}

char **gp_frame_argv(const struct gp_frame *f)
{
	if (f->len == 0 || f->data[f->len - 1] != '\0') {
		errno = EPROTO;
		return NULL;
	}
	size_t n = 0;
	for (uint32_t i = 0; i < f->len; i++)
		n += f->data[i] == '\0';
	if (n > GP_FRAME_ARGV_MAX) {
		errno = EPROTO;
		return NULL;
	}
	char **v = calloc(n + 1, sizeof(*v));
	if (!v)
		return NULL;
	const char *p = (const char *)f->data;
	for (size_t i = 0; i < n; i++) {
		if (!(v[i] = strdup(p))) {
			gp_frame_argv_free(v);
			errno = ENOMEM;
			return NULL;
		}
		p += strlen(p) + 1;
	}
	return v;
}

int gp_frame_flush(int fd, gp_buf_t *b)
{
	size_t off = 0;
	while (off < b->len) {
		ssize_t k = write(fd, b->data + off, b->len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		off += (size_t)k;
	}
	b->len = 0;
	return 0;
}
