/* Differential fuzzer of gemm and gemm_taps: fuzzed m, n, k (and taps), transposes, beta,
 * padded row strides, pointer offsets and values; every backend of this CPU against the scalar
 * backend under the conformance contract |diff| <= 2 (k + 2) eps (sum |a b| + |beta c|)
 * (opinfo_kernel.c's gemm rows; k counts taps * k for gemm_taps). Row padding holds NaN and C's
 * padding columns must keep their bits. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define MAX_TAPS 12

static float from_bits(uint32_t u) {
  float v;
  memcpy(&v, &u, sizeof v);
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz f = fz_make(data, size);
  bool taps_form = fz_u8(&f) < 80;
  const char *slot = taps_form ? "gemm_taps" : "gemm";
  size_t m = fz_size(&f, 140), n = fz_size(&f, 140), k = fz_size(&f, 600);
  size_t taps = taps_form ? fz_range(&f, 0, MAX_TAPS) : 1;
  /* At most about 2^20 multiply-adds per case. */
  while (m * n * k * (taps ? taps : 1) > ((size_t)1 << 20)) {
    if (k >= m && k >= n)
      k /= 2;
    else if (m >= n)
      m /= 2;
    else
      n /= 2;
  }
  bool ta = fz_bool(&f), tb = !taps_form && fz_bool(&f);
  uint8_t bk = fz_u8(&f);
  float beta = bk < 100 ? 0.0f : bk < 180 ? 1.0f : fz_float(&f, -2, 2, FZ_SPECIAL | FZ_WIDE);
  if (!isfinite(beta)) beta = -1.0f;
  size_t pad_a = fz_range(&f, 0, 3), pad_b = fz_range(&f, 0, 3), pad_c = fz_range(&f, 0, 3);
  size_t off[3];
  for (int i = 0; i < 3; i++) off[i] = fz_range(&f, 0, 15);
  snprintf(fz_case, sizeof fz_case,
           "%s m=%zu n=%zu k=%zu taps=%zu ta=%d tb=%d beta=%g pad=(%zu,%zu,%zu) off=(%zu,%zu,%zu)",
           slot, m, n, k, taps, ta, tb, beta, pad_a, pad_b, pad_c, off[0], off[1], off[2]);
  opinfo_bound bound = fz_bound(slot);
  opinfo_range dom = fz_domain(slot, false);

  /* A as stored is ar x ac (row stride lda); for gemm_taps A_t starts t rows into one A (the
     taps overlap, as a convolution row's shifted pixels do), B_t is the t-th k x n block. */
  size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  size_t lda = ac + pad_a, ldb = bc + pad_b, ldc = n + pad_c;
  size_t na = (ar + (taps_form ? taps : 0)) * lda, nb = (taps_form ? taps : 1) * br * ldb;
  size_t nc = m * ldc;
  float *a = fz_malloc(na * 4), *b = fz_malloc(nb * 4), *c0 = fz_malloc(nc * 4),
        *want = fz_malloc(nc * 4);
  double *scale = fz_malloc(nc * sizeof *scale);
  /* Values: the domain, edge values and magnitudes from 2^-149 to 2^50; no huge ones, whose
     sums overflow or not depending on the order. */
  unsigned kinds = fz_bool(&f) ? FZ_DOMAIN | FZ_SPECIAL | FZ_WIDE : FZ_DOMAIN;
  for (size_t i = 0; i < na; i++) a[i] = i % lda < ac ? fz_float(&f, dom.lo, dom.hi, kinds) : NAN;
  for (size_t i = 0; i < nb; i++) b[i] = i % ldb < bc ? fz_float(&f, dom.lo, dom.hi, kinds) : NAN;
  for (size_t i = 0; i < nc; i++)
    c0[i] = i % ldc < n ? (beta == 0 ? NAN : fz_float(&f, -4, 4, kinds)) : from_bits(0x7fa5a5a5u);
  const float *ra[MAX_TAPS + 1], *rb[MAX_TAPS + 1];
  for (size_t q = 0; q < taps; q++) ra[q] = a + q * lda, rb[q] = b + q * k * ldb;
  memcpy(want, c0, nc * 4);
  const sg_backend *ref = fz_scalar();
  if (taps_form)
    ref->gemm_taps(m, n, k, taps, ra, lda, ta, rb, ldb, beta, want, ldc);
  else
    ref->gemm(m, n, k, a, lda, ta, b, ldb, tb, beta, want, ldc);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = beta != 0 ? fabs(beta * (double)c0[i * ldc + j]) : 0;
      for (size_t q = 0; q < taps; q++)
        for (size_t p = 0; p < k; p++) {
          const float *aq = taps_form ? ra[q] : a, *bq = taps_form ? rb[q] : b;
          double av = ta ? aq[p * lda + i] : aq[i * lda + p];
          double bv = tb ? bq[j * ldb + p] : bq[p * ldb + j];
          s += fabs(av * bv);
        }
      scale[i * ldc + j] = s;
    }
  size_t kk = taps * k;
  bound.abs = 2.0 * ((double)kk + 2);
  /* A product that lands among the denormals is rounded to a multiple of 2^-149, or not at
     all when fused: up to half of FLT_TRUE_MIN each, which no relative bound covers (the
     conformance tests' few denormals never make a whole dot product of them). */
  bound.tiny = (double)kk + 1;
  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    fz_buf ga = fz_buf_make(a, na, 4, off[0]), gb = fz_buf_make(b, nb, 4, off[1]);
    fz_buf gc = fz_buf_make(c0, nc, 4, off[2]);
    if (taps_form) {
      const float *pa[MAX_TAPS + 1], *pb[MAX_TAPS + 1];
      for (size_t q = 0; q < taps; q++)
        pa[q] = fz_f(&ga) + q * lda, pb[q] = fz_f(&gb) + q * k * ldb;
      be->gemm_taps(m, n, k, taps, pa, lda, ta, pb, ldb, beta, fz_f(&gc), ldc);
    } else {
      be->gemm(m, n, k, fz_f(&ga), lda, ta, fz_f(&gb), ldb, tb, beta, fz_f(&gc), ldc);
    }
    fz_buf_unchanged(&ga, a, "A");
    fz_buf_unchanged(&gb, b, "B");
    const float *got = fz_f(&gc);
    for (size_t i = 0; i < m; i++) {
      if (ldc > n && memcmp(got + i * ldc + n, c0 + i * ldc + n, (ldc - n) * 4) != 0)
        fz_fail("%s %s: wrote C's padding in row %zu", be->name, slot, i);
      fz_check_f32(be, slot, &bound, got + i * ldc, want + i * ldc, n, 1, scale + i * ldc, NULL,
                   NULL);
    }
    fz_buf_free(&ga, "A");
    fz_buf_free(&gb, "B");
    fz_buf_free(&gc, "C");
  }
  free(a);
  free(b);
  free(c0);
  free(want);
  free(scale);
  return 0;
}
