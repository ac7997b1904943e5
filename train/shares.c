/* shares.c - split the global batch by speed (shares.h) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/shares.h"

void gt_shares_split(int total, int n, const double *w, int *count)
{
	double sum = 0, frac[256];
	int given = 0;
	for (int r = 0; r < n; r++)
		sum += w[r] > 0 ? w[r] : 0;
	/* one row each first, the rest by weight */
	int rest = total - n;
	for (int r = 0; r < n; r++) {
		double want = sum > 0 ? rest * (w[r] > 0 ? w[r] : 0) / sum : (double)rest / n;
		count[r] = 1 + (int)floor(want);
		frac[r % 256] = want - floor(want);
		given += count[r];
	}
	while (given < total) {
		int best = 0;
		for (int r = 1; r < n; r++)
			if (frac[r % 256] > frac[best % 256])
				best = r;
		count[best]++;
		frac[best % 256] = -1;
		given++;
	}
}

void gt_shares_rebalance(int n, double *w, const double *rows, const double *ms)
{
	double wsum = 0, ssum = 0, speed[256];
	for (int r = 0; r < n && r < 256; r++) {
		wsum += w[r];
		speed[r] = ms[r] > 0 && rows[r] > 0 ? rows[r] / ms[r] : 0;
		ssum += speed[r];
	}
	if (wsum <= 0 || ssum <= 0)
		return;
	for (int r = 0; r < n && r < 256; r++) {
		double old = w[r] / wsum;
		double fresh = speed[r] > 0 ? speed[r] / ssum : old;
		w[r] = 0.5 * old + 0.5 * fresh;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int gt_shares_slow_rank(int n, const double *rows, const double *ms, double factor, double *ratio)
{
	double per[256], others[256];
	int worst = -1, k = 0;
	if (n < 2 || n > 256)
		return -1;
	for (int r = 0; r < n; r++) {
		per[r] = rows[r] > 0 ? ms[r] / rows[r] : 0;
		if (worst < 0 || per[r] > per[worst])
			worst = r;
	}
	for (int r = 0; r < n; r++)
		if (r != worst)
			others[k++] = per[r];
	qsort(others, (size_t)k, sizeof(double), cmp_double);
	double med = k % 2 ? others[k / 2] : 0.5 * (others[k / 2 - 1] + others[k / 2]);
	if (ratio)
		*ratio = med > 0 ? per[worst] / med : 0;
	return med > 0 && per[worst] > factor * med ? worst : -1;
}
