/* rftheory.philox: Z[i, 4g..4g+3] from Philox4x64-10 of (i, g, 0, 0) and Box-Muller.
   Keep in step with box_muller() in philox.py: same integers, same floating-point operations. */
#ifdef RF_CUDA
#define RF_FN __device__ __forceinline__
#define RF_MULHI(a, b) __umul64hi((a), (b))
#else
#include <math.h>
#include <string.h>
#define RF_FN static inline
#define RF_MULHI(a, b) ((rf_u64)(((unsigned __int128)(a) * (unsigned __int128)(b)) >> 64))
#endif
typedef unsigned long long rf_u64;

RF_FN void rf_philox(rf_u64 c0, rf_u64 c1, rf_u64 c2, rf_u64 c3, rf_u64 k0, rf_u64 k1,
                     rf_u64 *w) {
    for (int round = 0; round < 10; ++round) {
        if (round) { k0 += 0x9E3779B97F4A7C15ULL; k1 += 0xBB67AE8584CAA73BULL; }
        rf_u64 hi0 = RF_MULHI(0xD2E7470EE14C6C93ULL, c0), lo0 = 0xD2E7470EE14C6C93ULL * c0;
        rf_u64 hi1 = RF_MULHI(0xCA5A826395121157ULL, c2), lo1 = 0xCA5A826395121157ULL * c2;
        c0 = hi1 ^ c1 ^ k0; c1 = lo1; c2 = hi0 ^ c3 ^ k1; c3 = lo0;
    }
    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;
}

/* Correctly rounded operations, never fused: CUDA's _rn intrinsics are never contracted into an
   FMA whatever the flags; on the host compile with -ffp-contract=off (and SSE2, not x87). */
#ifdef RF_CUDA
#define RF_ADD(a, b) __dadd_rn((a), (b))
#define RF_SUB(a, b) __dsub_rn((a), (b))
#define RF_MUL(a, b) __dmul_rn((a), (b))
#define RF_DIV(a, b) __ddiv_rn((a), (b))
#define RF_SQRT(a) __dsqrt_rn(a)
#define RF_BITS(x) ((rf_u64)__double_as_longlong(x))
#define RF_FROM_BITS(u) __longlong_as_double((long long)(u))
#else
#define RF_ADD(a, b) ((a) + (b))
#define RF_SUB(a, b) ((a) - (b))
#define RF_MUL(a, b) ((a) * (b))
#define RF_DIV(a, b) ((a) / (b))
#define RF_SQRT(a) sqrt(a)
#endif

#ifndef RF_CUDA
RF_FN rf_u64 RF_BITS(double x) { rf_u64 u; memcpy(&u, &x, 8); return u; }
RF_FN double RF_FROM_BITS(rf_u64 u) { double x; memcpy(&x, &u, 8); return x; }
#endif

/* -ln u, u = (k + 1) 2^-53: neg_log_unit() in philox.py (fdlibm e_log.c, hfsq form). */
RF_FN double rf_neg_log(rf_u64 k) {
    double x = (double)(k + 1);
    rf_u64 bits = RF_BITS(x);
    rf_u64 hm = bits >> 32;
    rf_u64 e = hm >> 20;
    rf_u64 i = ((hm & 0xFFFFFULL) + 0x95F64ULL) & 0x100000ULL;
    e += i >> 20;
    double m = RF_FROM_BITS((bits & 0xFFFFFFFFFFFFFULL) | ((i ^ 0x3FF00000ULL) << 32));
    double dk = RF_SUB((double)e, RF_EXP_BIAS);
    double f = RF_SUB(m, 1.0);
    double s = RF_DIV(f, RF_ADD(f, 2.0));
    double z = RF_MUL(s, s), w = RF_MUL(z, z);
    double t1 = RF_MUL(RF_ADD(RF_MUL(RF_ADD(RF_MUL(w, RF_LG6), RF_LG4), w), RF_LG2), w);
    double R = RF_MUL(RF_ADD(RF_MUL(RF_ADD(RF_MUL(RF_ADD(RF_MUL(w, RF_LG7), RF_LG5), w), RF_LG3),
                                    w), RF_LG1), z);
    R = RF_ADD(R, t1);
    double h = RF_MUL(RF_MUL(f, f), 0.5);
    R = RF_MUL(RF_ADD(R, h), s);
    R = RF_ADD(R, RF_MUL(dk, RF_LN2_LO));
    return RF_SUB(RF_SUB(RF_SUB(h, R), f), RF_MUL(dk, RF_LN2_HI));
}

