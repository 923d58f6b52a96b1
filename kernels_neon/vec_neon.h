/* The vector vocabulary the ISA-neutral kernel templates (kernels_simd/simd_*.inc) are written
 * in, for AArch64 Advanced SIMD (NEON): 4 floats per vector, masks as all-ones uint32 lanes.
 * Only the neon instances of the templates include this. NEON is part of the AArch64 baseline, so
 * no flags. */
#ifndef SIMDGRAD_VEC_NEON_H
#define SIMDGRAD_VEC_NEON_H

#include <arm_neon.h>
#include <math.h>
#include <sleef.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define VN 4
/* The ISA's suffix on every non-static symbol, and a kernel's full name. */
#define SG_ISA_SYMBOL(name) name##__neon
#define SG_KERNEL(name) SG_ISA_SYMBOL(sg_f32_##name)

typedef float32x4_t vf;
typedef uint32x4_t vmask; /* all-ones lanes where true */

static inline vf vset1(float x) { return vdupq_n_f32(x); }
static inline vf vzero(void) { return vdupq_n_f32(0.0f); }
static inline vf vloadu(const float *p) { return vld1q_f32(p); }
static inline void vstoreu(float *p, vf v) { vst1q_f32(p, v); }
/* vloadu (vec_avx2.h says why x86 needs its own): NEON's arithmetic reads no memory operand. */
static inline vf vloadu_once(const float *p) { return vld1q_f32(p); }

/* Lanes [0, n) for n < VN. NEON has no masked load or store, so the tails go lane by lane
   (a 64-bit pair and single lanes): nothing past p[n-1] is read or written, other lanes are 0. */
static inline vmask vtail_lanes(size_t n) {
  static const uint32_t idx[4] = {0, 1, 2, 3};
  return vcltq_u32(vld1q_u32(idx), vdupq_n_u32((uint32_t)n));
}
static inline vf vload_tail(const float *p, size_t n) {
  switch (n) {
  case 1:
    return vld1q_lane_f32(p, vzero(), 0);
  case 2:
    return vcombine_f32(vld1_f32(p), vdup_n_f32(0.0f));
  case 3:
    return vld1q_lane_f32(p + 2, vcombine_f32(vld1_f32(p), vdup_n_f32(0.0f)), 2);
  default:
    return vzero();
  }
}
static inline void vstore_tail(float *p, vf v, size_t n) {
  switch (n) {
  case 1:
    vst1q_lane_f32(p, v, 0);
    break;
  case 2:
    vst1_f32(p, vget_low_f32(v));
    break;
  case 3:
    vst1_f32(p, vget_low_f32(v));
    vst1q_lane_f32(p + 2, v, 2);
    break;
  default:
    break;
  }
}

/* Non-temporal store in the x86 backends. AArch64's STNP stores register pairs and gcc 12 has
   no intrinsic for it, so this is a plain store (and the fence nothing): same results, only
   without the cache hint. */
static inline void vstream(float *p, vf v) { vst1q_f32(p, v); }
static inline void vstream_fence(void) {}

static inline vf vadd(vf a, vf b) { return vaddq_f32(a, b); }
static inline vf vsub(vf a, vf b) { return vsubq_f32(a, b); }
static inline vf vmul(vf a, vf b) { return vmulq_f32(a, b); }
static inline vf vdiv(vf a, vf b) { return vdivq_f32(a, b); }
/* a * b + c, fused (vfmaq_f32 takes the addend first). */
static inline vf vfma(vf a, vf b, vf c) { return vfmaq_f32(c, a, b); }
/* a * b - c, rounded once. */
static inline vf vfms(vf a, vf b, vf c) { return vfmaq_f32(vnegq_f32(c), a, b); }
/* c - a * b, rounded once. */
static inline vf vfnma(vf a, vf b, vf c) { return vfmsq_f32(c, a, b); }
/* Integer lanes: the bits of a vector, shifts and masks of them, and table look-ups. */
typedef uint32x4_t vbits_t;
static inline vbits_t vbits(vf a) { return vreinterpretq_u32_f32(a); }
static inline vf vfrom_bits(vbits_t a) { return vreinterpretq_f32_u32(a); }
static inline vbits_t vbits_shr(vbits_t a, unsigned k) {
  return vshlq_u32(a, vdupq_n_s32(-(int)k));
}
static inline vbits_t vbits_shl(vbits_t a, unsigned k) { return vshlq_u32(a, vdupq_n_s32((int)k)); }
static inline vbits_t vbits_and(vbits_t a, uint32_t m) { return vandq_u32(a, vdupq_n_u32(m)); }
/* t[idx & 15] in each lane, t 64-byte aligned: TBL over the table's 64 bytes, with the byte
   indices 4 (idx & 15) + 0..3 of each lane. One LD1 of four registers: as four loads gcc 12
   copies them into the consecutive registers TBL needs, and spills (vexp: 73 instructions per
   two vectors instead of 61). */
