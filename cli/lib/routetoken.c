/* routetoken.c: the owner's route token in a file (see routetoken.h). */
#include "cli/lib/routetoken.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sha256.h"

#define TOKEN_HEX 64

static int make(const char *path, char tok[TOKEN_HEX + 1], gp_error_t *err)
{
	uint8_t r[TOKEN_HEX / 2];
	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return gp_errprintf(err, "cannot make a route token: %s", strerror(errno));
	for (size_t i = 0; i < sizeof(r); i++)
		snprintf(tok + 2 * i, 3, "%02x", r[i]);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return gp_errprintf(err, "cannot create route token file '%s': %s", path,
				    strerror(errno));
	char line[TOKEN_HEX + 1];
	memcpy(line, tok, TOKEN_HEX);
	line[TOKEN_HEX] = '\n';
	ssize_t w = write(fd, line, sizeof(line));
	int e = errno;
	if (close(fd) < 0 || w != (ssize_t)sizeof(line)) {
		unlink(path);
		return gp_errprintf(err, "cannot write route token file '%s': %s", path,
				    strerror(w < 0 ? e : EIO));
	}
	return 0;
}

static int load(const char *path, char tok[TOKEN_HEX + 1], gp_error_t *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return gp_errprintf(err, "cannot open route token file '%s': %s", path,
				    strerror(errno));
	struct stat st;
	char buf[TOKEN_HEX + 2];
	ssize_t n = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    !(st.st_mode & 077))
		n = read(fd, buf, sizeof(buf));
	else
		errno = EPERM;
	int e = errno;
	close(fd);
	if (n < 0)
		return gp_errprintf(err,
				    "route token file '%s': %s (it must be a file of yours that "
				    "only you may read)",
				    path, strerror(e));
	if ((n != TOKEN_HEX && !(n == TOKEN_HEX + 1 && buf[TOKEN_HEX] == '\n')) ||
	    strspn(buf, "0123456789abcdef") < TOKEN_HEX) {
		errno = EINVAL;
		return gp_errprintf(err, "route token file '%s' does not hold a token", path);
	}
	memcpy(tok, buf, TOKEN_HEX);
	tok[TOKEN_HEX] = '\0';
	return 0;
}

int gp_route_token(const char *path, char hash[65], gp_error_t *err)
{
	char tok[TOKEN_HEX + 1];
	struct stat st;
	if (lstat(path, &st) < 0 && errno == ENOENT ? make(path, tok, err) < 0
						    : load(path, tok, err) < 0)
		return -1;
	uint8_t md[32];
	const void *p = tok;
	size_t n = TOKEN_HEX;
	gp_sha256(&p, &n, 1, md);
	for (int i = 0; i < 32; i++)
		snprintf(hash + 2 * i, 3, "%02x", md[i]);
	explicit_bzero(tok, sizeof(tok));
	return 0;
}
