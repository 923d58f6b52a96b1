/* Reduction tests: sum, mean, max, min, logsumexp over every axis set of a [2,3,4] tensor against
 * the double references (the op-info rows', opinfo/opinfo_reduce.c), keep_dims, rank 0, empty
 * axes, the NaN policy, argmax / argmin, gradients (gc_check and hand values), errors,
 * 1-vs-2-thread bit-identical results, and every backend's reduction kernels against the same
 * references. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

enum { SUM, MEAN, MAX, MIN, LSE, N_KINDS };
static const char *const kind_names[] = {"sum", "mean", "max", "min", "logsumexp"};
/* The op-info row whose reference each kind uses (mean: the sum's, divided by the count). */
static const char *const kind_rows[] = {"reduce_sum", "reduce_sum", "reduce_max", "reduce_min",
                                        "reduce_logsumexp"};

static double ref_reduce(int kind, const float *x, size_t r, size_t stride) {
  double y = t_row_ref(kind_rows[kind])->reduce(x, r, stride);
  return kind == MEAN ? y / (double)r : y;
}

static sg_tensor *reduce(int kind, sg_tensor *x, const int *axes, int n, bool keep) {
  switch (kind) {
  case SUM:
    return sg_sum(x, axes, n, keep);
  case MEAN:
    return sg_mean(x, axes, n, keep);
  case MAX:
    return sg_max(x, axes, n, keep);
  case MIN:
    return sg_min(x, axes, n, keep);
  default:
    return sg_logsumexp(x, axes, n, keep);
  }
}

/* Distinct values 0.25 apart in [-3, 2.75], in scrambled order (no ties: safe for max/min). */
static void fill_234(float *x) {
  for (int i = 0; i < 24; i++) x[i] = (float)((i * 7) % 24) * 0.25f - 3.0f;
}

/* The reduction of a [2,3,4] x over the axes in mask, in double (each output's elements
   gathered in row-major order, then reduced by the reference), output in row-major order of
   the kept axes. Returns the number of outputs. */
static int naive_234(int kind, const float *x, unsigned mask, double *out) {
  const int dims[3] = {2, 3, 4};
  int n_out = 1;
  for (int a = 0; a < 3; a++)
    if (!((mask >> a) & 1u)) n_out *= dims[a];
  float rows[24][24];
  size_t len[24] = {0};
  for (int i = 0; i < 24; i++) {
    int c[3] = {i / 12, (i / 4) % 3, i % 4}, o = 0;
    for (int a = 0; a < 3; a++)
      if (!((mask >> a) & 1u)) o = o * dims[a] + c[a];
    rows[o][len[o]++] = x[i];
  }
  for (int o = 0; o < n_out; o++) out[o] = ref_reduce(kind, rows[o], len[o], 1);
  return n_out;
}

