/* The avx2 instantiation of the ISA-neutral transpose template. */
#include "kernels_avx2/vec_avx2.h"

#include "kernels_avx2/simd_decls.inc"

#include "kernels_avx2/simd_transpose.inc"
