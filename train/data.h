/* data.h - the training data of gtrain: a labelled table of float features loaded from a CSV
 * (gzip'd or not: features then the integer label on each row, as scikit-learn's digits.csv.gz)
 * or from MNIST's IDX files, a deterministic train/test split, and the per-epoch sample order.
 *
 * Every rank loads the whole (small) file that gsub --stage put in its scratch directory and
 * reads only the rows of its share of each global batch; the order depends on the seed and the
 * epoch only, so every rank, and every rank count, sees the same global batches. */
#ifndef GT_DATA_H
#define GT_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct {
	size_t n;      /* rows */
	size_t dim;    /* features a row */
	int classes;   /* 1 + the largest label */
	float *x;      /* n * dim, raw values (input_scale is applied when a batch is built) */
	int32_t *y;    /* n labels, 0 .. classes-1 */
	float max_abs; /* largest |feature|: the default input scale is 1/max_abs */
} gt_data_t;

/* CSV (plain or gzip, detected by zlib): numbers separated by commas, the label last; blank
 * lines and lines starting with '#' skipped. 0, or -1 with err ("digits.csv.gz:17: 63 values,
 * expected 65"). */
int gt_data_load_csv(const char *path, gt_data_t *d, gp_error_t *err);
/* MNIST IDX: an images file (magic 0x00000803, n x rows x cols unsigned bytes) and a labels file
 * (0x00000801, n unsigned bytes); either may be gzip'd. */
int gt_data_load_idx(const char *images, const char *labels, gt_data_t *d, gp_error_t *err);
/* "FILE.csv[.gz]" or "IMAGES,LABELS" (IDX). */
int gt_data_load(const char *spec, gt_data_t *d, gp_error_t *err);
void gt_data_free(gt_data_t *d);

/* Deterministic split: rows shuffled with SEED, the last round(n * test_frac) go to TEST.
 * Both are new tables (free them). */
int gt_data_split(const gt_data_t *all, double test_frac, uint64_t seed, gt_data_t *train,
		  gt_data_t *test, gp_error_t *err);

/* perm[0..n) = the sample order of EPOCH (a Fisher-Yates shuffle seeded by SEED and EPOCH). */
void gt_data_order(size_t n, uint64_t seed, uint64_t epoch, uint32_t *perm);

/* Copy rows idx[0..count) of D into x (count * dim floats, multiplied by SCALE) and y. */
void gt_data_gather(const gt_data_t *d, const uint32_t *idx, size_t count, float scale, float *x,
		    int32_t *y);

#endif
