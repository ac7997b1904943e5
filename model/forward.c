/* forward.c - the forward pass (forward.h)
 *
 * The GEMMs are column-major BLAS calls on row-major data: a row-major [rows][width] matrix is
 * a column-major width x rows one, and W_l ([out][in] row-major) is column-major in x out, so
 * y^T = W a^T is gk_sgemm(trans W, a). */
#include <errno.h>

#include "model/forward.h"

static int berr(gk_backend_t *b, gp_error_t *err, const char *what)
{
	int e = errno;
	gp_errprintf(err, "%s: %s", what, gk_backend_error(b));
	errno = e;
	return -1;
}

int gm_round(gk_backend_t *b, const gm_round_t *r, float *p, size_t n, gk_stream_t *s,
	     gp_error_t *err)
{
	if (!r || r->ct == GK_F32 || !n)
		return 0;
	if (gk_cast(b, r->ct, r->scratch, GK_F32, p, n, s) < 0 ||
	    gk_cast(b, GK_F32, p, r->ct, r->scratch, n, s) < 0)
		return berr(b, err, "round to compute type");
	return 0;
}

int gm_forward(gk_backend_t *b, gk_stream_t *s, const int *sizes, int nsizes, const float *params,
	       float *const *act, size_t rows, const gm_round_t *r, gp_error_t *err)
{
	int nl = nsizes - 1;
	size_t off = 0;
	if (!rows)
		return 0;
	if (gm_round(b, r, act[0], rows * (size_t)sizes[0], s, err) < 0)
		return -1;
	for (int l = 0; l < nl; l++) {
		int in = sizes[l], out = sizes[l + 1];
		const float *W = params + off, *bias = W + (size_t)in * out;
		if (gk_sgemm(b, 1, 0, out, (int)rows, in, 1.0f, W, in, act[l], in, 0.0f, act[l + 1],
			     out, s) < 0)
			return berr(b, err, "forward gemm");
		if (gk_bias_act(b, act[l + 1], bias, rows, (size_t)out,
				l < nl - 1 ? GK_ACT_RELU : GK_ACT_NONE, s) < 0)
			return berr(b, err, "bias + activation");
		if (gm_round(b, r, act[l + 1], rows * (size_t)out, s, err) < 0)
			return -1;
		off += (size_t)in * out + (size_t)out;
	}
	return 0;
}

int gm_forward_ex(gk_backend_t *b, gk_stream_t *s, const int *sizes, int nsizes, const void *params,
		  gk_dtype_t t, void *const *act, size_t rows, gk_math_t math, gp_error_t *err)
{
	size_t off = 0, es = gk_dtype_size(t);
	int nl = nsizes - 1;
	if (!rows)
		return 0;
	for (int l = 0; l < nl; l++) {
		int in = sizes[l], out = sizes[l + 1];
		const char *W = (const char *)params + off * es;
		gk_gemm_t p = {.trans_a = 1,
			       .trans_b = 0,
			       .m = out,
			       .n = (int)rows,
			       .k = in,
			       .ab_t = t,
			       .c_t = t,
			       .alpha = 1.0f,
			       .beta = 0.0f,
			       .a = W,
			       .lda = in,
			       .b = act[l],
			       .ldb = in,
			       .c = act[l + 1],
			       .ldc = out,
			       .epi = l < nl - 1 ? GK_EPI_RELU_BIAS : GK_EPI_BIAS,
			       .bias = (void *)(W + (size_t)in * out * es),
			       .math = math};
		if (gk_gemm(b, &p, s) < 0)
			return berr(b, err, "forward gemm");
		off += (size_t)in * out + (size_t)out;
	}
	return 0;
}
