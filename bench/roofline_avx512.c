/* The roofline loops with AVX-512 (see roofline_isa.h); compiled with -mavx512f -mfma. */
#include <immintrin.h>

#include "roofline_isa.h"

#define ACC 16 /* of the 32 zmm registers: twice the 2 pipes x latency 4 */

double bench_fma_loop__avx512(int64_t iters, float c, float b, float *sink) {
  __m512 acc[ACC], vc = _mm512_set1_ps(c), vb = _mm512_set1_ps(b);
  for (int j = 0; j < ACC; j++) acc[j] = _mm512_set1_ps(1.0f + (float)j);
  for (int64_t i = 0; i < iters; i++)
    for (int j = 0; j < ACC; j++) acc[j] = _mm512_fmadd_ps(acc[j], vc, vb);
  float s = 0;
  for (int j = 0; j < ACC; j++) s += _mm512_cvtss_f32(acc[j]);
  *sink = s;
  return 2.0 * 16 * ACC * (double)iters;
}

/* 10 FMA chains (latency 4 on 2 pipes needs 8; the 10 addition chains fill the rest of the
   cycle) and 10 addition chains (latency 3 on 2 pipes: 6): all of them in registers. */
double bench_issue_loop__avx512(int64_t iters, float c, float b, float *sink) {
  __m512 f[10], a[10], vc = _mm512_set1_ps(c), vb = _mm512_set1_ps(b);
  for (int j = 0; j < 10; j++) f[j] = _mm512_set1_ps(1.0f + (float)j);
  for (int j = 0; j < 10; j++) a[j] = _mm512_set1_ps(2.0f + (float)j);
  for (int64_t i = 0; i < iters; i++) {
    for (int j = 0; j < 10; j++) f[j] = _mm512_fmadd_ps(f[j], vc, vb);
    for (int j = 0; j < 10; j++) a[j] = _mm512_add_ps(a[j], vb);
  }
  float s = 0;
  for (int j = 0; j < 10; j++) s += _mm512_cvtss_f32(f[j]);
  for (int j = 0; j < 10; j++) s += _mm512_cvtss_f32(a[j]);
  *sink = s;
  return (10 + 10) * (double)iters;
}

/* 12 chains of a = b / a: a divider's latency (11-15 cycles) over its throughput (3-10). */
double bench_div_loop__avx512(int64_t iters, float c, float b, float *sink) {
  __m512 a[12], vb = _mm512_set1_ps(b);
  for (int j = 0; j < 12; j++) a[j] = _mm512_set1_ps(c + (float)j);
  for (int64_t i = 0; i < iters; i++)
    for (int j = 0; j < 12; j++) a[j] = _mm512_div_ps(vb, a[j]);
  float s = 0;
  for (int j = 0; j < 12; j++) s += _mm512_cvtss_f32(a[j]);
  *sink = s;
  return 12 * (double)iters;
}

void bench_triad__avx512(float *restrict a, const float *restrict b, const float *restrict c,
                         size_t n, float s) {
  __m512 vs = _mm512_set1_ps(s);
  for (size_t i = 0; i < n; i += 32) {
    __m512 x0 = _mm512_add_ps(_mm512_load_ps(b + i), _mm512_mul_ps(vs, _mm512_load_ps(c + i)));
    __m512 x1 =
        _mm512_add_ps(_mm512_load_ps(b + i + 16), _mm512_mul_ps(vs, _mm512_load_ps(c + i + 16)));
    _mm512_store_ps(a + i, x0);
    _mm512_store_ps(a + i + 16, x1);
  }
}

float bench_read__avx512(const float *a, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  const float *h = a + n / 2;
  for (size_t i = 0; i < n / 2; i += 32) {
    s0 = _mm512_add_ps(s0, _mm512_load_ps(a + i));
    s1 = _mm512_add_ps(s1, _mm512_load_ps(a + i + 16));
    s2 = _mm512_add_ps(s2, _mm512_load_ps(h + i));
    s3 = _mm512_add_ps(s3, _mm512_load_ps(h + i + 16));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

void bench_triad_nt__avx512(float *restrict a, const float *restrict b, const float *restrict c,
                            size_t n, float s) {
  __m512 vs = _mm512_set1_ps(s);
  for (size_t i = 0; i < n; i += 32) {
    __m512 x0 = _mm512_add_ps(_mm512_load_ps(b + i), _mm512_mul_ps(vs, _mm512_load_ps(c + i)));
    __m512 x1 =
        _mm512_add_ps(_mm512_load_ps(b + i + 16), _mm512_mul_ps(vs, _mm512_load_ps(c + i + 16)));
    _mm512_stream_ps(a + i, x0);
    _mm512_stream_ps(a + i + 16, x1);
  }
  _mm_sfence();
}

float bench_read1__avx512(const float *a, size_t n) {
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
  for (size_t i = 0; i < n; i += 64) {
    s0 = _mm512_add_ps(s0, _mm512_load_ps(a + i));
    s1 = _mm512_add_ps(s1, _mm512_load_ps(a + i + 16));
    s2 = _mm512_add_ps(s2, _mm512_load_ps(a + i + 32));
    s3 = _mm512_add_ps(s3, _mm512_load_ps(a + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}
