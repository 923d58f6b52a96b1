/* The vector vocabulary of the ISA-neutral kernel templates for AVX-512 (F, BW, DQ, VL): 16
 * floats per vector, masks in k registers. Only files compiled with the AVX-512 flags include
 * this. */
#ifndef SIMDGRAD_VEC_AVX512_H
#define SIMDGRAD_VEC_AVX512_H

#include <immintrin.h>
#include <math.h>
#include <sleef.h>
#include <stddef.h>
#include <stdint.h>

#define VN 16
/* The ISA's suffix on every non-static symbol, and a kernel's full name. */
#define SG_ISA_SYMBOL(name) name##__avx512
#define SG_KERNEL(name) SG_ISA_SYMBOL(sg_f32_##name)

typedef __m512 vf;
typedef __mmask16 vmask;

static inline vf vset1(float x) { return _mm512_set1_ps(x); }
static inline vf vzero(void) { return _mm512_setzero_ps(); }
static inline vf vloadu(const float *p) { return _mm512_loadu_ps(p); }
static inline void vstoreu(float *p, vf v) { _mm512_storeu_ps(p, v); }
/* vloadu: held in a register (vec_avx2.h), tanh_, sigmoid_ and elu_backward from L2 took
   0.98-1.06x the time with their third load a vector gone, and relu_backward lost its load into
   the zeroing mask's move, one instruction more a vector. */
static inline vf vloadu_once(const float *p) { return _mm512_loadu_ps(p); }

static inline __mmask16 vtail_mask_(size_t n) { return (__mmask16)((1u << n) - 1u); }
static inline vmask vtail_lanes(size_t n) { return vtail_mask_(n); }
static inline vf vload_tail(const float *p, size_t n) {
  return _mm512_maskz_loadu_ps(vtail_mask_(n), p);
}
static inline void vstore_tail(float *p, vf v, size_t n) {
  _mm512_mask_storeu_ps(p, vtail_mask_(n), v);
}

/* Non-temporal store (p aligned to VN floats): for outputs far larger than the last-level
   cache, it skips reading the line in first and does not evict the cache. Order the stores
   with vstream_fence() before anyone else reads them. */
static inline void vstream(float *p, vf v) { _mm512_stream_ps(p, v); }
static inline void vstream_fence(void) { _mm_sfence(); }

