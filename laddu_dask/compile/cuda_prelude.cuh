// laddu-dask's CUDA prelude (laddu_dask/compile/cuda_prelude.cuh): the complex type, the
// functions the spec's CUDA spellings call, the compensated sums and the merge kernel.  The
// printer puts "#define LADDU_F32 1" before it for single-precision kernels.
#ifndef LADDU_HOST_EMULATION
#pragma nv_diag_suppress 177
#endif
#ifdef LADDU_F32
typedef float real_t;
#define LD_ALIGN 8
#define LD_MATH(name) name##f
#else
typedef double real_t;
#define LD_ALIGN 16
#define LD_MATH(name) name
#endif
struct __align__(LD_ALIGN) cplx { real_t re; real_t im; };
#define LD_FN static __device__ __forceinline__

// the math library in the kernel precision (sinf or sin, ...)
LD_FN real_t ld_real_sin(real_t x) { return LD_MATH(sin)(x); }
LD_FN real_t ld_real_cos(real_t x) { return LD_MATH(cos)(x); }
LD_FN real_t ld_real_tan(real_t x) { return LD_MATH(tan)(x); }
LD_FN real_t ld_real_exp(real_t x) { return LD_MATH(exp)(x); }
LD_FN real_t ld_real_log(real_t x) { return LD_MATH(log)(x); }
LD_FN real_t ld_real_sqrt(real_t x) { return LD_MATH(sqrt)(x); }
LD_FN real_t ld_fabs(real_t x) { return LD_MATH(fabs)(x); }
LD_FN real_t ld_real_atan2(real_t y, real_t x) { return LD_MATH(atan2)(y, x); }
LD_FN real_t ld_real_pow(real_t a, real_t b) { return LD_MATH(pow)(a, b); }
LD_FN real_t ld_hypot(real_t a, real_t b) { return LD_MATH(hypot)(a, b); }
LD_FN real_t ld_sinh(real_t x) { return LD_MATH(sinh)(x); }
LD_FN real_t ld_cosh(real_t x) { return LD_MATH(cosh)(x); }
LD_FN real_t ld_floor(real_t x) { return LD_MATH(floor)(x); }
LD_FN real_t ld_copysign(real_t a, real_t b) { return LD_MATH(copysign)(a, b); }
LD_FN double ld_fabs_d(double x) { return fabs(x); }
#ifdef LADDU_F32
LD_FN real_t ld_nan() { return __int_as_float(0x7fc00000); }
LD_FN real_t ld_inf() { return __int_as_float(0x7f800000); }
#else
LD_FN real_t ld_nan() { return __longlong_as_double(0x7ff8000000000000ll); }
LD_FN real_t ld_inf() { return __longlong_as_double(0x7ff0000000000000ll); }
#endif
LD_FN cplx ld_c(real_t a, real_t b) { cplx z; z.re = a; z.im = b; return z; }
LD_FN cplx ld_to_c(real_t a) { return ld_c(a, (real_t)0); }
LD_FN cplx ld_to_c(cplx a) { return a; }
LD_FN real_t ld_re(real_t a) { return a; }
LD_FN real_t ld_re(cplx a) { return a.re; }
LD_FN real_t ld_im(real_t a) { return (real_t)0; }
LD_FN real_t ld_im(cplx a) { return a.im; }
LD_FN real_t ld_conj(real_t a) { return a; }
LD_FN cplx ld_conj(cplx a) { return ld_c(a.re, -a.im); }
LD_FN cplx operator-(cplx a) { return ld_c(-a.re, -a.im); }
LD_FN cplx operator+(cplx a, cplx b) { return ld_c(a.re + b.re, a.im + b.im); }
LD_FN cplx operator+(cplx a, real_t b) { return ld_c(a.re + b, a.im); }
LD_FN cplx operator+(real_t a, cplx b) { return ld_c(a + b.re, b.im); }
LD_FN cplx operator-(cplx a, cplx b) { return ld_c(a.re - b.re, a.im - b.im); }
LD_FN cplx operator-(cplx a, real_t b) { return ld_c(a.re - b, a.im); }
LD_FN cplx operator-(real_t a, cplx b) { return ld_c(a - b.re, -b.im); }
LD_FN cplx operator*(cplx a, cplx b) {
    return ld_c(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}
LD_FN cplx operator*(cplx a, real_t b) { return ld_c(a.re * b, a.im * b); }
LD_FN cplx operator*(real_t a, cplx b) { return ld_c(a * b.re, a * b.im); }
// one reciprocal per complex quotient, as the CPU fused kernels
LD_FN cplx ld_recip_conj(cplx b) {
    const real_t f = (real_t)1 / (b.re * b.re + b.im * b.im);
    return ld_c(b.re * f, -b.im * f);
}
LD_FN cplx operator/(cplx a, cplx b) { return a * ld_recip_conj(b); }
LD_FN cplx operator/(real_t a, cplx b) { return a * ld_recip_conj(b); }
LD_FN cplx operator/(cplx a, real_t b) { return ld_c(a.re / b, a.im / b); }

LD_FN real_t ld_nsq(real_t a) { return a * a; }
LD_FN real_t ld_nsq(cplx a) { return a.re * a.re + a.im * a.im; }
LD_FN real_t ld_abs(real_t a) { return ld_fabs(a); }
LD_FN real_t ld_abs(cplx a) { return ld_hypot(a.re, a.im); }
LD_FN real_t ld_sign(real_t a) { return a > (real_t)0 ? (real_t)1 : (a < (real_t)0 ? (real_t)-1 : a); }
LD_FN real_t ld_atan2(real_t y, real_t x) { return ld_real_atan2(y, x); }
// acos of the argument clipped to [-1, 1] (NaN stays NaN) and its derivative (0 outside)
LD_FN real_t ld_acos(real_t a) { return LD_MATH(acos)(ld_fabs(a) > (real_t)1 ? ld_copysign((real_t)1, a) : a); }
LD_FN real_t ld_dacos(real_t a) {
    return ld_fabs(a) >= (real_t)1 ? (real_t)0 : (real_t)-1 / ld_real_sqrt((real_t)1 - a * a);
}
LD_FN cplx ld_cis(real_t a) { return ld_c(ld_real_cos(a), ld_real_sin(a)); }
LD_FN real_t ld_sin(real_t a) { return ld_real_sin(a); }
LD_FN real_t ld_cos(real_t a) { return ld_real_cos(a); }
LD_FN real_t ld_tan(real_t a) { return ld_real_tan(a); }
LD_FN real_t ld_exp(real_t a) { return ld_real_exp(a); }
LD_FN real_t ld_log(real_t a) { return ld_real_log(a); }
LD_FN real_t ld_sqrt(real_t a) { return ld_real_sqrt(a); }
LD_FN cplx ld_exp(cplx a) {
    const real_t e = ld_real_exp(a.re);
    return ld_c(e * ld_real_cos(a.im), e * ld_real_sin(a.im));
}
LD_FN cplx ld_log(cplx a) { return ld_c(ld_real_log(ld_hypot(a.re, a.im)), ld_real_atan2(a.im, a.re)); }
LD_FN cplx ld_sqrt(cplx a) {
    // principal root, C99 branch cut (the sign of a zero imaginary part is kept)
    if (a.re == (real_t)0 && a.im == (real_t)0) return ld_c((real_t)0, a.im);
    const real_t t = ld_real_sqrt((ld_fabs(a.re) + ld_hypot(a.re, a.im)) * (real_t)0x1p-1);
    if (a.re >= (real_t)0) return ld_c(t, a.im / (t + t));
    return ld_c(ld_fabs(a.im) / (t + t), ld_copysign(t, a.im));
}
LD_FN cplx ld_sin(cplx a) {
    return ld_c(ld_real_sin(a.re) * ld_cosh(a.im), ld_real_cos(a.re) * ld_sinh(a.im));
}
LD_FN cplx ld_cos(cplx a) {
    return ld_c(ld_real_cos(a.re) * ld_cosh(a.im), -(ld_real_sin(a.re) * ld_sinh(a.im)));
}
LD_FN cplx ld_tan(cplx a) {
    // tan(x + iy) = (sin 2x + i sinh 2y) / (cos 2x + cosh 2y); far from the real axis
    // the imaginary part is +-1 to working precision and cosh would overflow
    const real_t x2 = a.re + a.re;
    if (ld_fabs(a.im) > (real_t)20) {
        const real_t q = ld_real_exp(-ld_fabs(a.im + a.im));
        return ld_c((real_t)2 * ld_real_sin(x2) * q, ld_copysign((real_t)1, a.im));
    }
    const real_t y2 = a.im + a.im;
    const real_t d = ld_real_cos(x2) + ld_cosh(y2);
    return ld_c(ld_real_sin(x2) / d, ld_sinh(y2) / d);
}
template <class T> LD_FN T ld_powi_by_squaring(T x, int n, T one) {
    // repeated squaring: x**2 is x*x, x**-1 is 1/x (NumPy's small-integer powers)
    unsigned int m = n < 0 ? (unsigned int)(-n) : (unsigned int)n;
    T r = one;
    T b = x;
    while (m) {
        if (m & 1u) r = r * b;
        m >>= 1;
        if (m) b = b * b;
    }
    return n < 0 ? (real_t)1 / r : r;
}
LD_FN real_t ld_powi(real_t x, int n) { return ld_powi_by_squaring(x, n, (real_t)1); }
LD_FN cplx ld_powi(cplx x, int n) { return ld_powi_by_squaring(x, n, ld_c((real_t)1, (real_t)0)); }
LD_FN real_t ld_pow(real_t a, real_t b) { return ld_real_pow(a, b); }
LD_FN cplx ld_pow(cplx a, cplx b) {
    // NumPy's complex power: small integer exponents by multiplication, 0**b for b > 0
    if (b.im == (real_t)0 && b.re == ld_floor(b.re) && ld_fabs(b.re) < (real_t)100)
        return ld_powi(a, (int)b.re);
    if (a.re == (real_t)0 && a.im == (real_t)0) {
        if (b.re > (real_t)0 && b.im == (real_t)0) return ld_c((real_t)0, (real_t)0);
        return ld_c(ld_nan(), ld_nan());
    }
    return ld_exp(b * ld_log(a));
}
LD_FN cplx ld_pow(cplx a, real_t b) { return ld_pow(a, ld_to_c(b)); }
LD_FN cplx ld_pow(real_t a, cplx b) { return ld_pow(ld_to_c(a), b); }

// ---- compensated sums (always in double) ----------------------------------------------
// A (s, e, b) triple: s + e is the sum so far up to at most b.  Every step is a TwoSum
// (exact); what the second level drops is summed in magnitude, rounding upwards, into b,
// so b is zero while no second-level addition rounds.
LD_FN void ld_two_sum(double a, double b, double& s, double& r) {
    s = a + b;
    const double z = s - a;
    r = (a - (s - z)) + (b - z);  // a + b == s + r exactly
}
LD_FN void ld_acc(double& s, double& e, double& b, double x) {
    double t, err, f, r;
    ld_two_sum(s, x, t, err);
    ld_two_sum(e, err, f, r);
    s = t;
    e = f;
    b = __dadd_ru(b, ld_fabs_d(r));
}
LD_FN void ld_merge(double& s, double& e, double& b, double s2, double e2, double b2) {
    double t, err, c, r1, d, r2;
    ld_two_sum(s, s2, t, err);
    ld_two_sum(e, e2, c, r1);
    ld_two_sum(c, err, d, r2);
    s = t;
    e = d;
    b = __dadd_ru(__dadd_ru(b, b2), __dadd_ru(ld_fabs_d(r1), ld_fabs_d(r2)));
}

#ifndef LADDU_HOST_EMULATION
LD_FN void ld_warp_merge(double& s, double& e, double& b) {
    for (int off = 16; off > 0; off >>= 1) {
        const double s2 = __shfl_down_sync(0xffffffffu, s, off);
        const double e2 = __shfl_down_sync(0xffffffffu, e, off);
        const double b2 = __shfl_down_sync(0xffffffffu, b, off);
        ld_merge(s, e, b, s2, e2, b2);
    }
}
// merge the triples of a block (blockDim.x a multiple of 32); the result is in thread 0
LD_FN void ld_block_merge(double& s, double& e, double& b) {
    __shared__ double sh[96];
    ld_warp_merge(s, e, b);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    if (lane == 0) { sh[3 * warp] = s; sh[3 * warp + 1] = e; sh[3 * warp + 2] = b; }
    __syncthreads();
    if (warp == 0) {
        const int nw = (int)(blockDim.x >> 5);
        if (lane < nw) { s = sh[3 * lane]; e = sh[3 * lane + 1]; b = sh[3 * lane + 2]; }
        else { s = 0; e = 0; b = 0; }
        ld_warp_merge(s, e, b);
    }
    __syncthreads();
}
LD_FN void ld_store(double* __restrict__ partial, int row, double s, double e, double b) {
    ld_block_merge(s, e, b);
    if (threadIdx.x == 0) {
        double* o = partial + 3 * ((long long)row * gridDim.x + blockIdx.x);
        o[0] = s; o[1] = e; o[2] = b;
    }
}
LD_FN void ld_reject(unsigned long long* bad, long long i) {
    atomicMax(bad, ~(unsigned long long)i);  // the largest complement is the first event
}

// partial: rows x nblocks x 3 block triples -> out: rows x (s, e, bound), then the first
// rejected event (-1 for none); one block per row
extern "C" __global__ void laddu_merge_blocks(const double* __restrict__ partial,
        const long long nblocks, const int rows, const unsigned long long* __restrict__ bad,
        double* __restrict__ out) {
    const int row = blockIdx.x;
    double s = 0, e = 0, b = 0;
    for (long long j = threadIdx.x; j < nblocks; j += blockDim.x) {
        const double* q = partial + 3 * ((long long)row * nblocks + j);
        ld_merge(s, e, b, q[0], q[1], q[2]);
    }
    ld_block_merge(s, e, b);
    if (threadIdx.x == 0) {
        out[3 * row] = s;
        out[3 * row + 1] = e;
        out[3 * row + 2] = b;
        if (row == 0) {
            const unsigned long long v = *bad;
            out[3 * rows] = v == 0ull ? (double)-1 : (double)(~v);
        }
    }
}
#endif
