/* The vector vocabulary the ISA-neutral kernel templates (simd_*.inc) are written in, for
 * AVX2 + FMA: 8 floats per vector. Only files compiled with -mavx2 -mfma include this. */
#ifndef SIMDGRAD_VEC_AVX2_H
#define SIMDGRAD_VEC_AVX2_H

#include <immintrin.h>
#include <math.h>
#include <sleef.h>
#include <stddef.h>
#include <stdint.h>

#define VN 8
/* The ISA's suffix on every non-static symbol, and a kernel's full name. */
#define SG_ISA_SYMBOL(name) name##__avx2
#define SG_KERNEL(name) SG_ISA_SYMBOL(sg_f32_##name)

typedef __m256 vf;
typedef __m256 vmask; /* all-ones lanes where true */

static inline vf vset1(float x) { return _mm256_set1_ps(x); }
static inline vf vzero(void) { return _mm256_setzero_ps(); }
static inline vf vloadu(const float *p) { return _mm256_loadu_ps(p); }
static inline void vstoreu(float *p, vf v) { _mm256_storeu_ps(p, v); }
/* vloadu, the value then held in a register: gcc folds a loaded vector into each instruction
   that reads it, one load apiece. tanh_backward reads y in two instructions, and from L2 it took
   0.88x the time with y loaded once. The empty asm costs no instruction. */
static inline vf vloadu_once(const float *p) {
  vf v = _mm256_loadu_ps(p);
  __asm__("" : "+x"(v));
  return v;
}

/* Lanes [0, n) for n < VN; the loads never touch memory past p[n-1] and read 0 elsewhere. */
static inline __m256i vtail_mask_(size_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline vmask vtail_lanes(size_t n) { return _mm256_castsi256_ps(vtail_mask_(n)); }
static inline vf vload_tail(const float *p, size_t n) {
  return _mm256_maskload_ps(p, vtail_mask_(n));
}
static inline void vstore_tail(float *p, vf v, size_t n) {
  _mm256_maskstore_ps(p, vtail_mask_(n), v);
}

/* Non-temporal store (p aligned to VN floats): for outputs far larger than the last-level
   cache, it skips reading the line in first and does not evict the cache. Order the stores
   with vstream_fence() before anyone else reads them. */
static inline void vstream(float *p, vf v) { _mm256_stream_ps(p, v); }
static inline void vstream_fence(void) { _mm_sfence(); }

static inline vf vadd(vf a, vf b) { return _mm256_add_ps(a, b); }
static inline vf vsub(vf a, vf b) { return _mm256_sub_ps(a, b); }
static inline vf vmul(vf a, vf b) { return _mm256_mul_ps(a, b); }
static inline vf vdiv(vf a, vf b) { return _mm256_div_ps(a, b); }
static inline vf vfma(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
/* a * b - c, rounded once. */
static inline vf vfms(vf a, vf b, vf c) { return _mm256_fmsub_ps(a, b, c); }
/* c - a * b, rounded once. */
static inline vf vfnma(vf a, vf b, vf c) { return _mm256_fnmadd_ps(a, b, c); }
/* Integer lanes: the bits of a vector, shifts and masks of them, and table look-ups. */
typedef __m256i vbits_t;
static inline vbits_t vbits(vf a) { return _mm256_castps_si256(a); }
static inline vf vfrom_bits(vbits_t a) { return _mm256_castsi256_ps(a); }
static inline vbits_t vbits_shr(vbits_t a, unsigned k) { return _mm256_srli_epi32(a, (int)k); }
static inline vbits_t vbits_shl(vbits_t a, unsigned k) { return _mm256_slli_epi32(a, (int)k); }
static inline vbits_t vbits_and(vbits_t a, uint32_t m) {
  return _mm256_and_si256(a, _mm256_set1_epi32((int)m));
}
/* t[idx & 15] in each lane, t 64-byte aligned. */
static inline vf vlookup16(const float *t, vbits_t idx) {
  vf lo = _mm256_permutevar8x32_ps(_mm256_load_ps(t), idx);
  vf hi = _mm256_permutevar8x32_ps(_mm256_load_ps(t + 8), idx);
  return _mm256_blendv_ps(lo, hi, _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28)));
}
/* t[idx & 7] in each lane, t 32-byte aligned: one vpermps, which reads only bits 0..2. */
static inline vf vlookup8(const float *t, vbits_t idx) {
  return _mm256_permutevar8x32_ps(_mm256_load_ps(t), idx);
}
/* What simd_math.inc should prefer here (kernels_simd/vocabulary.md, "capabilities"): vlookup16
   is 2 vpermps and a blend, so 8-entry tables with a polynomial one degree higher; vldexp is 9
   integer and float operations, so 2^n built from a float's bits wherever that power is a normal
   float (exp's results that cannot be denormal; every lane of gelu's, its smallest factors being
   stored in the table). */
