/* The avx2 instantiation of the depthwise convolution template. */
#include "kernels_avx2/vec_avx2.h"

#include "kernels_avx2/simd_depthwise.inc"
