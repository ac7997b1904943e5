/* elementwise.cu - reduce, cast, scale, Inf/NaN detection and optimizer steps
 *
 * Each operation is a small functor. Its vec(v) handles U "groups" of GE elements, a
 * group being 16 bytes of the operation's widest type (4 f32, 8 f16, 2 f64), so every
 * access is one 16-byte (or, for the narrow side of a cast, 8-byte) load or store. The
 * groups of thread-unit v are laid out so that one warp's k-th access covers contiguous
 * memory (lane l of warp-tile T owns groups T*32*U + k*32 + l): stores fill whole
 * sectors and U loads per source are in flight before any arithmetic. one(i) handles
 * element i. launch() runs vec over whole warp-tiles in a grid-stride loop and one()
 * over the tail, or one() over everything when a pointer is not 16-byte aligned. The
 * arithmetic is gk_scalar.h's, so results equal the cpu backend's bit for bit (NaN
 * payloads aside). */
#include "kernels/gpu/gk_gpu.h"

#define TPB 256

template <int DT> struct El;
template <> struct El<GK_F32> {
	typedef float S;
	typedef float A;
	__device__ static A ld(S x)
	{
		return x;
	}
	__device__ static S st(A a)
	{
		return a;
	}
};
template <> struct El<GK_F16> {
	typedef uint16_t S;
	typedef float A;
	__device__ static A ld(S x)
	{
		return gk_d_f16_to_f32(x);
	}
	__device__ static S st(A a)
	{
		return gk_d_f32_to_f16(a);
	}
};
template <> struct El<GK_BF16> {
	typedef uint16_t S;
	typedef float A;
	__device__ static A ld(S x)
	{
		return gk_d_bf16_to_f32(x);
	}
	__device__ static S st(A a)
	{
		return gk_d_f32_to_bf16(a);
	}
};
template <> struct El<GK_F64> {
	typedef double S;
	typedef double A;
	__device__ static A ld(S x)
	{
		return x;
	}
	__device__ static S st(A a)
	{
		return a;
	}
};
template <> struct El<GK_I32> {
	typedef int32_t S;
	typedef long long A;
	__device__ static A ld(S x)
	{
		return x;
	}
	__device__ static S st(A a)
	{
		return gk_i64_to_i32_wrap(a);
	}
};

__device__ static inline float comb(int op, float a, float b)
{
	return gk_combine_f(op, a, b);
}
__device__ static inline double comb(int op, double a, double b)
{
	return gk_combine_d(op, a, b);
}
__device__ static inline long long comb(int op, long long a, long long b)
{
	return gk_combine_i(op, a, b);
}
__device__ static inline float avg(float a, int n)
{
	return a / (float)n;
}
__device__ static inline double avg(double a, int n)
{
	return a / (double)n;
}
__device__ static inline long long avg(long long a, int n)
{
	return a / n;
}

#define U 2 /* groups a thread-unit handles */

template <int BYTES> struct Word;
template <> struct Word<16> {
	typedef uint4 T;
};
template <> struct Word<8> {
	typedef uint2 T;
};
template <> struct Word<4> {
	typedef uint32_t T;
};

/* N elements of S moved as one access of N * sizeof(S) bytes */
template <typename S, int N> struct VN {
	typedef typename Word<sizeof(S) * N>::T W;
	union {
		W w;
		S s[N];
	};
	__device__ void load(const S *p, size_t g)
	{
		w = reinterpret_cast<const W *>(p)[g];
	}
	__device__ void store(S *p, size_t g) const
	{
		reinterpret_cast<W *>(p)[g] = w;
	}
};

/* group index of the k-th group of thread-unit v */
__device__ static inline size_t grp(size_t v, int k)
{
	return (v >> 5) * (32 * U) + (size_t)k * 32 + (v & 31);
}

template <class F> __global__ void __launch_bounds__(TPB) k_vec(F f, size_t nvec)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t v = (size_t)blockIdx.x * blockDim.x + threadIdx.x; v < nvec; v += stride)
		f.vec(v);
}

