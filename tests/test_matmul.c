/* matmul tests: values against a naive double-precision loop (every transpose combination,
 * batched and broadcast batches, empty and IEEE cases), gradients, shape errors, gemm kernel
 * conformance of every available backend against scalar, and thread-count independence. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_scalar/kernels_scalar.h"
#include "support.h"

/* ---- The reference ---------------------------------------------------------------------- */

/* out = op(a) op(b) in double with NumPy batch broadcasting, and absbound = sum |a||b| per
   element (the scale of the rounding error), each matrix by opinfo_ref_gemm. Returns the output
   element count. */
static int64_t ref_matmul(const sg_tensor *ta_, const sg_tensor *tb_, bool ta, bool tb, double *out,
                          double *absbound, int64_t *oshape, int *orank) {
  const float *a = sg_data_f32(ta_), *b = sg_data_f32(tb_);
  int ar = sg_rank(ta_), br = sg_rank(tb_);
  const int64_t *as = sg_shape(ta_), *bs = sg_shape(tb_);
  int64_t arows = as[ar - 2], acols = as[ar - 1], brows = bs[br - 2], bcols = bs[br - 1];
  int64_t m = ta ? acols : arows, k = ta ? arows : acols, n = tb ? brows : bcols;
  int nb = (ar > br ? ar : br) - 2;
  int64_t abat[8], bbat[8], obat[8], nout = 1;
  for (int d = 0; d < nb; d++) {
    int da = d - (nb - (ar - 2)), db = d - (nb - (br - 2));
    abat[d] = da < 0 ? 1 : as[da];
    bbat[d] = db < 0 ? 1 : bs[db];
    obat[d] = abat[d] == 1 ? bbat[d] : abat[d];
    oshape[d] = obat[d];
    nout *= obat[d];
  }
  oshape[nb] = m;
  oshape[nb + 1] = n;
  *orank = nb + 2;
  for (int64_t o = 0; o < nout; o++) {
    int64_t rest = o, aoff = 0, boff = 0, astr = 1, bstr = 1;
    for (int d = nb - 1; d >= 0; d--) {
      int64_t c = rest % obat[d];
      rest /= obat[d];
      aoff += (abat[d] == 1 ? 0 : c) * astr;
      boff += (bbat[d] == 1 ? 0 : c) * bstr;
      astr *= abat[d];
      bstr *= bbat[d];
    }
    opinfo_ref_gemm((size_t)m, (size_t)n, (size_t)k, a + aoff * arows * acols, (size_t)acols, ta,
                    b + boff * brows * bcols, (size_t)bcols, tb, out + o * m * n,
                    absbound + o * m * n, (size_t)n);
  }
  return nout * m * n;
}

static void expect_matches_ref(sg_tensor *a, sg_tensor *b, bool ta, bool tb) {
  double *want = malloc(1 << 20), *bound = malloc(1 << 20);
  int64_t oshape[8];
  int orank;
  int64_t n = ref_matmul(a, b, ta, tb, want, bound, oshape, &orank);
  int64_t k = ta ? sg_shape(a)[sg_rank(a) - 2] : sg_shape(a)[sg_rank(a) - 1];
  sg_tensor *y = sg_matmul(a, b, ta, tb);
  cr_assert_not_null(y, "%s", sg_last_error());
  cr_assert_eq(sg_rank(y), orank);
  for (int d = 0; d < orank; d++) cr_assert_eq(sg_shape(y)[d], oshape[d], "dim %d", d);
  const float *got = sg_data_f32(y);
  for (int64_t i = 0; i < n; i++) {
    double tol = 2.0 * (double)(k + 1) * FLT_EPSILON * bound[i] + 1e-30;
    cr_assert(fabs(got[i] - want[i]) <= tol, "ta=%d tb=%d element %lld: got %.9g want %.9g", ta, tb,
              (long long)i, got[i], want[i]);
  }
  sg_dispose(y);
  free(want);
  free(bound);
}

static sg_tensor *rand_t(const int64_t *shape, int rank, uint64_t seed) {
  sg_tensor *t = sg_random_uniform(shape, rank, -1.0f, 1.0f, seed);
  cr_assert_not_null(t, "%s", sg_last_error());
  return t;
}

