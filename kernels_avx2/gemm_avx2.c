/* The AVX2 GEMM: a 6 x 16 register tile (12 accumulators, 2 B vectors, 1 A broadcast: 15 of
 * the 16 ymm registers). */
#include "kernels_avx2/vec_avx2.h"

#include "kernels_avx2/simd_decls.inc"

#define GEMM_MR 6
#define GEMM_NV 2
#include "kernels_avx2/simd_gemm.inc"