template <class F> __global__ void __launch_bounds__(TPB) k_one(F f, size_t begin, size_t n)
{
	size_t stride = (size_t)gridDim.x * blockDim.x;
	for (size_t i = begin + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
		f.one(i);
}

static inline bool al16(const void *p)
{
	return ((uintptr_t)p & 15u) == 0;
}

/* Blocks for a grid-stride loop over N thread-units: at most the number resident on the
 * whole chip at once (times GPOOL_KERNELS_WAVES), from the kernel's own occupancy. */
template <class K> static unsigned blocks_for(gpu_t *g, K kernel, int *occ, size_t n)
{
	if (*occ <= 0) {
		int per_sm = 0;
		if (gkOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, TPB, 0) !=
			gkSuccess ||
		    per_sm < 1) {
			(void)gkGetLastError();
			per_sm = g->max_threads_per_sm / TPB;
		}
		*occ = per_sm; /* cached per kernel: the same value for every card of one kind */
	}
	size_t need = (n + TPB - 1) / TPB;
	size_t wave = (size_t)g->sms * (size_t)*occ * (size_t)g->waves;
	return (unsigned)(need < wave ? (need ? need : 1) : wave);
}

template <class F>
static int launch(gpu_t *g, const F &f, size_t n, bool aligned, gk_stream_t *s, const char *what)
{
	static int occ_vec, occ_one;
	/* whole warp-tiles only: 32 thread-units of U groups of GE elements */
	const size_t tile = (size_t)32 * U * F::GE;
	size_t nvec = aligned ? n / tile * 32 : 0;
	size_t done = nvec / 32 * tile;
	if (gk_gpu_check(g, gkSetDevice(g->device), "set device") < 0)
		return -1;
	if (nvec) {
		k_vec<F>
		    <<<blocks_for(g, k_vec<F>, &occ_vec, nvec), TPB, 0, GK_STREAM(s)>>>(f, nvec);
		if (gk_gpu_launched(g, what) < 0)
			return -1;
	}
	if (done < n) {
		k_one<F><<<blocks_for(g, k_one<F>, &occ_one, n - done), TPB, 0, GK_STREAM(s)>>>(
		    f, done, n);
		if (gk_gpu_launched(g, what) < 0)
			return -1;
	}
	return 0;
}

/* ---- reduce ---- */

template <int DT, int NS> struct ReduceF {
	typedef El<DT> E;
	typedef typename E::S S;
	typedef typename E::A A;
	S *dst;
	const S *src[GK_REDUCE_MAX_SRCS];
	int nsrc, op;

	enum { GE = 16 / sizeof(S) };

	__device__ void vec(size_t v) const
	{
		const int ns = NS ? NS : nsrc;
		A acc[U][GE];
		if (NS) { /* every load first: U * NS accesses of 16 bytes in flight */
			VN<S, GE> in[U][NS ? NS : 1];
#pragma unroll
			for (int k = 0; k < U; k++)
#pragma unroll
				for (int q = 0; q < (NS ? NS : 1); q++)
					in[k][q].load(src[q], grp(v, k));
#pragma unroll
			for (int k = 0; k < U; k++) {
#pragma unroll
				for (int e = 0; e < GE; e++)
					acc[k][e] = E::ld(in[k][0].s[e]);
#pragma unroll
				for (int q = 1; q < (NS ? NS : 1); q++)
#pragma unroll
					for (int e = 0; e < GE; e++)
						acc[k][e] =
						    comb(op, acc[k][e], E::ld(in[k][q].s[e]));
			}
		} else {
			VN<S, GE> in[U];
#pragma unroll
			for (int k = 0; k < U; k++)
				in[k].load(src[0], grp(v, k));
#pragma unroll
			for (int k = 0; k < U; k++)
#pragma unroll
				for (int e = 0; e < GE; e++)
					acc[k][e] = E::ld(in[k].s[e]);
			for (int q = 1; q < ns; q++) {
#pragma unroll
				for (int k = 0; k < U; k++)
					in[k].load(src[q], grp(v, k));
#pragma unroll
				for (int k = 0; k < U; k++)
#pragma unroll
					for (int e = 0; e < GE; e++)
						acc[k][e] = comb(op, acc[k][e], E::ld(in[k].s[e]));
			}
		}
#pragma unroll
		for (int k = 0; k < U; k++) {
			VN<S, GE> out;
#pragma unroll
			for (int e = 0; e < GE; e++)
				out.s[e] = E::st(op == GK_AVG ? avg(acc[k][e], ns) : acc[k][e]);
			out.store(dst, grp(v, k));
		}
	}

	__device__ void one(size_t i) const
	{
		const int ns = NS ? NS : nsrc;
		A a = E::ld(src[0][i]);
		for (int k = 1; k < ns; k++)
			a = comb(op, a, E::ld(src[k][i]));
		dst[i] = E::st(op == GK_AVG ? avg(a, ns) : a);
	}
};

