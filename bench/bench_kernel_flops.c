/* FLOPs per element the SIMD kernels of the polynomial functions execute, for the FLOP/s and
 * roofline counters (bench_kernel_flops in bench.h).
 *
 * The FMA peak the roofline measures is 2 FLOPs per lane per FMA on the FMA pipes. A polynomial
 * kernel also runs additions, min/max, permutes, scalef and integer work, which some CPUs issue
 * to other pipes (AMD Zen 4: two FADD pipes besides the two FMA pipes), so a nominal count
 * ("exp is 20 FLOPs") can exceed what the FMA pipes bound: exp/avx512 read 112% of the peak.
 * What must run on the FMA pipes on every x86 and Arm core is the FMAs and the multiplies, so
 * each counts 2 here (one FMA-pipe slot), per lane, and nothing else counts: flops / peak is then
 * a lower bound on the kernel's time. The counts are read off the ISA-neutral templates
 * (kernels_simd/simd_math.inc, simd_unary.inc, simd_reduce.inc), the same for AVX2, AVX-512 and
 * NEON; the scalar backend calls libm, whose count is unknown, and keeps the nominal figures of
 * bench_opinfo.c.
 *
 * Kept apart from bench_opinfo.c for now (a shared op-info table is being built there): fold it
 * in when that lands. Recount when a template changes. */
#include <string.h>

#include "bench.h"

typedef struct kernel_flops {
  const char *slot;
  double fma_pipe; /* FMA-pipe slots per lane: FMAs + multiplies */
} kernel_flops;

/* vexp: 6 FMAs (y, r twice, q's two, t + t q), 2 multiplies (r^2, k / 16). */
#define EXP 8
static const kernel_flops k_kernels[] = {
    {"exp", EXP},
    {"exp_backward", 1},           /* dy y */
    {"tanh", EXP + 7},             /* a^2, 4 FMAs, p s, the small branch's FMA; vexp */
    {"tanh_backward", 2},          /* dy (1 - y)(1 + y) */
    {"sigmoid", EXP + 2},          /* vexp, q nd_lo, the last FMA */
    {"sigmoid_backward", 2},       /* dy y (1 - y) */
    {"gelu", 19 + 3},              /* vphi_parts_ (19), a G, its low part, the rounding FMA */
    {"gelu_backward", 19 + 2 + 1}, /* vphi_parts_, q, t, dy times it */
    /* row_exp_store (vexp) and row_scale (a multiply); the max pass has none */
    {"softmax", EXP + 1},
    {"softmax_backward", 2}, /* y (dy - s): a multiply; the dot product dy y: an FMA */
};

double bench_kernel_flops(const char *slot, const char *backend) {
  if (backend && strcmp(backend, "scalar") != 0)
    for (size_t k = 0; k < sizeof k_kernels / sizeof k_kernels[0]; k++)
      if (strcmp(k_kernels[k].slot, slot) == 0) return 2.0 * k_kernels[k].fma_pipe;
  return bench_op_flops(slot);
}
