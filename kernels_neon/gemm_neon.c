/* The NEON GEMM: a 12 x 8 register tile (24 accumulators, 2 B vectors and one A value at a
 * time: 27 of AArch64's 32 vector registers; the template's tiles are at most 2 vectors wide).
 * gcc turns the template's FMA with a broadcast a[r] into FMLA by element (the instruction
 * vfmaq_laneq_f32 emits), so no broadcast is ever materialised; CMakeLists.txt keeps gcc from
 * hoisting the 12 A loads into extra registers. Blocking for a 32-64 KiB L1 and a 0.5-1 MiB
 * L2: KC x NR of B is 8 KiB, MC x KC of A 240 KiB, KC x NC of B 2 MiB. */
#include "kernels_neon/vec_neon.h"

#include "kernels_avx2/simd_decls.inc"

#define GEMM_MR 12
#define GEMM_NV 2
#define GEMM_KC 256
#define GEMM_MC 240
#define GEMM_NC 2048

/* (a.lo, b.lo) and (a.hi, b.hi), in 64-bit halves. */
static inline vf gemm_lo64(vf a, vf b) {
  return vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(a), vreinterpretq_f64_f32(b)));
}
static inline vf gemm_hi64(vf a, vf b) {
  return vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(a), vreinterpretq_f64_f32(b)));
}

/* r[i] lane j becomes r[j] lane i: 32-bit transposes of row pairs, then 64-bit ones. */
static inline void gemm_transpose(vf r[VN]) {
  vf t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
  vf t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
  r[0] = gemm_lo64(t0, t2);
  r[1] = gemm_lo64(t1, t3);
  r[2] = gemm_hi64(t0, t2);
  r[3] = gemm_hi64(t1, t3);
}

#include "kernels_avx2/simd_gemm.inc"
