/* The avx512 instantiation of the scatter-add template (the backward of gather). */
#include "kernels_avx512/vec_avx512.h"

#include "kernels_avx2/simd_decls.inc"

#include "kernels_avx2/simd_scatter.inc"
