/* shellkey.c: which jobs may share a gstepd task shell, and which shell (shellkey.h). */
#include "worker/node/shellkey.h"

#include <stdio.h>
#include <string.h>

bool gp_shell_eligible(const Gpool__Launch *l)
{
	const Gpool__JobSpec *sp = l ? l->spec : NULL;
	if (!sp || l->n_tasks != 1)
		return false;
	/* a batch script and small files (--file) are written by a short child as the user, in a
	 * shell as in a gstepd of its own; --stage and --collect move files for as long as they
	 * take (the shell's other jobs would wait), MPI and services hold more than their tasks,
	 * screening runs a check first */
	/* a --pty task's terminal and its port are its own gstepd's */
	return !sp->service && !sp->screen && !sp->pty && sp->mpi == GPOOL__MPI_LAUNCH__MPI_NONE &&
	       !sp->n_stage && !sp->n_collect;
}

void gp_shell_key_of(const Gpool__Launch *l, uid_t uid, gid_t gid, const char *user,
		     struct gp_shell_key *k)
{
	memset(k, 0, sizeof(*k));
	k->array = l->array_job_id;
	k->uid = uid;
	k->gid = gid;
	snprintf(k->user, sizeof(k->user), "%s", user ? user : "");
}

bool gp_shell_key_eq(const struct gp_shell_key *a, const struct gp_shell_key *b)
{
	return a->array == b->array && a->uid == b->uid && a->gid == b->gid &&
	       !strcmp(a->user, b->user);
}
