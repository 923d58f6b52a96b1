/* Neural-net op tests: softmax and log_softmax (known values, extreme logits, every axis,
 * gradients), softmax_cross_entropy (hand values, gradients for labels and logits), errors,
 * empty tensors, thread-count independence, and every backend's kernels against the double
 * references of the op-info rows (opinfo/opinfo_reduce.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* softmax (or log_softmax) of a row-major [outer, r, inner] array in double: the op-info rows'
   reference (opinfo/opinfo_reduce.c; a row holding a NaN is NaN throughout) on every row. */
static void ref_softmax(const float *x, int outer, int r, int inner, bool log_form, double *y) {
  const opinfo_row_ref *rf = t_row_ref(log_form ? "log_softmax" : "softmax");
  for (int o = 0; o < outer; o++)
    for (int i = 0; i < inner; i++)
      rf->map(x + (size_t)o * r * inner + i, (size_t)r, (size_t)inner,
              y + (size_t)o * r * inner + i);
}

Test(nn, softmax_and_log_softmax_over_every_axis) {
  int64_t live = t_live_tensors();
  float xv[24];
  for (int i = 0; i < 24; i++) xv[i] = (float)((i * 5) % 24) * 0.3f - 3.0f;
  const int64_t s[] = {2, 3, 4};
  sg_tensor *x = t_f32(xv, 3, s);
  for (int axis = -3; axis < 3; axis++)
    for (int lf = 0; lf < 2; lf++) {
      int a = axis < 0 ? axis + 3 : axis;
      int outer = 1, inner = 1;
      for (int i = 0; i < a; i++) outer *= (int)s[i];
      for (int i = a + 1; i < 3; i++) inner *= (int)s[i];
      double want_d[24];
      float want[24];
      ref_softmax(xv, outer, (int)s[a], inner, lf, want_d);
      for (int i = 0; i < 24; i++) want[i] = (float)want_d[i];
      sg_tensor *y = lf ? sg_log_softmax(x, axis) : sg_softmax(x, axis);
      t_expect_f32(y, want, 3, s, 1e-6, 1e-6);
      sg_dispose(y);
    }
  /* Known values: softmax([1, 2, 3]). */
  sg_tensor *v = t_f32((float[]){1, 2, 3}, 1, (int64_t[]){3});
  sg_tensor *sm = sg_softmax(v, 0), *lsm = sg_log_softmax(v, -1);
  double z = exp(1) + exp(2) + exp(3);
  t_expect_f32(sm, (float[]){(float)(exp(1) / z), (float)(exp(2) / z), (float)(exp(3) / z)}, 1,
               (int64_t[]){3}, 1e-7, 1e-6);
  t_expect_f32(lsm, (float[]){(float)(1 - log(z)), (float)(2 - log(z)), (float)(3 - log(z))}, 1,
               (int64_t[]){3}, 1e-6, 1e-6);
  sg_tensor *objs[] = {x, v, sm, lsm};
  for (int i = 0; i < 4; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}

/* Rows sum to 1 whatever the logits' size; a -inf logit gets probability 0; a row of only -inf
   (no defined softmax) or with a NaN is NaN throughout. */
Test(nn, extreme_logits) {
  int64_t live = t_live_tensors();
  float xv[] = {1e30f,     0,         -1e30f, /* */
                1e30f,     1e30f,     1e30f,  /* */
                0,         -INFINITY, 0,      /* */
                -1e30f,    -1e30f,    5e29f,  /* */
                -INFINITY, -INFINITY, -INFINITY, 1, NAN, 2};
  const int64_t s[] = {6, 3};
  sg_tensor *x = t_f32(xv, 2, s);
  sg_tensor *sm = sg_softmax(x, 1), *lsm = sg_log_softmax(x, -1);
  const float third = 1.0f / 3.0f;
  t_expect_f32(
      sm,
      (float[]){1, 0, 0, third, third, third, 0.5f, 0, 0.5f, 0, 0, 1, NAN, NAN, NAN, NAN, NAN, NAN},
      2, s, 1e-7, 1e-6);
  float l3 = (float)-log(3.0), l2 = (float)-log(2.0);
  t_expect_f32(lsm,
               (float[]){0, -1e30f, -2e30f, l3, l3, l3, l2, -INFINITY, l2, -1.5e30f, -1.5e30f, 0,
                         NAN, NAN, NAN, NAN, NAN, NAN},
               2, s, 1e-6, 1e-6);
  /* log_softmax keeps precision where softmax underflows: [1000, 0] -> [0, -1000]. */
  sg_tensor *b = t_f32((float[]){1000, 0}, 1, (int64_t[]){2});
  sg_tensor *lb = sg_log_softmax(b, 0);
  t_expect_f32(lb, (float[]){0, -1000}, 1, (int64_t[]){2}, 1e-6, 1e-7);
  sg_tensor *objs[] = {x, sm, lsm, b, lb};
  for (int i = 0; i < 5; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}

/* loss = mean over rows of -sum(labels * log_softmax(logits)), each row's by the op-info
   references (at most 16 classes). */
static double ref_ce(const float *labels, const float *logits, int rows, int classes) {
  const opinfo_row_ref *ce = t_row_ref("softmax_cross_entropy");
  double total = 0, lp[16];
  cr_assert(classes <= 16);
  for (int r = 0; r < rows; r++) {
    ref_softmax(logits + r * classes, 1, classes, 1, true, lp);
    total += ce->loss(labels + r * classes, lp, (size_t)classes, 1);
  }
  return total / rows;
}

Test(nn, cross_entropy_hand_values) {
  int64_t live = t_live_tensors();
  /* One-hot row: -log_softmax at the label; soft row by hand. */
  float lab[] = {0, 1, 0, 0.2f, 0.3f, 0.5f}, lg[] = {1, 2, 3, 0.5f, -1, 2};
  const int64_t s[] = {2, 3};
  sg_tensor *labels = t_f32(lab, 2, s), *logits = t_f32(lg, 2, s);
  sg_tensor *loss = sg_softmax_cross_entropy(labels, logits);
  double lse0 = log(exp(1) + exp(2) + exp(3)), lse1 = log(exp(0.5) + exp(-1) + exp(2));
  double row0 = lse0 - 2, row1 = -(0.2 * (0.5 - lse1) + 0.3 * (-1 - lse1) + 0.5 * (2 - lse1));
  float want = (float)((row0 + row1) / 2);
  t_expect_f32(loss, &want, 0, NULL, 1e-6, 1e-6);
  cr_assert(fabs(want - ref_ce(lab, lg, 2, 3)) < 1e-6);
  /* Rank 3: the mean runs over both leading dims; rank 1 is a single row. */
  float lab3[12], lg3[12];
  for (int i = 0; i < 12; i++) {
    lab3[i] = (i % 3 == i / 3 % 3) ? 1.0f : 0.0f;
    lg3[i] = (float)i * 0.37f - 2.0f;
  }
  const int64_t s3[] = {2, 2, 3};
  sg_tensor *l3 = t_f32(lab3, 3, s3), *g3 = t_f32(lg3, 3, s3);
  sg_tensor *loss3 = sg_softmax_cross_entropy(l3, g3);
  float want3 = (float)ref_ce(lab3, lg3, 4, 3);
  t_expect_f32(loss3, &want3, 0, NULL, 1e-6, 1e-6);
  sg_tensor *l1 = t_f32(lab, 1, (int64_t[]){3}), *g1 = t_f32(lg, 1, (int64_t[]){3});
  sg_tensor *loss1 = sg_softmax_cross_entropy(l1, g1);
  float want1 = (float)row0;
  t_expect_f32(loss1, &want1, 0, NULL, 1e-6, 1e-6);
  /* Gradients by hand: dlogits = (softmax - labels) / rows, dlabels = -log_softmax / rows. */
  sg_tensor *xs[2] = {labels, logits}, *g[2];
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *l = sg_softmax_cross_entropy(labels, logits);
  cr_assert_eq(sg_tape_end(l, NULL, xs, 2, g), SG_OK, "%s", sg_last_error());
  double lsm[6];
  ref_softmax(lg, 2, 3, 1, true, lsm);
  float wl[6], wg[6];
  for (int i = 0; i < 6; i++) { /* dloss = 1 / rows */
    wl[i] = (float)t_row_ref("softmax_cross_entropy_backward:dlabels")->dx(0.5, lab[i], lsm[i]);
    wg[i] = (float)t_row_ref("softmax_cross_entropy")->dx(0.5, lab[i], lsm[i]);
  }
  t_expect_f32(g[0], wl, 2, s, 1e-6, 1e-6);
  t_expect_f32(g[1], wg, 2, s, 1e-6, 1e-6);
  sg_tensor *objs[] = {labels, logits, loss, l3, g3, loss3, l1, g1, loss1, l, g[0], g[1]};
  for (int i = 0; i < 12; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}

Test(nn, empty_tensors) {
  int64_t live = t_live_tensors();
  const int64_t s03[] = {0, 3}, s20[] = {2, 0};
  sg_tensor *a = sg_zeros(s03, 2), *b = sg_zeros(s20, 2);
  sg_tensor *sa = sg_softmax(a, 1), *sb = sg_log_softmax(b, 1);
  t_expect_f32(sa, NULL, 2, s03, 0, 0);
  t_expect_f32(sb, NULL, 2, s20, 0, 0);
  /* No rows: the mean is 0 / 0 = NaN. No classes: each row's loss is an empty sum, 0. */
  sg_tensor *ca = sg_softmax_cross_entropy(a, a), *cb = sg_softmax_cross_entropy(b, b);
  t_expect_f32(ca, (float[]){NAN}, 0, NULL, 0, 0);
  t_expect_f32(cb, (float[]){0}, 0, NULL, 0, 0);
  sg_tensor *objs[] = {a, b, sa, sb, ca, cb};
  for (int i = 0; i < 6; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}

Test(nn, errors) {
  int64_t live = t_live_tensors();
  sg_tensor *x = t_f32((float[]){1, 2, 3, 4, 5, 6}, 2, (int64_t[]){2, 3});
  sg_tensor *y = t_f32((float[]){1, 2, 3, 4, 5, 6}, 2, (int64_t[]){3, 2});
  sg_tensor *i = sg_tensor_i32((int32_t[]){1, 2, 3, 4, 5, 6}, (int64_t[]){2, 3}, 2);
  sg_tensor *sc = sg_scalar(1);
  t_expect_error(sg_softmax(x, 2), SG_ERR_ARG, "softmax", "axis 2", "[2,3]", NULL);
  t_expect_error(sg_log_softmax(x, -3), SG_ERR_ARG, "log_softmax", "axis -3", NULL);
  t_expect_error(sg_softmax(sc, 0), SG_ERR_ARG, "softmax", NULL);
  t_expect_error(sg_softmax(i, 0), SG_ERR_DTYPE, "softmax", NULL);
  t_expect_error(sg_softmax_cross_entropy(x, y), SG_ERR_SHAPE, "softmax_cross_entropy", "[2,3]",
                 "[3,2]", NULL);
  t_expect_error(sg_softmax_cross_entropy(i, x), SG_ERR_DTYPE, "labels", NULL);
  t_expect_error(sg_softmax_cross_entropy(x, i), SG_ERR_DTYPE, "logits", NULL);
  t_expect_error(sg_softmax_cross_entropy(sc, sc), SG_ERR_SHAPE, "rank", NULL);
  t_expect_error(sg_softmax_cross_entropy(NULL, x), SG_ERR_ARG, "labels", NULL);
  /* The first error is kept along a chain. */
  t_expect_error(sg_softmax_cross_entropy(x, sg_softmax(x, 5)), SG_ERR_ARG, "softmax: axis 5",
                 NULL);
  sg_tensor *objs[] = {x, y, i, sc};
  for (int k = 0; k < 4; k++) sg_dispose(objs[k]);
  cr_assert_eq(t_live_tensors(), live);
}

/* ---- Gradients ------------------------------------------------------------------------------- */

typedef struct sm_case {
  bool log_form;
  int axis;
} sm_case;

static sg_tensor *gc_softmax(sg_tensor *const *xs, void *arg) {
  const sm_case *c = arg;
  return c->log_form ? sg_log_softmax(xs[0], c->axis) : sg_softmax(xs[0], c->axis);
}

static sg_tensor *gc_ce(sg_tensor *const *xs, void *arg) {
  (void)arg;
  return sg_softmax_cross_entropy(xs[0], xs[1]);
}

Test(nn, gradients_match_finite_differences) {
  sg_tensor *x = sg_random_uniform((int64_t[]){2, 3, 4}, 3, -2.0f, 2.0f, 5);
  for (int lf = 0; lf < 2; lf++)
    for (int axis = -1; axis < 3; axis++) {
      sm_case c = {lf, axis};
      char name[64];
      snprintf(name, sizeof name, "%s axis %d", lf ? "log_softmax" : "softmax", axis);
      gc_check(name, gc_softmax, &c, &x, 1, 1e-3, 2e-3);
    }
  /* Labels rows sum to 1 (the logits gradient softmax - labels assumes it). */
  float lab[24];
  const float *u = NULL;
  sg_tensor *raw = sg_random_uniform((int64_t[]){2, 3, 4}, 3, 0.1f, 1.0f, 6);
  u = sg_data_f32(raw);
  for (int r = 0; r < 6; r++) {
    double s = 0;
    for (int c = 0; c < 4; c++) s += u[r * 4 + c];
    for (int c = 0; c < 4; c++) lab[r * 4 + c] = (float)(u[r * 4 + c] / s);
  }
  sg_tensor *xs[2] = {t_f32(lab, 3, (int64_t[]){2, 3, 4}), x};
  gc_check("softmax_cross_entropy", gc_ce, NULL, xs, 2, 1e-3, 2e-3);
  sg_dispose(xs[0]);
  sg_dispose(raw);
  sg_dispose(x);
}

/* ---- Threads --------------------------------------------------------------------------------- */

Test(nn, one_and_two_threads_are_bit_identical) {
  int64_t live = t_live_tensors();
  int saved = sg_threads();
  const int64_t s[] = {3000, 100};
  sg_tensor *x = sg_random_uniform(s, 2, -5.0f, 5.0f, 9);
  sg_tensor *lab = sg_softmax(x, 1);
  sg_tensor *r[2][4];
  for (int t = 0; t < 2; t++) {
    sg_set_threads(t + 1);
    r[t][0] = sg_softmax(x, 1);
    r[t][1] = sg_log_softmax(x, 0);
    r[t][2] = sg_softmax_cross_entropy(lab, x);
    sg_tensor *g[2];
    sg_tensor *xs[2] = {lab, x};
    cr_assert_eq(sg_tape_begin(), SG_OK);
    sg_tensor *l = sg_softmax_cross_entropy(lab, x);
    cr_assert_eq(sg_tape_end(l, NULL, xs, 2, g), SG_OK, "%s", sg_last_error());
    r[t][3] = g[1];
    sg_dispose(g[0]);
    sg_dispose(l);
  }
  /* The softmax backward over many row chunks, against a double loop on a few rows. */
  sg_tensor *w = sg_random_uniform(s, 2, -1.0f, 1.0f, 10), *gs;
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *ys = sg_softmax(x, -1);
  cr_assert_eq(sg_tape_end(ys, w, &x, 1, &gs), SG_OK, "%s", sg_last_error());
  const float *yd = sg_data_f32(ys), *wd = sg_data_f32(w), *gd = sg_data_f32(gs);
  for (int row = 0; row < 3000; row += 997) {
    double dot = 0;
    for (int c = 0; c < 100; c++) dot += (double)wd[row * 100 + c] * yd[row * 100 + c];
    for (int c = 0; c < 100; c++) {
      int at = row * 100 + c;
      double want = yd[at] * (wd[at] - dot);
      cr_assert(fabs(gd[at] - want) <= 1e-6 + 1e-5 * fabs(want), "row %d: %.9g vs %.9g", row,
                gd[at], want);
    }
  }
  sg_dispose(w);
  sg_dispose(ys);
  sg_dispose(gs);
  for (int j = 0; j < 4; j++)
    cr_assert(memcmp(sg_data_f32(r[0][j]), sg_data_f32(r[1][j]),
                     (size_t)sg_numel(r[0][j]) * sizeof(float)) == 0,
              "result %d differs between 1 and 2 threads", j);
  sg_set_threads(saved);
  for (int t = 0; t < 2; t++)
    for (int j = 0; j < 4; j++) sg_dispose(r[t][j]);
  sg_dispose(lab);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live);
}

/* ---- Kernel conformance: every backend against a double reference ---------------------------- */

static const char *const backends[] = {"scalar", "avx2", "avx512", "neon"};
static const size_t row_lengths[] = {0, 1, 7, 15, 16, 17, 31, 33, 1000, 100003};
static const size_t inners[] = {1, 17};

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static float rnd(uint64_t *s, float scale) {
  return (float)(((double)lcg(s) / 2147483648.0 * 2.0 - 1.0) * scale);
}

static bool close_to(float got, double want, double atol, double rtol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= atol + rtol * fabs(want);
}

static void check_softmax_kernels(const sg_backend *be, size_t outer, size_t r, size_t inner,
                                  bool with_nan) {
  size_t n = outer * r * inner, cap = n ? n : 1;
  float *x = malloc(cap * 4), *y = malloc(cap * 4), *dy = malloc(cap * 4), *dx = malloc(cap * 4);
  double *ref = malloc(cap * sizeof(double)), *want = malloc(cap * sizeof(double));
  uint64_t seed = r * 7 + inner;
  for (size_t i = 0; i < n; i++) {
    x[i] = rnd(&seed, 8.0f);
    dy[i] = rnd(&seed, 1.0f);
  }
  if (with_nan && r > 0) x[(r - 1) * inner] = NAN; /* the tail of column 0 in outer 0 */
  for (int lf = 0; lf < 2; lf++) {
    const char *name = lf ? "log_softmax" : "softmax";
    (lf ? be->log_softmax : be->softmax)(x, outer, r, inner, y);
    ref_softmax(x, (int)outer, (int)r, (int)inner, lf, ref);
    for (size_t i = 0; i < n; i++) {
      /* A NaN row: NaN throughout (as the double reference gives it). */
      bool nan_row = with_nan && i < r * inner && i % inner == 0;
      double w = nan_row ? NAN : ref[i];
      cr_assert(close_to(y[i], w, 1e-6, 1e-5),
                "%s %s r %zu inner %zu nan %d: y[%zu] %.9g want %.9g", be->name, name, r, inner,
                with_nan, i, y[i], w);
    }
    if (with_nan) continue;
    /* Backward from the reference output, against the reference backward from the
       probabilities of that float y (held in ref). */
    for (size_t i = 0; i < n; i++) y[i] = (float)ref[i];
    (lf ? be->log_softmax_backward : be->softmax_backward)(dy, y, outer, r, inner, dx);
    for (size_t i = 0; i < n; i++) ref[i] = lf ? exp((double)y[i]) : y[i];
    const opinfo_row_ref *rf = t_row_ref(name);
    for (size_t o = 0; o < outer; o++)
      for (size_t i = 0; i < inner; i++) {
        size_t row = o * r * inner + i;
        rf->map_backward(dy + row, ref + row, r, inner, want + row);
        double sa = 0; /* the bound's magnitude */
        for (size_t k = 0; k < r; k++) {
          size_t at = (o * r + k) * inner + i;
          sa += fabs(lf ? dy[at] : (double)dy[at] * y[at]);
        }
        for (size_t k = 0; k < r; k++) {
          size_t at = (o * r + k) * inner + i;
          double w = want[at];
          double tol = 1e-6 + 1e-6 * sa * (lf ? exp((double)y[at]) : y[at]);
          cr_assert(fabs(dx[at] - w) <= tol + 1e-5 * fabs(w),
                    "%s %s_backward r %zu inner %zu: dx[%zu] %.9g want %.9g", be->name, name, r,
                    inner, at, dx[at], w);
        }
      }
  }
  free(x);
  free(y);
  free(dy);
  free(dx);
  free(ref);
  free(want);
}

static void check_ce_kernels(const sg_backend *be, size_t rows, size_t classes) {
  size_t n = rows * classes, cap = n ? n : 1;
  float *lab = malloc(cap * 4), *lg = malloc(cap * 4), *lp = malloc(cap * 4);
  float *dlab = malloc(cap * 4), *dlg = malloc(cap * 4), *loss = malloc(rows * 4);
  float dloss[3] = {0.5f, -1.25f, 2.0f};
  double *ref = malloc(cap * sizeof(double));
  uint64_t seed = classes * 13 + 1;
  for (size_t r = 0; r < rows; r++) {
    double s = 0;
    for (size_t c = 0; c < classes; c++) {
      lab[r * classes + c] = fabsf(rnd(&seed, 1.0f));
      s += lab[r * classes + c];
      lg[r * classes + c] = rnd(&seed, 10.0f);
    }
    for (size_t c = 0; c < classes; c++) lab[r * classes + c] = (float)(lab[r * classes + c] / s);
  }
  be->softmax_cross_entropy(lab, lg, rows, classes, loss, lp);
  const opinfo_row_ref *lps = t_row_ref("softmax_cross_entropy:log_probs");
  const opinfo_row_ref *ce = t_row_ref("softmax_cross_entropy");
  const opinfo_row_ref *dlabels = t_row_ref("softmax_cross_entropy_backward:dlabels");
  for (size_t r = 0; r < rows; r++) lps->map(lg + r * classes, classes, 1, ref + r * classes);
  for (size_t r = 0; r < rows; r++) {
    double l = ce->loss(lab + r * classes, ref + r * classes, classes, 1), la = 0;
    for (size_t c = 0; c < classes; c++) {
      size_t at = r * classes + c;
      cr_assert(close_to(lp[at], ref[at], 1e-5, 1e-5),
                "%s ce classes %zu: log_probs[%zu] %.9g "
                "want %.9g",
                be->name, classes, at, lp[at], ref[at]);
      la += fabs(lab[at] * ref[at]);
    }
    cr_assert(close_to(loss[r], l, 1e-5 + 1e-6 * la, 1e-5),
              "%s ce classes %zu: loss[%zu] %.9g "
              "want %.9g",
              be->name, classes, r, loss[r], l);
  }
  for (size_t i = 0; i < n; i++) lp[i] = (float)ref[i];
  be->softmax_cross_entropy_backward(dloss, lab, lp, rows, classes, dlab, dlg);
  for (size_t i = 0; i < n; i++) {
    double g = dloss[i / classes];
    double wl = dlabels->dx(g, lab[i], lp[i]), wg = ce->dx(g, lab[i], lp[i]);
    cr_assert(close_to(dlab[i], wl, 1e-6, 1e-6) && close_to(dlg[i], wg, 1e-6, 1e-5),
              "%s ce_backward classes %zu at %zu: %.9g %.9g want %.9g %.9g", be->name, classes, i,
              dlab[i], dlg[i], wl, wg);
  }
  /* Either output may be NULL. */
  memset(dlg, 0, cap * 4);
  be->softmax_cross_entropy_backward(dloss, lab, lp, rows, classes, NULL, dlg);
  for (size_t i = 0; i < n; i++)
    cr_assert(close_to(dlg[i], ce->dx(dloss[i / classes], lab[i], lp[i]), 1e-6, 1e-5));
  be->softmax_cross_entropy_backward(dloss, lab, lp, rows, classes, dlab, NULL);
  free(lab);
  free(lg);
  free(lp);
  free(dlab);
  free(dlg);
  free(loss);
  free(ref);
}

Test(nn, kernels_of_every_backend_match_the_reference) {
  int tested = 0;
  for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
    const sg_backend *be = sg_backend_get(backends[b]);
    if (!be) continue;
    tested++;
    for (size_t ri = 0; ri < sizeof row_lengths / sizeof row_lengths[0]; ri++) {
      for (size_t ii = 0; ii < sizeof inners / sizeof inners[0]; ii++) {
        check_softmax_kernels(be, 2, row_lengths[ri], inners[ii], false);
        check_softmax_kernels(be, 2, row_lengths[ri], inners[ii], true);
      }
      check_ce_kernels(be, 3, row_lengths[ri]);
    }
  }
  cr_assert_geq(tested, 1);
}
