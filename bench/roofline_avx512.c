/* The roofline loops with AVX-512 (see roofline_isa.h); compiled with -mavx512f -mavx512dq
   -mfma. */
#include <immintrin.h>

#include "roofline_isa.h"

#define ACC 16 /* of the 32 zmm registers: twice the 2 pipes x latency 4 */

double bench_fma_loop__avx512(int64_t iters, float c, float b, float *sink) {
  __m512 acc[ACC], vc = _mm512_set1_ps(c), vb = _mm512_set1_ps(b);
  for (int j = 0; j < ACC; j++) acc[j] = _mm512_set1_ps(1.0f + (float)j);
  for (int64_t i = 0; i < iters; i++)
    for (int j = 0; j < ACC; j++) acc[j] = _mm512_fmadd_ps(acc[j], vc, vb);
  float s = 0;
  for (int j = 0; j < ACC; j++) s += _mm512_cvtss_f32(acc[j]);
  *sink = s;
  return 2.0 * 16 * ACC * (double)iters;
}

/* 10 FMA chains (latency 4 on 2 pipes needs 8; the 10 addition chains fill the rest of the
   cycle) and 10 addition chains (latency 3 on 2 pipes: 6): all of them in registers. */
double bench_issue_loop__avx512(int64_t iters, float c, float b, float *sink) {
  __m512 f[10], a[10], vc = _mm512_set1_ps(c), vb = _mm512_set1_ps(b);
  for (int j = 0; j < 10; j++) f[j] = _mm512_set1_ps(1.0f + (float)j);
  for (int j = 0; j < 10; j++) a[j] = _mm512_set1_ps(2.0f + (float)j);
  for (int64_t i = 0; i < iters; i++) {
    for (int j = 0; j < 10; j++) f[j] = _mm512_fmadd_ps(f[j], vc, vb);
    for (int j = 0; j < 10; j++) a[j] = _mm512_add_ps(a[j], vb);
  }
  float s = 0;
  for (int j = 0; j < 10; j++) s += _mm512_cvtss_f32(f[j]);
  for (int j = 0; j < 10; j++) s += _mm512_cvtss_f32(a[j]);
  *sink = s;
  return (10 + 10) * (double)iters;
}

/* The probes' machinery (bench/roofline_probes.inc) over AVX-512's 32 zmm registers: 24 chains
   of a class for its issue probe. */
#define RP_FN(name) name##__avx512
#define RP_V __m512
#define RP_VI __m512i
#define RP_W 16
#define RP_KEEP_REG "+v"
#define RP_SET1 _mm512_set1_ps
#define RP_SET1_I _mm512_set1_epi32
#define RP_ADD _mm512_add_ps
#define RP_MUL _mm512_mul_ps
#define RP_FMA _mm512_fmadd_ps
#define RP_CVTSS _mm512_cvtss_f32
#define RP_LOAD _mm512_load_ps
#define RP_STORE _mm512_store_ps
#define RP_STREAM _mm512_stream_ps
#define RP_HSUM _mm512_reduce_add_ps
#define N_ 24
/* clang-format off */
#define EACH_(S, A) \
  S(A, 0) S(A, 1) S(A, 2) S(A, 3) S(A, 4) S(A, 5) S(A, 6) S(A, 7) \
  S(A, 8) S(A, 9) S(A, 10) S(A, 11) S(A, 12) S(A, 13) S(A, 14) S(A, 15) \
  S(A, 16) S(A, 17) S(A, 18) S(A, 19) S(A, 20) S(A, 21) S(A, 22) S(A, 23)
/* clang-format on */
#include "roofline_probes.inc"

#define I_(x) _mm512_castps_si512(x)
#define F_(x) _mm512_castsi512_ps(x)
/* FMAs and multiplies (by 1, v1) alternating; additions and subtractions; max and min */
#define FMA_(x, j) ((j)&1 ? _mm512_mul_ps(x, v1) : _mm512_fmadd_ps(x, vc, vb))
#define FADD_(x, j) ((j)&1 ? _mm512_sub_ps(x, vb) : _mm512_add_ps(x, vb))
#define MINMAX_(x, j) ((j)&1 ? _mm512_min_ps(x, v1) : _mm512_max_ps(x, vb))
/* vpermps with an index known only at run time (a constant one may become another shuffle) */
#define SHUFFLE_(x, j) _mm512_permutexvar_ps(idx, x)
#define SHIFT_(x, j) F_((j)&1 ? _mm512_srli_epi32(I_(x), 1) : _mm512_slli_epi32(I_(x), 1))
/* and, or, xor, integer addition: the integer vector ALU */
#define LOGIC_(x, j)                                                                               \
  ((j) % 4 == 0   ? _mm512_and_ps(x, vc)                                                           \
   : (j) % 4 == 1 ? _mm512_or_ps(x, vb)                                                            \
   : (j) % 4 == 2 ? _mm512_xor_ps(x, vb)                                                           \
                  : F_(_mm512_add_epi32(I_(x), idx)))
