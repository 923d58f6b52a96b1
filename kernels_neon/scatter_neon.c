/* The neon instantiation of the scatter-add template (the backward of gather). */
#include "kernels_neon/vec_neon.h"

#include "kernels_avx2/simd_decls.inc"

#include "kernels_avx2/simd_scatter.inc"