static inline vf vadd(vf a, vf b) { return _mm512_add_ps(a, b); }
static inline vf vsub(vf a, vf b) { return _mm512_sub_ps(a, b); }
static inline vf vmul(vf a, vf b) { return _mm512_mul_ps(a, b); }
static inline vf vdiv(vf a, vf b) { return _mm512_div_ps(a, b); }
static inline vf vfma(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
/* a * b - c, rounded once. */
static inline vf vfms(vf a, vf b, vf c) { return _mm512_fmsub_ps(a, b, c); }
/* c - a * b, rounded once. */
static inline vf vfnma(vf a, vf b, vf c) { return _mm512_fnmadd_ps(a, b, c); }
/* Integer lanes: the bits of a vector, shifts and masks of them, and table look-ups. */
typedef __m512i vbits_t;
static inline vbits_t vbits(vf a) { return _mm512_castps_si512(a); }
static inline vf vfrom_bits(vbits_t a) { return _mm512_castsi512_ps(a); }
static inline vbits_t vbits_shr(vbits_t a, unsigned k) { return _mm512_srli_epi32(a, k); }
static inline vbits_t vbits_shl(vbits_t a, unsigned k) { return _mm512_slli_epi32(a, k); }
static inline vbits_t vbits_and(vbits_t a, uint32_t m) {
  return _mm512_and_si512(a, _mm512_set1_epi32((int)m));
}
/* t[idx & 15] in each lane, t 64-byte aligned. */
static inline vf vlookup16(const float *t, vbits_t idx) {
  return _mm512_permutexvar_ps(idx, _mm512_load_ps(t));
}
/* t[idx & 7] in each lane, t 32-byte aligned: the 8 entries in both halves, so that vpermps's
   4-bit index picks t[idx & 7]. */
static inline vf vlookup8(const float *t, vbits_t idx) {
  return _mm512_permutexvar_ps(idx, _mm512_broadcast_f32x8(_mm256_load_ps(t)));
}
/* t[idx & 31] in each lane, t 64-byte aligned: one vpermt2ps over the table's two halves (it
   overwrites one of its registers, so gcc copies a half held in a register first: a register
   move, which took no pipe on the Intel Xeon measured; docs/kernels.md, "Twenty-third
   landing"). */
static inline vf vlookup32(const float *t, vbits_t idx) {
  return _mm512_permutex2var_ps(_mm512_load_ps(t), idx, _mm512_load_ps(t + 16));
}
/* vlookup16 is one vpermps and vldexp one vscalefps: simd_math.inc keeps its 16-entry tables
   and vldexp (kernels_simd/vocabulary.md, "capabilities"); vlookup32 costs what vlookup16 does,
   so gelu's G takes 32 intervals and a polynomial one degree lower. */
#define SG_VEC_PREFER_LOOKUP8 0
#define SG_VEC_PREFER_BIT_SCALING 0
#define SG_VEC_PREFER_LOOKUP32 1
/* Vector registers the compiler can allocate: how much state a staged loop (simd_unary.inc) can
   keep without spilling. */
#define SG_VEC_REGISTERS 32
/* More vectors in flight for the long-chain unary loops (simd_unary.inc): measured faster on Zen
   5, whose full-width pipes issue a vector's chain in half Zen 4's cycles. */
#define SG_VEC_DEEP_STAGING 1
/* vldexp and vldexp_floor are one vscalefps, which takes none of the FMA pipes' slots: where
   those pipes bind, simd_math.inc scales by it rather than multiply by a power of 2. */
#define SG_VEC_LDEXP_OFF_FMA_PIPES 1
/* The transpose's 16 x 16 tiles keep enough misses in flight on their own where a strip's rows
   are few enough for the hardware prefetcher (simd_transpose.inc): with 32 rows a strip,
   prefetching the next one took 1.03-1.05x the time of [4096, 1024] and 1.11-1.12x of
   [16384, 1024] on an Intel Xeon. */
#define SG_VEC_TRANSPOSE_PREFETCH 0
/* The softmax family's exp passes prefetch the next row into L2 (simd_reduce.inc): on an Intel
   Xeon, [4096, 1024] took 0.93x the time of softmax, 0.80x of log_softmax, 0.65x of logsumexp. */
#define SG_VEC_ROW_PREFETCH 1
/* The elementwise kernels' streamed loops prefetch their inputs 2 KiB ahead (simd_decls.inc): on
   an Intel Xeon, 2^24 floats took 0.61-0.66x the time of gelu, 0.91-0.98x of tanh and sigmoid. */
#define SG_VEC_STREAM_PREFETCH 1
/* The costly kernels' own loops prefetch their inputs the same way below the streamed size,
   from 2^12 floats (simd_decls.inc): on an Intel Xeon over 2^18 floats 0.84-0.94x the time. */
#define SG_VEC_COSTLY_PREFETCH 1
/* The elementwise kernels that read two arrays and write one with arithmetic alone hand their
   calls from SG_NARROW_MIN floats up to the streamed size to AVX2's (simd_decls.inc): on an Intel
   Xeon AVX2's 32-byte loads and stores moved that data from L2 faster, 0.92-0.96x the time at
   2^14 and 2^16 floats, where in L1 (2^10) AVX-512's took 0.60-0.75x AVX2's. Every CPU this backend
   runs on has AVX2 (the engine checks the flags of kernels_avx512/CMakeLists.txt, -mavx2 among
   them), and the kernels are the same operations, so the same bits. */
#define SG_VEC_NARROW_IN_L2 1
#define SG_NARROW_KERNEL(name) sg_f32_##name##__avx2
static inline vf vsqrt(vf a) { return _mm512_sqrt_ps(a); }
static inline vf vabs(vf a) { return _mm512_abs_ps(a); }
static inline vf vneg(vf a) {
  return _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32((int)0x80000000u)));
}
/* Like x86's scalar max/min: the second operand when either is NaN. */
static inline vf vmax(vf a, vf b) { return _mm512_max_ps(a, b); }
static inline vf vmin(vf a, vf b) { return _mm512_min_ps(a, b); }
/* min(|a|, c), one VRANGEPS (imm 0b1010: the smaller magnitude, sign cleared) where vmin(vabs)
   is two operations. A quiet NaN a gives c: VRANGEPS returns the other operand. */
