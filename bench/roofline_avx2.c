/* The roofline loops with AVX2 and FMA (see roofline_isa.h); compiled with -mavx2 -mfma. */
#include <immintrin.h>

#include "roofline_isa.h"

#define ACC 12 /* of the 16 ymm registers; 2 FMA pipes x latency 4-5 need 8-10 */

double bench_fma_loop__avx2(int64_t iters, float c, float b, float *sink) {
  __m256 acc[ACC], vc = _mm256_set1_ps(c), vb = _mm256_set1_ps(b);
  for (int j = 0; j < ACC; j++) acc[j] = _mm256_set1_ps(1.0f + (float)j);
  for (int64_t i = 0; i < iters; i++)
    for (int j = 0; j < ACC; j++) acc[j] = _mm256_fmadd_ps(acc[j], vc, vb);
  float s = 0;
  for (int j = 0; j < ACC; j++) s += _mm256_cvtss_f32(acc[j]);
  *sink = s;
  return 2.0 * 8 * ACC * (double)iters;
}

/* 8 FMA chains (latency 4 on 2 pipes) and 6 addition chains (latency 3 on 2 pipes), with the
   two constants the 16 ymm registers. On Zen 4 it reaches ~3.3 instructions per cycle (11-13
   x 10^9 per second, busy machine), 7 and 7 the same. */
double bench_issue_loop__avx2(int64_t iters, float c, float b, float *sink) {
  __m256 f[8], a[6], vc = _mm256_set1_ps(c), vb = _mm256_set1_ps(b);
  for (int j = 0; j < 8; j++) f[j] = _mm256_set1_ps(1.0f + (float)j);
  for (int j = 0; j < 6; j++) a[j] = _mm256_set1_ps(2.0f + (float)j);
  for (int64_t i = 0; i < iters; i++) {
    for (int j = 0; j < 8; j++) f[j] = _mm256_fmadd_ps(f[j], vc, vb);
    for (int j = 0; j < 6; j++) a[j] = _mm256_add_ps(a[j], vb);
  }
  float s = 0;
  for (int j = 0; j < 8; j++) s += _mm256_cvtss_f32(f[j]);
  for (int j = 0; j < 6; j++) s += _mm256_cvtss_f32(a[j]);
  *sink = s;
  return (8 + 6) * (double)iters;
}

/* The probes' machinery (bench/roofline_probes.inc) over AVX2's 16 ymm registers: 12 chains of
   a class for its issue probe. */
#define RP_FN(name) name##__avx2
#define RP_V __m256
#define RP_VI __m256i
#define RP_W 8
#define RP_KEEP_REG "+x"
#define RP_SET1 _mm256_set1_ps
#define RP_SET1_I _mm256_set1_epi32
#define RP_ADD _mm256_add_ps
#define RP_MUL _mm256_mul_ps
#define RP_FMA _mm256_fmadd_ps
#define RP_CVTSS _mm256_cvtss_f32
#define RP_LOAD _mm256_load_ps
#define RP_STORE _mm256_store_ps
#define RP_STREAM _mm256_stream_ps
static inline float hsum_(__m256 v) {
  float lanes[8];
  _mm256_storeu_ps(lanes, v);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
}
#define RP_HSUM hsum_
#define N_ 12
/* clang-format off */
#define EACH_(S, A) \
  S(A, 0) S(A, 1) S(A, 2) S(A, 3) S(A, 4) S(A, 5) S(A, 6) S(A, 7) \
  S(A, 8) S(A, 9) S(A, 10) S(A, 11)
/* clang-format on */
#include "roofline_probes.inc"

#define I_(x) _mm256_castps_si256(x)
#define F_(x) _mm256_castsi256_ps(x)
/* FMAs and multiplies (by 1, v1) alternating; additions and subtractions; max and min */
#define FMA_(x, j) ((j)&1 ? _mm256_mul_ps(x, v1) : _mm256_fmadd_ps(x, vc, vb))
#define FADD_(x, j) ((j)&1 ? _mm256_sub_ps(x, vb) : _mm256_add_ps(x, vb))
#define MINMAX_(x, j) ((j)&1 ? _mm256_min_ps(x, v1) : _mm256_max_ps(x, vb))
/* vpermps with an index known only at run time (a constant one may become another shuffle) */
#define SHUFFLE_(x, j) _mm256_permutevar8x32_ps(x, idx)
#define SHIFT_(x, j) F_((j)&1 ? _mm256_srli_epi32(I_(x), 1) : _mm256_slli_epi32(I_(x), 1))
/* and, or, xor, integer addition: the integer vector ALU */
#define LOGIC_(x, j)                                                                               \
  ((j) % 4 == 0   ? _mm256_and_ps(x, vc)                                                           \
   : (j) % 4 == 1 ? _mm256_or_ps(x, vb)                                                            \
   : (j) % 4 == 2 ? _mm256_xor_ps(x, vb)                                                           \
                  : F_(_mm256_add_epi32(I_(x), idx)))
