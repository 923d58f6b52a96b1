/* Tests of the broadcasting binary ops, the comparisons and where: known values for every
 * broadcast pattern (against an index-by-index reference in double), errors, the NaN policy,
 * gradients (hand values and finite differences), the scalar kernels against the op-info rows'
 * double references, and thread-count independence. Every backend's kernels against the scalar
 * ones are tests/test_conformance_binary.c's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "opinfo.h"
#include "support.h"

/* ---- The ops and their op-info rows ------------------------------------------------------- */

typedef sg_tensor *(*binary_fn)(sg_tensor *, sg_tensor *);

/* An op through the engine; its double reference, input ranges and bound against it are its
   op-info row (opinfo/opinfo_binary.c). */
typedef struct op_case {
  const char *name;
  binary_fn fn;
  bool compare;
} op_case;

#define BINARY_(nm, doc) {#nm, sg_##nm, false},
#define COMPARE_(nm, doc) {#nm, sg_##nm, true},
static const op_case k_ops[] = {SG_FOR_EACH_BINARY_OP(BINARY_) SG_FOR_EACH_COMPARE_OP(COMPARE_)};
#define N_OPS (sizeof k_ops / sizeof k_ops[0])

/* No row, no test: tests/test_opinfo.c names the missing row too. */
static const opinfo_binary *row(const char *name) {
  const opinfo_binary *r = opinfo_binary_find(name);
  cr_assert_not_null(r, "no op-info row for %s (opinfo/opinfo_binary.c)", name);
  return r;
}

/* Deterministic values; comparisons get integers so that equal pairs occur. */
static uint64_t g_rng = 88172645463325252ull;
static float rnd(float lo, float hi) {
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
  return lo + (hi - lo) * (float)((g_rng >> 40) * (1.0 / 16777216.0));
}

static int64_t numel_of(const int64_t *shape, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  return n;
}

/* Element of an operand (shape, rank) that output element `flat` (of out, out_rank) reads,
   straight from the NumPy rules: align right, size-1 dimensions repeat. */
static int64_t ref_index(int64_t flat, const int64_t *out, int out_rank, const int64_t *shape,
                         int rank) {
  int64_t idx = 0, stride = 1;
  for (int d = out_rank - 1; d >= 0; d--) {
    int64_t i = flat % out[d];
    flat /= out[d];
    int kd = d - (out_rank - rank);
    if (kd < 0) continue;
    if (shape[kd] != 1) idx += i * stride;
    stride *= shape[kd];
  }
  return idx;
}

static sg_tensor *random_tensor(const int64_t *shape, int rank, float lo, float hi, bool ints) {
  int64_t n = numel_of(shape, rank);
  float *d = malloc((size_t)(n ? n : 1) * sizeof *d);
  for (int64_t i = 0; i < n; i++) d[i] = ints ? floorf(rnd(lo, hi + 1)) : rnd(lo, hi);
  sg_tensor *t = sg_tensor_f32(d, shape, rank);
  free(d);
  cr_assert_not_null(t);
  return t;
}

typedef struct pattern {
  int64_t a[4];
  int ar;
  int64_t b[4];
  int br;
  int64_t out[4];
  int outr;
} pattern;

/* Every broadcast pattern, with its output shape written by hand. */
static const pattern k_patterns[] = {
    {{2, 3}, 2, {2, 3}, 2, {2, 3}, 2},                   /* same shape */
    {{0}, 0, {2, 3}, 2, {2, 3}, 2},                      /* scalar a */
    {{2, 3}, 2, {0}, 0, {2, 3}, 2},                      /* scalar b */
    {{2, 3}, 2, {3}, 1, {2, 3}, 2},                      /* row */
    {{3}, 1, {2, 3}, 2, {2, 3}, 2},                      /* row, a side */
    {{2, 3}, 2, {2, 1}, 2, {2, 3}, 2},                   /* column */
    {{2, 1}, 2, {2, 3}, 2, {2, 3}, 2},                   /* column, a side */
    {{2, 1, 3}, 3, {4, 1}, 2, {2, 4, 3}, 3},             /* both broadcast */
    {{0}, 0, {2, 3, 4}, 3, {2, 3, 4}, 3},                /* rank 0 with rank 3 */
    {{0, 3}, 2, {1, 3}, 2, {0, 3}, 2},                   /* empty */
    {{1, 3}, 2, {2, 1}, 2, {2, 3}, 2},                   /* outer product */
    {{5, 1, 1}, 3, {1, 4, 3}, 3, {5, 4, 3}, 3},          /* merged inner dims */
    {{1}, 1, {1, 1, 1}, 3, {1, 1, 1}, 3},                /* all ones */
    {{3, 1, 4, 1}, 4, {1, 2, 1, 5}, 4, {3, 2, 4, 5}, 4}, /* alternating */
    {{3, 70001}, 2, {70001}, 1, {3, 70001}, 2},          /* chunks split rows */
    {{70001, 3}, 2, {70001, 1}, 2, {70001, 3}, 2},       /* chunks split a column */
    {{2, 40000}, 2, {0}, 0, {2, 40000}, 2},              /* scalar over several chunks */
};
#define N_PATTERNS (sizeof k_patterns / sizeof k_patterns[0])

