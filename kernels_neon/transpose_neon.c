/* The neon instantiation of the ISA-neutral transpose template. */
#include "kernels_neon/vec_neon.h"

#include "kernels_avx2/simd_decls.inc"

#include "kernels_avx2/simd_transpose.inc"