template <int DT, int NS>
static int reduce_ns(gpu_t *g, gk_redop_t op, void *dst, const void *const *srcs, int nsrc,
		     size_t n, bool aligned, gk_stream_t *s)
{
	typedef typename El<DT>::S S;
	ReduceF<DT, NS> f;
	f.dst = (S *)dst;
	for (int k = 0; k < nsrc; k++)
		f.src[k] = (const S *)srcs[k];
	f.nsrc = nsrc;
	f.op = op;
	return launch(g, f, n, aligned, s, "reduce");
}

template <int DT>
static int reduce_t(gpu_t *g, gk_redop_t op, void *dst, const void *const *srcs, int nsrc, size_t n,
		    gk_stream_t *s)
{
	bool aligned = al16(dst);
	for (int k = 0; k < nsrc; k++)
		aligned = aligned && al16(srcs[k]);
	if (nsrc == 2) /* the common case, with its source count known at compile time */
		return reduce_ns<DT, 2>(g, op, dst, srcs, nsrc, n, aligned, s);
	return reduce_ns<DT, 0>(g, op, dst, srcs, nsrc, n, aligned, s);
}

extern "C" int gk_gpu_reduce(void *ctx, gk_dtype_t t, gk_redop_t op, void *dst,
			     const void *const *srcs, int nsrc, size_t n, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	switch (t) {
	case GK_F32:
		return reduce_t<GK_F32>(g, op, dst, srcs, nsrc, n, s);
	case GK_F16:
		return reduce_t<GK_F16>(g, op, dst, srcs, nsrc, n, s);
	case GK_BF16:
		return reduce_t<GK_BF16>(g, op, dst, srcs, nsrc, n, s);
	case GK_F64:
		return reduce_t<GK_F64>(g, op, dst, srcs, nsrc, n, s);
	case GK_I32:
		return reduce_t<GK_I32>(g, op, dst, srcs, nsrc, n, s);
	}
	return gk_gpu_fail(g, EINVAL, "reduce: invalid dtype");
}

/* ---- cast ---- */

template <int SD, int DD> struct CastF {
	typedef typename El<SD>::S SS;
	typedef typename El<DD>::S DS;
	enum { GE = 16 / (sizeof(SS) > sizeof(DS) ? sizeof(SS) : sizeof(DS)) };
	DS *dst;
	const SS *src;
	__device__ void vec(size_t v) const
	{
		VN<SS, GE> in[U];
#pragma unroll
		for (int k = 0; k < U; k++)
			in[k].load(src, grp(v, k));
#pragma unroll
		for (int k = 0; k < U; k++) {
			VN<DS, GE> out;
#pragma unroll
			for (int e = 0; e < GE; e++)
				out.s[e] = El<DD>::st(El<SD>::ld(in[k].s[e]));
			out.store(dst, grp(v, k));
		}
	}
	__device__ void one(size_t i) const
	{
		dst[i] = El<DD>::st(El<SD>::ld(src[i]));
	}
};

template <int SD, int DD>
static int cast_t(gpu_t *g, void *dst, const void *src, size_t n, gk_stream_t *s)
{
	CastF<SD, DD> f;
	f.dst = (typename El<DD>::S *)dst;
	f.src = (const typename El<SD>::S *)src;
	return launch(g, f, n, al16(dst) && al16(src), s, "cast");
}

extern "C" int gk_gpu_cast(void *ctx, gk_dtype_t dt, void *dst, gk_dtype_t st, const void *src,
			   size_t n, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	if (st == GK_F32 && dt == GK_F16)
		return cast_t<GK_F32, GK_F16>(g, dst, src, n, s);
	if (st == GK_F32 && dt == GK_BF16)
		return cast_t<GK_F32, GK_BF16>(g, dst, src, n, s);
	if (st == GK_F16 && dt == GK_F32)
		return cast_t<GK_F16, GK_F32>(g, dst, src, n, s);
	if (st == GK_BF16 && dt == GK_F32)
		return cast_t<GK_BF16, GK_F32>(g, dst, src, n, s);
	return gk_gpu_fail(g, ENOTSUP, "cast: unsupported pair");
}

/* ---- scale ---- */

