/* fuzz_files: a Batch of chunk-store and file-set requests (ChunkHave, ChunkPut, ChunkGet,
 * FileSetPut, FileSetGet) through the scheduler's dispatch (handle_batch) against a RUNNING
 * job 1 (uid 1000). The sender is uid 1000, the agents' uid when the first message's id is odd,
 * uid 2000 when it is a multiple of 4. Checks: every chunk in the store matches its hash (a
 * chunk whose bytes do not match is never stored), and every stored file set decodes and names
 * only sound entries whose chunks are in the store, with no setuid, setgid or sticky bit, and
 * each of them a chunk the job's owner may use (a set grants them to its owner; a user's set
 * names only chunks they sent). */
#include <dirent.h>

#include "common/chunk.h"
#include "tests/fuzz/sched_world.h"

static struct job *running_job(uint64_t id, uint32_t uid, const char *user)
{
	struct job *j = calloc(1, sizeof(*j));
	FUZZ_CHECK(j != NULL);
	j->id = id;
	j->uid = j->gid = uid;
	j->user = strdup(user);
	j->name = strdup("files");
	j->out_pattern = strdup("");
	j->err_pattern = strdup("");
	j->state = GPOOL__JOB_STATE__RUNNING;
	j->attempt = 1;
	j->ntasks = 1;
	j->cpus_per_task = 1;
	j->durable = true;
	FUZZ_CHECK(jobs_add(S.jobs, j) == 0);
	return j;
}

static void world_seed(void)
{
	running_job(1, CLIENT_UID, "alice");
}

static bool is_files(const Gpool__Msg *m)
{
	switch (m->m_case) {
	case GPOOL__MSG__M_CHUNK_HAVE:
	case GPOOL__MSG__M_CHUNK_PUT:
	case GPOOL__MSG__M_CHUNK_GET:
	case GPOOL__MSG__M_FILE_SET_PUT:
	case GPOOL__MSG__M_FILE_SET_GET:
		return true;
	default:
		return false;
	}
}

static bool hex_to_hash(const char *hex, uint8_t h[GP_HASH_LEN])
{
	if (strlen(hex) != 2 * GP_HASH_LEN)
		return false;
	for (int i = 0; i < GP_HASH_LEN; i++) {
		unsigned v;
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return false;
		h[i] = (uint8_t)v;
	}
	return true;
}

static void check_store(void)
{
	char cdir[1200];
	snprintf(cdir, sizeof(cdir), "%s/chunks", S.state_dir);
	DIR *d = opendir(cdir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		uint8_t h[GP_HASH_LEN];
		if (de->d_name[0] == '.' || !hex_to_hash(de->d_name, h))
			continue;
		FUZZ_CHECK(gp_chunk_verify(cdir, h) == 0);
	}
	if (d)
		closedir(d);
	char sdir[1200];
	snprintf(sdir, sizeof(sdir), "%s/files/1/ckpt", S.state_dir);
	for (int k = 0; k < 2; k++) {
		if (k)
			snprintf(sdir, sizeof(sdir), "%s/files/1/collect", S.state_dir);
		DIR *sd = opendir(sdir);
		while (sd && (de = readdir(sd))) {
			if (de->d_name[0] == '.')
				continue;
			char p[2400];
			uint8_t *data;
			size_t len;
			snprintf(p, sizeof(p), "%s/%s", sdir, de->d_name);
			FUZZ_CHECK(gp_read_file(p, 64u << 20, &data, &len) == 0);
			Gpool__FileSet *fs = gpool__file_set__unpack(NULL, len, data);
			FUZZ_CHECK(fs != NULL);
			for (size_t i = 0; i < fs->n_entries; i++) {
				FUZZ_CHECK(gp_entry_ok(fs->entries[i]));
				FUZZ_CHECK((fs->entries[i]->mode & ~GP_MODE_BITS) == 0);
				for (size_t c = 0; c < fs->entries[i]->n_chunks; c++) {
					const uint8_t *h = fs->entries[i]->chunks[c].data;
					FUZZ_CHECK(gp_chunk_has(cdir, h));
					FUZZ_CHECK(store_chunk_may(S.store, h, GP_HASH_LEN,
								   CLIENT_UID) == 1);
				}
			}
			gpool__file_set__free_unpacked(fs, NULL);
			free(data);
		}
		if (sd)
			closedir(sd);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	world_tick("fuzz_files");
	Gpool__Batch *b = gpool__batch__unpack(NULL, size, data);
	if (!b)
		return 0;
	Gpool__Batch mine;
	struct gp_sender from = world_pick(b, is_files, AGENT_UID, &mine);
	static const uint8_t rid[] = "fuzz-files";
	handle_batch(&S, rid, sizeof(rid) - 1, "fuzz", &from, &mine);
	check_store();
	settle(0);
	free(mine.msgs);
	gpool__batch__free_unpacked(b, NULL);
	return 0;
}
