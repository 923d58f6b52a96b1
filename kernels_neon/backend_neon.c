/* The neon backend table: the slots this ISA vectorises, over the scalar table. */
#include "kernels_neon/vec_neon.h"

#include "kernels_avx2/simd_decls.inc"
#include "kernels_avx2/simd_decls_nn.inc"

void sg_backend_fill__neon(sg_backend *b);

void sg_backend_fill__neon(sg_backend *b) {
#include "kernels_avx2/simd_fill.inc"
#include "kernels_avx2/simd_fill_nn.inc"
}
