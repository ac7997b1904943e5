/* elementwise.cu - reduce, cast, scale, Inf/NaN detection and optimizer steps
 *
 * Each operation is a small functor with vec(v), which handles elements 8v..8v+7 with
 * 16-byte loads and stores, and one(i), which handles element i. launch() runs vec over
 * the aligned bulk in a grid-stride loop and one() over the tail, or one() over
 * everything when a pointer is not 16-byte aligned. The arithmetic is gk_scalar.h's, so
 * results equal the cpu backend's bit for bit (NaN payloads aside). */
#include "gk_gpu.h"

#define TPB 256

template <int DT> struct El;
template <> struct El<GK_F32> {
    typedef float S;
    typedef float A;
    __device__ static A ld(S x) { return x; }
    __device__ static S st(A a) { return a; }
};
template <> struct El<GK_F16> {
    typedef uint16_t S;
    typedef float A;
    __device__ static A ld(S x) { return gk_d_f16_to_f32(x); }
    __device__ static S st(A a) { return gk_d_f32_to_f16(a); }
};
template <> struct El<GK_BF16> {
    typedef uint16_t S;
    typedef float A;
    __device__ static A ld(S x) { return gk_d_bf16_to_f32(x); }
    __device__ static S st(A a) { return gk_d_f32_to_bf16(a); }
};
template <> struct El<GK_F64> {
    typedef double S;
    typedef double A;
    __device__ static A ld(S x) { return x; }
    __device__ static S st(A a) { return a; }
};
template <> struct El<GK_I32> {
    typedef int32_t S;
    typedef long long A;
    __device__ static A ld(S x) { return x; }
    __device__ static S st(A a) { return gk_i64_to_i32_wrap(a); }
};

__device__ static inline float comb(int op, float a, float b) { return gk_combine_f(op, a, b); }
__device__ static inline double comb(int op, double a, double b) { return gk_combine_d(op, a, b); }
__device__ static inline long long comb(int op, long long a, long long b)
{
    return gk_combine_i(op, a, b);
}
__device__ static inline float avg(float a, int n) { return a / (float)n; }
__device__ static inline double avg(double a, int n) { return a / (double)n; }
__device__ static inline long long avg(long long a, int n) { return a / n; }

/* 8 elements of S through 16-byte accesses */
template <typename S> struct V8 {
    enum { NQ = sizeof(S) * 8 / 16 };
    union {
        uint4 q[NQ];
        S s[8];
    };
    __device__ void load(const S *p, size_t v)
    {
        const uint4 *src = reinterpret_cast<const uint4 *>(p) + v * NQ;
#pragma unroll
        for (int k = 0; k < NQ; k++)
            q[k] = src[k];
    }
    __device__ void store(S *p, size_t v) const
    {
        uint4 *dst = reinterpret_cast<uint4 *>(p) + v * NQ;
#pragma unroll
        for (int k = 0; k < NQ; k++)
            dst[k] = q[k];
    }
};

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

