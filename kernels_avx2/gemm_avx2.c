/* The AVX2 GEMM: a 6 x 16 register tile (12 accumulators, 2 B vectors, 1 A broadcast: 15 of
 * the 16 ymm registers). Blocking as for AVX-512: an A strip (6 x 256 floats) in L1, a 256 x 512
 * B block (512 KiB) in L2. */
#include "kernels_avx2/vec_avx2.h"

#include "kernels_avx2/simd_decls.inc"

#define GEMM_MR 6
#define GEMM_NV 2
#define GEMM_KC 256
#define GEMM_MC 1200
#define GEMM_NC 512

/* r[i] lane j becomes r[j] lane i: 32-bit then 64-bit interleaves within 128-bit lanes, then a
   128-bit lane exchange. */
static inline void gemm_transpose(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int p = 0; p < 8; p += 2) {
    t[p] = _mm256_unpacklo_ps(r[p], r[p + 1]);
    t[p + 1] = _mm256_unpackhi_ps(r[p], r[p + 1]);
  }
  for (int q = 0; q < 8; q += 4) {
    u[q] = _mm256_shuffle_ps(t[q], t[q + 2], 0x44);
    u[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], 0xee);
    u[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0x44);
    u[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0xee);
  }
  for (int e = 0; e < 4; e++) {
    r[e] = _mm256_permute2f128_ps(u[e], u[4 + e], 0x20);
    r[4 + e] = _mm256_permute2f128_ps(u[e], u[4 + e], 0x31);
  }
}

#include "kernels_avx2/simd_gemm.inc"