template <int DT> struct ScaleF {
	typedef El<DT> E;
	typedef typename E::S S;
	typedef typename E::A A;
	enum { GE = 16 / sizeof(S) };
	S *dst;
	const S *src;
	A alpha;
	__device__ void vec(size_t v) const
	{
		VN<S, GE> x[U];
#pragma unroll
		for (int k = 0; k < U; k++)
			x[k].load(src, grp(v, k));
#pragma unroll
		for (int k = 0; k < U; k++) {
#pragma unroll
			for (int e = 0; e < GE; e++)
				x[k].s[e] = E::st(E::ld(x[k].s[e]) * alpha);
			x[k].store(dst, grp(v, k));
		}
	}
	__device__ void one(size_t i) const
	{
		dst[i] = E::st(E::ld(src[i]) * alpha);
	}
};

template <int DT>
static int scale_t(gpu_t *g, void *dst, const void *src, double alpha, size_t n, gk_stream_t *s)
{
	ScaleF<DT> f;
	f.dst = (typename El<DT>::S *)dst;
	f.src = (const typename El<DT>::S *)src;
	f.alpha = (typename El<DT>::A)alpha;
	return launch(g, f, n, al16(dst) && al16(src), s, "scale");
}

extern "C" int gk_gpu_scale(void *ctx, gk_dtype_t t, void *dst, const void *src, double alpha,
			    size_t n, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	switch (t) {
	case GK_F32:
		return scale_t<GK_F32>(g, dst, src, alpha, n, s);
	case GK_F16:
		return scale_t<GK_F16>(g, dst, src, alpha, n, s);
	case GK_BF16:
		return scale_t<GK_BF16>(g, dst, src, alpha, n, s);
	case GK_F64:
		return scale_t<GK_F64>(g, dst, src, alpha, n, s);
	default:
		return gk_gpu_fail(g, ENOTSUP, "scale: unsupported dtype");
	}
}

/* ---- Inf/NaN detection, on the bits ---- */

template <int DT> struct Raw;
template <> struct Raw<GK_F32> {
	typedef uint32_t R;
	__device__ static int bad(R x)
	{
		return gk_f32_bits_nonfinite(x);
	}
};
template <> struct Raw<GK_F16> {
	typedef uint16_t R;
	__device__ static int bad(R x)
	{
		return gk_f16_bits_nonfinite(x);
	}
};
template <> struct Raw<GK_BF16> {
	typedef uint16_t R;
	__device__ static int bad(R x)
	{
		return gk_bf16_bits_nonfinite(x);
	}
};
template <> struct Raw<GK_F64> {
	typedef unsigned long long R;
	__device__ static int bad(R x)
	{
		return gk_f64_bits_nonfinite(x);
	}
};

template <int DT> struct NonfiniteF {
	typedef typename Raw<DT>::R R;
	enum { GE = 16 / sizeof(R) };
	const R *buf;
	uint32_t *flag;
	__device__ void vec(size_t v) const
	{
		VN<R, GE> x[U];
		int found = 0;
#pragma unroll
		for (int k = 0; k < U; k++)
			x[k].load(buf, grp(v, k));
#pragma unroll
		for (int k = 0; k < U; k++)
#pragma unroll
			for (int e = 0; e < GE; e++)
				found |= Raw<DT>::bad(x[k].s[e]);
		if (found)
			*flag = 1;
	}
	__device__ void one(size_t i) const
	{
		if (Raw<DT>::bad(buf[i]))
			*flag = 1;
	}
};

template <int DT>
static int nonfinite_t(gpu_t *g, const void *buf, size_t n, uint32_t *flag, gk_stream_t *s)
{
	NonfiniteF<DT> f;
	f.buf = (const typename Raw<DT>::R *)buf;
	f.flag = flag;
	return launch(g, f, n, al16(buf), s, "find nonfinite");
}

extern "C" int gk_gpu_find_nonfinite(void *ctx, gk_dtype_t t, const void *buf, size_t n,
				     uint32_t *dflag, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	switch (t) {
	case GK_F32:
		return nonfinite_t<GK_F32>(g, buf, n, dflag, s);
	case GK_F16:
		return nonfinite_t<GK_F16>(g, buf, n, dflag, s);
	case GK_BF16:
		return nonfinite_t<GK_BF16>(g, buf, n, dflag, s);
	case GK_F64:
		return nonfinite_t<GK_F64>(g, buf, n, dflag, s);
	default:
		return gk_gpu_fail(g, ENOTSUP, "find nonfinite: unsupported dtype");
	}
}

/* ---- optimizers ---- */

/* One optimizer step over NB float state buffers (the weights first) and a gradient of type
 * GT. St::step(g, x) updates one element, x[q] pointing at its value in buffer q; vec loads
 * every buffer's U groups before the arithmetic, like the other functors. */