#define SG_VEC_PREFER_LOOKUP8 1
#define SG_VEC_PREFER_BIT_SCALING 1
/* No vlookup32 here (it would be four vpermps and three blends). */
#define SG_VEC_PREFER_LOOKUP32 0
/* Vector registers the compiler can allocate: how much state a staged loop (simd_unary.inc) can
   keep without spilling. */
#define SG_VEC_REGISTERS 16
/* The deeper staged loops need 32 registers and exp without its branch (simd_unary.inc). */
#define SG_VEC_DEEP_STAGING 0
/* vldexp and vldexp_floor are many operations (no vscalefps): a multiply by a power of 2 is
   cheaper. */
#define SG_VEC_LDEXP_OFF_FMA_PIPES 0
/* The transpose's 8 x 8 tiles issue about twice AVX-512's instructions a cache line of x, so the
   out-of-order window holds half as many of its misses: its buffered strips prefetch the next
   strip of x front to back (simd_transpose.inc; 0.76x the time of [4096, 1024] on an Intel
   Xeon with 64 rows a strip, the median of 8 alternations; with 32 rows 0.94-0.97x there, but
   1.00-1.07x at [16384, 1024]). */
#define SG_VEC_TRANSPOSE_PREFETCH 1
/* The softmax family's exp passes prefetch the next row into L2 (simd_reduce.inc): on an Intel
   Xeon, [4096, 1024] took 0.85x the time of softmax, 0.82x of log_softmax, 0.80x of logsumexp. */
#define SG_VEC_ROW_PREFETCH 1
/* The elementwise kernels' streamed loops prefetch their inputs 2 KiB ahead (simd_decls.inc), a
   prefetch a vector (two a line): on an Intel Xeon, 2^24 floats took 0.74-0.86x the time of
   gelu, 0.86-0.95x of tanh and sigmoid. */
#define SG_VEC_STREAM_PREFETCH 1
/* The costly kernels' own loops prefetch their inputs the same way below the streamed size,
   from 2^12 floats (simd_decls.inc): on an Intel Xeon over 2^18 floats 0.87-0.98x the time, the
   one-stage loops around SLEEF's calls over 2^22 0.52-0.78x. */
