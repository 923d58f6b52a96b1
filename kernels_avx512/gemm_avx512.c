/* The AVX-512 GEMM: a 12 x 32 register tile, 24 accumulators (three times the 8 independent
 * FMA chains that two 4-cycle FMA pipes need) plus 2 B vectors in 26 of the 32 zmm registers;
 * the A values are broadcast straight from memory. Blocking for a 48 KiB L1 and 1 MiB L2: an A
 * strip (12 x 256 floats, 12 KiB) stays in L1 while the B strips stream from a 256 x 512 B
 * block (512 KiB) in L2; up to 1200 rows of A are packed at a time. */
#include "kernels_avx512/vec_avx512.h"

#include "kernels_avx2/simd_decls.inc"

#define GEMM_MR 12
#define GEMM_NV 2
#define GEMM_KC 256
#define GEMM_MC 1200
#define GEMM_NC 512

/* r[i] lane j becomes r[j] lane i: 32-bit then 64-bit interleaves within 128-bit lanes, then two
   rounds of 128-bit lane shuffles. */
static inline void gemm_transpose(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int p = 0; p < 16; p += 2) {
    t[p] = _mm512_unpacklo_ps(r[p], r[p + 1]);
    t[p + 1] = _mm512_unpackhi_ps(r[p], r[p + 1]);
  }
  for (int q = 0; q < 16; q += 4) {
    u[q] = _mm512_shuffle_ps(t[q], t[q + 2], 0x44);
    u[q + 1] = _mm512_shuffle_ps(t[q], t[q + 2], 0xee);
    u[q + 2] = _mm512_shuffle_ps(t[q + 1], t[q + 3], 0x44);
    u[q + 3] = _mm512_shuffle_ps(t[q + 1], t[q + 3], 0xee);
  }
  for (int e = 0; e < 4; e++) {
    __m512 v0 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0x44);
    __m512 v1 = _mm512_shuffle_f32x4(u[e], u[4 + e], 0xee);
    __m512 w0 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0x44);
    __m512 w1 = _mm512_shuffle_f32x4(u[8 + e], u[12 + e], 0xee);
    r[e] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    r[4 + e] = _mm512_shuffle_f32x4(v0, w0, 0xdd);
    r[8 + e] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    r[12 + e] = _mm512_shuffle_f32x4(v1, w1, 0xdd);
  }
}

#include "kernels_avx2/simd_gemm.inc"
