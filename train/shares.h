/* shares.h - speed-weighted shards: how many rows of each global batch each rank computes.
 *
 * A rank's share follows its measured speed (rows per millisecond of compute), so a fast card
 * does not wait for a slow one. The shares change how the global batch is cut, never which
 * rows it holds, and every rank's gradient is its rows' sum divided by the global batch, so
 * the model is the equal-shares model up to rounding. All functions are pure: every rank
 * computes the same shares from the same (allgathered) measurements. */
#ifndef GT_SHARES_H
#define GT_SHARES_H

/* count[0..n) = a split of TOTAL rows proportional to the weights W (> 0), each rank at
 * least one row (TOTAL >= n), largest remainders first, ties to the lower rank. */
void gt_shares_split(int total, int n, const double *w, int *count);
/* New weights: speed r = rows[r] / ms[r] over the window just measured, normalized and
 * averaged half and half with the old weights W (normalized), in place. A rank with no
 * time measured keeps its weight. */
void gt_shares_rebalance(int n, double *w, const double *rows, const double *ms);
/* The rank whose per-row time is largest if it exceeds FACTOR times the median of the
 * others, else -1; *ratio (may be NULL) gets its time over that median. */
int gt_shares_slow_rank(int n, const double *rows, const double *ms, double factor, double *ratio);

#endif