#define SG_VEC_COSTLY_PREFETCH 1
/* No narrower vector ISA to hand L2-sized calls to (vec_avx512.h does, to this one). */
#define SG_VEC_NARROW_IN_L2 0
static inline vf vsqrt(vf a) { return _mm256_sqrt_ps(a); }
static inline vf vabs(vf a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
static inline vf vneg(vf a) { return _mm256_xor_ps(_mm256_set1_ps(-0.0f), a); }
/* x86 max/min return the second operand when either is NaN: vmax(a, b) keeps b's NaN. */
static inline vf vmax(vf a, vf b) { return _mm256_max_ps(a, b); }
static inline vf vmin(vf a, vf b) { return _mm256_min_ps(a, b); }
static inline vf vabs_min(vf a, float c) { return vmin(_mm256_set1_ps(c), vabs(a)); }
static inline vf vfloor(vf a) {
  return _mm256_round_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}
static inline vf vceil(vf a) {
  return _mm256_round_ps(a, _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC);
}
static inline vf vround_even(vf a) {
  return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
}
/* sg_cast's conversions between float and int32 lanes: truncation toward zero with x86's
   "integer indefinite" (INT32_MIN) for NaN and every value outside [-2^31, 2^31), and int32 to
   float rounded as the current mode says (to nearest even by default), as C's conversion. */
static inline vbits_t vcvt_trunc_i32(vf a) { return _mm256_cvttps_epi32(a); }
static inline vf vcvt_f32_i32(vbits_t a) { return _mm256_cvtepi32_ps(a); }

static inline vmask vgt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
static inline vmask vge(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_GE_OQ); }
static inline vmask vlt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
static inline vmask vle(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LE_OQ); }
static inline vmask veq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
static inline vmask vneq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_NEQ_UQ); }
static inline vmask visnan(vf a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
static inline vmask vunord(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_UNORD_Q); }
static inline vmask vmask_or(vmask a, vmask b) { return _mm256_or_ps(a, b); }
static inline vmask vmask_and(vmask a, vmask b) { return _mm256_and_ps(a, b); }
static inline int vmask_any(vmask m) { return _mm256_movemask_ps(m) != 0; }
/* Bit k set where lane k is true. */
static inline uint32_t vmask_lanes(vmask m) { return (uint32_t)_mm256_movemask_ps(m); }
/* m ? a : b */
static inline vf vselect(vmask m, vf a, vf b) { return _mm256_blendv_ps(b, a, m); }
/* m ? a : 0 */
static inline vf vand_mask(vmask m, vf a) { return _mm256_and_ps(m, a); }

/* Bytes 0/1 from a mask, and back. */
static inline void vmask_store_bytes(uint8_t *out, vmask m, size_t n) {
  __m256i one = _mm256_and_si256(_mm256_castps_si256(m), _mm256_set1_epi32(1));
  __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(one), _mm256_extracti128_si256(one, 1));
  __m128i b = _mm_packus_epi16(w, w);
  if (n >= VN) {
    _mm_storel_epi64((__m128i *)out, b);
  } else {
    uint8_t tmp[16];
    _mm_storeu_si128((__m128i *)tmp, b);
    for (size_t i = 0; i < n; i++) out[i] = tmp[i];
  }
}
/* Four masks' bytes at once, 4 VN of them: two packs of dwords, one of words and one permute,
   where one mask alone takes three shuffles (the comparisons were bound by them). The packs
   work within 128-bit halves, so the 4-byte groups come out as elements 0-3, 8-11, 16-19,
   24-27, 4-7, ...; the permute puts them in order. */
static inline void vmask_store_bytes4(uint8_t *out, vmask m0, vmask m1, vmask m2, vmask m3) {
  __m256i a = _mm256_packs_epi32(_mm256_castps_si256(m0), _mm256_castps_si256(m1));
  __m256i b = _mm256_packs_epi32(_mm256_castps_si256(m2), _mm256_castps_si256(m3));
  __m256i c = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b),
                                          _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256((__m256i *)(void *)out, _mm256_and_si256(c, _mm256_set1_epi8(1)));
}
static inline vmask vmask_load_bytes(const uint8_t *c, size_t n) {
  __m128i b;
  if (n >= VN) {
    b = _mm_loadl_epi64((const __m128i *)c);
  } else {
    uint8_t tmp[16] = {0};
    for (size_t i = 0; i < n; i++) tmp[i] = c[i];
    b = _mm_loadl_epi64((const __m128i *)tmp);
  }
  __m256i w = _mm256_cvtepu8_epi32(b);
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(w, _mm256_setzero_si256()));
}