static inline vf vlookup16(const float *t, vbits_t idx) {
  const uint8_t *b = (const uint8_t *)t;
  uint8x16x4_t tab = vld1q_u8_x4(b);
  uint32x4_t at = vmulq_n_u32(vandq_u32(idx, vdupq_n_u32(15)), 0x04040404u);
  at = vaddq_u32(at, vdupq_n_u32(0x03020100u));
  return vreinterpretq_f32_u8(vqtbl4q_u8(tab, vreinterpretq_u8_u32(at)));
}
/* t[idx & 7] in each lane: TBL over the table's 32 bytes, as vlookup16. */
static inline vf vlookup8(const float *t, vbits_t idx) {
  uint8x16x2_t tab = vld1q_u8_x2((const uint8_t *)t);
  uint32x4_t at = vmulq_n_u32(vandq_u32(idx, vdupq_n_u32(7)), 0x04040404u);
  at = vaddq_u32(at, vdupq_n_u32(0x03020100u));
  return vreinterpretq_f32_u8(vqtbl2q_u8(tab, vreinterpretq_u8_u32(at)));
}
/* Not measured on NEON (no hardware here): simd_math.inc keeps the forms it had, 16-entry tables
   and vldexp, although both are several instructions here too (kernels_simd/vocabulary.md,
   "capabilities"). */
#define SG_VEC_PREFER_LOOKUP8 0
#define SG_VEC_PREFER_BIT_SCALING 0
/* No vlookup32 here: a TBL over four registers and a TBX over four more each time, against one
   TBL for vlookup16. */
#define SG_VEC_PREFER_LOOKUP32 0
/* Vector registers the compiler can allocate: how much state a staged loop (simd_unary.inc) can
   keep without spilling. */
#define SG_VEC_REGISTERS 32
/* Not measured on NEON: its deeper staged loops would issue 8-11% more instructions (register
   moves), so it keeps the shallower ones. */
#define SG_VEC_DEEP_STAGING 0
/* vldexp and vldexp_floor take a conversion, integer steps and two multiplies: more FMA-pipe
   work than the one multiply by a power of 2 they would replace. */
#define SG_VEC_LDEXP_OFF_FMA_PIPES 0
/* Not measured on NEON: the transpose keeps its form without prefetches. */
#define SG_VEC_TRANSPOSE_PREFETCH 0
/* Not measured on NEON: the softmax family's rows go without prefetches. */
#define SG_VEC_ROW_PREFETCH 0
/* Not measured on NEON: the elementwise kernels' streamed loops go without prefetches. */
#define SG_VEC_STREAM_PREFETCH 0
/* Not measured on NEON: nor do the costly kernels' own loops below the streamed size. */
#define SG_VEC_COSTLY_PREFETCH 0
/* NEON has one vector width: no narrower kernels to hand L2-sized calls to. */
#define SG_VEC_NARROW_IN_L2 0
static inline vf vsqrt(vf a) { return vsqrtq_f32(a); }
static inline vf vabs(vf a) { return vabsq_f32(a); }
static inline vf vneg(vf a) { return vnegq_f32(a); }
/* FMAX/FMIN give NaN when either operand is NaN, where x86 gives the second operand. The
   templates only rely on what both share: a NaN in the second operand comes out (the clamps
   in simd_math.inc); elsewhere NaN is guarded by visnan (relu, clip, maximum, the max/min
   reductions, pooling) or feeds a NaN-propagating sum. */
static inline vf vmax(vf a, vf b) { return vmaxq_f32(a, b); }
static inline vf vmin(vf a, vf b) { return vminq_f32(a, b); }
static inline vf vabs_min(vf a, float c) { return vminq_f32(vdupq_n_f32(c), vabsq_f32(a)); }
static inline vf vfloor(vf a) { return vrndmq_f32(a); }
static inline vf vceil(vf a) { return vrndpq_f32(a); }
static inline vf vround_even(vf a) { return vrndnq_f32(a); }
/* sg_cast's conversions between float and int32 lanes: truncation toward zero with x86's
   "integer indefinite" (INT32_MIN) for NaN and every value outside [-2^31, 2^31), and int32 to
   float rounded as the current mode says (to nearest even by default), as C's conversion.
   FCVTZS saturates instead (and gives 0 for NaN): lanes outside the range take INT32_MIN. */
