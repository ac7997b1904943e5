/* gp-ptyprobe: knock on a gsub --pty terminal's port (worker/stepd/ptyserv.h) the way a stranger
 * would, and say what came back. t1300-pty uses it to check that gstepd lets in the job's
 * owner with the job's key and nobody else (and t1301 that a reattach is the owner's only).
 *
 *     gp-ptyprobe ADDR:PORT MODE [JOB ATTEMPT]
 *
 * MODE: none     a DATA frame where the credential should be
 *       garbage  a HELLO whose credential is not one
 *       self     a HELLO with the caller's own MUNGE credential for JOB ATTEMPT and a key
 *                made up here (the real one never leaves its gsub)
 *       nokey    a HELLO with the caller's own credential and no key (all zero), as gsub
 *                --attach reattaches with
 *       oversize a header announcing a 65535-byte HELLO (beyond the bound)
 * Prints "refused: REASON", "accepted" or "closed" (no answer before the peer closed).
 * Exit status: 0 refused, 4 accepted, 3 closed without a word, 1 a local failure, 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/ptyframe.h"
#include "common/ptylink.h"

static int dial(const char *ep)
{
	char host[128];
	snprintf(host, sizeof(host), "%s", ep);
	char *colon = strrchr(host, ':');
	if (!colon)
		return -1;
	*colon = '\0';
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return -1;
	int fd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

int main(int argc, char **argv)
{
	if (argc < 3 || ((!strcmp(argv[2], "self") || !strcmp(argv[2], "nokey")) && argc < 5)) {
		fprintf(stderr,
			"usage: gp-ptyprobe ADDR:PORT none|garbage|self|nokey|oversize [JOB "
			"ATTEMPT]\n");
		return 2;
	}
	int fd = dial(argv[1]);
	if (fd < 0) {
		fprintf(stderr, "gp-ptyprobe: cannot connect to '%s': %s\n", argv[1],
			strerror(errno));
		return 1;
	}
	const char *mode = argv[2];
	if (!strcmp(mode, "oversize")) {
		uint8_t hdr[4] = {GP_PTY_HELLO, 0, 0xff, 0xff};
		if (write(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
			return 1;
	}
	gp_ptylink_t *l = gp_ptylink_create(fd);
	if (!l)
		return 1;
	if (!strcmp(mode, "none")) {
		gp_ptylink_send(l, GP_PTY_DATA, "ls\n", 3);
	} else if (!strcmp(mode, "garbage")) {
		const char *c = "MUNGE:not-a-credential:";
		gp_ptylink_send(l, GP_PTY_HELLO, c, strlen(c));
	} else if (!strcmp(mode, "self") || !strcmp(mode, "nokey")) {
		gp_error_t err;
		gp_auth_t *a = gp_auth_create(NULL, &err);
		struct gp_pty_hello h = {.job_id = strtoull(argv[3], NULL, 10),
					 .attempt = (uint32_t)strtoul(argv[4], NULL, 10)};
		/* self: a made-up key; nokey: none (all zero), as gsub --attach sends */
		memset(h.key, strcmp(mode, "nokey") ? 0x5a : 0, sizeof(h.key));
		uint8_t p[GP_PTY_HELLO_LEN];
		gp_pty_hello_pack(&h, p);
		char *cred = NULL;
		if (!a || gp_auth_encode(a, p, sizeof(p), &cred, &err) < 0) {
			fprintf(stderr, "gp-ptyprobe: %s\n", err.text);
			return 1;
		}
		gp_ptylink_send(l, GP_PTY_HELLO, cred, strlen(cred));
		free(cred);
		gp_auth_destroy(&a);
	} else if (strcmp(mode, "oversize") != 0) {
		fprintf(stderr, "gp-ptyprobe: unknown mode '%s'\n", mode);
		return 2;
	}
	gp_ptylink_flush(l);
	while (1) {
		struct pollfd p = {.fd = gp_ptylink_fd(l), .events = POLLIN};
		if (poll(&p, 1, 15000) <= 0 || gp_ptylink_read(l) < 0) {
			printf("closed\n");
			return 3;
		}
		struct gp_pty_frame f;
		int r = gp_ptylink_next(l, &f);
		if (r < 0) {
			printf("closed\n");
			return 3;
		}
		if (r == 0)
			continue;
		if (f.type == GP_PTY_REFUSE) {
			printf("refused: %.*s\n", (int)f.len, (const char *)f.data);
			return 0;
		}
		if (f.type == GP_PTY_ACCEPT) {
			printf("accepted\n");
			return 4;
		}
	}
}