/* Transposes the VN x VN block held in r[0..VN): r[k] becomes column k. Moves bits only (any
   pattern, signalling NaN included, comes out unchanged). 8 x 8: pairs of rows interleaved,
   then quadruples, then the 128-bit halves swapped. */
static inline void vtranspose(vf r[VN]) {
  vf t[8], s[8];
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);     /* a0 b0 a1 b1 | a4 b4 a5 b5 */
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]); /* a2 b2 a3 b3 | a6 b6 a7 b7 */
  }
  for (int k = 0; k < 8; k += 4) {
    s[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);         /* a0 b0 c0 d0 | a4 .. */
    s[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);     /* a1 b1 c1 d1 | a5 .. */
    s[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44); /* a2 .. | a6 .. */
    s[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE); /* a3 .. | a7 .. */
  }
  for (int k = 0; k < 4; k++) {
    r[k] = _mm256_permute2f128_ps(s[k], s[k + 4], 0x20);
    r[k + 4] = _mm256_permute2f128_ps(s[k], s[k + 4], 0x31);
  }
}

/* Horizontal reductions. */
static inline float vhsum(vf v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
static inline float vhmax(vf v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
static inline float vhmin(vf v) {
  __m128 s = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_min_ps(s, _mm_movehl_ps(s, s));
  s = _mm_min_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

/* x * 2^n for n integral (a float), n in [-160, 129]: two exact power-of-two factors (each
   a normal float) so that the product rounds once, also into the denormals or to inf. */
static inline vf vldexp(vf x, vf n) {
  __m256i ni = _mm256_cvtps_epi32(n);
  __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  __m256i bias = _mm256_set1_epi32(127);
  vf s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  vf s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(x, s1), s2);
}
/* x * 2^floor(n). */
static inline vf vldexp_floor(vf x, vf n) {
  return vldexp(x, _mm256_round_ps(n, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC));
}

/* 32-bit integer lanes for counter-based hashing (simd_dropout.inc). */
static inline vbits_t vbits_set1(uint32_t x) { return _mm256_set1_epi32((int)x); }
static inline vbits_t vbits_iota(void) { return _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7); }
static inline vbits_t vbits_add(vbits_t a, vbits_t b) { return _mm256_add_epi32(a, b); }
static inline vbits_t vbits_mul(vbits_t a, vbits_t b) { return _mm256_mullo_epi32(a, b); }
static inline vbits_t vbits_xor(vbits_t a, vbits_t b) { return _mm256_xor_si256(a, b); }
static inline vbits_t vbits_max_u32(vbits_t a, vbits_t b) { return _mm256_max_epu32(a, b); }
/* a >= b as unsigned: AVX2 has no unsigned compare, but max(a, b) == a says it. */
static inline vmask vbits_ge_u32(vbits_t a, vbits_t b) {
  return _mm256_castsi256_ps(_mm256_cmpeq_epi32(vbits_max_u32(a, b), a));
}
/* a > b as signed: one instruction where the unsigned test takes two. */
static inline vmask vbits_gt_s32(vbits_t a, vbits_t b) {
  return _mm256_castsi256_ps(_mm256_cmpgt_epi32(a, b));
}

/* SLEEF, 1.0 ULP class (u10), where simd_math.inc has nothing faster. */
static inline vf vlog(vf a) { return Sleef_logf8_u10avx2(a); }
static inline vf vlog1p(vf a) { return Sleef_log1pf8_u10avx2(a); }
static inline vf vsin(vf a) { return Sleef_sinf8_u10avx2(a); }
static inline vf vcos(vf a) { return Sleef_cosf8_u10avx2(a); }
static inline vf vpow(vf a, vf b) { return Sleef_powf8_u10avx2(a, b); }

#include "kernels_simd/simd_math.inc" /* vexp, vexpm1, vtanh, vgelu, vgelu_grad */

#endif
