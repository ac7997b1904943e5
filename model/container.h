/* container.h - the frame gtrain's two files share (the model file, model/file.h, and the
 * checkpoint, train/ckpt.h): a magic line, one line of JSON, then little-endian binary; written
 * through a temporary file, fsync and rename, so a reader sees the old file or the new one.
 * Needs jansson: builds without it (the GPU machine's) have neither file (model/file_none.c).
 * Functions return 0 / -1 (or a pointer / NULL) with errno and err set. */
#ifndef GM_CONTAINER_H
#define GM_CONTAINER_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "common/error.h"
#include "model/model.h"

#define GM_MAX_HEADER 65536 /* bytes of the JSON line */

/* The magic MAGIC, then the JSON object on the next line (duplicate keys refused): the object,
 * with *body after its newline. WHAT names the file in messages ("model file"). */
json_t *gm_header_parse(const void *buf, size_t len, const char *magic, const char *what,
			const unsigned char **body, gp_error_t *err);
/* "layers": 2..GM_MAX_SIZES widths of 1..GM_MAX_WIDTH into sizes[], their count in *nsizes */
int gm_header_sizes(json_t *j, const char *what, int *sizes, int *nsizes, gp_error_t *err);
/* "layers" of M, for a header being written */
json_t *gm_header_sizes_json(const gm_model_t *m);
/* "input_scale": a finite number; absent: 1 where OPTIONAL, else an error */
int gm_header_scale(json_t *j, const char *what, int optional, float *scale, gp_error_t *err);

/* N little-endian f32 at P (the bytes the header promised) into DST; -1 (EINVAL) when one
 * is not finite and FINITE asks for it */
int gm_floats_read(float *dst, const unsigned char *p, size_t n, int finite);

/* A file being written: open, write to f, close (renamed into place only when ok). */
typedef struct {
	FILE *f;
	char tmp[4200];
	const char *path;
} gm_atomic_t;

int gm_atomic_open(gm_atomic_t *o, const char *path, gp_error_t *err);
int gm_atomic_close(gm_atomic_t *o, int ok, gp_error_t *err);
/* the magic, then O as one JSON line with its keys in the order set (nonzero: written) */
int gm_put_header(FILE *f, const char *magic, json_t *o);

/* The whole file at PATH (at most 4 GiB), malloc'd, its length in *len. */
void *gm_slurp(const char *path, size_t *len, gp_error_t *err);

#endif