/* ---- Values ----------------------------------------------------------------------------- */

Test(matmul, hand_values) {
  int64_t live = t_live_tensors();
  float av[] = {1, 2, 3, 4, 5, 6}, bv[] = {7, 8, 9, 10, 11, 12};
  int64_t s23[] = {2, 3}, s32[] = {3, 2};
  sg_tensor *a = t_f32(av, 2, s23), *b = t_f32(bv, 2, s32);
  sg_tensor *y = sg_matmul(a, b, false, false);
  int64_t s22[] = {2, 2}, s33[] = {3, 3};
  t_expect_f32(y, (float[]){58, 64, 139, 154}, 2, s22, 0, 0);
  sg_dispose(y);
  y = sg_matmul(a, b, true, true); /* a^T b^T = (b a)^T */
  t_expect_f32(y, (float[]){39, 49, 59, 54, 68, 82, 69, 87, 105}, 2, s33, 0, 0);
  sg_dispose(y);
  sg_dispose(a);
  sg_dispose(b);
  cr_assert_eq(t_live_tensors(), live);
}

Test(matmul, all_transposes_all_sizes) {
  int64_t live = t_live_tensors();
  const int64_t sizes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {128, 64, 96}};
  for (int si = 0; si < 4; si++) {
    int64_t m = sizes[si][0], k = sizes[si][1], n = sizes[si][2];
    for (int t = 0; t < 4; t++) {
      bool ta = t & 1, tb = t & 2;
      int64_t as[2] = {ta ? k : m, ta ? m : k}, bs[2] = {tb ? n : k, tb ? k : n};
      sg_tensor *a = rand_t(as, 2, 10 + (uint64_t)si), *b = rand_t(bs, 2, 20 + (uint64_t)si);
      expect_matches_ref(a, b, ta, tb);
      sg_dispose(a);
      sg_dispose(b);
    }
  }
  cr_assert_eq(t_live_tensors(), live);
}

Test(matmul, batched_and_broadcast_batches) {
  int64_t live = t_live_tensors();
  const int64_t cases[][2][4] = {
      {{2, 3, 4, 0}, {2, 4, 5, 0}}, /* plain batch */
      {{2, 1, 3, 4}, {5, 4, 2, 0}}, /* [2,1] with [5]: out [2,5,3,2] */
      {{3, 4, 0, 0}, {6, 4, 5, 0}}, /* rank 2 by rank 3: a is shared */
      {{6, 3, 4, 0}, {4, 5, 0, 0}}, /* b is shared */
  };
  const int ranks[][2] = {{3, 3}, {4, 3}, {2, 3}, {3, 2}};
  for (int c = 0; c < 4; c++)
    for (int t = 0; t < 4; t++) {
      bool ta = t & 1, tb = t & 2;
      int64_t as[4], bs[4];
      int ar = ranks[c][0], br = ranks[c][1];
      memcpy(as, cases[c][0], sizeof as);
      memcpy(bs, cases[c][1], sizeof bs);
      if (ta) as[ar - 2] = cases[c][0][ar - 1], as[ar - 1] = cases[c][0][ar - 2];
      if (tb) bs[br - 2] = cases[c][1][br - 1], bs[br - 1] = cases[c][1][br - 2];
      sg_tensor *a = rand_t(as, ar, 30 + (uint64_t)c), *b = rand_t(bs, br, 40 + (uint64_t)c);
      expect_matches_ref(a, b, ta, tb);
      sg_dispose(a);
      sg_dispose(b);
    }
  int64_t as[] = {2, 1, 3, 4}, bs[] = {5, 4, 2}, want[] = {2, 5, 3, 2};
  sg_tensor *a = rand_t(as, 4, 1), *b = rand_t(bs, 3, 2);
  sg_tensor *y = sg_matmul(a, b, false, false);
  cr_assert_eq(sg_rank(y), 4);
  for (int d = 0; d < 4; d++) cr_assert_eq(sg_shape(y)[d], want[d]);
  sg_dispose(y);
  sg_dispose(a);
  sg_dispose(b);
  cr_assert_eq(t_live_tensors(), live);
}

