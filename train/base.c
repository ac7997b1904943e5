/* base.c - what the files of gtrain's training loop share below it (trainer_int.h): the
 * clock, a communicator's failure told in t->err, a dtype's name, and the hooks run after a
 * checkpoint or a model is written. trainer.c, buckets.c and resume.c all use them, so they
 * live under all three rather than in the loop's file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "train/trainer_int.h"

double tr_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int tr_fail_comm(tr_t *t, const char *what)
{
	int e = errno;
	gp_errprintf(t->err, "%s: %s", what, t->comm ? gc_error(t->comm) : "no communicator");
	errno = e;
	return -1;
}

const char *tr_dtype_name(gk_dtype_t t)
{
	return t == GK_F16 ? "f16" : t == GK_BF16 ? "bf16" : "f32";
}

int tr_run_hook(const char *cmd, const char *var, const char *path, long step)
{
	char sbuf[32];
	snprintf(sbuf, sizeof(sbuf), "%ld", step);
	setenv(var, path, 1);
	setenv("GTRAIN_STEP", sbuf, 1);
	int rc = system(cmd);
	return rc == 0 ? 0 : -1;
}