/* sin, cos of (pi/4) m 2^-50, m <= 2^50: sincos_octant() in philox.py (Dekker + fdlibm kernels). */
RF_FN void rf_sincos(rf_u64 m, double *sn, double *cs) {
    double xh = RF_MUL((double)(m & ~0x1FFFFFFULL), 8.8817841970012523e-16);   /* 2^-50 */
    double xl = RF_MUL((double)(m & 0x1FFFFFFULL), 8.8817841970012523e-16);
    double x = RF_ADD(xh, xl);
    double p = RF_MUL(x, RF_PIO4_HI);
    double t = RF_SUB(RF_MUL(xh, RF_PIO4_H26), p);
    t = RF_ADD(t, RF_MUL(xh, RF_PIO4_L27));
    t = RF_ADD(t, RF_MUL(xl, RF_PIO4_H26));
    t = RF_ADD(t, RF_MUL(xl, RF_PIO4_L27));
    t = RF_ADD(t, RF_MUL(x, RF_PIO4_LO));
    double z = RF_MUL(p, p), v = RF_MUL(z, p);
    double r = RF_ADD(RF_MUL(z, RF_S6), RF_S5);
    r = RF_ADD(RF_MUL(r, z), RF_S4);
    r = RF_ADD(RF_MUL(r, z), RF_S3);
    r = RF_ADD(RF_MUL(r, z), RF_S2);
    r = RF_MUL(r, v);
    double q = RF_SUB(RF_MUL(RF_SUB(RF_MUL(t, 0.5), r), z), t);
    *sn = RF_SUB(p, RF_SUB(q, RF_MUL(v, RF_S1)));
    double rc = RF_ADD(RF_MUL(z, RF_C6), RF_C5);
    rc = RF_ADD(RF_MUL(rc, z), RF_C4);
    rc = RF_ADD(RF_MUL(rc, z), RF_C3);
    rc = RF_ADD(RF_MUL(rc, z), RF_C2);
    rc = RF_ADD(RF_MUL(rc, z), RF_C1);
    rc = RF_MUL(RF_MUL(rc, z), z);
    rc = RF_SUB(rc, RF_MUL(t, p));
    rf_u64 hp = RF_BITS(p) >> 32;
    double qx = hp < 0x3FD33333ULL ? 0.0
              : hp > 0x3FE90000ULL ? 0.28125 : RF_FROM_BITS((hp - 0x00200000ULL) << 32);
    double hz = RF_SUB(RF_SUB(RF_MUL(z, 0.5), qx), rc);
    *cs = RF_SUB(RF_SUB(1.0, qx), hz);
}

/* One Box-Muller pair: radius word a, angle word b (box_muller() in philox.py). */
RF_FN void rf_pair(rf_u64 a, rf_u64 b, double *x, double *y) {
    double r = RF_SQRT(RF_MUL(rf_neg_log(a >> 11), 2.0));
    unsigned o = (unsigned)(b >> 61);
    rf_u64 m = (b >> 11) & 0x3FFFFFFFFFFFFULL;                           /* 2^50 - 1 */
    if (o & 1u) m = 0x4000000000000ULL - m;                              /* 2^50 - m */
    double s, c;
    rf_sincos(m, &s, &c);
    int swap = ((o + 1u) & 2u) != 0;
    double cx = swap ? s : c, sy = swap ? c : s;
    if ((o + 2u) & 4u) cx = -cx;
    if (o & 4u) sy = -sy;
    *x = RF_MUL(r, cx);
    *y = RF_MUL(r, sy);
}

RF_FN void rf_normals(rf_u64 row, rf_u64 g, rf_u64 k0, rf_u64 k1, double *z) {
    rf_u64 w[4];
    rf_philox(row, g, 0, 0, k0, k1, w);
    rf_pair(w[0], w[1], &z[0], &z[1]);
    rf_pair(w[2], w[3], &z[2], &z[3]);
}

/* out[r, j] = Z[row0 + r, j] / sqrt_d for r < rows, j < d (row-major, row stride d). */
#define RF_FILL_ONE(T)                                                                 \
    long long r = idx / groups;                                                         \
    int g = (int)(idx - r * groups);                                                    \
    double z[4];                                                                        \
    rf_normals(row0 + (rf_u64)r, (rf_u64)g, k0, k1, z);                                 \
    T *o = out + r * (long long)d + 4 * g;                                              \
    int n = d - 4 * g < 4 ? d - 4 * g : 4;                                              \
    for (int j = 0; j < n; ++j) o[j] = (T)RF_DIV(z[j], sqrt_d);

#define RF_WORDS_ONE                                                                   \
    long long r = idx / groups;                                                         \
    int g = (int)(idx - r * groups);                                                    \
    rf_philox(row0 + (rf_u64)r, (rf_u64)g, 0, 0, k0, k1, out + 4 * idx);

#ifdef RF_CUDA
#define RF_LOOP(count) for (long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x; \
                            idx < (count); idx += (long long)blockDim.x * gridDim.x)
#define RF_KERNEL extern "C" __global__ void
#else
#define RF_LOOP(count) for (long long idx = 0; idx < (count); ++idx)
#define RF_KERNEL void
#endif

RF_KERNEL rf_fill_f32(rf_u64 k0, rf_u64 k1, rf_u64 row0, long long rows, int d,
                      double sqrt_d, float *out) {
    int groups = (d + 3) / 4;
    RF_LOOP(rows * groups) { RF_FILL_ONE(float) }
}

RF_KERNEL rf_fill_f64(rf_u64 k0, rf_u64 k1, rf_u64 row0, long long rows, int d,
                      double sqrt_d, double *out) {
    int groups = (d + 3) / 4;
    RF_LOOP(rows * groups) { RF_FILL_ONE(double) }
}

/* out[r, g, :] = the Philox words of (row0 + r, g, 0, 0), g < groups. */
RF_KERNEL rf_words(rf_u64 k0, rf_u64 k1, rf_u64 row0, long long rows, int groups,
                   rf_u64 *out) {
    RF_LOOP(rows * groups) { RF_WORDS_ONE }
}

/* Philox4x64-10 of n arbitrary counters ctr[n][4] under keys key[n][2] (known-answer tests). */
RF_KERNEL rf_philox_many(long long n, const rf_u64 *ctr, const rf_u64 *key, rf_u64 *out) {
    RF_LOOP(n) {
        const rf_u64 *c = ctr + 4 * idx, *k = key + 2 * idx;
        rf_philox(c[0], c[1], c[2], c[3], k[0], k[1], out + 4 * idx);
    }
}