Test(matmul, empty_and_ieee) {
  int64_t live = t_live_tensors();
  /* k = 0: the sum is empty, so the product is all zeros. */
  int64_t s20[] = {2, 0}, s03[] = {0, 3}, s23[] = {2, 3};
  sg_tensor *a = sg_zeros(s20, 2), *b = sg_zeros(s03, 2);
  sg_tensor *y = sg_matmul(a, b, false, false);
  t_expect_f32(y, (float[]){0, 0, 0, 0, 0, 0}, 2, s23, 0, 0);
  sg_dispose(y);
  /* m = 0 and an empty batch. */
  int64_t s03b[] = {0, 3}, s34[] = {3, 4}, s04[] = {0, 4};
  sg_tensor *e = sg_zeros(s03b, 2), *f = sg_ones(s34, 2);
  y = sg_matmul(e, f, false, false);
  t_expect_f32(y, NULL, 2, s04, 0, 0);
  sg_dispose(y);
  int64_t s0_2_3[] = {0, 2, 3}, s0_2_4[] = {0, 2, 4};
  sg_tensor *g = sg_zeros(s0_2_3, 3);
  y = sg_matmul(g, f, false, false);
  t_expect_f32(y, NULL, 3, s0_2_4, 0, 0);
  sg_dispose(y);
  /* Inf * 0 is NaN: a kernel that skips zeros would hide it. NaN propagates. */
  int64_t s12[] = {1, 2}, s21[] = {2, 1}, s11[] = {1, 1};
  sg_tensor *p = t_f32((float[]){INFINITY, 1}, 2, s12), *q = t_f32((float[]){0, 1}, 2, s21);
  y = sg_matmul(p, q, false, false);
  t_expect_f32(y, (float[]){NAN}, 2, s11, 0, 0);
  sg_dispose(y);
  sg_tensor *r = t_f32((float[]){INFINITY, 1}, 2, s21);
  y = sg_matmul(p, r, false, false);
  t_expect_f32(y, (float[]){INFINITY}, 2, s11, 0, 0);
  sg_dispose(y);
  sg_tensor *nq = t_f32((float[]){NAN, 0}, 2, s21), *z = t_f32((float[]){0, 0}, 2, s12);
  y = sg_matmul(z, nq, false, false);
  t_expect_f32(y, (float[]){NAN}, 2, s11, 0, 0);
  sg_dispose(y);
  sg_dispose(nq);
  sg_dispose(z);
  sg_dispose(r);
  sg_dispose(p);
  sg_dispose(q);
  sg_dispose(g);
  sg_dispose(e);
  sg_dispose(f);
  sg_dispose(a);
  sg_dispose(b);
  cr_assert_eq(t_live_tensors(), live);
}

/* ---- Errors ----------------------------------------------------------------------------- */

