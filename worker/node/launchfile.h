/* launchfile.h: <state_dir>/steps/<job>.<attempt>.launch, the packed Launch a gstepd runs.
 * gworkerd writes it before starting gstepd; gstepd removes it when its job is done; a
 * restarted gworkerd finds the steps it holds from these files. */
#ifndef GPOOL_WORKER_LAUNCHFILE_H
#define GPOOL_WORKER_LAUNCHFILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "proto/gpool.pb-c.h"

/* Format the path into buf (len bytes). 0 / -1 (ENAMETOOLONG). */
int gp_launch_path(char *buf, size_t len, const char *state_dir, uint64_t job, uint32_t attempt);
/* Parse "<job>.<attempt>.launch" (a file name, no directory). 0 / -1. */
int gp_launch_name_parse(const char *name, uint64_t *job, uint32_t *attempt);

int gp_launch_write(const char *path, const Gpool__Launch *l, gp_error_t *err);
/* Free with gpool__launch__free_unpacked(l, NULL). NULL with err filled. */
Gpool__Launch *gp_launch_read(const char *path, gp_error_t *err);

#endif
