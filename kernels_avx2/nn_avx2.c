/* The avx2 instantiation of the neural-net kernel template. */
#include "kernels_avx2/vec_avx2.h"

#include "kernels_avx2/simd_nn.inc"
