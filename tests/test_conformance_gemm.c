/* Conformance of gemm and gemm_taps of every available backend against the scalar
 * backend, on shapes around the register tiles and the cache blocks, every transpose, with
 * padded strides, with the harness of support_conformance.h. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support_conformance.h"

/* ==== gemm ================================================================================== */

/* After a gemm or gemm_taps call: A and B unchanged, no write outside C, C (m x n, row stride
   ldc) against want, each element within tg's bound times scale, and the padding columns past
   n (not C) keeping c0's bits; one failure line per case. Frees the three buffers. */
static void check_gemm_outputs(const cctx *c, gbuf *ga, const float *a, gbuf *gb, const float *b,
                               gbuf *gc, const float *c0, const float *want, const double *scale,
                               size_t m, size_t n, size_t ldc, const tol *tg) {
  check_unchanged(c, ga, a, "A");
  check_unchanged(c, gb, b, "B");
  check_guards(c, gc, "C");
  const float *got = gf(gc);
  for (size_t i = 0; i < m; i++) {
    if (ldc > n && memcmp(got + i * ldc + n, c0 + i * ldc + n, (ldc - n) * sizeof(float)) != 0)
      failure(c, "wrote C's padding in row %zu", i);
    for (size_t j = 0; j < n; j++) {
      size_t at = i * ldc + j;
      if (!agrees(got[at], want[at], tg, 1, scale[at], 1)) {
        failure(c, "C[%zu,%zu] got %.9g want %.9g (bound %.3g)", i, j, got[at], want[at],
                tg->abs * FLT_EPSILON * scale[at]);
        i = m;
        break;
      }
    }
  }
  gb_free(ga);
  gb_free(gb);
  gb_free(gc);
}

static void free_gemm_case(float *a, float *b, float *c0, float *want, double *scale) {
  free(a);
  free(b);
  free(c0);
  free(want);
  free(scale);
}

/* One gemm case: C (m x n, row stride ldc) = op(A) op(B) + beta C, padding filled with NaN (a
   kernel reading it poisons C) and C's padding columns checked untouched. */
static void gemm_case(size_t m, size_t n, size_t k, bool ta, bool tb, float beta, size_t pad,
                      size_t off, int pass) {
  const sg_backend *ref = ref_backend();
  const tol *t = tol_for("gemm");
  size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  size_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
  size_t na = ar * lda, nb = br * ldb, nc = m * ldc;
  seed(case_seed("gemm", m * 1000003u + n * 1009u + k, (size_t)ta * 2 + tb + pad * 4, off));
  float *a = fnew(na), *b = fnew(nb), *c0 = fnew(nc), *want = fnew(nc);
  for (size_t i = 0; i < na; i++) a[i] = (i % lda) < ac ? uniform(t->lo, t->hi) : NAN;
  for (size_t i = 0; i < nb; i++) b[i] = (i % ldb) < bc ? uniform(t->lo, t->hi) : NAN;
  for (size_t i = 0; i < nc; i++)
    c0[i] = (i % ldc) < n ? (beta == 0 ? NAN : uniform(-4, 4)) : from_bits(0x7fa5a5a5u);
  if (pass == P_SPECIAL) {
    /* No huge values here: whether a sum of huge products overflows depends on the order. */
    static const float sp[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-40f};
    for (size_t q = 0; q < 3; q++) {
      if (ar && ac) a[(next_u64() % ar) * lda + next_u64() % ac] = sp[(q + off) % 5];
      if (br && bc) b[(next_u64() % br) * ldb + next_u64() % bc] = sp[(q + off + 2) % 5];
    }
  }
  memcpy(want, c0, nc * sizeof *want);
  ref->gemm(m, n, k, a, lda, ta, b, ldb, tb, beta, want, ldc);
  /* The bound's magnitude per C element: sum_p |a_ip b_pj| + |beta c_ij|. */
  double *scale = calloc(nc ? nc : 1, sizeof *scale);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = beta != 0 ? fabs(c0[i * ldc + j]) : 0;
      for (size_t p = 0; p < k; p++) {
        double av = ta ? a[p * lda + i] : a[i * lda + p], bv = tb ? b[j * ldb + p] : b[p * ldb + j];
        s += fabs(av * bv);
      }
      scale[i * ldc + j] = s;
    }
  tol tg = *t;
  tg.abs = 2.0 * ((double)k + 2);
  FOR_EACH_BACKEND(be) {
    cctx c;
    ctx_init(&c, be, "gemm", k_pass_names[pass],
             "m=%zu n=%zu k=%zu ta=%d tb=%d beta=%g pad=%zu off=%zu", m, n, k, ta, tb, beta, pad,
             off);
    gbuf ga = gb_floats(a, na, off_of(off, 0)), gb = gb_floats(b, nb, off_of(off, 1));
    gbuf gc = gb_floats(c0, nc, off_of(off, 2));
    be->gemm(m, n, k, gf(&ga), lda, ta, gf(&gb), ldb, tb, beta, gf(&gc), ldc);
    check_gemm_outputs(&c, &ga, a, &gb, b, &gc, c0, want, scale, m, n, ldc, &tg);
  }
  free_gemm_case(a, b, c0, want, scale);
}

