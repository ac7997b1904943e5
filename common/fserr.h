/* fserr.h: a failed write into one of gpool's directories (state, scratch, the image cache,
 * the chunk store), said with its cause. A full file system (ENOSPC), a quota reached (EDQUOT)
 * and a read-only one (EROFS) are what an operator must act on, and "No space left on device"
 * alone does not say where: these name the directory, and what statvfs says is free there
 * against what was needed when that is known. Any other errno reads as strerror's text. */
#ifndef GPOOL_FSERR_H
#define GPOOL_FSERR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Whether e is one of the three a file system's state causes (ENOSPC, EDQUOT, EROFS). */
bool gp_fs_full_or_ro(int e);

/* Why a write into dir failed with e, into buf: "no space left on the file system of
 * '/var/lib/gpool/images' (91.0 MiB needed, 20.3 MiB free)", "disk quota of uid 1000 reached on
 * '...'", "'...' is on a read-only file system", else strerror(e). need: bytes, 0 unknown.
 * Returns buf. */
const char *gp_fs_why(int e, const char *dir, uint64_t need, char *buf, size_t len);

/* gp_errprintf of "WHAT: WHY" (gp_fs_why); returns -1 with errno e. */
int gp_fs_errprintf(gp_error_t *err, int e, const char *dir, uint64_t need, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Bytes free to an unprivileged writer on dir's file system (statvfs f_bavail), or -1. */
int64_t gp_fs_free(const char *dir);

#endif