static inline vbits_t vcvt_trunc_i32(vf a) {
  uint32x4_t in = vandq_u32(vcgeq_f32(a, vdupq_n_f32(-2147483648.0f)),
                            vcltq_f32(a, vdupq_n_f32(2147483648.0f)));
  return vbslq_u32(in, vreinterpretq_u32_s32(vcvtq_s32_f32(a)), vdupq_n_u32(0x80000000u));
}
static inline vf vcvt_f32_i32(vbits_t a) { return vcvtq_f32_s32(vreinterpretq_s32_u32(a)); }

/* Ordered comparisons (false on NaN); vneq is unordered-or-unequal, as x86's NEQ_UQ. */
static inline vmask vgt(vf a, vf b) { return vcgtq_f32(a, b); }
static inline vmask vge(vf a, vf b) { return vcgeq_f32(a, b); }
static inline vmask vlt(vf a, vf b) { return vcltq_f32(a, b); }
static inline vmask vle(vf a, vf b) { return vcleq_f32(a, b); }
static inline vmask veq(vf a, vf b) { return vceqq_f32(a, b); }
static inline vmask vneq(vf a, vf b) { return vmvnq_u32(vceqq_f32(a, b)); }
static inline vmask visnan(vf a) { return vmvnq_u32(vceqq_f32(a, a)); }
static inline vmask vunord(vf a, vf b) {
  return vmvnq_u32(vandq_u32(vceqq_f32(a, a), vceqq_f32(b, b)));
}
static inline vmask vmask_or(vmask a, vmask b) { return vorrq_u32(a, b); }
static inline vmask vmask_and(vmask a, vmask b) { return vandq_u32(a, b); }
static inline int vmask_any(vmask m) { return vmaxvq_u32(m) != 0; }
/* Bit k set where lane k is true: each lane's own bit kept, then summed across. */
static inline uint32_t vmask_lanes(vmask m) {
  static const uint32_t bit[4] = {1, 2, 4, 8};
  return vaddvq_u32(vandq_u32(m, vld1q_u32(bit)));
}
/* m ? a : b. As and/bic/orr rather than vbslq_f32, which gcc treats as opaque: this way it
   picks BSL, BIT or BIF itself and folds a mask's inversion (visnan) into the choice. */
static inline vf vselect(vmask m, vf a, vf b) {
  uint32x4_t ua = vreinterpretq_u32_f32(a), ub = vreinterpretq_u32_f32(b);
  return vreinterpretq_f32_u32(vorrq_u32(vandq_u32(m, ua), vbicq_u32(ub, m)));
}
/* m ? a : 0 */
static inline vf vand_mask(vmask m, vf a) {
  return vreinterpretq_f32_u32(vandq_u32(m, vreinterpretq_u32_f32(a)));
}

/* Bytes 0/1 from a mask, and back; n < VN touches only the first n bytes. */
static inline void vmask_store_bytes(uint8_t *out, vmask m, size_t n) {
  uint16x4_t h = vmovn_u32(m);
  uint8x8_t b = vand_u8(vmovn_u16(vcombine_u16(h, h)), vdup_n_u8(1));
  uint32_t four = vget_lane_u32(vreinterpret_u32_u8(b), 0);
  memcpy(out, &four, n >= VN ? VN : n);
}
/* Four masks' bytes at once, 4 VN of them: narrowed twice, one store. */
static inline void vmask_store_bytes4(uint8_t *out, vmask m0, vmask m1, vmask m2, vmask m3) {
  uint16x8_t lo = vcombine_u16(vmovn_u32(m0), vmovn_u32(m1));
  uint16x8_t hi = vcombine_u16(vmovn_u32(m2), vmovn_u32(m3));
  vst1q_u8(out, vandq_u8(vcombine_u8(vmovn_u16(lo), vmovn_u16(hi)), vdupq_n_u8(1)));
}
static inline vmask vmask_load_bytes(const uint8_t *c, size_t n) {
  uint32_t four = 0;
  memcpy(&four, c, n >= VN ? VN : n);
  uint8x8_t b = vreinterpret_u8_u32(vdup_n_u32(four));
  uint32x4_t w = vmovl_u16(vget_low_u16(vmovl_u8(b)));
  return vtstq_u32(w, w);
}