/* One shape, the h-th: every transpose, beta 0 and 1, the clean and the special pass, with the
   padding and the pointer offsets varying with h. */
static void gemm_shape(size_t m, size_t n, size_t k, size_t h) {
  for (int tr = 0; tr < 4; tr++)
    for (int bi = 0; bi < 2; bi++)
      for (int p = 0; p < 2; p++) {
        size_t off = (h + (size_t)tr * 3 + (size_t)p) % 16, pad = (h + (size_t)tr) % 2 ? 3 : 0;
        gemm_case(m, n, k, tr & 1, tr >> 1, bi ? 1.0f : 0.0f, pad, off, p);
      }
}

static void gemm_family(void) {
  /* m, n, k: empty, one element, around the register tile; past one k slice (KC 256, 512 on
     AVX-512) and past it twice; past the row blocks (MC 240 on NEON, 1200 on x86) and the column
     blocks (NC 512 on AVX2, 256 on AVX-512, also twice, 2048 on NEON). */
  static const size_t shapes[][3] = {{0, 4, 3},     {4, 0, 3},      {4, 3, 0},     {1, 1, 1},
                                     {1, 17, 1},    {7, 15, 16},    {16, 16, 16},  {17, 31, 33},
                                     {33, 65, 63},  {65, 17, 300},  {130, 9, 5},   {3, 1100, 9},
                                     {13, 33, 513}, {2, 3, 1500},   {1201, 17, 9}, {1201, 1, 1},
                                     {7, 513, 300}, {20, 1025, 33}, {3, 2049, 5}};
  size_t h = 0;
  for (; h < COUNT(shapes); h++) gemm_shape(shapes[h][0], shapes[h][1], shapes[h][2], h);
  /* The register tiles' edges: every row count around their heights (MR 6 and 12) with every
     column count around their widths (NR 8, 16, 32 and 64: 1 to 4 vectors across), with k
     around one k slice (256 or 512). */
  static const size_t ms[] = {1, 5, 6, 7, 11, 12, 13, 25};
  static const size_t ns[] = {1, 15, 16, 17, 31, 32, 33, 47, 49, 63, 64, 65};
  static const size_t ks[] = {1, 255, 256, 257, 511, 512, 513};
  for (size_t mi = 0; mi < COUNT(ms); mi++)
    for (size_t ni = 0; ni < COUNT(ns); ni++, h++)
      gemm_shape(ms[mi], ns[ni], ks[(mi + ni) % COUNT(ks)], h);
}

/* One gemm_taps case, laid out as a convolution row: A_t starts t rows into one A (the taps
   overlap, as a row's shifted pixels do; op(A_t) is m x k, stored k x m when ta), B_t is the
   t-th k x n block of one B. Rows of A and B are padded with NaN (a kernel reading past them
   poisons C, or the canary catches it). */