/* float -> int32 -> float: two conversions a round */
#define CVT_(x, j) _mm256_cvtepi32_ps(_mm256_cvtps_epi32(x))
#define DIV_(x, j) _mm256_div_ps(vb, x)
#define SQRT_(x, j) _mm256_sqrt_ps(x)
PROBE(fma, 1, FMA_)
PROBE(fadd, 1, FADD_)
PROBE(minmax, 1, MINMAX_)
PROBE(shuffle, 1, SHUFFLE_)
PROBE(shift, 1, SHIFT_)
PROBE(logic, 1, LOGIC_)
PROBE(cvt, 2, CVT_)
PROBE(div, 1, DIV_)
PROBE(sqrt, 1, SQRT_)
/* the compare's result is a vector here (all ones or zero) */
#define FCMP_(x, j) _mm256_cmp_ps(x, vb, _CMP_LT_OQ)
/* a mask known only at run time (a constant one may become vblendps) */
#define BLEND_(x, j) _mm256_blendv_ps(x, vb, _mm256_sub_ps(vb, v1))
#define ROUND_(x, j) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
PROBE(fcmp, 1, FCMP_)
PROBE(blend, 1, BLEND_)
PROBE(round, 1, ROUND_)

/* The pair probes (roofline_isa.h, PAIR in roofline_probes.inc): 8 FMAs beside 2 of the class a
   round, 4 to one; 36 beside one division or square root (EACH12_, three times), so that the
   divider, not the FMA pipes, is what the division waits for. */
/* clang-format off */
#define EACH8_(S, A) S(A, 0) S(A, 1) S(A, 2) S(A, 3) S(A, 4) S(A, 5) S(A, 6) S(A, 7)
#define EACH12_(S, A) EACH8_(S, A) S(A, 8) S(A, 9) S(A, 10) S(A, 11)
#define EACH2_(S, A) S(A, 0) S(A, 1)
#define EACH1_(S, A) S(A, 0)
/* clang-format on */
PAIR(fma, EACH8_, 8, 1, EACH2_, 2, 1, FMA_)
PAIR(fadd, EACH8_, 8, 1, EACH2_, 2, 1, FADD_)
PAIR(minmax, EACH8_, 8, 1, EACH2_, 2, 1, MINMAX_)
PAIR(fcmp, EACH8_, 8, 1, EACH2_, 2, 1, FCMP_)
PAIR(blend, EACH8_, 8, 1, EACH2_, 2, 1, BLEND_)
PAIR(shuffle, EACH8_, 8, 1, EACH2_, 2, 1, SHUFFLE_)
PAIR(shift, EACH8_, 8, 1, EACH2_, 2, 1, SHIFT_)
PAIR(logic, EACH8_, 8, 1, EACH2_, 2, 1, LOGIC_)
PAIR(cvt, EACH8_, 8, 2, EACH2_, 2, 2, CVT_)
PAIR(round, EACH8_, 8, 1, EACH2_, 2, 1, ROUND_)
PAIR(div, EACH12_, 12, 3, EACH1_, 1, 1, DIV_)
PAIR(sqrt, EACH12_, 12, 3, EACH1_, 1, 1, SQRT_)
/* no vscalefps, no vpternlogd: no rate, no pair */
ABSENT(scalef)
ABSENT(ternlog)
PAIR_RATIO_FUNCTION

/* The mix probes (roofline_mix_table.inc): every class's issue-probe instruction, but one
   conversion (int32 to float) where the cvt probe runs two. */
#define RP_ISA "avx2"
#define CVT1_(x, j) _mm256_cvtepi32_ps(_mm256_castps_si256(x))
#define MIX_OPS_(X) MIX_OPS_COMMON_(X)
#include "roofline_mix_table.inc"

/* The combined rate's second mix: FMAs, additions and integer logic in independent chains
   (5, 4 and 3 of them). */
#define MIX_(x, j)                                                                                 \
  ((j) < 5 ? _mm256_fmadd_ps(x, vc, vb) : (j) < 9 ? _mm256_add_ps(x, vb) : _mm256_xor_ps(x, vb))
PROBE(mix, 1, MIX_)

/* The GEMM tile's k step with this ISA's tile (roofline_probes.inc). */
#include "kernels_avx2/gemm_tuning.h"
GEMM_MIX_PROBE_
