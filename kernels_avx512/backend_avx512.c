/* The avx512 backend table: the slots this ISA vectorises, over the table below it. */
#include "kernels_avx512/vec_avx512.h"

#include "kernels_avx2/simd_decls.inc"
#include "kernels_avx2/simd_decls_nn.inc"

void sg_backend_fill__avx512(sg_backend *b);

void sg_backend_fill__avx512(sg_backend *b) {
#include "kernels_avx2/simd_fill.inc"
#include "kernels_avx2/simd_fill_nn.inc"
}