static void check_against_reference(const op_case *op, const pattern *p) {
  const opinfo_binary *info = row(op->name);
  sg_tensor *a = random_tensor(p->a, p->ar, info->domain.lo, info->domain.hi, op->compare);
  sg_tensor *b = random_tensor(p->b, p->br, info->domain_b.lo, info->domain_b.hi, op->compare);
  sg_tensor *y = op->fn(a, b);
  cr_assert_not_null(y, "%s: %s", op->name, sg_last_error());
  cr_assert_eq(sg_dtype_of(y), op->compare ? SG_BOOL : SG_F32, "%s: dtype", op->name);
  cr_assert_eq(sg_rank(y), p->outr, "%s: rank %d, want %d", op->name, sg_rank(y), p->outr);
  for (int d = 0; d < p->outr; d++)
    cr_assert_eq(sg_shape(y)[d], p->out[d], "%s: dim %d", op->name, d);
  const float *ad = sg_data_f32(a), *bd = sg_data_f32(b);
  int64_t n = numel_of(p->out, p->outr);
  for (int64_t i = 0; i < n; i++) {
    double av = ad[ref_index(i, p->out, p->outr, p->a, p->ar)];
    double bv = bd[ref_index(i, p->out, p->outr, p->b, p->br)];
    double want = info->ref(av, bv);
    if (op->compare) {
      cr_assert_eq(sg_data_bool(y)[i], (uint8_t)want, "%s(%g, %g) at %lld", op->name, av, bv,
                   (long long)i);
    } else {
      float got = sg_data_f32(y)[i];
      cr_assert(fabs(got - want) <= info->rtol * fabs(want) + 1e-30,
                "%s(%.9g, %.9g) = %.9g, want %.9g", op->name, av, bv, got, want);
    }
  }
  sg_dispose(a);
  sg_dispose(b);
  sg_dispose(y);
}

/* ---- Known values ---------------------------------------------------------------------------- */

Test(binary, every_op_and_pattern_matches_reference) {
  int64_t live = t_live_tensors();
  for (size_t o = 0; o < N_OPS; o++)
    for (size_t p = 0; p < N_PATTERNS; p++) check_against_reference(&k_ops[o], &k_patterns[p]);
  cr_assert_eq(t_live_tensors(), live, "tensors leaked");
}

Test(binary, hand_values) {
  const int64_t s23[] = {2, 3}, s3[] = {3}, s21[] = {2, 1};
  const float av[] = {1, 2, 3, 4, 5, 6};
  sg_tensor *a = t_f32(av, 2, s23);
  sg_tensor *row = t_f32((const float[]){10, 20, 30}, 1, s3);
  sg_tensor *col = t_f32((const float[]){100, 200}, 2, s21);
  sg_tensor *two = sg_scalar(2);

  sg_tensor *y = sg_add(a, row);
  t_expect_f32(y, (const float[]){11, 22, 33, 14, 25, 36}, 2, s23, 0, 0);
  sg_dispose(y);
  y = sg_sub(col, a);
  t_expect_f32(y, (const float[]){99, 98, 97, 196, 195, 194}, 2, s23, 0, 0);
  sg_dispose(y);
  y = sg_mul(two, a);
  t_expect_f32(y, (const float[]){2, 4, 6, 8, 10, 12}, 2, s23, 0, 0);
  sg_dispose(y);
  y = sg_div(a, two);
  t_expect_f32(y, (const float[]){0.5f, 1, 1.5f, 2, 2.5f, 3}, 2, s23, 0, 0);
  sg_dispose(y);
  y = sg_pow(a, two);
  t_expect_f32(y, (const float[]){1, 4, 9, 16, 25, 36}, 2, s23, 0, 1e-6);
  sg_dispose(y);
  y = sg_pow(two, a);
  t_expect_f32(y, (const float[]){2, 4, 8, 16, 32, 64}, 2, s23, 0, 1e-6);
  sg_dispose(y);
  sg_tensor *mid = t_f32((const float[]){2.5f, 4.5f}, 2, s21);
  y = sg_maximum(a, mid);
  t_expect_f32(y, (const float[]){2.5f, 2.5f, 3, 4.5f, 5, 6}, 2, s23, 0, 0);
  sg_dispose(y);
  y = sg_minimum(mid, a);
  t_expect_f32(y, (const float[]){1, 2, 2.5f, 4, 4.5f, 4.5f}, 2, s23, 0, 0);
  sg_dispose(y);
  y = sg_squared_difference(a, mid);
  t_expect_f32(y, (const float[]){2.25f, 0.25f, 0.25f, 0.25f, 0.25f, 2.25f}, 2, s23, 0, 0);
  sg_dispose(y);
  y = sg_greater(a, mid);
  cr_assert_eq(sg_dtype_of(y), SG_BOOL);
  cr_assert(memcmp(sg_data_bool(y), (const uint8_t[]){0, 0, 1, 0, 1, 1}, 6) == 0);
  sg_dispose(y);

  /* Rank 0 with rank 0 stays rank 0. */
  sg_tensor *three = sg_scalar(3);
  y = sg_pow(two, three);
  t_expect_f32(y, (const float[]){8}, 0, NULL, 0, 0);
  sg_dispose(y);
  sg_tensor *f = sg_less_equal(two, three);
  cr_assert_eq(sg_rank(f), 0);
  cr_assert_eq(sg_data_bool(f)[0], 1);
  sg_dispose(f);
  sg_dispose(three);

  sg_dispose(mid);
  sg_dispose(a);
  sg_dispose(row);
  sg_dispose(col);
  sg_dispose(two);
}

