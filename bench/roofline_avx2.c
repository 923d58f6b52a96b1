/* The roofline loops with AVX2 and FMA (see roofline_isa.h); compiled with -mavx2 -mfma. */
#include <immintrin.h>

#include "roofline_isa.h"

#define ACC 12 /* of the 16 ymm registers; 2 FMA pipes x latency 4-5 need 8-10 */

double bench_fma_loop__avx2(int64_t iters, float c, float b, float *sink) {
  __m256 acc[ACC], vc = _mm256_set1_ps(c), vb = _mm256_set1_ps(b);
  for (int j = 0; j < ACC; j++) acc[j] = _mm256_set1_ps(1.0f + (float)j);
  for (int64_t i = 0; i < iters; i++)
    for (int j = 0; j < ACC; j++) acc[j] = _mm256_fmadd_ps(acc[j], vc, vb);
  float s = 0;
  for (int j = 0; j < ACC; j++) s += _mm256_cvtss_f32(acc[j]);
  *sink = s;
  return 2.0 * 8 * ACC * (double)iters;
}

/* 8 FMA chains (latency 4 on 2 pipes) and 6 addition chains (latency 3 on 2 pipes), with the
   two constants the 16 ymm registers. On Zen 4 it reaches ~3.3 instructions per cycle (11-13
   x 10^9 per second, busy machine), 7 and 7 the same. */
double bench_issue_loop__avx2(int64_t iters, float c, float b, float *sink) {
  __m256 f[8], a[6], vc = _mm256_set1_ps(c), vb = _mm256_set1_ps(b);
  for (int j = 0; j < 8; j++) f[j] = _mm256_set1_ps(1.0f + (float)j);
  for (int j = 0; j < 6; j++) a[j] = _mm256_set1_ps(2.0f + (float)j);
  for (int64_t i = 0; i < iters; i++) {
    for (int j = 0; j < 8; j++) f[j] = _mm256_fmadd_ps(f[j], vc, vb);
    for (int j = 0; j < 6; j++) a[j] = _mm256_add_ps(a[j], vb);
  }
  float s = 0;
  for (int j = 0; j < 8; j++) s += _mm256_cvtss_f32(f[j]);
  for (int j = 0; j < 6; j++) s += _mm256_cvtss_f32(a[j]);
  *sink = s;
  return (8 + 6) * (double)iters;
}

/* 8 chains of a = b / a: a divider's latency (11-15 cycles) over its throughput (3-10). */
double bench_div_loop__avx2(int64_t iters, float c, float b, float *sink) {
  __m256 a[8], vb = _mm256_set1_ps(b);
  for (int j = 0; j < 8; j++) a[j] = _mm256_set1_ps(c + (float)j);
  for (int64_t i = 0; i < iters; i++)
    for (int j = 0; j < 8; j++) a[j] = _mm256_div_ps(vb, a[j]);
  float s = 0;
  for (int j = 0; j < 8; j++) s += _mm256_cvtss_f32(a[j]);
  *sink = s;
  return 8 * (double)iters;
}

void bench_triad__avx2(float *restrict a, const float *restrict b, const float *restrict c,
                       size_t n, float s) {
  __m256 vs = _mm256_set1_ps(s);
  for (size_t i = 0; i < n; i += 16) {
    __m256 x0 = _mm256_add_ps(_mm256_load_ps(b + i), _mm256_mul_ps(vs, _mm256_load_ps(c + i)));
    __m256 x1 =
        _mm256_add_ps(_mm256_load_ps(b + i + 8), _mm256_mul_ps(vs, _mm256_load_ps(c + i + 8)));
    _mm256_store_ps(a + i, x0);
    _mm256_store_ps(a + i + 8, x1);
  }
}

float bench_read__avx2(const float *a, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  const float *h = a + n / 2;
  for (size_t i = 0; i < n / 2; i += 16) {
    s0 = _mm256_add_ps(s0, _mm256_load_ps(a + i));
    s1 = _mm256_add_ps(s1, _mm256_load_ps(a + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_load_ps(h + i));
    s3 = _mm256_add_ps(s3, _mm256_load_ps(h + i + 8));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
}

void bench_triad_nt__avx2(float *restrict a, const float *restrict b, const float *restrict c,
                          size_t n, float s) {
  __m256 vs = _mm256_set1_ps(s);
  for (size_t i = 0; i < n; i += 16) {
    __m256 x0 = _mm256_add_ps(_mm256_load_ps(b + i), _mm256_mul_ps(vs, _mm256_load_ps(c + i)));
    __m256 x1 =
        _mm256_add_ps(_mm256_load_ps(b + i + 8), _mm256_mul_ps(vs, _mm256_load_ps(c + i + 8)));
    _mm256_stream_ps(a + i, x0);
    _mm256_stream_ps(a + i + 8, x1);
  }
  _mm_sfence();
}

float bench_read1__avx2(const float *a, size_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = 0; i < n; i += 32) {
    s0 = _mm256_add_ps(s0, _mm256_load_ps(a + i));
    s1 = _mm256_add_ps(s1, _mm256_load_ps(a + i + 8));
    s2 = _mm256_add_ps(s2, _mm256_load_ps(a + i + 16));
    s3 = _mm256_add_ps(s3, _mm256_load_ps(a + i + 24));
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
}
