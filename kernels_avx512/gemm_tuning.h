/* The AVX-512 GEMM: a 12 x 32 register tile, 24 accumulators (three times the 8 independent
 * FMA chains that two 4-cycle FMA pipes need) plus 2 B vectors in 26 of the 32 zmm registers;
 * the A values are broadcast straight from memory. Blocking for a 48 KiB L1 and 1 MiB L2: an A
 * strip (12 x 256 floats, 12 KiB) stays in L1 while the B strips stream from a 256 x 512 B
 * block (512 KiB) in L2; up to 1200 rows of A are packed at a time. */
#ifndef SIMDGRAD_GEMM_TUNING_AVX512_H
#define SIMDGRAD_GEMM_TUNING_AVX512_H

#define GEMM_MR 12
#define GEMM_NV 2
#define GEMM_KC 256
#define GEMM_MC 1200
#define GEMM_NC 512
/* A convolution's products read A unpacked, a row stride apart: 6 rows x 64 columns (24
   accumulators, 4 B vectors) needs 6 row addresses and 10 loads per 24 FMAs, where the 12 x 32
   tile needs 12 and 14 (measured 3-13% faster on a 3x3, 64-channel convolution). */
#define GEMM_TAPS_MR 6
#define GEMM_TAPS_NV 4

#endif
