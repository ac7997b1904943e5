/* files.h: gschedd's side of files in and out (docs/staging.md): the chunk store
 * (<state_dir>/chunks, content-addressed, every chunk's hash checked on arrival) and the file
 * sets kept with a job (<state_dir>/files/<job>/<kind>/<name>: what a task's --collect
 * patterns matched, checkpoints), which outlive the node that made them.
 */
#ifndef GPOOL_SCHED_FILES_H
#define GPOOL_SCHED_FILES_H

#include <stddef.h>

#include "scheduler/gschedd.h"

/* A submission's staged manifest and collect patterns are sound and every chunk is in the
 * store. 0 / -1 with why filled. */
int files_check_spec(struct gsched *s, const Gpool__JobSpec *sp, char *why, size_t len);

void files_chunk_have(struct req *r);
void files_chunk_put(struct req *r);
void files_chunk_get(struct req *r);
void files_set_put(struct req *r);
void files_set_get(struct req *r);

#endif