Test(binary, ieee_edge_values) {
  const float inf = INFINITY;
  const int64_t s[] = {6};
  sg_tensor *a = t_f32((const float[]){1, -1, 0, inf, -0.0f, 2}, 1, s);
  sg_tensor *b = t_f32((const float[]){0, 0, 0, inf, 0, inf}, 1, s);
  sg_tensor *y = sg_div(a, b);
  t_expect_f32(y, (const float[]){inf, -inf, NAN, NAN, NAN, 0}, 1, s, 0, 0);
  sg_dispose(y);
  y = sg_sub(a, b);
  t_expect_f32(y, (const float[]){1, -1, 0, NAN, 0, -inf}, 1, s, 0, 0);
  sg_dispose(y);
  y = sg_pow(a, b);
  /* powf: x^0 = 1 for any x, 0^0 = 1, inf^inf = inf, 2^inf = inf. */
  t_expect_f32(y, (const float[]){1, 1, 1, inf, 1, inf}, 1, s, 0, 0);
  sg_dispose(y);
  sg_dispose(a);
  sg_dispose(b);
}

/* ---- Errors ---------------------------------------------------------------------------------- */

Test(binary, shape_mismatch_names_op_and_shapes) {
  int64_t live = t_live_tensors();
  const int64_t s23[] = {2, 3}, s43[] = {4, 3}, s2[] = {2}, s3[] = {3}, s4[] = {4};
  sg_tensor *a = sg_zeros(s23, 2), *b = sg_zeros(s43, 2);
  t_expect_error(sg_add(a, b), SG_ERR_SHAPE, "add: shapes [2,3] and [4,3] do not broadcast", NULL);
  t_expect_error(sg_squared_difference(b, a), SG_ERR_SHAPE, "squared_difference", "[4,3]", "[2,3]",
                 NULL);
  t_expect_error(sg_less(a, b), SG_ERR_SHAPE, "less", "[2,3]", "[4,3]", NULL);
  sg_tensor *c = sg_zeros(s2, 1);
  t_expect_error(sg_mul(a, c), SG_ERR_SHAPE, "mul: shapes [2,3] and [2] do not broadcast", NULL);
  uint8_t cd[2] = {1, 0};
  sg_tensor *cond = sg_tensor_bool(cd, s2, 1);
  sg_tensor *x3 = sg_zeros(s3, 1), *x4 = sg_zeros(s4, 1);
  t_expect_error(sg_where(cond, x3, x4), SG_ERR_SHAPE,
                 "where: shapes [2], [3] and [4] do not broadcast", NULL);
  /* The error carries the scope path. */
  sg_scope_begin("model");
  t_expect_error(sg_add(a, b), SG_ERR_SHAPE, "add:", "model", NULL);
  sg_scope_end(NULL, 0);
  sg_dispose(a), sg_dispose(b), sg_dispose(c), sg_dispose(cond), sg_dispose(x3), sg_dispose(x4);
  cr_assert_eq(t_live_tensors(), live);
}

Test(binary, dtype_errors) {
  const int64_t s2[] = {2};
  sg_tensor *f = sg_zeros(s2, 1);
  sg_tensor *i = sg_tensor_i32((const int32_t[]){1, 2}, s2, 1);
  sg_tensor *c = sg_tensor_bool((const uint8_t[]){1, 0}, s2, 1);
  t_expect_error(sg_add(f, i), SG_ERR_DTYPE, "add", "f32", "i32", NULL);
  t_expect_error(sg_pow(c, f), SG_ERR_DTYPE, "pow", "bool", NULL);
  t_expect_error(sg_equal(f, i), SG_ERR_DTYPE, "equal", "i32", NULL);
  t_expect_error(sg_where(f, f, f), SG_ERR_DTYPE, "where", "cond must be bool", "f32", NULL);
  t_expect_error(sg_where(c, f, i), SG_ERR_DTYPE, "where", "i32", NULL);
  sg_dispose(f), sg_dispose(i), sg_dispose(c);
}