/* Transposes the VN x VN block held in r[0..VN): r[k] becomes column k. Moves bits only. 4 x 4:
   32-bit transposes of row pairs (TRN1/TRN2), then 64-bit ones. */
static inline vf vtrn64_lo_(vf a, vf b) {
  return vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(a), vreinterpretq_f64_f32(b)));
}
static inline vf vtrn64_hi_(vf a, vf b) {
  return vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(a), vreinterpretq_f64_f32(b)));
}
static inline void vtranspose(vf r[VN]) {
  vf t0 = vtrn1q_f32(r[0], r[1]), t1 = vtrn2q_f32(r[0], r[1]);
  vf t2 = vtrn1q_f32(r[2], r[3]), t3 = vtrn2q_f32(r[2], r[3]);
  r[0] = vtrn64_lo_(t0, t2);
  r[1] = vtrn64_lo_(t1, t3);
  r[2] = vtrn64_hi_(t0, t2);
  r[3] = vtrn64_hi_(t1, t3);
}

/* Horizontal reductions (single across-vector instructions). */
static inline float vhsum(vf v) { return vaddvq_f32(v); }
static inline float vhmax(vf v) { return vmaxvq_f32(v); }
static inline float vhmin(vf v) { return vminvq_f32(v); }

/* x * 2^ni, ni in [-160, 129]: two exact power-of-two factors (each a normal float) so that
   the product rounds once, also into the denormals or to inf. */
static inline vf vldexp_i_(vf x, int32x4_t ni) {
  int32x4_t n1 = vshrq_n_s32(ni, 1), n2 = vsubq_s32(ni, n1);
  int32x4_t bias = vdupq_n_s32(127);
  vf s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
  vf s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
  return vmulq_f32(vmulq_f32(x, s1), s2);
}
/* x * 2^n for n integral (a float). */
static inline vf vldexp(vf x, vf n) { return vldexp_i_(x, vcvtnq_s32_f32(n)); }
/* x * 2^floor(n): FCVTMS rounds toward -inf as it converts. */
static inline vf vldexp_floor(vf x, vf n) { return vldexp_i_(x, vcvtmq_s32_f32(n)); }

/* 32-bit integer lanes for counter-based hashing (simd_dropout.inc). */
static inline vbits_t vbits_set1(uint32_t x) { return vdupq_n_u32(x); }
static inline vbits_t vbits_iota(void) {
  static const uint32_t lanes[4] = {0, 1, 2, 3};
  return vld1q_u32(lanes);
}
static inline vbits_t vbits_add(vbits_t a, vbits_t b) { return vaddq_u32(a, b); }
static inline vbits_t vbits_mul(vbits_t a, vbits_t b) { return vmulq_u32(a, b); }
static inline vbits_t vbits_xor(vbits_t a, vbits_t b) { return veorq_u32(a, b); }
static inline vbits_t vbits_max_u32(vbits_t a, vbits_t b) { return vmaxq_u32(a, b); }
static inline vmask vbits_ge_u32(vbits_t a, vbits_t b) { return vcgeq_u32(a, b); }
static inline vmask vbits_gt_s32(vbits_t a, vbits_t b) {
  return vcgtq_s32(vreinterpretq_s32_u32(a), vreinterpretq_s32_u32(b));
}

/* SLEEF, 1.0 ULP class (u10), Advanced SIMD builds, where simd_math.inc has nothing faster. */
static inline vf vlog(vf a) { return Sleef_logf4_u10advsimd(a); }
static inline vf vlog1p(vf a) { return Sleef_log1pf4_u10advsimd(a); }
static inline vf vsin(vf a) { return Sleef_sinf4_u10advsimd(a); }
static inline vf vcos(vf a) { return Sleef_cosf4_u10advsimd(a); }
static inline vf vpow(vf a, vf b) { return Sleef_powf4_u10advsimd(a, b); }

/* vexp, vtanh, vphi, vgelu. Its clamps rely on vmax/vmin letting NaN through, which FMAX and
   FMIN do (above). */
#include "kernels_simd/simd_math.inc" /* vexp, vexpm1, vtanh, vgelu, vgelu_grad */

#endif
