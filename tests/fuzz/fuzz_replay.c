/* fuzz_replay: the authenticated replay window (common/replay.h) against a model of what it
 * promises. The input is a list of 12-byte steps: sender (uid, epoch: four of each), seq,
 * message count and a time step. For every step the harness checks: a number at or below the
 * last one accepted from a sender is refused (EEXIST) unless that sender was silent longer
 * than GP_REPLAY_KEEP_SEC; a wrapping span is refused (ERANGE); a known, live sender's new
 * number is accepted; ENOSPC only when the table's senders fill it. A small table (8 slots)
 * brings the full-table path within reach; a hang is a finding too (libFuzzer's timeout). */
#include <errno.h>

#include "tests/fuzz/fuzz.h"
#include "common/replay.h"

#define MAX_SLOTS 8
#define NKEYS	  16

struct model {
	int known;
	uint64_t end;
	double seen;
};

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	gp_replay_t *r = gp_replay_create(MAX_SLOTS);
	FUZZ_CHECK(r != NULL);
	struct model m[NKEYS] = {{0}};
	int senders = 0;
	double now = 1000;
	for (size_t off = 0; off + 12 <= size; off += 12) {
		const uint8_t *p = data + off;
		uint32_t uid = p[0] & 3;
		uint64_t epoch = (p[1] & 3) + 1;
		/* seq: small numbers mostly, near 2^64 when the top bit of p[9] is set */
		uint64_t seq = rd(p + 2, 6);
		if (p[9] & 0x80)
			seq = UINT64_MAX - (seq & 0xff);
		uint64_t count = p[8];
		now += (p[10] & 0x80) ? (double)(p[10] & 0x7f) * 20 : (double)p[10] / 100;
		(void)p[11];
		struct model *k = &m[uid * 4 + (epoch - 1)];
		uint64_t span = count ? count : 1;
		int wraps = seq > UINT64_MAX - (span - 1);
		errno = 0;
		int rc = gp_replay_check(r, uid, epoch, seq, count, now);
		int e = errno;
		if (wraps) {
			FUZZ_CHECK(rc == -1 && e == ERANGE);
			continue;
		}
		int live = k->known && now - k->seen <= GP_REPLAY_KEEP_SEC;
		if (live && seq > k->end)
			FUZZ_CHECK(rc == 0);
		if (rc == 0) {
			FUZZ_CHECK(!k->known || seq > k->end || !live);
			if (!k->known)
				senders++;
			k->known = 1;
			k->end = seq + span - 1;
			k->seen = now;
		} else if (e == EEXIST) {
			FUZZ_CHECK(k->known && seq <= k->end);
		} else {
			FUZZ_CHECK(e == ENOSPC);
			FUZZ_CHECK(!live);
			FUZZ_CHECK(senders >= MAX_SLOTS / 2);
		}
		FUZZ_CHECK(gp_replay_count(r) <= MAX_SLOTS / 2);
	}
	gp_replay_destroy(&r);
	FUZZ_CHECK(r == NULL);
	return 0;
}