/* float -> int32 -> float: two conversions a round */
#define CVT_(x, j) _mm512_cvtepi32_ps(_mm512_cvtps_epi32(x))
#define DIV_(x, j) _mm512_div_ps(vb, x)
#define SQRT_(x, j) _mm512_sqrt_ps(x)
PROBE(fma, 1, FMA_)
PROBE(fadd, 1, FADD_)
PROBE(minmax, 1, MINMAX_)
PROBE(shuffle, 1, SHUFFLE_)
PROBE(shift, 1, SHIFT_)
PROBE(logic, 1, LOGIC_)
PROBE(cvt, 2, CVT_)
PROBE(div, 1, DIV_)
PROBE(sqrt, 1, SQRT_)
/* the compare writes a mask register, kept alive; the value is the operand itself */
#define FCMP_(x, j)                                                                                \
  __extension__({                                                                                  \
    __asm__ volatile("" : : "k"(_mm512_cmp_ps_mask(x, vb, _CMP_LT_OQ)));                           \
    x;                                                                                             \
  })
/* a mask known only at run time */
#define BLEND_(x, j) _mm512_mask_blend_ps(_mm512_cmp_ps_mask(vb, v1, _CMP_LT_OQ), x, vb)
#define ROUND_(x, j) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* multiplies by 2^(0 at run time) */
#define SCALEF_(x, j) _mm512_scalef_ps(x, _mm512_sub_ps(vb, vb))
PROBE(fcmp, 1, FCMP_)
PROBE(blend, 1, BLEND_)
PROBE(round, 1, ROUND_)
PROBE(scalef, 1, SCALEF_)

/* vpternlogd (the exclusive or of three): on Zen 4 it takes an FMA pipe, unlike vpxord */
#define TERNLOG_(x, j) F_(_mm512_ternarylogic_epi32(I_(x), I_(vb), I_(vc), 0x96))
PROBE(ternlog, 1, TERNLOG_)

/* The pair probes (roofline_isa.h, PAIR in roofline_probes.inc): 16 FMAs beside 4 of the class a
   round, 4 to one; 32 beside one division or square root (twice 16). */
#define PF_ 16
/* clang-format off */
#define EACHF_(S, A) \
  S(A, 0) S(A, 1) S(A, 2) S(A, 3) S(A, 4) S(A, 5) S(A, 6) S(A, 7) \
  S(A, 8) S(A, 9) S(A, 10) S(A, 11) S(A, 12) S(A, 13) S(A, 14) S(A, 15)
#define EACH4_(S, A) S(A, 0) S(A, 1) S(A, 2) S(A, 3)
#define EACH1_(S, A) S(A, 0)
/* clang-format on */
PAIR(fma, EACHF_, PF_, 1, EACH4_, 4, 1, FMA_)
PAIR(fadd, EACHF_, PF_, 1, EACH4_, 4, 1, FADD_)
PAIR(minmax, EACHF_, PF_, 1, EACH4_, 4, 1, MINMAX_)
PAIR(fcmp, EACHF_, PF_, 1, EACH4_, 4, 1, FCMP_)
PAIR(blend, EACHF_, PF_, 1, EACH4_, 4, 1, BLEND_)
PAIR(shuffle, EACHF_, PF_, 1, EACH4_, 4, 1, SHUFFLE_)
PAIR(shift, EACHF_, PF_, 1, EACH4_, 4, 1, SHIFT_)
PAIR(logic, EACHF_, PF_, 1, EACH4_, 4, 1, LOGIC_)
PAIR(cvt, EACHF_, PF_, 1, EACH4_, 4, 2, CVT_)
PAIR(round, EACHF_, PF_, 1, EACH4_, 4, 1, ROUND_)
PAIR(scalef, EACHF_, PF_, 1, EACH4_, 4, 1, SCALEF_)
PAIR(div, EACHF_, PF_, 2, EACH1_, 1, 1, DIV_)
PAIR(sqrt, EACHF_, PF_, 2, EACH1_, 1, 1, SQRT_)
PAIR(ternlog, EACHF_, PF_, 1, EACH4_, 4, 1, TERNLOG_)

PAIR_RATIO_FUNCTION

/* The mix probes (roofline_mix_table.inc): every class's issue-probe instruction, but one
   conversion (int32 to float) where the cvt probe runs two. */
#define RP_ISA "avx512"
#define CVT1_(x, j) _mm512_cvtepi32_ps(_mm512_castps_si512(x))
#define MIX_OPS_(X) MIX_OPS_COMMON_(X) X(scalef, SCALEF_) X(ternlog, TERNLOG_)
#include "roofline_mix_table.inc"

/* The combined rate's second mix: FMAs, additions and integer logic in independent chains
   (10, 8 and 6 of them). */
#define MIX_(x, j)                                                                                 \
  ((j) < 10 ? _mm512_fmadd_ps(x, vc, vb) : (j) < 18 ? _mm512_add_ps(x, vb) : _mm512_xor_ps(x, vb))
PROBE(mix, 1, MIX_)

/* The GEMM tile's k step with this ISA's tile (roofline_probes.inc). */
#include "kernels_avx512/gemm_tuning.h"
GEMM_MIX_PROBE_
