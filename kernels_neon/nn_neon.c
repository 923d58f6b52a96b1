/* The neon instantiation of the neural-net kernel template. */
#include "kernels_neon/vec_neon.h"

#include "kernels_avx2/simd_nn.inc"
