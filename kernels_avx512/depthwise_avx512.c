/* The avx512 instantiation of the depthwise convolution template. */
#include "kernels_avx512/vec_avx512.h"

#include "kernels_avx2/simd_depthwise.inc"
