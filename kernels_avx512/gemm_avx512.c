/* The AVX-512 GEMM: an 8 x 32 register tile (16 accumulators: enough independent FMA chains
 * for two 4-cycle FMA pipes, leaving the upper zmm registers for B and A). */
#include "kernels_avx512/vec_avx512.h"

#include "kernels_avx2/simd_decls.inc"

#define GEMM_MR 8
#define GEMM_NV 2
#include "kernels_avx2/simd_gemm.inc"