template <class St, int GT> struct OptF {
	typedef El<GT> E;
	typedef typename E::S S;
	enum { GE = 4, NB = St::NB };
	St st;
	float *buf[NB];
	const S *grad;
	__device__ void vec(size_t u) const
	{
		VN<float, GE> bv[NB][U];
		VN<S, GE> gv[U];
#pragma unroll
		for (int k = 0; k < U; k++) {
#pragma unroll
			for (int q = 0; q < NB; q++)
				bv[q][k].load(buf[q], grp(u, k));
			gv[k].load(grad, grp(u, k));
		}
#pragma unroll
		for (int k = 0; k < U; k++) {
#pragma unroll
			for (int e = 0; e < GE; e++) {
				float *x[NB];
#pragma unroll
				for (int q = 0; q < NB; q++)
					x[q] = &bv[q][k].s[e];
				st.step(E::ld(gv[k].s[e]), x);
			}
#pragma unroll
			for (int q = 0; q < NB; q++)
				bv[q][k].store(buf[q], grp(u, k));
		}
	}
	__device__ void one(size_t i) const
	{
		float *x[NB];
#pragma unroll
		for (int q = 0; q < NB; q++)
			x[q] = &buf[q][i];
		st.step(E::ld(grad[i]), x);
	}
};

struct SgdStep {
	enum { NB = 2 }; /* w, v */
	gk_sgd_t p;
	__device__ void step(float g, float *const *x) const
	{
		gk_sgd_step(p.lr, p.momentum, p.weight_decay, p.grad_scale, p.nesterov, g, x[0],
			    x[1]);
	}
};

template <int GT>
static int sgd_t(gpu_t *g, const gk_sgd_t *p, float *w, float *v, const void *grad, size_t n,
		 gk_stream_t *s)
{
	OptF<SgdStep, GT> f;
	f.st.p = *p;
	f.buf[0] = w;
	f.buf[1] = v;
	f.grad = (const typename El<GT>::S *)grad;
	return launch(g, f, n, al16(w) && al16(v) && al16(grad), s, "sgd");
}

extern "C" int gk_gpu_sgd(void *ctx, const gk_sgd_t *p, float *w, float *v, gk_dtype_t gt,
			  const void *grad, size_t n, gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	switch (gt) {
	case GK_F32:
		return sgd_t<GK_F32>(g, p, w, v, grad, n, s);
	case GK_F16:
		return sgd_t<GK_F16>(g, p, w, v, grad, n, s);
	case GK_BF16:
		return sgd_t<GK_BF16>(g, p, w, v, grad, n, s);
	default:
		return gk_gpu_fail(g, ENOTSUP, "sgd: unsupported grad dtype");
	}
}

struct AdamStep {
	enum { NB = 3 }; /* w, m, v */
	gk_adamw_t p;
	float bc1, bc2;
	__device__ void step(float g, float *const *x) const
	{
		gk_adamw_step(p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.grad_scale, bc1, bc2,
			      g, x[0], x[1], x[2]);
	}
};

template <int GT>
static int adamw_t(gpu_t *g, const gk_adamw_t *p, float bc1, float bc2, float *w, float *m,
		   float *v, const void *grad, size_t n, gk_stream_t *s)
{
	OptF<AdamStep, GT> f;
	f.st.p = *p;
	f.st.bc1 = bc1;
	f.st.bc2 = bc2;
	f.buf[0] = w;
	f.buf[1] = m;
	f.buf[2] = v;
	f.grad = (const typename El<GT>::S *)grad;
	return launch(g, f, n, al16(w) && al16(m) && al16(v) && al16(grad), s, "adamw");
}

extern "C" int gk_gpu_adamw(void *ctx, const gk_adamw_t *p, float bc1, float bc2, float *w,
			    float *m, float *v, gk_dtype_t gt, const void *grad, size_t n,
			    gk_stream_t *s)
{
	gpu_t *g = (gpu_t *)ctx;
	switch (gt) {
	case GK_F32:
		return adamw_t<GK_F32>(g, p, bc1, bc2, w, m, v, grad, n, s);
	case GK_F16:
		return adamw_t<GK_F16>(g, p, bc1, bc2, w, m, v, grad, n, s);
	case GK_BF16:
		return adamw_t<GK_BF16>(g, p, bc1, bc2, w, m, v, grad, n, s);
	default:
		return gk_gpu_fail(g, ENOTSUP, "adamw: unsupported grad dtype");
	}
}