Test(matmul, errors) {
  int64_t live = t_live_tensors();
  int64_t s23[] = {2, 3}, s45[] = {4, 5}, s3[] = {3}, s34[] = {3, 4};
  sg_tensor *a = sg_zeros(s23, 2), *b = sg_zeros(s45, 2), *v = sg_zeros(s3, 1);
  sg_tensor *c = sg_zeros(s34, 2), *sc = sg_scalar(1);
  t_expect_error(sg_matmul(a, b, false, false), SG_ERR_SHAPE,
                 "matmul: inner dimensions differ (a is [2,3], b is [4,5])", NULL);
  t_expect_error(sg_matmul(a, c, true, false), SG_ERR_SHAPE, "inner dimensions differ",
                 "[2,3] transposed", NULL);
  t_expect_error(sg_matmul(v, c, false, false), SG_ERR_SHAPE, "matmul", "[3]", NULL);
  t_expect_error(sg_matmul(c, v, false, false), SG_ERR_SHAPE, "matmul", "[3]", NULL);
  t_expect_error(sg_matmul(sc, sc, false, false), SG_ERR_SHAPE, "matmul", "[]", NULL);
  int64_t s234[] = {2, 3, 4}, s345[] = {3, 4, 5};
  sg_tensor *x = sg_zeros(s234, 3), *y = sg_zeros(s345, 3);
  t_expect_error(sg_matmul(x, y, false, false), SG_ERR_SHAPE, "batch", "[2,3,4]", "[3,4,5]", NULL);
  /* dtype, NULL, disposed, and the scope path. */
  sg_tensor *i = sg_tensor_i32((int32_t[]){1, 2, 3, 4, 5, 6}, s23, 2);
  t_expect_error(sg_matmul(i, c, false, false), SG_ERR_DTYPE, "matmul", "'a'", NULL);
  t_expect_error(sg_matmul(a, NULL, false, false), SG_ERR_ARG, "matmul", "'b'", NULL);
  t_expect_error(sg_matmul(NULL, c, false, false), SG_ERR_ARG, "matmul", "'a'", NULL);
  sg_matmul(a, b, false, false);
  t_expect_error(sg_matmul(NULL, c, false, false), SG_ERR_SHAPE, "inner dimensions", NULL);
  sg_scope_begin("model");
  sg_scope_begin("dense1");
  t_expect_error(sg_matmul(a, b, false, false), SG_ERR_SHAPE,
                 "matmul: inner dimensions differ (a is [2,3], b is [4,5]) in scope "
                 "\"model/dense1\"",
                 NULL);
  sg_scope_end(NULL, 0);
  sg_scope_end(NULL, 0);
  sg_tensor *d = sg_zeros(s34, 2);
  sg_dispose(d);
  t_expect_error(sg_matmul(a, d, false, false), SG_ERR_STATE, "matmul", "disposed", NULL);
  sg_tensor *all[] = {a, b, v, c, sc, x, y, i};
  for (int k = 0; k < 8; k++) sg_dispose(all[k]);
  cr_assert_eq(t_live_tensors(), live);
}

/* ---- Gradients -------------------------------------------------------------------------- */

typedef struct mm_arg {
  bool ta, tb;
} mm_arg;

static sg_tensor *mm_fn(sg_tensor *const *xs, void *arg) {
  const mm_arg *m = arg;
  return sg_matmul(xs[0], xs[1], m->ta, m->tb);
}

/* matmul is linear in each input, so the central difference is exact up to rounding of the
   loss (about 1e-6 relative); tol 2e-3 leaves room for that over h = 1e-2. */
static void gc_case(const int64_t *as, int ar, const int64_t *bs, int br, uint64_t seed) {
  for (int t = 0; t < 4; t++) {
    mm_arg m = {t & 1, t & 2};
    int64_t a2[8], b2[8];
    memcpy(a2, as, (size_t)ar * sizeof *as);
    memcpy(b2, bs, (size_t)br * sizeof *bs);
    if (m.ta) a2[ar - 2] = as[ar - 1], a2[ar - 1] = as[ar - 2];
    if (m.tb) b2[br - 2] = bs[br - 1], b2[br - 1] = bs[br - 2];
    sg_tensor *xs[2] = {rand_t(a2, ar, seed), rand_t(b2, br, seed + 1)};
    gc_check(m.ta ? (m.tb ? "matmul TT" : "matmul TN") : (m.tb ? "matmul NT" : "matmul NN"), mm_fn,
             &m, xs, 2, 1e-2, 2e-3);
    sg_dispose(xs[0]);
    sg_dispose(xs[1]);
  }
}

Test(matmul, gradient_rank2) {
  int64_t a[] = {3, 4}, b[] = {4, 5};
  gc_case(a, 2, b, 2, 100);
}

Test(matmul, gradient_batched) {
  int64_t a[] = {2, 3, 4}, b[] = {2, 4, 5};
  gc_case(a, 3, b, 3, 200);
}

Test(matmul, gradient_broadcast_batches) {
  int64_t a[] = {2, 1, 3, 4}, b[] = {3, 4, 2};
  gc_case(a, 4, b, 3, 300);
  int64_t c[] = {3, 4}, d[] = {2, 4, 2}; /* a shared by every batch of b */
  gc_case(c, 2, d, 3, 400);
}