Test(binary, null_input_keeps_first_error) {
  const int64_t s2[] = {2}, s3[] = {3};
  sg_tensor *a = sg_zeros(s2, 1), *b = sg_zeros(s3, 1);
  /* Inner op fails; the outer ops see NULL and keep the inner message. */
  sg_tensor *y = sg_maximum(sg_mul(sg_add(a, b), a), a);
  t_expect_error(y, SG_ERR_SHAPE, "add: shapes [2] and [3]", NULL);
  t_expect_error(sg_sub(NULL, a), SG_ERR_ARG, "sub", "'a'", NULL);
  t_expect_error(sg_greater(a, NULL), SG_ERR_ARG, "greater", "'b'", NULL);
  t_expect_error(sg_where(NULL, a, a), SG_ERR_ARG, "where", "cond", NULL);
  sg_dispose(b);
  t_expect_error(sg_div(a, b), SG_ERR_STATE, "div", "disposed", NULL);
  sg_dispose(a);
}

/* ---- NaN policy ------------------------------------------------------------------------------ */

static const char *const k_backends[] = {"scalar", "avx2", "avx512", "neon"};

/* maximum / minimum give NaN wherever either side is NaN, in the vector body and the tail. */
Test(binary, max_min_propagate_nan_in_body_and_tail) {
  const size_t n = 45; /* 2 x 16 + 13: body and tail on every vector width */
  const size_t nan_a[] = {3, 17, 40, 44}, nan_b[] = {5, 17, 33, 43};
  float a[45], b[45], y[45];
  for (size_t i = 0; i < n; i++) a[i] = (float)i - 20, b[i] = 20 - (float)i;
  for (size_t i = 0; i < 4; i++) a[nan_a[i]] = NAN, b[nan_b[i]] = NAN;
  for (size_t k = 0; k < 4; k++) {
    const sg_backend *be = sg_backend_get(k_backends[k]);
    if (!be) continue;
    for (int which = 0; which < 2; which++) {
      sg_binary_kernel fn = which ? be->minimum : be->maximum;
      double (*ref)(double, double) = row(which ? "minimum" : "maximum")->ref;
      fn(a, 1, b, 1, y, n);
      for (size_t i = 0; i < n; i++) {
        double want = ref(a[i], b[i]);
        if (isnan(want))
          cr_assert(isnan(y[i]), "%s %s: element %zu not NaN", be->name,
                    which ? "minimum" : "maximum", i);
        else
          cr_assert_eq(y[i], (float)want, "%s: element %zu", be->name, i);
      }
      /* A NaN scalar operand (step 0) on either side poisons everything. */
      float nan1 = NAN;
      fn(&nan1, 0, b, 1, y, n);
      for (size_t i = 0; i < n; i++) cr_assert(isnan(y[i]), "%s: NaN a, element %zu", be->name, i);
      fn(a, 1, &nan1, 0, y, n);
      for (size_t i = 0; i < n; i++) cr_assert(isnan(y[i]), "%s: NaN b, element %zu", be->name, i);
    }
  }
  /* And through the ops on the current backend. */
  const int64_t s[] = {45};
  sg_tensor *ta = t_f32(a, 1, s), *tb = t_f32(b, 1, s);
  sg_tensor *mx = sg_maximum(ta, tb), *mn = sg_minimum(tb, ta);
  for (size_t i = 0; i < n; i++) {
    bool nan = isnan(a[i]) || isnan(b[i]);
    cr_assert_eq(isnan(sg_data_f32(mx)[i]) != 0, nan, "maximum op element %zu", i);
    cr_assert_eq(isnan(sg_data_f32(mn)[i]) != 0, nan, "minimum op element %zu", i);
  }
  sg_dispose(ta), sg_dispose(tb), sg_dispose(mx), sg_dispose(mn);
}

Test(binary, comparisons_with_nan_inf_and_signed_zero) {
  const int64_t s[] = {6};
  const float inf = INFINITY;
  sg_tensor *a = t_f32((const float[]){NAN, NAN, 1, -0.0f, inf, -inf}, 1, s);
  sg_tensor *b = t_f32((const float[]){NAN, 1, NAN, 0.0f, inf, inf}, 1, s);
  const struct {
    binary_fn fn;
    uint8_t want[6];
  } cases[] = {
      {sg_equal, {0, 0, 0, 1, 1, 0}},   {sg_not_equal, {1, 1, 1, 0, 0, 1}},
      {sg_less, {0, 0, 0, 0, 0, 1}},    {sg_less_equal, {0, 0, 0, 1, 1, 1}},
      {sg_greater, {0, 0, 0, 0, 0, 0}}, {sg_greater_equal, {0, 0, 0, 1, 1, 0}},
  };
  for (size_t c = 0; c < 6; c++) {
    sg_tensor *y = cases[c].fn(a, b);
    cr_assert_not_null(y);
    cr_assert_eq(sg_dtype_of(y), SG_BOOL);
    for (int i = 0; i < 6; i++)
      cr_assert_eq(sg_data_bool(y)[i], cases[c].want[i], "case %zu element %d", c, i);
    sg_dispose(y);
  }
  sg_dispose(a), sg_dispose(b);
}

