/* files.h: gschedd's side of files in and out (docs/staging.md): the chunk store
 * (<state_dir>/chunks, content-addressed, every chunk's hash checked on arrival) and the file
 * sets kept with a job (<state_dir>/files/<job>/<kind>/<name>: what a task's --collect
 * patterns matched, checkpoints), which outlive the node that made them.
 */
#ifndef GPOOL_SCHED_FILES_H
#define GPOOL_SCHED_FILES_H

#include <stddef.h>

#include "scheduler/admit.h"
#include "scheduler/gschedd.h"

/* A submission's staged manifest and collect patterns are sound and every chunk is in the
 * store. 0 / -1 with why filled. */
int files_check_spec(struct gsched *s, const Gpool__JobSpec *sp, char *why, size_t len);

/* May uid build files from every chunk of e[0..n) (stage them, name them in a file set)?
 * Each must be one it sent the bytes of, or one of a file set of a job it owns; root and the
 * agents' account may use any. Whether the store holds them is not looked at (see
 * files_check_spec), so the answer is the same for a chunk the store lacks. 0 / -1 with why
 * filled and errno EACCES (or E2BIG: more than a file set's entries). */
/* With the state replicated: the bytes of the chunks a submission staged (its spec's stage
 * entries) into jobs.db with job j, in the open transaction (store_files.h), so that a job
 * still waiting when the leader is lost stages from the new one. refs_only: an earlier task of
 * the same array in this transaction holds them. 0, 1 when they were over the limit and are
 * not kept (said), -1 with errno set. */
int files_replicate_stage(struct gsched *s, const struct job *j, Gpool__StageEntry *const *e,
			  size_t n, bool refs_only);
int files_check_use(struct gsched *s, uid_t uid, Gpool__StageEntry *const *e, size_t n, char *why,
		    size_t len);
/* files_check_use as a link of the admission chain (admit.h): a refusal is PERMISSION
 * (EACCES) or INVALID. */
int files_admit(struct gsched *s, struct admission *a);

void files_chunk_have(struct req *r);
void files_chunk_put(struct req *r);
void files_chunk_get(struct req *r);
void files_set_put(struct req *r);
void files_set_get(struct req *r);

/* With the state replicated, on taking the lead: write the file sets and chunks kept in jobs.db
 * (store_files.h) back into STATE_DIR/files and the chunk store, where the handlers read them.
 * 0 / -1 (logged). */
int files_restore(struct gsched *s);

#endif
