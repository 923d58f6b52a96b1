/* The neon instantiation of the depthwise convolution template. */
#include "kernels_neon/vec_neon.h"

#include "kernels_avx2/simd_depthwise.inc"