/* ---- where ----------------------------------------------------------------------------------- */

Test(where, broadcasts_all_three) {
  const int64_t s21[] = {2, 1}, s3[] = {3}, s23[] = {2, 3};
  sg_tensor *c = sg_tensor_bool((const uint8_t[]){1, 0}, s21, 2);
  sg_tensor *a = t_f32((const float[]){1, 2, 3}, 1, s3);
  sg_tensor *b = sg_scalar(-1);
  sg_tensor *y = sg_where(c, a, b);
  t_expect_f32(y, (const float[]){1, 2, 3, -1, -1, -1}, 2, s23, 0, 0);
  sg_dispose(y);
  /* cond row, a column, b full */
  sg_tensor *crow = sg_tensor_bool((const uint8_t[]){0, 1, 1}, s3, 1);
  sg_tensor *acol = t_f32((const float[]){10, 20}, 2, s21);
  sg_tensor *bf = t_f32((const float[]){-1, -2, -3, -4, -5, -6}, 2, s23);
  y = sg_where(crow, acol, bf);
  t_expect_f32(y, (const float[]){-1, 10, 10, -4, 20, 20}, 2, s23, 0, 0);
  sg_dispose(y);
  /* NaN passes through either side untouched. */
  sg_tensor *n = sg_scalar(NAN);
  y = sg_where(crow, n, bf);
  t_expect_f32(y, (const float[]){-1, NAN, NAN, -4, NAN, NAN}, 2, s23, 0, 0);
  sg_dispose(y);
  /* Empty */
  const int64_t s03[] = {0, 3};
  sg_tensor *e = sg_zeros(s03, 2);
  y = sg_where(crow, e, b);
  cr_assert_not_null(y);
  cr_assert_eq(sg_numel(y), 0);
  cr_assert_eq(sg_shape(y)[0], 0);
  sg_dispose(y);
  sg_dispose(e), sg_dispose(n), sg_dispose(c), sg_dispose(a), sg_dispose(b), sg_dispose(crow),
      sg_dispose(acol), sg_dispose(bf);
}

Test(where, against_reference_over_chunks) {
  const int64_t sc[] = {3, 1, 20000}, sa[] = {20000}, sb[] = {2, 1}, so[] = {3, 2, 20000};
  uint8_t *cd = malloc(60000);
  for (int i = 0; i < 60000; i++) cd[i] = rnd(0, 1) < 0.5f;
  sg_tensor *c = sg_tensor_bool(cd, sc, 3);
  sg_tensor *a = random_tensor(sa, 1, -1, 1, false), *b = random_tensor(sb, 2, 5, 6, false);
  sg_tensor *y = sg_where(c, a, b);
  cr_assert_not_null(y, "%s", sg_last_error());
  for (int64_t i = 0; i < 120000; i++) {
    float want = cd[ref_index(i, so, 3, sc, 3)] ? sg_data_f32(a)[ref_index(i, so, 3, sa, 1)]
                                                : sg_data_f32(b)[ref_index(i, so, 3, sb, 2)];
    cr_assert_eq(sg_data_f32(y)[i], want, "element %lld", (long long)i);
  }
  free(cd);
  sg_dispose(c), sg_dispose(a), sg_dispose(b), sg_dispose(y);
}

/* ---- Gradients ------------------------------------------------------------------------------- */