template <class F>
static int launch(gpu_t *g, const F &f, size_t n, bool aligned, gk_stream_t *s, const char *what)
{
    size_t nvec = aligned ? n / 8 : 0;
    if (gk_gpu_check(g, gkSetDevice(g->device), "set device") < 0)
        return -1;
    if (nvec) {
        k_vec<F><<<gk_gpu_blocks(g, nvec, TPB), TPB, 0, GK_STREAM(s)>>>(f, nvec);
        if (gk_gpu_launched(g, what) < 0)
            return -1;
    }
    if (nvec * 8 < n) {
        k_one<F><<<gk_gpu_blocks(g, n - nvec * 8, TPB), TPB, 0, GK_STREAM(s)>>>(f, nvec * 8, n);
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

    __device__ void vec(size_t v) const
    {
        const int ns = NS ? NS : nsrc;
        V8<S> in[NS ? NS : 1];
        A acc[8];
        if (NS) { /* all loads first: NS * 16 bytes or more in flight per thread */
#pragma unroll
            for (int k = 0; k < (NS ? NS : 1); k++)
                in[k].load(src[k], v);
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc[e] = E::ld(in[0].s[e]);
#pragma unroll
            for (int k = 1; k < (NS ? NS : 1); k++)
#pragma unroll
                for (int e = 0; e < 8; e++)
                    acc[e] = comb(op, acc[e], E::ld(in[k].s[e]));
        } else {
            in[0].load(src[0], v);
#pragma unroll
            for (int e = 0; e < 8; e++)
                acc[e] = E::ld(in[0].s[e]);
            for (int k = 1; k < ns; k++) {
                in[0].load(src[k], v);
#pragma unroll
                for (int e = 0; e < 8; e++)
                    acc[e] = comb(op, acc[e], E::ld(in[0].s[e]));
            }
        }
        V8<S> out;
#pragma unroll
        for (int e = 0; e < 8; e++)
            out.s[e] = E::st(op == GK_AVG ? avg(acc[e], ns) : acc[e]);
        out.store(dst, v);
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

template <int DT>
static int reduce_t(gpu_t *g, gk_redop_t op, void *dst, const void *const *srcs, int nsrc,
                    size_t n, gk_stream_t *s)
{
    typedef typename El<DT>::S S;
    bool aligned = al16(dst);
    for (int k = 0; k < nsrc; k++)
        aligned = aligned && al16(srcs[k]);
    if (nsrc == 2) {
        ReduceF<DT, 2> f;
        f.dst = (S *)dst;
        for (int k = 0; k < nsrc; k++)
            f.src[k] = (const S *)srcs[k];
        f.nsrc = nsrc;
        f.op = op;
        return launch(g, f, n, aligned, s, "reduce");
    }
    ReduceF<DT, 0> f;
    f.dst = (S *)dst;
    for (int k = 0; k < nsrc; k++)
        f.src[k] = (const S *)srcs[k];
    f.nsrc = nsrc;
    f.op = op;
    return launch(g, f, n, aligned, s, "reduce");
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
    DS *dst;
    const SS *src;
    __device__ void vec(size_t v) const
    {
        V8<SS> in;
        V8<DS> out;
        in.load(src, v);
#pragma unroll
        for (int e = 0; e < 8; e++)
            out.s[e] = El<DD>::st(El<SD>::ld(in.s[e]));
        out.store(dst, v);
    }
    __device__ void one(size_t i) const { dst[i] = El<DD>::st(El<SD>::ld(src[i])); }
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
    S *dst;
    const S *src;
    A alpha;
    __device__ void vec(size_t v) const
    {
        V8<S> x;
        x.load(src, v);
#pragma unroll
        for (int e = 0; e < 8; e++)
            x.s[e] = E::st(E::ld(x.s[e]) * alpha);
        x.store(dst, v);
    }
    __device__ void one(size_t i) const { dst[i] = E::st(E::ld(src[i]) * alpha); }
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
    __device__ static int bad(R x) { return gk_f32_bits_nonfinite(x); }
};
template <> struct Raw<GK_F16> {
    typedef uint16_t R;
    __device__ static int bad(R x) { return gk_f16_bits_nonfinite(x); }
};
template <> struct Raw<GK_BF16> {
    typedef uint16_t R;
    __device__ static int bad(R x) { return gk_bf16_bits_nonfinite(x); }
};
template <> struct Raw<GK_F64> {
    typedef unsigned long long R;
    __device__ static int bad(R x) { return gk_f64_bits_nonfinite(x); }
};

template <int DT> struct NonfiniteF {
    typedef typename Raw<DT>::R R;
    const R *buf;
    uint32_t *flag;
    __device__ void vec(size_t v) const
    {
        V8<R> x;
        int found = 0;
        x.load(buf, v);
#pragma unroll
        for (int e = 0; e < 8; e++)
            found |= Raw<DT>::bad(x.s[e]);
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

template <int GT> struct SgdF {
    typedef El<GT> E;
    typedef typename E::S S;
    gk_sgd_t p;
    float *w, *v;
    const S *grad;
    __device__ void vec(size_t i) const
    {
        V8<float> wv, vv;
        V8<S> gv;
        wv.load(w, i);
        vv.load(v, i);
        gv.load(grad, i);
#pragma unroll
        for (int e = 0; e < 8; e++)
            gk_sgd_step(p.lr, p.momentum, p.weight_decay, p.grad_scale, p.nesterov,
                        E::ld(gv.s[e]), &wv.s[e], &vv.s[e]);
        wv.store(w, i);
        vv.store(v, i);
    }
    __device__ void one(size_t i) const
    {
        gk_sgd_step(p.lr, p.momentum, p.weight_decay, p.grad_scale, p.nesterov, E::ld(grad[i]),
                    &w[i], &v[i]);
    }
};

template <int GT>
static int sgd_t(gpu_t *g, const gk_sgd_t *p, float *w, float *v, const void *grad, size_t n,
                 gk_stream_t *s)
{
    SgdF<GT> f;
    f.p = *p;
    f.w = w;
    f.v = v;
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

template <int GT> struct AdamF {
    typedef El<GT> E;
    typedef typename E::S S;
    gk_adamw_t p;
    float bc1, bc2;
    float *w, *m, *v;
    const S *grad;
    __device__ void vec(size_t i) const
    {
        V8<float> wv, mv, vv;
        V8<S> gv;
        wv.load(w, i);
        mv.load(m, i);
        vv.load(v, i);
        gv.load(grad, i);
#pragma unroll
        for (int e = 0; e < 8; e++)
            gk_adamw_step(p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.grad_scale, bc1, bc2,
                          E::ld(gv.s[e]), &wv.s[e], &mv.s[e], &vv.s[e]);
        wv.store(w, i);
        mv.store(m, i);
        vv.store(v, i);
    }
    __device__ void one(size_t i) const
    {
        gk_adamw_step(p.lr, p.beta1, p.beta2, p.eps, p.weight_decay, p.grad_scale, bc1, bc2,
                      E::ld(grad[i]), &w[i], &m[i], &v[i]);
    }
};

template <int GT>
static int adamw_t(gpu_t *g, const gk_adamw_t *p, float bc1, float bc2, float *w, float *m,
                   float *v, const void *grad, size_t n, gk_stream_t *s)
{
    AdamF<GT> f;
    f.p = *p;
    f.bc1 = bc1;
    f.bc2 = bc2;
    f.w = w;
    f.m = m;
    f.v = v;
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
