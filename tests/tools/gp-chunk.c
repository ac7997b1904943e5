/* gp-chunk: ask gschedd's chunk store for a chunk by its hash alone, as a user who knows the
 * hash of someone else's file but not its bytes would (t1110-attack-files).
 *
 *     gp-chunk have HEX                  does the store say it has the chunk?
 *     gp-chunk get HEX [JOB KIND NAME]   ChunkGet, naming a file set or not
 *     gp-chunk set JOB NAME HEX SIZE     FileSetPut ckpt/NAME: one file "stolen" of that chunk
 *     gp-chunk submit HEX SIZE           a job that stages "stolen" from that chunk and cats it
 *
 * Every mode prints one line: "have" / "missing", "reply: ok NAME [N bytes, sha256 HEX]", or
 * "reply: ERROR_CODE (n): text". Exit status: 0 an ok reply, 4 an error reply, 1 a local
 * failure (no reply), 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/chunk.h"
#include "common/sched_client.h"
#include "common/config.h"
#include "proto/gpool.pb-c.h"

#define TIMEOUT_MS 10000

static void usage(FILE *f)
{
	fprintf(f, "usage: gp-chunk have HEX | get HEX [JOB KIND NAME] | set JOB NAME HEX SIZE |"
		   " submit HEX SIZE\n");
}

static int unhex(const char *s, uint8_t h[GP_HASH_LEN])
{
	if (!s || strlen(s) != 2 * GP_HASH_LEN)
		return -1;
	for (int i = 0; i < GP_HASH_LEN; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		h[i] = (uint8_t)v;
	}
	return 0;
}

/* Print the reply; 0 ok, 4 an error. */
static int show(const Gpool__Msg *m, gp_client_t *c)
{
	if (m->m_case == GPOOL__MSG__M_ERROR && m->error) {
		const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(
		    &gpool__error_code__descriptor, m->error->code);
		printf("reply: %s (%d): %s\n", ev ? ev->name : "ERROR_?", (int)m->error->code,
		       m->error->text ? m->error->text : "");
		return 4;
	}
	const ProtobufCFieldDescriptor *fd =
	    protobuf_c_message_descriptor_get_field(&gpool__msg__descriptor, m->m_case);
	if (m->m_case == GPOOL__MSG__M_CHUNK_GET_REPLY) {
		ProtobufCBinaryData d = m->chunk_get_reply->data;
		if (m->chunk_get_reply->attached)
			d.data = (uint8_t *)gp_client_bulk(c, &d.len);
		uint8_t h[GP_HASH_LEN];
		char hex[2 * GP_HASH_LEN + 1] = "";
		if (d.data) {
			gp_chunk_hash(d.data, d.len, h);
			gp_chunk_hex(h, hex);
		}
		printf("reply: ok %s %zu bytes, sha256 %s\n", fd ? fd->name : "?", d.len, hex);
	} else if (m->m_case == GPOOL__MSG__M_SUBMIT_REPLY) {
		printf("reply: ok %s job %llu\n", fd ? fd->name : "?",
		       (unsigned long long)m->submit_reply->job_id);
	} else {
		printf("reply: ok %s\n", fd ? fd->name : "?");
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		usage(stderr);
		return 2;
	}
	const char *mode = argv[1];
	uint8_t h[GP_HASH_LEN];
	const char *hex = !strcmp(mode, "set") ? (argc > 4 ? argv[4] : NULL) : argv[2];
	if (unhex(hex, h) < 0) {
		fprintf(stderr, "gp-chunk: invalid hash '%s'\n", hex ? hex : "");
		return 2;
	}
	gp_error_t err = {{0}};
	gp_config_t *cfg = gp_config_create(GP_CLI);
	if (!cfg || gp_config_load_file(cfg, NULL, &err) < 0) {
		fprintf(stderr, "gp-chunk: %s\n", err.text);
		return 1;
	}
	gp_client_t *c = gp_client_create(cfg, &err);
	if (!c) {
		fprintf(stderr, "gp-chunk: %s\n", err.text);
		return 1;
	}
	ProtobufCBinaryData hb = {GP_HASH_LEN, h};
	Gpool__StageEntry e = GPOOL__STAGE_ENTRY__INIT, *ev[1] = {&e};
	e.path = "stolen";
	e.mode = 0644;
	e.chunks = &hb;
	e.n_chunks = 1;
	Gpool__Msg m = GPOOL__MSG__INIT;
	Gpool__ChunkHave have = GPOOL__CHUNK_HAVE__INIT;
	Gpool__ChunkGet get = GPOOL__CHUNK_GET__INIT;
	Gpool__FileSetPut set = GPOOL__FILE_SET_PUT__INIT;
	Gpool__SubmitRequest sub = GPOOL__SUBMIT_REQUEST__INIT;
	Gpool__JobSpec spec = GPOOL__JOB_SPEC__INIT;
	char *cmd[] = {"/bin/cat", "stolen"};
	if (!strcmp(mode, "have")) {
		have.hashes = &hb;
		have.n_hashes = 1;
		m.m_case = GPOOL__MSG__M_CHUNK_HAVE;
		m.chunk_have = &have;
	} else if (!strcmp(mode, "get") && (argc == 3 || argc == 6)) {
		get.hash = hb;
		if (argc == 6) {
			get.job_id = strtoull(argv[3], NULL, 10);
			get.kind = argv[4];
			get.name = argv[5];
		}
		m.m_case = GPOOL__MSG__M_CHUNK_GET;
		m.chunk_get = &get;
	} else if (!strcmp(mode, "set") && argc == 6) {
		e.size = strtoull(argv[5], NULL, 10);
		set.job_id = strtoull(argv[2], NULL, 10);
		set.kind = "ckpt";
		set.name = argv[3];
		set.entries = ev;
		set.n_entries = 1;
		m.m_case = GPOOL__MSG__M_FILE_SET_PUT;
		m.file_set_put = &set;
	} else if (!strcmp(mode, "submit") && argc == 4) {
		e.size = strtoull(argv[3], NULL, 10);
		spec.argv = cmd;
		spec.n_argv = 2;
		spec.ntasks = 1;
		spec.name = "stolen";
		spec.stage = ev;
		spec.n_stage = 1;
		sub.spec = &spec;
		m.m_case = GPOOL__MSG__M_SUBMIT;
		m.submit = &sub;
	} else {
		usage(stderr);
		gp_client_destroy(&c);
		gp_config_destroy(&cfg);
		return 2;
	}
	Gpool__Msg *r = gp_client_call(c, &m, TIMEOUT_MS, &err);
	int rc = 1;
	if (!r) {
		fprintf(stderr, "gp-chunk: %s\n", err.text);
	} else if (!strcmp(mode, "have") && r->m_case == GPOOL__MSG__M_CHUNK_HAVE_REPLY) {
		printf("%s\n", r->chunk_have_reply->n_missing ? "missing" : "have");
		rc = 0;
	} else {
		rc = show(r, c);
	}
	gp_client_destroy(&c);
	gp_config_destroy(&cfg);
	return rc;
}
