/* softmax.c: see softmax.h. */
#include "serve/softmax.h"

#include <math.h>

void gs_softmax_rows(float *z, size_t n, uint32_t k)
{
	for (size_t r = 0; r < n; r++) {
		float *row = z + r * k, mx = row[0], sum = 0;
		for (uint32_t i = 1; i < k; i++)
			if (row[i] > mx)
				mx = row[i];
		for (uint32_t i = 0; i < k; i++) {
			row[i] = expf(row[i] - mx);
			sum += row[i];
		}
		for (uint32_t i = 0; i < k; i++)
			row[i] /= sum;
	}
}
