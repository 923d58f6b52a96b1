/* The NEON GEMM: a 12 x 8 register tile (24 accumulators, 2 B vectors and the A values: 27 to
 * 31 of AArch64's 32 vector registers; MR = 3 VN, so the template packs A in 4-row blocks).
 * gcc turns the template's FMA with a broadcast a[r] into FMLA by element (the instruction
 * vfmaq_laneq_f32 emits) on a scalar load, pairing those loads (LDP S), so no broadcast is ever
 * materialised: one k step of the packed tile is 24 FMLA, 7 loads and 6 other instructions
 * (docs/kernels.md). Blocking for a 32-64 KiB L1 and a 0.5-1 MiB L2: KC x NR of B is 8 KiB,
 * MC x KC of A 240 KiB, KC x NC of B 2 MiB. */
#ifndef SIMDGRAD_GEMM_TUNING_NEON_H
#define SIMDGRAD_GEMM_TUNING_NEON_H

#define GEMM_MR 12
#define GEMM_NV 2
#define GEMM_KC 256
#define GEMM_MC 240
#define GEMM_NC 2048
/* gcc 12 leaves loops this long rolled until after scalar replacement, and the 24 accumulators
   then live in memory, stored on every k step (simd_gemm.inc). */
#define GEMM_UNROLL _Pragma("GCC unroll 16")

#endif
