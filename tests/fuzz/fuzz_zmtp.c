/* fuzz_zmtp: the bytes a scheduler (or anyone on its port) sends a command, as common/zmtp.c
 * reads them: a greeting, a command frame, then messages. The input is written into one end of
 * a socketpair whose other end the DEALER greets over; every message it takes must hold at
 * most two frames, each within the size limit, inside the bytes that were sent. */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/zmtp.h"

#define MAX_MESSAGE 4096
#define INPUT_LIMIT 65536 /* under a socketpair's buffer: the write never blocks */

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > INPUT_LIMIT)
		return 0;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	int bufsz = 4 * INPUT_LIMIT;
	setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	if (size && write(sv[1], data, size) != (ssize_t)size)
		abort();
	shutdown(sv[1], SHUT_WR); /* then end of stream: nothing waits for more */
	gp_error_t err = {{0}};
	gp_zmtp_t *z = gp_zmtp_create("ipc:///fuzz", MAX_MESSAGE, &err);
	FUZZ_CHECK(z != NULL);
	if (gp_zmtp_attach(z, sv[0], 1000, &err) == 0) {
		size_t total = 0;
		for (;;) {
			const void *f[2];
			size_t l[2], n;
			if (gp_zmtp_recv(z, f, l, 2, &n, 1000, &err) < 0) {
				FUZZ_CHECK(err.text[0] != '\0');
				FUZZ_CHECK(errno != ETIMEDOUT); /* the stream ended: never a wait */
				break;
			}
			FUZZ_CHECK(n >= 1 && n <= 2);
			for (size_t i = 0; i < n; i++) {
				FUZZ_CHECK(l[i] <= MAX_MESSAGE);
				total += l[i];
				/* read every byte: the sanitizers see a bad pointer or length */
				for (size_t k = 0; k < l[i]; k++)
					sink ^= ((const uint8_t *)f[i])[k];
			}
			FUZZ_CHECK(total <= size);
		}
	} else {
		FUZZ_CHECK(err.text[0] != '\0');
	}
	gp_zmtp_destroy(&z);
	close(sv[1]);
	return 0;
}