Test(reduce, every_axis_set_of_a_rank3_tensor) {
  int64_t live = t_live_tensors();
  float xv[24];
  fill_234(xv);
  const int64_t dims[3] = {2, 3, 4};
  sg_tensor *x = t_f32(xv, 3, dims);
  for (int kind = 0; kind < N_KINDS; kind++)
    for (unsigned mask = 1; mask < 8; mask++)
      for (int form = 0; form < 3; form++) /* positive axes, negative axes, reversed order */
        for (int keep = 0; keep < 2; keep++) {
          int axes[3], n = 0;
          for (int a = 0; a < 3; a++)
            if ((mask >> a) & 1u) axes[n++] = form == 1 ? a - 3 : a;
          if (form == 2)
            for (int i = 0; i < n / 2; i++) {
              int t = axes[i];
              axes[i] = axes[n - 1 - i];
              axes[n - 1 - i] = t;
            }
          sg_tensor *y = reduce(kind, x, axes, n, keep);
          double want_d[24];
          int n_out = naive_234(kind, xv, mask, want_d);
          float want[24];
          for (int i = 0; i < n_out; i++) want[i] = (float)want_d[i];
          int64_t shape[3];
          int rank = 0;
          for (int a = 0; a < 3; a++)
            if (!((mask >> a) & 1u))
              shape[rank++] = dims[a];
            else if (keep)
              shape[rank++] = 1;
          cr_assert_not_null(y, "%s mask %u: %s", kind_names[kind], mask, sg_last_error());
          t_expect_f32(y, want, rank, shape, 1e-6, 1e-6);
          sg_dispose(y);
        }
  /* NULL axes and n_axes 0 both mean every axis. */
  for (int kind = 0; kind < N_KINDS; kind++) {
    double want_d;
    naive_234(kind, xv, 7u, &want_d);
    float want = (float)want_d;
    sg_tensor *a = reduce(kind, x, NULL, 0, false);
    int some[1] = {0};
    sg_tensor *b = reduce(kind, x, some, 0, false);
    sg_tensor *c = reduce(kind, x, NULL, 0, true);
    t_expect_f32(a, &want, 0, NULL, 1e-6, 1e-6);
    t_expect_f32(b, &want, 0, NULL, 1e-6, 1e-6);
    const int64_t ones[3] = {1, 1, 1};
    t_expect_f32(c, &want, 3, ones, 1e-6, 1e-6);
    sg_dispose(a);
    sg_dispose(b);
    sg_dispose(c);
  }
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live);
}

Test(reduce, size_one_axes_and_known_values) {
  int64_t live = t_live_tensors();
  /* [2,1,3]: reducing axes {0, 2} skips the size-1 axis between them. */
  float xv[] = {1, 2, 3, 4, 5, 6};
  const int64_t s[] = {2, 1, 3};
  sg_tensor *x = t_f32(xv, 3, s);
  int ax[] = {0, 2};
  sg_tensor *sum = sg_sum(x, ax, 2, true), *mean = sg_mean(x, ax, 2, false);
  int ax1[] = {1};
  sg_tensor *mx = sg_max(x, ax1, 1, false);
  const int64_t k[] = {1, 1, 1}, one[] = {1}, s23[] = {2, 3};
  t_expect_f32(sum, (float[]){21}, 3, k, 0, 0);
  t_expect_f32(mean, (float[]){3.5f}, 1, one, 0, 0);
  t_expect_f32(mx, xv, 2, s23, 0, 0);
  /* logsumexp stays finite where exp overflows or underflows. */
  float big[] = {1000, 1000, -1000, -1000};
  const int64_t s22[] = {2, 2};
  sg_tensor *b = t_f32(big, 2, s22);
  sg_tensor *lse = sg_logsumexp(b, (int[]){-1}, 1, false);
  const int64_t two[] = {2};
  t_expect_f32(lse, (float[]){1000.0f + (float)log(2.0), -1000.0f + (float)log(2.0)}, 1, two, 1e-4,
               0);
  sg_dispose(b);
  sg_dispose(lse);
  sg_dispose(sum);
  sg_dispose(mean);
  sg_dispose(mx);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live);
}

Test(reduce, rank0_input) {
  int64_t live = t_live_tensors();
  sg_tensor *x = sg_scalar(-2.5f);
  for (int kind = 0; kind < N_KINDS; kind++) {
    sg_tensor *y = reduce(kind, x, NULL, 0, true);
    t_expect_f32(y, (float[]){-2.5f}, 0, NULL, 0, 0);
    sg_dispose(y);
    t_expect_error(reduce(kind, x, (int[]){0}, 1, false), SG_ERR_ARG, kind_names[kind], "axis 0",
                   "[]", NULL);
  }
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live);
}

/* Empty reductions follow TensorFlow.js: sum 0, mean NaN (0 / 0), max -inf, min +inf,
   logsumexp -inf (the log of an empty sum). */