static inline vf vabs_min(vf a, float c) { return _mm512_range_ps(a, _mm512_set1_ps(c), 0x0a); }
static inline vf vfloor(vf a) {
  return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}
static inline vf vceil(vf a) {
  return _mm512_roundscale_ps(a, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
}
static inline vf vround_even(vf a) {
  return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* sg_cast's conversions between float and int32 lanes: truncation toward zero with x86's
   "integer indefinite" (INT32_MIN) for NaN and every value outside [-2^31, 2^31), and int32 to
   float rounded as the current mode says (to nearest even by default), as C's conversion. */
static inline vbits_t vcvt_trunc_i32(vf a) { return _mm512_cvttps_epi32(a); }
static inline vf vcvt_f32_i32(vbits_t a) { return _mm512_cvtepi32_ps(a); }

static inline vmask vgt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
static inline vmask vge(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_GE_OQ); }
static inline vmask vlt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
static inline vmask vle(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LE_OQ); }
static inline vmask veq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
static inline vmask vneq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_NEQ_UQ); }
static inline vmask visnan(vf a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
static inline vmask vunord(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q); }
static inline vmask vmask_or(vmask a, vmask b) { return (vmask)(a | b); }
static inline vmask vmask_and(vmask a, vmask b) { return (vmask)(a & b); }
static inline int vmask_any(vmask m) { return m != 0; }
/* Bit k set where lane k is true. */
static inline uint32_t vmask_lanes(vmask m) { return (uint32_t)m; }
static inline vf vselect(vmask m, vf a, vf b) { return _mm512_mask_blend_ps(m, b, a); }
static inline vf vand_mask(vmask m, vf a) { return _mm512_maskz_mov_ps(m, a); }

static inline void vmask_store_bytes(uint8_t *out, vmask m, size_t n) {
  __m128i b = _mm_maskz_set1_epi8(m, 1);
  _mm_mask_storeu_epi8(out, n >= VN ? (__mmask16)0xffff : vtail_mask_(n), b);
}
/* Four masks' bytes at once, 4 VN of them: the masks joined into one of 64 bits, one store. */
static inline void vmask_store_bytes4(uint8_t *out, vmask m0, vmask m1, vmask m2, vmask m3) {
  __mmask64 k = _mm512_kunpackd(_mm512_kunpackw(m3, m2), _mm512_kunpackw(m1, m0));
  _mm512_storeu_si512((void *)out, _mm512_maskz_set1_epi8(k, 1));
}
static inline vmask vmask_load_bytes(const uint8_t *c, size_t n) {
  __m128i b = _mm_maskz_loadu_epi8(n >= VN ? (__mmask16)0xffff : vtail_mask_(n), c);
  return _mm_test_epi8_mask(b, b);
}

/* Transposes the VN x VN block held in r[0..VN): r[k] becomes column k. Moves bits only (any
   pattern, signalling NaN included, comes out unchanged). 16 x 16: pairs of rows interleaved,
   then quadruples within each 128-bit lane, then the lanes gathered in two steps. */
