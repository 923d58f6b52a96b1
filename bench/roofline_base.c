/* The roofline loops at the baseline ISA (see roofline_isa.h): what code compiled without ISA
 * flags, the scalar backend included, can reach. On x86-64 that is SSE2 without FMA, so the
 * loop is a multiply and an add per accumulator; on aarch64 it is NEON FMA. */
#include "roofline_isa.h"

#if defined(__aarch64__)
#include <arm_neon.h>
#define ACC 16
typedef float32x4_t vec;
static inline vec splat(float v) { return vdupq_n_f32(v); }
static inline vec madd(vec a, vec c, vec b) { return vfmaq_f32(b, a, c); }
static inline float lane0(vec a) { return vgetq_lane_f32(a, 0); }
static inline vec load(const float *p) { return vld1q_f32(p); }
static inline void store(float *p, vec v) { vst1q_f32(p, v); }
static inline vec add(vec a, vec b) { return vaddq_f32(a, b); }
static inline vec mul(vec a, vec b) { return vmulq_f32(a, b); }
static inline void stream(float *p, vec v) { vst1q_f32(p, v); } /* no streaming store */
static inline void fence(void) {}
#define LANES 4
#elif defined(__SSE2__)
#include <emmintrin.h>
#define ACC 12
typedef __m128 vec;
static inline vec splat(float v) { return _mm_set1_ps(v); }
static inline vec madd(vec a, vec c, vec b) { return _mm_add_ps(_mm_mul_ps(a, c), b); }
static inline float lane0(vec a) { return _mm_cvtss_f32(a); }
static inline vec load(const float *p) { return _mm_load_ps(p); }
static inline void store(float *p, vec v) { _mm_store_ps(p, v); }
static inline vec add(vec a, vec b) { return _mm_add_ps(a, b); }
static inline vec mul(vec a, vec b) { return _mm_mul_ps(a, b); }
static inline void stream(float *p, vec v) { _mm_stream_ps(p, v); }
static inline void fence(void) { _mm_sfence(); }
#define LANES 4
#else
#define ACC 8
typedef float vec;
static inline vec splat(float v) { return v; }
static inline vec madd(vec a, vec c, vec b) { return a * c + b; }
static inline float lane0(vec a) { return a; }
#define LANES 1
#endif

double bench_fma_loop__base(int64_t iters, float c, float b, float *sink) {
  vec acc[ACC], vc = splat(c), vb = splat(b);
  for (int j = 0; j < ACC; j++) acc[j] = splat(1.0f + (float)j);
  for (int64_t i = 0; i < iters; i++)
    for (int j = 0; j < ACC; j++) acc[j] = madd(acc[j], vc, vb); /* unrolled at -O3 */
  float s = 0;
  for (int j = 0; j < ACC; j++) s += lane0(acc[j]);
  *sink = s;
  return 2.0 * LANES * ACC * (double)iters;
}

/* The baseline's vectors, four per iteration: the plain C loop -O3 made of it (one vector per
   iteration) read 103 GB/s in L1 on a Zen 4 core where the scalar backend's add, which -O3
   unrolls, moved 128. a[i] = X(i), each vector stored by STORE. */
#define BASE_STORE_LOOP_(X, STORE)                                                                 \
  for (size_t i = 0; i < n; i += 4 * LANES) {                                                      \
    vec x[4];                                                                                      \
    for (int j = 0; j < 4; j++) x[j] = X(i + j * LANES);                                           \
    for (int j = 0; j < 4; j++) STORE(a + i + j * LANES, x[j]);                                    \
  }
#define BASE_TRIAD_(i) add(load(b + (i)), mul(vs, load(c + (i))))
#define BASE_SCALE_(i) mul(vs, load(b + (i)))
#define BASE_FILL_(i) vs

void bench_triad__base(float *restrict a, const float *restrict b, const float *restrict c,
                       size_t n, float s) {
#if defined(__SSE2__) || defined(__aarch64__)
  vec vs = splat(s);
  BASE_STORE_LOOP_(BASE_TRIAD_, store)
#else
  for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
#endif
}

void bench_scale__base(float *restrict a, const float *restrict b, size_t n, float s) {
#if defined(__SSE2__) || defined(__aarch64__)
  vec vs = splat(s);
  BASE_STORE_LOOP_(BASE_SCALE_, store)
#else
  for (size_t i = 0; i < n; i++) a[i] = s * b[i];
#endif
}

void bench_fill__base(float *restrict a, size_t n, float s) {
#if defined(__SSE2__) || defined(__aarch64__)
  vec vs = splat(s);
  BASE_STORE_LOOP_(BASE_FILL_, store)
#else
  for (size_t i = 0; i < n; i++) a[i] = s;
#endif
}

/* Eight vector sums, four per stream, enough independent adds to cover their latency: the
   loads, not the adds, bound it. Only lane 0 of each goes in the result, which just keeps the
   loop live (the data is zero). */
float bench_read__base(const float *a, size_t n) {
  const float *h = a + n / 2;
#if defined(__SSE2__) || defined(__aarch64__)
  vec s[8];
  for (int j = 0; j < 8; j++) s[j] = splat(0);
  for (size_t i = 0; i < n / 2; i += 4 * LANES)
    for (int j = 0; j < 4; j++)
      s[j] = add(s[j], load(a + i + j * LANES)), s[4 + j] = add(s[4 + j], load(h + i + j * LANES));
  float t = 0;
  for (int j = 0; j < 8; j++) t += lane0(s[j]);
  return t;
#else
  float s[2] = {0};
  for (size_t i = 0; i < n / 2; i++) s[0] += a[i], s[1] += h[i];
  return s[0] + s[1];
#endif
}

void bench_triad_nt__base(float *restrict a, const float *restrict b, const float *restrict c,
                          size_t n, float s) {
#if defined(__SSE2__) || defined(__aarch64__)
  vec vs = splat(s);
  BASE_STORE_LOOP_(BASE_TRIAD_, stream)
  fence();
#else
  bench_triad__base(a, b, c, n, s);
#endif
}

void bench_scale_nt__base(float *restrict a, const float *restrict b, size_t n, float s) {
#if defined(__SSE2__) || defined(__aarch64__)
  vec vs = splat(s);
  BASE_STORE_LOOP_(BASE_SCALE_, stream)
  fence();
#else
  bench_scale__base(a, b, n, s);
#endif
}

void bench_fill_nt__base(float *restrict a, size_t n, float s) {
#if defined(__SSE2__) || defined(__aarch64__)
  vec vs = splat(s);
  BASE_STORE_LOOP_(BASE_FILL_, stream)
  fence();
#else
  bench_fill__base(a, n, s);
#endif
}

float bench_read1__base(const float *a, size_t n) {
#if defined(__SSE2__) || defined(__aarch64__)
  vec s[8];
  for (int j = 0; j < 8; j++) s[j] = splat(0);
  for (size_t i = 0; i < n; i += 8 * LANES)
    for (int j = 0; j < 8; j++) s[j] = add(s[j], load(a + i + j * LANES));
  float t = 0;
  for (int j = 0; j < 8; j++) t += lane0(s[j]);
  return t;
#else
  float s = 0;
  for (size_t i = 0; i < n; i++) s += a[i];
  return s;
#endif
}
