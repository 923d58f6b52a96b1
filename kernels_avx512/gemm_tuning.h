/* The AVX-512 GEMM: a 6 x 64 register tile, 24 accumulators (three times the 8 independent FMA
 * chains that two 4-cycle FMA pipes need) plus 4 B vectors in 28 of the 32 zmm registers; the A
 * values are broadcast straight from memory. Per k step 4 B loads and 6 broadcasts feed 24 FMAs,
 * where the 12 x 32 tile it replaced needed 2 and 12 (14 loads), and read from 6 rows of an
 * unpacked A, not 12 (gcc kept 12 row offsets only by spilling them). On the Zen 4 VM
 * (double-pumped AVX-512) it took 3.5% off 256^3, 3.8% off 128^3, 2% off 64^3 and 2.7% off
 * 1024^3 (docs/kernels.md, "Where a matmul's time goes"). A convolution's products (gemm_taps)
 * use the same tile: it was their own before, for the same reasons (3-13% faster on a 3x3,
 * 64-channel convolution than 12 x 32). Blocking for a 32-48 KiB L1 and 1 MiB L2: an A strip
 * (6 x 512 floats, 12 KiB) stays in L1 while the B strips stream from a 512 x 256 B block
 * (512 KiB) in L2 (256 x 512 before: the longer slice halves the passes over C, and 512^3 took
 * 2.36 against 2.39 ms, 1024^3 19.56 against 19.72, medians of 4 alternated runs); up to 1200
 * rows of a transposed A are packed at a time. */
#ifndef SIMDGRAD_GEMM_TUNING_AVX512_H
#define SIMDGRAD_GEMM_TUNING_AVX512_H

#define GEMM_MR 6
#define GEMM_NV 4
#define GEMM_KC 512
#define GEMM_MC 1200
#define GEMM_NC 256
/* B read in place where its rows are not a multiple of 4 KiB apart (simd_gemm.inc's
   gemm_b_in_place; measured on Zen 5, docs/kernels.md, "Where a matmul's time goes"). */
#define GEMM_B_IN_PLACE 1
/* The micro-kernel's loop takes 4 k steps a pass (simd_gemm.inc): on the Intel Xeon VM 0.94-0.96x
   the time of 128^3-2048^3 and 0.95x of the 3x3 convolution; 2 did as well, 8 less at 1024. */
#define GEMM_K_UNROLL 4

#endif
