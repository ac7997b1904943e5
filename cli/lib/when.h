/* when.h: points in time as sacct and sbatch --begin take them: "2026-12-02",
 * "2026-12-02T13:05[:30]", "13:05" (today), "now", "now-2hours", "now-30minutes", "now-1days",
 * "now+60" (a bare count is seconds), "now+10minutes". */
#ifndef GP_CLI_WHEN_H
#define GP_CLI_WHEN_H

#include "common/error.h"

/* -> seconds since the epoch. now is the reference for "now" forms. 0 / -1 (EINVAL). */
int gp_when_parse(const char *s, double now, double *t, gp_error_t *err);

#endif
