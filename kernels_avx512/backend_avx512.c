/* The avx512 backend table: the slots this ISA vectorises, over the table below it. */
#include "kernels_avx512/vec_avx512.h"

#include "kernels_avx2/simd_decls.inc"
#include "kernels_avx2/simd_decls_nn.inc"

/* simd_dropout.inc: this ISA has the integer lanes its hash needs. */
void SG_KERNEL(dropout)(const float *x, float *y, size_t n, uint64_t offset, uint64_t seed,
                        uint64_t threshold, float scale);

void sg_backend_fill__avx512(sg_backend *b);

void sg_backend_fill__avx512(sg_backend *b) {
#include "kernels_avx2/simd_fill.inc"
#include "kernels_avx2/simd_fill_nn.inc"
  b->dropout = SG_KERNEL(dropout);
}