Test(matmul, gradient_empty_batch_is_zero) {
  int64_t live = t_live_tensors();
  int64_t as[] = {0, 2, 3}, bs[] = {1, 3, 2};
  sg_tensor *a = sg_zeros(as, 3), *b = sg_ones(bs, 3);
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_matmul(a, b, false, false);
  sg_tensor *xs[2] = {a, b}, *g[2];
  cr_assert_eq(sg_tape_end(y, NULL, xs, 2, g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g[1], (float[]){0, 0, 0, 0, 0, 0}, 3, bs, 0, 0);
  cr_assert_eq(sg_numel(g[0]), 0);
  sg_tensor *all[] = {a, b, y, g[0], g[1]};
  for (int k = 0; k < 5; k++) sg_dispose(all[k]);
  cr_assert_eq(t_live_tensors(), live);
}

/* ---- The gemm kernel (every backend against scalar: test_conformance.c's gemm family) ------ */

static float frand(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

Test(matmul, gemm_scalar_against_naive) {
  /* The scalar kernel itself: beta 0 overwrites NaN, beta 1 accumulates, strides respected. */
  const sg_backend *be = sg_backend_get("scalar");
  float a[] = {1, 2, 3, 9, 4, 5, 6, 9};    /* 2x3 with lda 4 */
  float b[] = {1, 0, 9, 0, 1, 9, 1, 1, 9}; /* 3x2 with ldb 3 */
  float c[] = {NAN, NAN, 7, NAN, NAN, 7};
  be->gemm(2, 2, 3, a, 4, false, b, 3, false, 0.0f, c, 3);
  float want[] = {4, 5, 7, 10, 11, 7};
  for (int i = 0; i < 6; i++) cr_assert_eq(c[i], want[i], "element %d: %g", i, c[i]);
  be->gemm(2, 2, 3, a, 4, false, b, 3, false, 1.0f, c, 3);
  float want2[] = {8, 10, 7, 20, 22, 7};
  for (int i = 0; i < 6; i++) cr_assert_eq(c[i], want2[i], "element %d: %g", i, c[i]);
  be->gemm(2, 2, 0, a, 4, false, b, 3, true, 0.0f, c, 3); /* k = 0 */
  float want3[] = {0, 0, 7, 0, 0, 7};
  for (int i = 0; i < 6; i++) cr_assert_eq(c[i], want3[i], "element %d: %g", i, c[i]);
}

/* A gemm over a whole matrix and the same gemm cut into four blocks at odd places give the
   same bits: each C element's arithmetic must not depend on the tile it lands in (the engine
   relies on it to cut matmuls into blocks for its threads). The shapes take k past one k
   slice, and mix blocks the SIMD gemms pack with blocks small enough to read unpacked. */
static void blocks_agree(const sg_backend *be, size_t m, size_t n, size_t k, size_t mh, size_t nh) {
  float *a = malloc(m * k * sizeof(float)), *b = malloc(k * n * sizeof(float));
  float *c1 = malloc(m * n * sizeof(float)), *c2 = malloc(m * n * sizeof(float));
  uint32_t seed = 3;
  for (size_t i = 0; i < m * k; i++) a[i] = frand(&seed);
  for (size_t i = 0; i < k * n; i++) b[i] = frand(&seed);
  for (int t = 0; t < 4; t++) {
    bool ta = t & 1, tb = t & 2;
    size_t lda = ta ? m : k, ldb = tb ? k : n;
    be->gemm(m, n, k, a, lda, ta, b, ldb, tb, 0.0f, c1, n);
    for (int q = 0; q < 4; q++) {
      size_t i0 = q & 1 ? mh : 0, j0 = q & 2 ? nh : 0;
      size_t rows = q & 1 ? m - mh : mh, cols = q & 2 ? n - nh : nh;
      be->gemm(rows, cols, k, ta ? a + i0 : a + i0 * lda, lda, ta, tb ? b + j0 * ldb : b + j0, ldb,
               tb, 0.0f, c2 + i0 * n + j0, n);
    }
    cr_assert(memcmp(c1, c2, m * n * sizeof(float)) == 0, "%s m=%zu n=%zu k=%zu ta=%d tb=%d",
              be->name, m, n, k, ta, tb);
  }
  free(a);
  free(b);
  free(c1);
  free(c2);
}

Test(matmul, gemm_blocks_agree_bitwise) {
  const char *names[] = {"scalar", "avx2", "avx512", "neon"};
  for (int bi = 0; bi < 4; bi++) {
    const sg_backend *be = sg_backend_get(names[bi]);
    if (!be) continue;
    blocks_agree(be, 77, 90, 300, 29, 37);
    blocks_agree(be, 77, 400, 200, 29, 150);
  }
}

/* ---- Threads ---------------------------------------------------------------------------- */

static void threads_agree(const int64_t *as, int ar, const int64_t *bs, int br, bool ta, bool tb) {
  int64_t live = t_live_tensors();
  int saved = sg_threads();
  sg_tensor *a = rand_t(as, ar, 5), *b = rand_t(bs, br, 6);
  sg_tensor *y[2], *g[2][2];
  for (int t = 0; t < 2; t++) {
    sg_set_threads(t + 1);
    sg_tape_begin();
    y[t] = sg_matmul(a, b, ta, tb);
    sg_tensor *xs[2] = {a, b};
    cr_assert_eq(sg_tape_end(y[t], NULL, xs, 2, g[t]), SG_OK, "%s", sg_last_error());
  }
  sg_set_threads(saved);
  cr_assert(memcmp(sg_data_f32(y[0]), sg_data_f32(y[1]), (size_t)sg_numel(y[0]) * 4) == 0);
  for (int k = 0; k < 2; k++)
    cr_assert(memcmp(sg_data_f32(g[0][k]), sg_data_f32(g[1][k]), (size_t)sg_numel(g[0][k]) * 4) ==
              0);
  for (int t = 0; t < 2; t++) {
    sg_dispose(y[t]);
    sg_dispose(g[t][0]);
    sg_dispose(g[t][1]);
  }
  sg_dispose(a);
  sg_dispose(b);
  cr_assert_eq(t_live_tensors(), live);
}

Test(matmul, one_and_two_threads_agree_bitwise) {
  int64_t as[] = {3, 150, 64}, bs[] = {64, 130};
  threads_agree(as, 3, bs, 2, false, false);
}

/* Large enough to be cut into several row blocks, and (few rows, many columns) column blocks;
   transposed operands and a broadcast batch for the backward's sums. */
Test(matmul, one_and_two_threads_agree_bitwise_in_blocks) {
  int64_t as[] = {600, 300}, bs[] = {300, 200};
  threads_agree(as, 2, bs, 2, false, false);
  int64_t ct[] = {300, 64}, dt[] = {1000, 300}; /* a^T b^T: 64 x 1000 */
  threads_agree(ct, 2, dt, 2, true, true);
  int64_t e[] = {24, 256}, f[] = {256, 900}; /* few rows: column blocks */
  threads_agree(e, 2, f, 2, false, false);
  int64_t g[] = {2, 40, 256}; /* dB sums over the batch inside each block */
  threads_agree(g, 3, f, 2, false, false);
}

/* Values of matmuls the engine cuts into blocks, against the double reference. */
Test(matmul, blocked_matmul_values) {
  int64_t live = t_live_tensors();
  int64_t as[] = {300, 280}, bs[] = {280, 260}; /* 300 x 260 over k = 280 */
  for (int t = 0; t < 4; t++) {
    bool ta = t & 1, tb = t & 2;
    int64_t a2[] = {ta ? as[1] : as[0], ta ? as[0] : as[1]};
    int64_t b2[] = {tb ? bs[1] : bs[0], tb ? bs[0] : bs[1]};
    sg_tensor *a = rand_t(a2, 2, 50 + (uint64_t)t), *b = rand_t(b2, 2, 60 + (uint64_t)t);
    expect_matches_ref(a, b, ta, tb);
    sg_dispose(a);
    sg_dispose(b);
  }
  cr_assert_eq(t_live_tensors(), live);
}
