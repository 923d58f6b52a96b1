/* The avx2 instantiation of the scatter-add template (the backward of gather). */
#include "kernels_avx2/vec_avx2.h"

#include "kernels_avx2/simd_decls.inc"

#include "kernels_avx2/simd_scatter.inc"
