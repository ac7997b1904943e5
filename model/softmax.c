/* softmax.c - see softmax.h */
#include <math.h>

#include "model/softmax.h"

void gm_softmax_rows(float *z, size_t n, size_t k)
{
	for (size_t r = 0; r < n; r++) {
		float *row = z + r * k, mx = row[0], sum = 0;
		for (size_t i = 1; i < k; i++)
			if (row[i] > mx)
				mx = row[i];
		for (size_t i = 0; i < k; i++) {
			row[i] = expf(row[i] - mx);
			sum += row[i];
		}
		for (size_t i = 0; i < k; i++)
			row[i] /= sum;
	}
}
