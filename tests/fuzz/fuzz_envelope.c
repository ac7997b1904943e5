/* fuzz_envelope: gp_wire_open on an unauthenticated wire (no munged needed), then every Msg
 * of the batch; what opens must seal and open again to the same messages. An envelope with a
 * mac and no credential also goes to a command's wire (a reply key, no munged call on that
 * path), where nothing but the holder of its key can make it open. */
#include "tests/fuzz/fuzz.h"
#include "common/wire.h"

#define MAX_MESSAGE (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static gp_wire_t *w;
	if (!w && !(w = gp_wire_create(NULL, MAX_MESSAGE)))
		abort();
	struct gp_sender from;
	Gpool__ErrorCode code = GPOOL__ERROR_CODE__ERROR_NONE;
	gp_error_t err;
	err.text[0] = '\0';
	static gp_auth_t *auth;
	static gp_wire_t *kw;
	if (!kw && (!(auth = gp_auth_create(NULL, &err)) ||
		    !(kw = gp_wire_create(auth, MAX_MESSAGE)) || gp_wire_set_reply_key(kw, 0) < 0))
		abort();
	Gpool__Envelope *env = gpool__envelope__unpack(NULL, size, data);
	if (env && env->mac.len && !env->cred.len) {
		Gpool__Batch *kb = gp_wire_open(kw, data, size, &from, &code, &err);
		/* refused (the key is not guessable), for the mac or a cheaper check before it */
		FUZZ_CHECK(kb == NULL && code != GPOOL__ERROR_CODE__ERROR_NONE);
	}
	if (env)
		gpool__envelope__free_unpacked(env, NULL);
	Gpool__Batch *b = gp_wire_open(w, data, size, &from, &code, &err);
	if (!b) {
		FUZZ_CHECK(code != GPOOL__ERROR_CODE__ERROR_NONE);
		FUZZ_CHECK(err.text[0] != '\0');
		FUZZ_CHECK(gp_error_code_name(code) != NULL);
		return 0;
	}
	FUZZ_CHECK(code == GPOOL__ERROR_CODE__ERROR_NONE);
	FUZZ_CHECK(b->n_msgs == 0 || b->msgs != NULL);

	/* every message, as a receiver's dispatch would read it */
	gp_batch_t out = {0};
	for (size_t i = 0; i < b->n_msgs; i++) {
		const Gpool__Msg *m = b->msgs[i];
		FUZZ_CHECK(m != NULL);
		(void)fuzz_walk(&m->base);
		FUZZ_CHECK(gp_batch_add(&out, m) == 0);
	}
	FUZZ_CHECK(out.count == (int)b->n_msgs);

	/* and back: seal what was opened, open it again */
	gp_buf_t sealed = {0};
	FUZZ_CHECK(gp_wire_seal(w, &out, &sealed, &err) == 0);
	if (sealed.len <= MAX_MESSAGE && !fuzz_odd_unknown(&b->base)) {
		Gpool__Batch *b2 = gp_wire_open(w, sealed.data, sealed.len, &from, &code, &err);
		FUZZ_CHECK(b2 != NULL);
		FUZZ_CHECK(b2->n_msgs == b->n_msgs);
		for (size_t i = 0; i < b->n_msgs; i++)
			FUZZ_CHECK(b2->msgs[i]->m_case == b->msgs[i]->m_case &&
				   b2->msgs[i]->id == b->msgs[i]->id);
		gpool__batch__free_unpacked(b2, NULL);
	}
	gp_buf_release(&sealed);
	gp_batch_release(&out);
	gpool__batch__free_unpacked(b, NULL);
	return 0;
}