Test(grad, hand_values_with_broadcast) {
  int64_t live = t_live_tensors();
  const int64_t s23[] = {2, 3}, s3[] = {3};
  sg_tensor *a = t_f32((const float[]){1, 2, 3, 4, 5, 6}, 2, s23);
  sg_tensor *b = t_f32((const float[]){1, -1, 2}, 1, s3);
  sg_tensor *xs[2] = {a, b}, *g[2];

  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_mul(a, b);
  cr_assert_eq(sg_tape_end(y, NULL, xs, 2, g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g[0], (const float[]){1, -1, 2, 1, -1, 2}, 2, s23, 0, 0);
  t_expect_f32(g[1], (const float[]){5, 7, 9}, 1, s3, 0, 0); /* column sums of a */
  sg_dispose(y), sg_dispose(g[0]), sg_dispose(g[1]);

  cr_assert_eq(sg_tape_begin(), SG_OK);
  y = sg_sub(a, b);
  cr_assert_eq(sg_tape_end(y, NULL, xs, 2, g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g[0], (const float[]){1, 1, 1, 1, 1, 1}, 2, s23, 0, 0);
  t_expect_f32(g[1], (const float[]){-2, -2, -2}, 1, s3, 0, 0);
  sg_dispose(y), sg_dispose(g[0]), sg_dispose(g[1]);

  /* maximum: ties go to a; minimum likewise. */
  sg_tensor *m = t_f32((const float[]){2, 2, 2}, 1, s3);
  sg_tensor *xm[2] = {a, m};
  cr_assert_eq(sg_tape_begin(), SG_OK);
  y = sg_maximum(a, m);
  cr_assert_eq(sg_tape_end(y, NULL, xm, 2, g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g[0], (const float[]){0, 1, 1, 1, 1, 1}, 2, s23, 0, 0);
  t_expect_f32(g[1], (const float[]){1, 0, 0}, 1, s3, 0, 0);
  sg_dispose(y), sg_dispose(g[0]), sg_dispose(g[1]);
  cr_assert_eq(sg_tape_begin(), SG_OK);
  y = sg_minimum(a, m);
  cr_assert_eq(sg_tape_end(y, NULL, xm, 2, g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g[0], (const float[]){1, 1, 0, 0, 0, 0}, 2, s23, 0, 0);
  t_expect_f32(g[1], (const float[]){1, 1, 2}, 1, s3, 0, 0);
  sg_dispose(y), sg_dispose(g[0]), sg_dispose(g[1]);

  /* pow: db where a <= 0 is 0; a^0 has da = 0 * a^-1. */
  const int64_t s4[] = {4};
  sg_tensor *pa = t_f32((const float[]){2, -2, 0, 3}, 1, s4);
  sg_tensor *pb = t_f32((const float[]){3, 2, 2, 0}, 1, s4);
  sg_tensor *xp[2] = {pa, pb};
  cr_assert_eq(sg_tape_begin(), SG_OK);
  y = sg_pow(pa, pb);
  cr_assert_eq(sg_tape_end(y, NULL, xp, 2, g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g[0], (const float[]){12, -4, 0, 0}, 1, s4, 0, 1e-6);
  t_expect_f32(g[1], (const float[]){(float)(8 * log(2.0)), 0, 0, (float)log(3.0)}, 1, s4, 0, 1e-6);
  sg_dispose(y), sg_dispose(g[0]), sg_dispose(g[1]);

  /* div: da = 1/b, db = -a/b^2 */
  sg_tensor *da = t_f32((const float[]){3}, 1, (const int64_t[]){1});
  sg_tensor *db = t_f32((const float[]){2, 4}, 1, (const int64_t[]){2});
  sg_tensor *xd[2] = {da, db};
  cr_assert_eq(sg_tape_begin(), SG_OK);
  y = sg_div(da, db);
  cr_assert_eq(sg_tape_end(y, NULL, xd, 2, g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g[0], (const float[]){0.75f}, 1, (const int64_t[]){1}, 0, 1e-6);
  t_expect_f32(g[1], (const float[]){-0.75f, -0.1875f}, 1, (const int64_t[]){2}, 0, 1e-6);
  sg_dispose(y), sg_dispose(g[0]), sg_dispose(g[1]);

  /* squared_difference with a rank-0 b: db = -sum(2(a - b)). */
  sg_tensor *s = sg_scalar(1);
  sg_tensor *xs2[2] = {a, s};
  cr_assert_eq(sg_tape_begin(), SG_OK);
  y = sg_squared_difference(a, s);
  cr_assert_eq(sg_tape_end(y, NULL, xs2, 2, g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g[0], (const float[]){0, 2, 4, 6, 8, 10}, 2, s23, 0, 0);
  t_expect_f32(g[1], (const float[]){-30}, 0, NULL, 0, 0);
  sg_dispose(y), sg_dispose(g[0]), sg_dispose(g[1]);

  sg_dispose(s), sg_dispose(da), sg_dispose(db), sg_dispose(pa), sg_dispose(pb), sg_dispose(m);
  sg_dispose(a), sg_dispose(b);
  cr_assert_eq(t_live_tensors(), live, "tensors leaked");
}

Test(grad, same_input_twice) {
  const int64_t s3[] = {3};
  sg_tensor *x = t_f32((const float[]){1, 2, 3}, 1, s3);
  sg_tensor *g;
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_mul(x, x);
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g, (const float[]){2, 4, 6}, 1, s3, 0, 0);
  sg_dispose(y), sg_dispose(g), sg_dispose(x);
}

Test(grad, comparisons_record_nothing) {
  const int64_t s3[] = {3};
  sg_tensor *x = t_f32((const float[]){1, 2, 3}, 1, s3);
  sg_tensor *two = sg_scalar(2);
  sg_tensor *g;
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *c = sg_greater(x, two);
  sg_tensor *y = sg_where(c, x, two);
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g, (const float[]){0, 0, 1}, 1, s3, 0, 0);
  sg_dispose(y), sg_dispose(g), sg_dispose(c), sg_dispose(x), sg_dispose(two);
}

Test(grad, where_gradients_reduce_to_operands) {
  const int64_t s23[] = {2, 3}, s21[] = {2, 1}, s3[] = {3};
  sg_tensor *c = sg_tensor_bool((const uint8_t[]){1, 0, 1, 0, 0, 1}, s23, 2);
  sg_tensor *a = t_f32((const float[]){1, 2}, 2, s21);
  sg_tensor *b = t_f32((const float[]){5, 6, 7}, 1, s3);
  sg_tensor *xs[2] = {a, b}, *g[2];
  sg_tensor *dy = t_f32((const float[]){1, 2, 3, 4, 5, 6}, 2, s23);
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_where(c, a, b);
  cr_assert_eq(sg_tape_end(y, dy, xs, 2, g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g[0], (const float[]){1 + 3, 6}, 2, s21, 0, 0);
  t_expect_f32(g[1], (const float[]){4, 2 + 5, 0}, 1, s3, 0, 0);
  sg_dispose(y), sg_dispose(g[0]), sg_dispose(g[1]), sg_dispose(c), sg_dispose(a), sg_dispose(b),
      sg_dispose(dy);
}

typedef struct gc_binary {
  binary_fn fn;
} gc_binary;

static sg_tensor *gc_binary_f(sg_tensor *const *xs, void *arg) {
  return ((const gc_binary *)arg)->fn(xs[0], xs[1]);
}

static sg_tensor *gc_where_f(sg_tensor *const *xs, void *arg) {
  return sg_where((sg_tensor *)arg, xs[0], xs[1]);
}

/* One gradient check of op on a of shape sa (values in [alo, ahi]) and b of shape sb. */
static void gc_case(const char *name, binary_fn fn, const int64_t *sa, int ra, float alo, float ahi,
                    const int64_t *sb, int rb, float blo, float bhi, double tol) {
  sg_tensor *a = random_tensor(sa, ra, alo, ahi, false);
  sg_tensor *b = random_tensor(sb, rb, blo, bhi, false);
  sg_tensor *xs[2] = {a, b};
  gc_binary arg = {fn};
  gc_check(name, gc_binary_f, &arg, xs, 2, 1e-3, tol);
  sg_dispose(a), sg_dispose(b);
}

Test(grad, gc_check_all_ops_with_broadcast) {
  const int64_t s23[] = {2, 3}, s3[] = {3}, s21[] = {2, 1}, s13[] = {1, 3}, s213[] = {2, 1, 3},
                s41[] = {4, 1};
  const struct {
    const char *name;
    binary_fn fn;
    float alo, ahi, blo, bhi;
    double tol; /* measured error of the f32 finite difference is about 3e-5 */
  } ops[] = {
      {"add", sg_add, -2, 2, -2, 2, 1e-3},
      {"sub", sg_sub, -2, 2, -2, 2, 1e-3},
      {"mul", sg_mul, -2, 2, -2, 2, 1e-3},
      {"div", sg_div, -2, 2, 0.5f, 2, 2e-3},       /* b away from 0 */
      {"pow", sg_pow, 0.5f, 2, -1.5f, 1.5f, 2e-3}, /* a > 0: db defined */
      {"squared_difference", sg_squared_difference, -2, 2, -2, 2, 1e-3},
  };
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    gc_case(ops[i].name, ops[i].fn, s23, 2, ops[i].alo, ops[i].ahi, s3, 1, ops[i].blo, ops[i].bhi,
            ops[i].tol);
    gc_case(ops[i].name, ops[i].fn, s21, 2, ops[i].alo, ops[i].ahi, s13, 2, ops[i].blo, ops[i].bhi,
            ops[i].tol);
    gc_case(ops[i].name, ops[i].fn, s213, 3, ops[i].alo, ops[i].ahi, s41, 2, ops[i].blo, ops[i].bhi,
            ops[i].tol);
    gc_case(ops[i].name, ops[i].fn, NULL, 0, ops[i].alo, ops[i].ahi, s23, 2, ops[i].blo, ops[i].bhi,
            ops[i].tol);
  }
}

/* maximum / minimum away from ties: a and b are on interleaved grids at least 0.25 apart. */
Test(grad, gc_check_maximum_minimum) {
  const int64_t s23[] = {2, 3}, s3[] = {3}, s21[] = {2, 1};
  sg_tensor *a = t_f32((const float[]){-1.5f, 0.5f, 2.5f, 1.5f, -0.5f, -2.5f}, 2, s23);
  sg_tensor *b = t_f32((const float[]){0, 1, -1}, 1, s3);
  sg_tensor *c = t_f32((const float[]){0.25f, -1.25f}, 2, s21);
  gc_binary mx = {sg_maximum}, mn = {sg_minimum};
  sg_tensor *ab[2] = {a, b}, *ba[2] = {b, a}, *cb[2] = {c, b};
  gc_check("maximum", gc_binary_f, &mx, ab, 2, 1e-3, 1e-3);
  gc_check("maximum", gc_binary_f, &mx, ba, 2, 1e-3, 1e-3);
  gc_check("maximum", gc_binary_f, &mx, cb, 2, 1e-3, 1e-3);
  gc_check("minimum", gc_binary_f, &mn, ab, 2, 1e-3, 1e-3);
  gc_check("minimum", gc_binary_f, &mn, ba, 2, 1e-3, 1e-3);
  gc_check("minimum", gc_binary_f, &mn, cb, 2, 1e-3, 1e-3);
  sg_dispose(a), sg_dispose(b), sg_dispose(c);
}

Test(grad, gc_check_where) {
  const int64_t s23[] = {2, 3}, s3[] = {3}, s21[] = {2, 1};
  sg_tensor *c = sg_tensor_bool((const uint8_t[]){1, 0, 0, 1, 1, 0}, s23, 2);
  sg_tensor *a = random_tensor(s21, 2, -1, 1, false), *b = random_tensor(s3, 1, -1, 1, false);
  sg_tensor *xs[2] = {a, b};
  gc_check("where", gc_where_f, c, xs, 2, 1e-3, 1e-3);
  sg_dispose(a), sg_dispose(b), sg_dispose(c);
}

/* ---- Kernels -------------------------------------------------------------------------------- */

/* Every backend's kernels against the scalar ones are tests/test_conformance_binary.c's. */

static void fill(float *p, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) p[i] = rnd(lo, hi);
}

/* The scalar kernels themselves against the double reference, with steps 0 and 1. */
Test(kernels, scalar_matches_reference) {
  const sg_backend *s = sg_backend_get("scalar");
  float a[33], b[33], y[33];
  uint8_t m[33];
  const struct {
    sg_binary_kernel fn;
    const char *name;
    double rtol;
  } f[] = {{s->add, "add", 0},         {s->sub, "sub", 0},
           {s->mul, "mul", 0},         {s->div, "div", 0},
           {s->pow, "pow", 2e-7},      {s->maximum, "maximum", 0},
           {s->minimum, "minimum", 0}, {s->squared_difference, "squared_difference", 4e-7}};
#define CMP_(nm, doc) {s->nm, #nm},
  const struct {
    sg_compare_kernel fn;
    const char *name;
  } c[] = {SG_FOR_EACH_COMPARE_OP(CMP_)};
#undef CMP_
  fill(a, 33, 0.5f, 2), fill(b, 33, -2, 2);
  for (size_t st = 0; st < 4; st++) {
    size_t as = st & 1, bs = st >> 1;
    for (size_t i = 0; i < 8; i++) {
      f[i].fn(a, as, b, bs, y, 33);
      for (size_t j = 0; j < 33; j++) {
        double w = (float)row(f[i].name)->ref(a[j * as], b[j * bs]);
        cr_assert(fabs(y[j] - w) <= f[i].rtol * fabs(w), "op %zu [%zu]: %.9g vs %.9g", i, j, y[j],
                  w);
      }
    }
    for (size_t i = 0; i < 6; i++) {
      c[i].fn(a, as, b, bs, m, 33);
      for (size_t j = 0; j < 33; j++)
        cr_assert_eq(m[j], (uint8_t)row(c[i].name)->ref(a[j * as], b[j * bs]), "%s [%zu]",
                     c[i].name, j);
    }
  }
}

/* ---- Threads --------------------------------------------------------------------------------- */

Test(threads, large_broadcast_add_is_identical_for_1_and_2_threads) {
  const int saved = sg_threads();
  const int64_t sa[] = {700, 301}, sr[] = {301}, sc[] = {700, 1};
  sg_tensor *a = random_tensor(sa, 2, -1, 1, false);
  sg_tensor *r = random_tensor(sr, 1, -1, 1, false), *c = random_tensor(sc, 2, -1, 1, false);
  sg_tensor *out[2][3];
  for (int t = 0; t < 2; t++) {
    sg_set_threads(t + 1);
    cr_assert_eq(sg_threads(), t + 1);
    out[t][0] = sg_add(a, r);
    out[t][1] = sg_mul(c, a);
    sg_tensor *m = sg_maximum(a, c);
    out[t][2] = sg_pow(m, r); /* NaN for negative bases: compared bitwise too */
    sg_dispose(m);
    for (int j = 0; j < 3; j++) cr_assert_not_null(out[t][j], "%s", sg_last_error());
  }
  for (int j = 0; j < 3; j++)
    cr_assert(memcmp(sg_data_f32(out[0][j]), sg_data_f32(out[1][j]), 700 * 301 * sizeof(float)) ==
                  0,
              "result %d differs between 1 and 2 threads", j);
  /* And against the reference: every element of the broadcast add. */
  for (int64_t i = 0; i < 700 * 301; i++)
    cr_assert_eq(sg_data_f32(out[1][0])[i], sg_data_f32(a)[i] + sg_data_f32(r)[i % 301]);
  sg_set_threads(saved);
  for (int t = 0; t < 2; t++)
    for (int j = 0; j < 3; j++) sg_dispose(out[t][j]);
  sg_dispose(a), sg_dispose(r), sg_dispose(c);
}