static inline void vtranspose(vf r[VN]) {
  vf t[16], u[16];
  for (int k = 0; k < 16; k += 2) {
    t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);     /* a0 b0 a1 b1 | a4 b4 a5 b5 | .. */
    t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]); /* a2 b2 a3 b3 | a6 b6 a7 b7 | .. */
  }
  for (int k = 0; k < 16; k += 4) {
    u[k] = _mm512_shuffle_ps(t[k], t[k + 2], 0x44);         /* a0 b0 c0 d0 | a4 .. | a8 .. */
    u[k + 1] = _mm512_shuffle_ps(t[k], t[k + 2], 0xEE);     /* a1 b1 c1 d1 | a5 .. */
    u[k + 2] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0x44); /* a2 .. */
    u[k + 3] = _mm512_shuffle_ps(t[k + 1], t[k + 3], 0xEE); /* a3 .. */
  }
  /* u[c + 4 q] holds columns c, c + 4, c + 8, c + 12 of rows 4q..4q+3, one per 128-bit lane. */
  for (int c = 0; c < 4; c++) {
    vf v0 = _mm512_shuffle_f32x4(u[c], u[c + 4], 0x88); /* lanes 0, 2 of each: c, c+8 */
    vf v1 = _mm512_shuffle_f32x4(u[c], u[c + 4], 0xDD); /* lanes 1, 3: c+4, c+12 */
    vf v2 = _mm512_shuffle_f32x4(u[c + 8], u[c + 12], 0x88);
    vf v3 = _mm512_shuffle_f32x4(u[c + 8], u[c + 12], 0xDD);
    r[c] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    r[c + 8] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
    r[c + 4] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    r[c + 12] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
  }
}

static inline float vhsum(vf v) { return _mm512_reduce_add_ps(v); }
static inline float vhmax(vf v) { return _mm512_reduce_max_ps(v); }
static inline float vhmin(vf v) { return _mm512_reduce_min_ps(v); }

/* x * 2^n for n integral (a float): vscalefps rounds once, into the denormals or to inf. */
static inline vf vldexp(vf x, vf n) { return _mm512_scalef_ps(x, n); }
/* x * 2^floor(n). */
static inline vf vldexp_floor(vf x, vf n) {
  return _mm512_scalef_ps(x, n); /* scalef takes floor(n) itself */
}

/* 32-bit integer lanes for counter-based hashing (simd_dropout.inc). */
static inline vbits_t vbits_set1(uint32_t x) { return _mm512_set1_epi32((int)x); }
static inline vbits_t vbits_iota(void) {
  return _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
static inline vbits_t vbits_add(vbits_t a, vbits_t b) { return _mm512_add_epi32(a, b); }
static inline vbits_t vbits_mul(vbits_t a, vbits_t b) { return _mm512_mullo_epi32(a, b); }
static inline vbits_t vbits_xor(vbits_t a, vbits_t b) { return _mm512_xor_si512(a, b); }
static inline vbits_t vbits_max_u32(vbits_t a, vbits_t b) { return _mm512_max_epu32(a, b); }
static inline vmask vbits_ge_u32(vbits_t a, vbits_t b) {
  return _mm512_cmp_epu32_mask(a, b, _MM_CMPINT_NLT);
}
static inline vmask vbits_gt_s32(vbits_t a, vbits_t b) { return _mm512_cmpgt_epi32_mask(a, b); }

/* SLEEF, 1.0 ULP class (u10), where simd_math.inc has nothing faster. */
static inline vf vlog(vf a) { return Sleef_logf16_u10avx512f(a); }
static inline vf vlog1p(vf a) { return Sleef_log1pf16_u10avx512f(a); }
static inline vf vsin(vf a) { return Sleef_sinf16_u10avx512f(a); }
static inline vf vcos(vf a) { return Sleef_cosf16_u10avx512f(a); }
static inline vf vpow(vf a, vf b) { return Sleef_powf16_u10avx512f(a, b); }

#include "kernels_simd/simd_math.inc" /* vexp, vexpm1, vtanh, vgelu, vgelu_grad */

#endif