static void gemm_taps_case(size_t m, size_t n, size_t k, size_t taps, bool ta, float beta,
                           size_t off) {
  const sg_backend *ref = ref_backend();
  const tol *t = tol_for("gemm_taps");
  size_t ar = ta ? k : m, ac = ta ? m : k; /* A_t as stored */
  size_t lda = ac + 3, ldb = n + 2, ldc = n + 1;
  size_t na = (ar + taps) * lda, nb = (taps * k > 0 ? taps * k : 1) * ldb, nc = m * ldc;
  seed(case_seed("gemm_taps", m * 1000003u + n * 1009u + k, taps * 2 + ta, off));
  float *a = fnew(na), *b = fnew(nb), *c0 = fnew(nc), *want = fnew(nc);
  for (size_t i = 0; i < na; i++) a[i] = i % lda < ac ? uniform(t->lo, t->hi) : NAN;
  for (size_t i = 0; i < nb; i++) b[i] = i % ldb < n ? uniform(t->lo, t->hi) : NAN;
  for (size_t i = 0; i < nc; i++)
    c0[i] = i % ldc < n ? (beta == 0 ? NAN : uniform(-4, 4)) : from_bits(0x7fa5a5a5u);
  const float *ra[80], *rb[80];
  for (size_t q = 0; q < taps; q++) ra[q] = a + q * lda, rb[q] = b + q * k * ldb;
  memcpy(want, c0, nc * sizeof *want);
  ref->gemm_taps(m, n, k, taps, ra, lda, ta, rb, ldb, beta, want, ldc);
  double *scale = calloc(nc ? nc : 1, sizeof *scale);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double sum = beta != 0 ? fabs(c0[i * ldc + j]) : 0;
      for (size_t q = 0; q < taps; q++)
        for (size_t p = 0; p < k; p++)
          sum += fabs((ta ? ra[q][p * lda + i] : ra[q][i * lda + p]) * rb[q][p * ldb + j]);
      scale[i * ldc + j] = sum;
    }
  tol tg = *t;
  tg.abs = 2.0 * ((double)(taps * k) + 2);
  FOR_EACH_BACKEND(be) {
    cctx c;
    ctx_init(&c, be, "gemm_taps", NULL, "m=%zu n=%zu k=%zu taps=%zu ta=%d beta=%g off=%zu", m, n, k,
             taps, ta, beta, off);
    gbuf ga = gb_floats(a, na, off_of(off, 0)), gb = gb_floats(b, nb, off_of(off, 1));
    gbuf gc = gb_floats(c0, nc, off_of(off, 2));
    const float *pa[80], *pb[80];
    for (size_t q = 0; q < taps; q++) pa[q] = gf(&ga) + q * lda, pb[q] = gf(&gb) + q * k * ldb;
    be->gemm_taps(m, n, k, taps, pa, lda, ta, pb, ldb, beta, gf(&gc), ldc);
    check_gemm_outputs(&c, &ga, a, &gb, b, &gc, c0, want, scale, m, n, ldc, &tg);
  }
  free_gemm_case(a, b, c0, want, scale);
}

static void gemm_taps_family(void) {
  /* m around the row tiles (4 to 12), n around the strips (8 to 64 wide) and the vectors */
  static const size_t ms[] = {0, 1, 7, 12, 13, 17, 33}, ns[] = {1, 7, 15, 16, 17, 31, 33, 64, 65};
  static const size_t ks[] = {0, 1, 16, 63}, taps[] = {0, 1, 3, 9};
  size_t off = 0;
  for (size_t im = 0; im < COUNT(ms); im++)
    for (size_t in = 0; in < COUNT(ns); in++)
      for (size_t ik = 0; ik < COUNT(ks); ik++)
        for (int ta = 0; ta < 2; ta++) {
          size_t q = (im + in + ik + (size_t)ta) % COUNT(taps);
          gemm_taps_case(ms[im], ns[in], ks[ik], taps[q], ta, (im + ik) % 2 ? 1.0f : 0.0f,
                         off++ % 16);
        }
  /* Ragged strips too big to pack (taps * k past the packing buffer, or more taps than it
     keeps pointers for) load B masked instead. */
  for (int ta = 0; ta < 2; ta++) {
    gemm_taps_case(3, 17, 7300, 9, ta, 1.0f, 5);
    gemm_taps_case(5, 33, 3, 70, ta, 0.0f, 9);
  }
}

Test(conformance, gemm) {
  gemm_family();
  finish("gemm");
}

Test(conformance, gemm_taps) {
  gemm_taps_family();
  finish("gemm_taps");
}