Test(reduce, empty_reduced_axis) {
  int64_t live = t_live_tensors();
  const int64_t s0[] = {0};
  sg_tensor *e = sg_zeros(s0, 1);
  const float want[N_KINDS] = {0.0f, NAN, -INFINITY, INFINITY, -INFINITY};
  for (int kind = 0; kind < N_KINDS; kind++) {
    sg_tensor *y = reduce(kind, e, NULL, 0, false);
    t_expect_f32(y, &want[kind], 0, NULL, 0, 0);
    sg_dispose(y);
  }
  /* [2,0]: over axis 1 every output sees nothing; over axis 0 the output itself is empty. */
  const int64_t s20[] = {2, 0}, two[] = {2}, zero[] = {0}, s10[] = {1, 0};
  sg_tensor *e2 = sg_zeros(s20, 2);
  for (int kind = 0; kind < N_KINDS; kind++) {
    sg_tensor *y = reduce(kind, e2, (int[]){1}, 1, false);
    float w2[2] = {want[kind], want[kind]};
    t_expect_f32(y, w2, 1, two, 0, 0);
    sg_dispose(y);
    y = reduce(kind, e2, (int[]){0}, 1, false);
    t_expect_f32(y, NULL, 1, zero, 0, 0);
    sg_dispose(y);
    y = reduce(kind, e2, (int[]){0}, 1, true);
    t_expect_f32(y, NULL, 2, s10, 0, 0);
    sg_dispose(y);
  }
  /* The gradient of an empty reduction is an empty tensor. */
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_sum(e2, NULL, 0, false), *g;
  cr_assert_eq(sg_tape_end(y, NULL, &e2, 1, &g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g, NULL, 2, s20, 0, 0);
  sg_dispose(g);
  sg_dispose(y);
  sg_dispose(e2);
  sg_dispose(e);
  cr_assert_eq(t_live_tensors(), live);
}

Test(reduce, nan_and_infinity_policy) {
  int64_t live = t_live_tensors();
  /* Rows: NaN first, middle, last; then +-inf mixes. Reduced over the last axis. */
  float xv[] = {NAN, 1,        2,         1,         NAN,       2,         1, 2,        NAN,
                1,   INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 1, INFINITY, 3};
  const int64_t s[] = {6, 3}, six[] = {6};
  sg_tensor *x = t_f32(xv, 2, s);
  sg_tensor *mx = sg_max(x, (int[]){1}, 1, false), *mn = sg_min(x, (int[]){1}, 1, false);
  sg_tensor *sm = sg_sum(x, (int[]){1}, 1, false), *lse = sg_logsumexp(x, (int[]){1}, 1, false);
  t_expect_f32(mx, (float[]){NAN, NAN, NAN, INFINITY, -INFINITY, INFINITY}, 1, six, 0, 0);
  t_expect_f32(mn, (float[]){NAN, NAN, NAN, -INFINITY, -INFINITY, 1}, 1, six, 0, 0);
  t_expect_f32(sm, (float[]){NAN, NAN, NAN, NAN, -INFINITY, INFINITY}, 1, six, 0, 0);
  t_expect_f32(lse, (float[]){NAN, NAN, NAN, INFINITY, -INFINITY, INFINITY}, 1, six, 0, 0);
  /* The same along a strided axis (inner > 1): NaN in the first and last row of the axis. */
  sg_tensor *mx0 = sg_max(x, (int[]){0}, 1, false);
  const int64_t three[] = {3};
  t_expect_f32(mx0, (float[]){NAN, NAN, NAN}, 1, three, 0, 0);
  /* Sums start from +0 (as TensorFlow's): a row of -0 sums to +0. */
  sg_tensor *nz = t_f32((float[]){-0.0f, -0.0f}, 1, (int64_t[]){2});
  sg_tensor *nzs = sg_sum(nz, NULL, 0, false);
  cr_assert(!signbit(sg_data_f32(nzs)[0]) && sg_data_f32(nzs)[0] == 0.0f);
  sg_tensor *objs[] = {mx, mn, sm, lse, mx0, nz, nzs, x};
  for (int i = 0; i < 8; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}

Test(reduce, argmax_argmin) {
  int64_t live = t_live_tensors();
  /* Ties give the first index; a NaN gives the first NaN's index. */
  float xv[] = {1,   3, 3,   0,   /* row 0: tie at max */
                NAN, 5, NAN, 9,   /* row 1: NaN first */
                2,   2, -1,  -1}; /* row 2: ties at both ends */
  const int64_t s[] = {3, 4};
  sg_tensor *x = t_f32(xv, 2, s);
  sg_tensor *amax = sg_argmax(x, 1), *amin = sg_argmin(x, -1);
  cr_assert_eq(sg_dtype_of(amax), SG_I32);
  cr_assert_eq(sg_rank(amax), 1);
  cr_assert_eq(sg_shape(amax)[0], 3);
  const int32_t *a = sg_data_i32(amax), *b = sg_data_i32(amin);
  cr_assert(a[0] == 1 && a[1] == 0 && a[2] == 0, "argmax %d %d %d", a[0], a[1], a[2]);
  cr_assert(b[0] == 3 && b[1] == 0 && b[2] == 2, "argmin %d %d %d", b[0], b[1], b[2]);
  /* Over axis 0 (strided): columns {1,NaN,2} {3,5,2} {3,NaN,-1} {0,9,-1}. */
  sg_tensor *amax0 = sg_argmax(x, 0), *amin0 = sg_argmin(x, -2);
  const int32_t *c = sg_data_i32(amax0), *d = sg_data_i32(amin0);
  cr_assert(c[0] == 1 && c[1] == 1 && c[2] == 1 && c[3] == 1);
  cr_assert(d[0] == 1 && d[1] == 2 && d[2] == 1 && d[3] == 2);
  /* No gradient flows through the i32 result, and nothing is recorded. */
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *am = sg_argmax(x, 1);
  sg_tensor *g;
  cr_assert_eq(sg_tape_end(x, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  sg_dispose(g);
  sg_dispose(am);
  /* Errors: bad axis, empty axis, rank 0, dtype. */
  t_expect_error(sg_argmax(x, 2), SG_ERR_ARG, "argmax", "axis 2", "[3,4]", NULL);
  t_expect_error(sg_argmin(x, -3), SG_ERR_ARG, "argmin", "axis -3", NULL);
  sg_tensor *e = sg_zeros((int64_t[]){2, 0}, 2), *sc = sg_scalar(1);
  t_expect_error(sg_argmax(e, 1), SG_ERR_SHAPE, "argmax", "[2,0]", NULL);
  t_expect_error(sg_argmax(sc, 0), SG_ERR_ARG, "argmax", NULL);
  sg_tensor *i = sg_tensor_i32((int32_t[]){1, 2}, (int64_t[]){2}, 1);
  t_expect_error(sg_argmin(i, 0), SG_ERR_DTYPE, "argmin", NULL);
  /* An empty output over a non-empty axis is fine. */
  sg_tensor *e3 = sg_zeros((int64_t[]){0, 3}, 2), *ae = sg_argmax(e3, 1);
  cr_assert_not_null(ae, "%s", sg_last_error());
  cr_assert_eq(sg_numel(ae), 0);
  sg_tensor *objs[] = {amax, amin, amax0, amin0, e, sc, i, e3, ae, x};
  for (int k = 0; k < 10; k++) sg_dispose(objs[k]);
  cr_assert_eq(t_live_tensors(), live);
}

Test(reduce, errors) {
  int64_t live = t_live_tensors();
  float xv[24];
  fill_234(xv);
  sg_tensor *x = t_f32(xv, 3, (int64_t[]){2, 3, 4});
  for (int kind = 0; kind < N_KINDS; kind++) {
    const char *nm = kind_names[kind];
    t_expect_error(reduce(kind, x, (int[]){3}, 1, false), SG_ERR_ARG, nm, "axis 3", "[2,3,4]",
                   NULL);
    t_expect_error(reduce(kind, x, (int[]){-4}, 1, false), SG_ERR_ARG, nm, "axis -4", NULL);
    t_expect_error(reduce(kind, x, (int[]){0, -3}, 2, false), SG_ERR_ARG, nm, "twice", NULL);
    t_expect_error(reduce(kind, x, (int[]){1, 2, 1}, 3, false), SG_ERR_ARG, nm, "twice", NULL);
    t_expect_error(reduce(kind, x, (int[]){0}, -1, false), SG_ERR_ARG, nm, "n_axes", NULL);
  }
  sg_tensor *i = sg_tensor_i32((int32_t[]){1, 2}, (int64_t[]){2}, 1);
  t_expect_error(sg_sum(i, NULL, 0, false), SG_ERR_DTYPE, "sum", "i32", NULL);
  /* NULL input: the first error is kept along a chain. */
  t_expect_error(sg_sum(sg_max(NULL, NULL, 0, false), NULL, 0, false), SG_ERR_ARG, "max", NULL);
  t_expect_error(sg_logsumexp(NULL, NULL, 0, false), SG_ERR_ARG, "logsumexp", NULL);
  sg_dispose(i);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live);
}

/* ---- Gradients ------------------------------------------------------------------------------- */

typedef struct rcase {
  int kind;
  int axes[3];
  int n;
  bool keep;
} rcase;

static sg_tensor *gc_reduce(sg_tensor *const *xs, void *arg) {
  const rcase *c = arg;
  return reduce(c->kind, xs[0], c->n ? c->axes : NULL, c->n, c->keep);
}

Test(reduce, gradients_match_finite_differences) {
  float xv[24];
  fill_234(xv);
  sg_tensor *x = t_f32(xv, 3, (int64_t[]){2, 3, 4});
  const rcase shapes[] = {
      {0, {0}, 0, false},   {0, {1}, 1, false},   {0, {0, 2}, 2, false}, {0, {-1}, 1, true},
      {0, {0, 1}, 2, true}, {0, {2, 0}, 2, true}, {0, {0}, 1, false},
  };
  for (int kind = 0; kind < N_KINDS; kind++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
      rcase c = shapes[s];
      c.kind = kind;
      char name[64];
      snprintf(name, sizeof name, "%s case %zu", kind_names[kind], s);
      /* Values are 0.25 apart, so h = 1e-3 never changes which element is the max or min. */
      gc_check(name, gc_reduce, &c, &x, 1, 1e-3, 2e-3);
    }
  sg_dispose(x);
}

/* Hand values: every tied maximum gets the full dy; mean scales by 1/count; logsumexp's
   gradient is the softmax. */
Test(reduce, gradient_hand_values) {
  int64_t live = t_live_tensors();
  sg_tensor *x = t_f32((float[]){1, 3, 3, 0, -2, 0}, 2, (int64_t[]){2, 3});
  sg_tensor *g[3];
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_max(x, (int[]){1}, 1, false);
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, g), SG_OK, "%s", sg_last_error());
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *m = sg_mean(x, NULL, 0, false);
  cr_assert_eq(sg_tape_end(m, NULL, &x, 1, g + 1), SG_OK, "%s", sg_last_error());
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *l = sg_logsumexp(x, (int[]){0, 1}, 2, false);
  cr_assert_eq(sg_tape_end(l, NULL, &x, 1, g + 2), SG_OK, "%s", sg_last_error());
  const int64_t s[] = {2, 3};
  t_expect_f32(g[0], (float[]){0, 1, 1, 1, 0, 1}, 2, s, 0, 0);
  float sixth = 1.0f / 6.0f;
  t_expect_f32(g[1], (float[]){sixth, sixth, sixth, sixth, sixth, sixth}, 2, s, 1e-7, 0);
  double z = exp(1) + 2 * exp(3) + 2 * exp(0) + exp(-2);
  float sm[6];
  const float xv[] = {1, 3, 3, 0, -2, 0};
  for (int i = 0; i < 6; i++) sm[i] = (float)(exp(xv[i]) / z);
  t_expect_f32(g[2], sm, 2, s, 1e-6, 1e-5);
  sg_tensor *objs[] = {x, y, m, l, g[0], g[1], g[2]};
  for (int i = 0; i < 7; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}

/* ---- Threads: bit-identical results for 1 and 2 threads -------------------------------------- */

static double rel_err(double got, double want) { return fabs(got - want) / fmax(1.0, fabs(want)); }

Test(reduce, one_and_two_threads_are_bit_identical) {
  int64_t live = t_live_tensors();
  int saved = sg_threads();
  const int64_t n = 1000000;
  sg_tensor *v = sg_random_uniform(&n, 1, -1.0f, 2.0f, 77);
  sg_tensor *m = sg_random_uniform((int64_t[]){1000, 1000}, 2, -1.0f, 2.0f, 78);
  const float *vd = sg_data_f32(v);
  double sa = 0;
  for (int64_t i = 0; i < n; i++) sa += fabs(vd[i]);
  for (int kind = 0; kind < N_KINDS; kind++) {
    sg_tensor *r[2][3];
    for (int t = 0; t < 2; t++) {
      sg_set_threads(t + 1);
      r[t][0] = reduce(kind, v, NULL, 0, false);
      r[t][1] = reduce(kind, m, (int[]){0}, 1, false); /* outer 1, inner 1000: split rows */
      r[t][2] = reduce(kind, m, (int[]){1}, 1, false); /* outer 1000 */
    }
    for (int j = 0; j < 3; j++) {
      cr_assert_not_null(r[0][j], "%s", sg_last_error());
      cr_assert(memcmp(sg_data_f32(r[0][j]), sg_data_f32(r[1][j]),
                       (size_t)sg_numel(r[0][j]) * sizeof(float)) == 0,
                "%s case %d differs between 1 and 2 threads", kind_names[kind], j);
    }
    double got = sg_data_f32(r[0][0])[0];
    double want = ref_reduce(kind, vd, (size_t)n, 1);
    double tol = kind == SUM ? 1e-6 * sa : kind == MEAN ? 1e-6 * sa / n : 1e-6;
    cr_assert(fabs(got - want) <= tol + 1e-6 * fabs(want), "%s: %.9g vs %.9g", kind_names[kind],
              got, want);
    /* The split-row path against a double loop over column 5. */
    double cw = ref_reduce(kind, sg_data_f32(m) + 5, 1000, 1000);
    cr_assert(rel_err(sg_data_f32(r[0][1])[5], cw) < 1e-5, "%s column: %.9g vs %.9g",
              kind_names[kind], sg_data_f32(r[0][1])[5], cw);
    for (int t = 0; t < 2; t++)
      for (int j = 0; j < 3; j++) sg_dispose(r[t][j]);
  }
  /* Gradients too (split rows in the backward). */
  sg_tensor *g[2];
  for (int t = 0; t < 2; t++) {
    sg_set_threads(t + 1);
    cr_assert_eq(sg_tape_begin(), SG_OK);
    sg_tensor *y = sg_logsumexp(m, (int[]){0}, 1, false);
    cr_assert_eq(sg_tape_end(y, NULL, &m, 1, &g[t]), SG_OK, "%s", sg_last_error());
    sg_dispose(y);
  }
  cr_assert(memcmp(sg_data_f32(g[0]), sg_data_f32(g[1]), sizeof(float) * 1000000) == 0);
  /* ... and right in every chunk: d logsumexp / dx is the softmax down each column. */
  const float *md = sg_data_f32(m), *gd = sg_data_f32(g[0]);
  double *sm = malloc(1000000 * sizeof *sm);
  for (int i = 0; i < 1000; i += 333) {
    t_row_ref("softmax")->map(md + i, 1000, 1000, sm + i);
    for (int k = 0; k < 1000; k++) {
      double w = sm[k * 1000 + i];
      cr_assert(fabs(gd[k * 1000 + i] - w) <= 1e-5 * w, "lse grad [%d,%d]: %.9g vs %.9g", k, i,
                gd[k * 1000 + i], w);
    }
  }
  free(sm);
  sg_dispose(g[1]);
  /* max over axis 1 (many row chunks): 1 at each row's maximum, 0 elsewhere. */
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *ym = sg_max(m, (int[]){1}, 1, false);
  cr_assert_eq(sg_tape_end(ym, NULL, &m, 1, &g[1]), SG_OK, "%s", sg_last_error());
  gd = sg_data_f32(g[1]);
  const opinfo_row_ref *rmx = t_row_ref("reduce_max");
  for (int k = 0; k < 1000; k++) {
    float rmax = sg_data_f32(ym)[k];
    for (int i = 0; i < 1000; i++)
      cr_assert_eq(gd[k * 1000 + i], (float)rmx->dx(1.0, md[k * 1000 + i], rmax));
  }
  sg_dispose(ym);
  sg_set_threads(saved);
  sg_dispose(g[0]);
  sg_dispose(g[1]);
  sg_dispose(v);
  sg_dispose(m);
  cr_assert_eq(t_live_tensors(), live);
}

/* ---- Kernel conformance: every backend against a double reference ---------------------------- */

static const char *const backends[] = {"scalar", "avx2", "avx512", "neon"};
static const size_t row_lengths[] = {0, 1, 7, 15, 16, 17, 31, 33, 1000, 100003};
static const size_t inners[] = {1, 3, 17};

static uint64_t lcg(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

/* Uniform in [-3, 3]. */
static float rnd(uint64_t *s) { return (float)((double)lcg(s) / 2147483648.0 * 6.0 - 3.0); }

static void check_reduce_kernels(const sg_backend *be, size_t outer, size_t r, size_t inner,
                                 bool with_nan) {
  size_t n = outer * r * inner, m = outer * inner;
  float *x = malloc((n ? n : 1) * sizeof *x), *dx = malloc((n ? n : 1) * sizeof *dx);
  float *y = malloc(m * sizeof *y), *dy = malloc(m * sizeof *dy),
        *ref = malloc(m * 4 * sizeof *ref);
  int32_t *idx = malloc(m * sizeof *idx);
  uint64_t seed = r * 31 + inner;
  for (size_t i = 0; i < n; i++) x[i] = rnd(&seed);
  for (size_t i = 0; i < m; i++) dy[i] = rnd(&seed);
  if (with_nan && r > 0) {
    x[(r - 1) * inner] = NAN;                    /* output 0: NaN in the last row (tail) */
    if (inner > 1) x[(r / 2) * inner + 1] = NAN; /* output 1: NaN in the middle */
  }
  /* ref: sum, max, min, logsumexp per output, by the op-info rows' double references (NaN
     policy: opinfo_row_ref), rounded to float; the indices argmax / argmin must give. */
  const char *names[4] = {"reduce_sum", "reduce_max", "reduce_min", "reduce_logsumexp"};
  const opinfo_row_ref *rr[4], *ra[2] = {t_row_ref("argmax"), t_row_ref("argmin")};
  for (int kk = 0; kk < 4; kk++) rr[kk] = t_row_ref(names[kk]);
  double *abs_sum = malloc(m * sizeof *abs_sum);
  int32_t *want_idx[2] = {malloc(m * sizeof(int32_t)), malloc(m * sizeof(int32_t))};
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < inner; i++) {
      size_t q = o * inner + i;
      const float *row = x + o * r * inner + i;
      double sa = 0; /* sum's bound */
      for (size_t k = 0; k < r; k++) sa += fabs(row[k * inner]);
      abs_sum[q] = sa;
      for (int kk = 0; kk < 4; kk++) ref[kk * m + q] = (float)rr[kk]->reduce(row, r, inner);
      for (int a = 0; a < 2; a++) want_idx[a][q] = (int32_t)ra[a]->arg(row, r, inner);
    }
  sg_reduce_kernel fwd[4] = {be->reduce_sum, be->reduce_max, be->reduce_min, be->reduce_logsumexp};
  sg_reduce_backward_kernel bwd[4] = {be->reduce_sum_backward, be->reduce_max_backward,
                                      be->reduce_min_backward, be->reduce_logsumexp_backward};
  for (int kk = 0; kk < 4; kk++) {
    fwd[kk](x, outer, r, inner, y);
    for (size_t q = 0; q < m; q++) {
      float w = ref[kk * m + q], g = y[q];
      double tol = kk == 0 ? 1e-6 * abs_sum[q] + 1e-6 : kk == 3 ? 2e-6 * fabs(w) + 2e-6 : 0;
      bool ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs((double)g - w) <= tol;
      cr_assert(ok, "%s %s outer %zu r %zu inner %zu nan %d: out %zu is %.9g, want %.9g", be->name,
                names[kk], outer, r, inner, with_nan, q, g, w);
    }
    if (with_nan && kk != 0) continue; /* backward kernels are checked on finite data */
    /* Backward from the reference y. */
    for (size_t q = 0; q < m; q++) y[q] = ref[kk * m + q];
    bwd[kk](dy, x, y, outer, r, inner, dx);
    for (size_t o = 0; o < outer; o++)
      for (size_t k = 0; k < r; k++)
        for (size_t i = 0; i < inner; i++) {
          size_t at = (o * r + k) * inner + i, q = o * inner + i;
          double w = rr[kk]->dx(dy[q], x[at], y[q]);
          double tol = kk == 3 ? 2e-6 * fabs(w) + 1e-7 : 0;
          cr_assert(fabs(dx[at] - w) <= tol || (isnan(w) && isnan(dx[at])),
                    "%s %s_backward r %zu inner %zu: dx[%zu] is %.9g, want %.9g", be->name,
                    names[kk], r, inner, at, dx[at], w);
        }
  }
  if (r > 0) {
    sg_arg_reduce_kernel ak[2] = {be->argmax, be->argmin};
    for (int a = 0; a < 2; a++) {
      ak[a](x, outer, r, inner, idx);
      for (size_t q = 0; q < m; q++)
        cr_assert_eq(idx[q], want_idx[a][q], "%s %s r %zu inner %zu nan %d: out %zu is %d, want %d",
                     be->name, a ? "argmin" : "argmax", r, inner, with_nan, q, idx[q],
                     want_idx[a][q]);
    }
  }
  free(x);
  free(dx);
  free(y);
  free(dy);
  free(ref);
  free(idx);
  free(abs_sum);
  free(want_idx[0]);
  free(want_idx[1]);
}

Test(reduce, kernels_of_every_backend_match_the_reference) {
  int tested = 0;
  for (size_t b = 0; b < sizeof backends / sizeof backends[0]; b++) {
    const sg_backend *be = sg_backend_get(backends[b]);
    if (!be) continue;
    tested++;
    for (size_t ri = 0; ri < sizeof row_lengths / sizeof row_lengths[0]; ri++)
      for (size_t ii = 0; ii < sizeof inners / sizeof inners[0]; ii++) {
        size_t r = row_lengths[ri], inner = inners[ii];
        check_reduce_kernels(be, 2, r, inner, false);
        check_reduce_kernels(be, 2, r, inner, true);
      }
    /* Ties: argmax / argmin take the first, max_backward gives every tie the full dy. */
    float t[40], dyv[1] = {2}, out[40], yv;
    int32_t id;
    for (int i = 0; i < 40; i++) t[i] = (i % 13 == 5) ? 4.0f : (i % 13 == 9 ? -4.0f : 0.5f);
    be->argmax(t, 1, 40, 1, &id);
    cr_assert_eq(id, 5, "%s argmax tie", be->name);
    be->argmin(t, 1, 40, 1, &id);
    cr_assert_eq(id, 9, "%s argmin tie", be->name);
    be->reduce_max(t, 1, 40, 1, &yv);
    be->reduce_max_backward(dyv, t, &yv, 1, 40, 1, out);
    for (int i = 0; i < 40; i++) cr_assert_eq(out[i], t[i] == 4.0f ? 2.0f : 0.0f);
  }
  cr_assert_geq(tested, 1);
}
