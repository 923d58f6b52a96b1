/* The AVX2 GEMM: a 6 x 16 register tile (12 accumulators, 2 B vectors, 1 A broadcast: 15 of
 * the 16 ymm registers). Blocking as for AVX-512: an A strip (6 x 256 floats) in L1, a 256 x 512
 * B block (512 KiB) in L2. */
#ifndef SIMDGRAD_GEMM_TUNING_AVX2_H
#define SIMDGRAD_GEMM_TUNING_AVX2_H

#define GEMM_MR 6
#define GEMM_NV 2
#define GEMM_KC 256
#define GEMM_MC 1200
#define GEMM_NC 512
/* B read in place where its rows are not a multiple of 4 KiB apart (simd_gemm.inc's
   gemm_b_in_place; measured on Zen 5, docs/kernels.md, "Where a matmul's time goes"). */
#define GEMM_B_IN_PLACE 1
/* The micro-kernel's loop takes 8 k steps a pass (simd_gemm.inc): on the Intel Xeon VM 0.95x the
   time of 256^3-2048^3, 0.93-0.96x of the convolutions. With 4, gcc 12 moved B vectors through the
   stack (15 of the 16 ymm registers are live) and 512^3-1024^3 took 1.05-1.24x. */
#define GEMM_K_UNROLL 8

#endif
