/* Tests of the unary ops (SG_FOR_EACH_UNARY_OP, SG_FOR_EACH_STEP_OP, leaky_relu, clip): known
 * values against the op-info rows' double references, hand values, IEEE edge values, empty and
 * rank-0 tensors, gradients (finite differences and the backward kernels against double
 * derivatives), the NaN policy, errors, and that the engine and the tape give every backend's
 * kernels' bits. The kernels of every backend against the scalar ones are
 * tests/test_conformance_unary.c's. */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "opinfo.h"
#include "support.h"

typedef enum { K_PLAIN, K_STEP, K_LEAKY, K_CLIP } op_kind;
typedef enum { S_NONE, S_X, S_Y } op_saved;

#define LEAKY_ALPHA OPINFO_LEAKY_ALPHA
#define CLIP_LO OPINFO_CLIP_LO
#define CLIP_HI OPINFO_CLIP_HI

/* One op: how to call it through the engine and the kernels; its figures (references, domains,
   bounds against double, edge values) are its row in the op-info table (opinfo_unary.c),
   attached before each test. */
typedef struct uop {
  const char *name;
  sg_tensor *(*op)(sg_tensor *);
  op_kind kind;
  op_saved saved;
  size_t fwd, bwd; /* offsetof(sg_backend, slot), K_PLAIN / K_STEP */
  const opinfo_unary *info;
} uop;

static sg_tensor *op_leaky(sg_tensor *x) { return sg_leaky_relu(x, LEAKY_ALPHA); }
static sg_tensor *op_clip(sg_tensor *x) { return sg_clip(x, CLIP_LO, CLIP_HI); }

/* ---- The ops, from backend.h's lists ----------------------------------------------------- */

#define PLAIN_(nm, sv, doc)                                                                        \
  {#nm, sg_##nm, K_PLAIN, S_##sv, offsetof(sg_backend, nm), offsetof(sg_backend, nm##_backward),   \
   NULL},
#define STEP_(nm, doc) {#nm, sg_##nm, K_STEP, S_NONE, offsetof(sg_backend, nm), 0, NULL},
static uop k_ops[] = {SG_FOR_EACH_UNARY_OP(PLAIN_) SG_FOR_EACH_STEP_OP(STEP_){
                          "leaky_relu", op_leaky, K_LEAKY, S_X, 0, 0, NULL},
                      {"clip", op_clip, K_CLIP, S_X, 0, 0, NULL}};
#define N_OPS ((int)(sizeof k_ops / sizeof k_ops[0]))

/* No row, no test: tests/test_opinfo.c names the missing row too. */
static void attach_opinfo(void) {
  for (int k = 0; k < N_OPS; k++) {
    k_ops[k].info = opinfo_unary_find(k_ops[k].name);
    cr_assert_not_null(k_ops[k].info, "no op-info row for %s (opinfo/opinfo_unary.c)",
                       k_ops[k].name);
  }
}
TestSuite(unary, .init = attach_opinfo);

/* ---- Helpers --------------------------------------------------------------------------- */

static uint64_t g_rng = 0x9e3779b97f4a7c15u;
static float rnd(float lo, float hi) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  double u = (double)(g_rng >> 40) / (double)(1u << 24);
  return (float)(lo + (hi - lo) * u);
}

static bool close_to(double got, double want, double atol, double rtol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  if (!isfinite(got)) return false;
  return fabs(got - want) <= atol + rtol * fabs(want) + FLT_MIN; /* FLT_MIN: denormals */
}

static bool same_bits(float a, float b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  return memcmp(&a, &b, sizeof a) == 0;
}

static sg_unary_kernel fwd_slot(const sg_backend *be, const uop *u) {
  return *(const sg_unary_kernel *)((const char *)be + u->fwd);
}
static sg_unary_backward_kernel bwd_slot(const sg_backend *be, const uop *u) {
  return *(const sg_unary_backward_kernel *)((const char *)be + u->bwd);
}

static void run_fwd(const sg_backend *be, const uop *u, const float *x, float *y, size_t n) {
  switch (u->kind) {
  case K_PLAIN:
  case K_STEP:
    fwd_slot(be, u)(x, y, n);
    break;
  case K_LEAKY:
    be->leaky_relu(x, y, n, LEAKY_ALPHA);
    break;
  case K_CLIP:
    be->clip(x, y, n, CLIP_LO, CLIP_HI);
    break;
  }
}

/* s is the saved tensor (x or y as the op list says); the other pointer is passed as NULL. */
static void run_bwd(const sg_backend *be, const uop *u, const float *dy, const float *s, float *dx,
                    size_t n) {
  switch (u->kind) {
  case K_PLAIN:
    bwd_slot(be, u)(dy, u->saved == S_X ? s : NULL, u->saved == S_Y ? s : NULL, dx, n);
    break;
  case K_LEAKY:
    be->leaky_relu_backward(dy, s, dx, n, LEAKY_ALPHA);
    break;
  case K_CLIP:
    be->clip_backward(dy, s, dx, n, CLIP_LO, CLIP_HI);
    break;
  case K_STEP:
    break;
  }
}

static const uop *find_op(const char *name) {
  for (int i = 0; i < N_OPS; i++)
    if (strcmp(k_ops[i].name, name) == 0) return &k_ops[i];
  return NULL;
}

static sg_tensor *vec(const float *v, int64_t n) { return t_f32(v, 1, &n); }

static void expect_values(const char *what, const uop *u, const float *x, const float *got,
                          int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    double want = u->info->ref((double)x[i]);
    cr_assert(close_to(got[i], want, u->info->vs_double.atol, u->info->vs_double.rtol),
              "%s %s(%.9g) = %.9g, want %.17g", what, u->name, x[i], got[i], want);
  }
}

/* ---- Known values ------------------------------------------------------------------------ */

Test(unary, values_match_double_libm) {
  int64_t live0 = t_live_tensors();
  enum { N = 512 };
  float x[N];
  for (int k = 0; k < N_OPS; k++) {
    const uop *u = &k_ops[k];
    for (int i = 0; i < N; i++) x[i] = rnd(u->info->domain.lo, u->info->domain.hi);
    /* The ends of the domain and small magnitudes. */
    x[0] = u->info->domain.lo;
    x[1] = u->info->domain.hi;
    if (u->info->domain.lo <= 0 && u->info->domain.hi >= 0) {
      x[2] = 1e-6f;
      x[3] = -1e-6f;
      x[4] = 0.5f;
      x[5] = -0.5f;
    }
    sg_tensor *t = vec(x, N);
    sg_tensor *y = u->op(t);
    cr_assert_not_null(y, "%s: %s", u->name, sg_last_error());
    cr_assert_eq(sg_numel(y), N);
    expect_values("random", u, x, sg_data_f32(y), N);
    sg_dispose(y);
    sg_dispose(t);
  }
  cr_assert_eq(t_live_tensors(), live0);
}

static void expect_op(sg_tensor *(*op)(sg_tensor *), const float *x, const float *want, int64_t n,
                      double rtol) {
  sg_tensor *t = vec(x, n);
  sg_tensor *y = op(t);
  t_expect_f32(y, want, 1, &n, 0, rtol);
  sg_dispose(y);
  sg_dispose(t);
}

Test(unary, hand_values) {
  int64_t live0 = t_live_tensors();
  /* Half to even, and 2^23 + 1 (already an integer). */
  const float rx[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4999998f, 3.5f, 8388609.0f, -7.5f};
  const float rw[] = {0, 2, 2, -0.0f, -2, -2, 2, 4, 8388609.0f, -8};
  expect_op(sg_round, rx, rw, 10, 0);
  const float fx[] = {-1.5f, -1.0f, 1.5f, 0.2f};
  const float fw[] = {-2, -1, 1, 0}, cw[] = {-1, -1, 2, 1};
  expect_op(sg_floor, fx, fw, 4, 0);
  expect_op(sg_ceil, fx, cw, 4, 0);
  const float sx[] = {-3, 2, 1e-40f, -1e-40f};
  const float sw[] = {-1, 1, 1, -1};
  expect_op(sg_sign, sx, sw, 4, 0);

  const float gx[] = {1, -1, 3, -3, 0};
  const float gw[] = {0.8413447460685429f, -0.15865525393145707f, 2.99595030590511f,
                      -0.004049694094890287f, 0};
  expect_op(sg_gelu, gx, gw, 5, 1e-6);
  const float ex[] = {1, -1, -3};
  const float selu_w[] = {1.0507009873554805f, -1.1113307378125625f, -1.6705687287671118f};
  expect_op(sg_selu, ex, selu_w, 3, 1e-6);
  const float elu_w[] = {1, -0.6321205588285577f, -0.950212931632136f};
  expect_op(sg_elu, ex, elu_w, 3, 1e-6);
  /* Stable softplus: no overflow at 100, no cancellation at -20. */
  const float px[] = {0, 100, -20, 1000};
  const float pw[] = {0.6931471805599453f, 100, 2.061153620314381e-09f, 1000};
  expect_op(sg_softplus, px, pw, 4, 1e-6);
  const float qx[] = {0, 100, -100, 2};
  const float qw[] = {0.5f, 1, 3.7200759760208356e-44f, 0.8807970779778823f};
  sg_tensor *t = vec(qx, 4), *y = sg_sigmoid(t);
  t_expect_f32(y, qw, 1, (int64_t[]){4}, 1e-44, 1e-6);
  sg_dispose(y);
  sg_dispose(t);

  const float r6x[] = {-1, 3, 6, 7, 0};
  const float r6w[] = {0, 3, 6, 6, 0};
  expect_op(sg_relu6, r6x, r6w, 5, 0);
  const float cx[] = {-5, -1, 0.5f, 2, 9};
  const float cwant[] = {-1, -1, 0.5f, 2, 2};
  expect_op(op_clip, cx, cwant, 5, 0);
  t = vec(cx, 5);
  y = sg_leaky_relu(t, 0.25f);
  t_expect_f32(y, (const float[]){-1.25f, -0.25f, 0.5f, 2, 9}, 1, (int64_t[]){5}, 0, 0);
  sg_dispose(y);
  y = sg_clip(t, 0.5f, 0.5f); /* lo == hi is allowed */
  t_expect_f32(y, (const float[]){0.5f, 0.5f, 0.5f, 0.5f, 0.5f}, 1, (int64_t[]){5}, 0, 0);
  sg_dispose(y);
  sg_dispose(t);
  cr_assert_eq(t_live_tensors(), live0);
}

/* ---- IEEE edge values -------------------------------------------------------------------- */

Test(unary, edge_values) {
  int64_t live0 = t_live_tensors();
  const float x[5] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
  for (int k = 0; k < N_OPS; k++) {
    const uop *u = &k_ops[k];
    sg_tensor *t = vec(x, 5);
    sg_tensor *y = u->op(t);
    cr_assert_not_null(y, "%s: %s", u->name, sg_last_error());
    const float *got = sg_data_f32(y);
    for (int i = 0; i < 5; i++) {
      float w = u->info->edge[i];
      cr_assert(isnan(w) ? isnan(got[i]) : got[i] == w, "%s(%g) = %g, want %g", u->name, x[i],
                got[i], w);
      if (u->info->zero_signed && w == 0)
        cr_assert_eq(signbit(got[i]) != 0, signbit(w) != 0, "%s(%g) = %g, want %g", u->name, x[i],
                     got[i], w);
    }
    sg_dispose(y);
    sg_dispose(t);
  }
  cr_assert_eq(t_live_tensors(), live0);
}

/* Note [NaN policy]: relu, relu6, clip, leaky_relu and sign keep NaN (a max/min that drops it
   is a bug). Positions hit the vector body and the tail of 4-, 8- and 16-lane kernels. */
Test(unary, nan_propagates) {
  int64_t live0 = t_live_tensors();
  const char *names[] = {"relu", "relu6", "clip", "leaky_relu", "sign", "abs", "elu", "gelu"};
  enum { N = 37 };
  float x[N];
  for (int i = 0; i < N; i++) x[i] = (float)((i % 9) - 4) * 1.75f;
  const int nan_at[] = {0, 5, 16, 31, 33, 36};
  for (size_t j = 0; j < sizeof nan_at / sizeof nan_at[0]; j++) x[nan_at[j]] = NAN;
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    const uop *u = find_op(names[k]);
    sg_tensor *t = vec(x, N);
    sg_tensor *y = u->op(t);
    cr_assert_not_null(y);
    for (int i = 0; i < N; i++)
      cr_assert_eq(isnan(sg_data_f32(y)[i]) != 0, isnan(x[i]) != 0, "%s: element %d", names[k], i);
    sg_dispose(y);
    sg_dispose(t);
  }
  /* Clip bounds that a NaN would slip through if compared the wrong way round. */
  sg_tensor *t = vec((const float[]){NAN, -NAN}, 2);
  sg_tensor *y = sg_clip(t, 0, 0);
  cr_assert(isnan(sg_data_f32(y)[0]) && isnan(sg_data_f32(y)[1]));
  sg_dispose(y);
  sg_dispose(t);
  cr_assert_eq(t_live_tensors(), live0);
}

/* ---- Shapes -------------------------------------------------------------------------------- */

Test(unary, empty_and_rank0) {
  int64_t live0 = t_live_tensors();
  const int64_t empty_shape[2] = {3, 0};
  for (int k = 0; k < N_OPS; k++) {
    const uop *u = &k_ops[k];
    sg_tensor *e = sg_tensor_f32(NULL, empty_shape, 2);
    cr_assert_not_null(e, "%s", sg_last_error());
    sg_tensor *y = u->op(e);
    cr_assert_not_null(y, "%s on [3,0]: %s", u->name, sg_last_error());
    cr_assert_eq(sg_rank(y), 2);
    cr_assert_eq(sg_shape(y)[0], 3);
    cr_assert_eq(sg_shape(y)[1], 0);
    sg_dispose(y);

    /* The gradient of an empty tensor is empty, not an error. */
    cr_assert_eq(sg_tape_begin(), SG_OK);
    y = u->op(e);
    sg_tensor *g = NULL;
    cr_assert_eq(sg_tape_end(y, NULL, &e, 1, &g), SG_OK, "%s: %s", u->name, sg_last_error());
    cr_assert_eq(sg_numel(g), 0);
    cr_assert_eq(sg_rank(g), 2);
    sg_dispose(g);
    sg_dispose(y);
    sg_dispose(e);

    float v = 0.37f * u->info->grad_domain.lo + 0.63f * u->info->grad_domain.hi;
    sg_tensor *s = sg_scalar(v);
    y = u->op(s);
    cr_assert_not_null(y, "%s on a scalar: %s", u->name, sg_last_error());
    cr_assert_eq(sg_rank(y), 0);
    cr_assert_eq(sg_numel(y), 1);
    expect_values("rank-0", u, &v, sg_data_f32(y), 1);
    sg_dispose(y);
    sg_dispose(s);
  }
  cr_assert_eq(t_live_tensors(), live0);
}

Test(unary, shape_is_kept) {
  int64_t live0 = t_live_tensors();
  const int64_t shape[4] = {2, 1, 3, 2};
  sg_tensor *x = sg_random_uniform(shape, 4, -2, 2, 7);
  for (int k = 0; k < N_OPS; k++) {
    sg_tensor *y = k_ops[k].op(x);
    cr_assert_eq(sg_rank(y), 4);
    for (int i = 0; i < 4; i++) cr_assert_eq(sg_shape(y)[i], shape[i], "%s", k_ops[k].name);
    sg_dispose(y);
  }
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live0);
}

/* ---- Gradients ----------------------------------------------------------------------------- */

static sg_tensor *gc_apply(sg_tensor *const *xs, void *arg) {
  const uop *u = arg;
  return u->op(xs[0]);
}

Test(unary, gradcheck) {
  /* Six points spread over [glo, ghi] (none on a kink), as [2, 3]; 4-point differences in
     double of a float loss: h = 1e-3, tolerance 2e-3 relative for every op. */
  const double frac[6] = {0.07, 0.23, 0.41, 0.58, 0.76, 0.93};
  const int64_t shape[2] = {2, 3};
  for (int k = 0; k < N_OPS; k++) {
    const uop *u = &k_ops[k];
    if (u->kind == K_STEP) continue;
    float v[6];
    for (int i = 0; i < 6; i++)
      v[i] = (float)(u->info->grad_domain.lo +
                     (u->info->grad_domain.hi - u->info->grad_domain.lo) * frac[i]);
    sg_tensor *x = sg_tensor_f32(v, shape, 2);
    gc_check(u->name, gc_apply, (void *)u, &x, 1, 1e-3, 2e-3);
    sg_dispose(x);
  }
}

Test(unary, gradcheck_rank0) {
  const char *names[] = {"exp", "gelu", "clip", "leaky_relu"};
  for (int k = 0; k < 4; k++) {
    const uop *u = find_op(names[k]);
    sg_tensor *x = sg_scalar(0.5f);
    gc_check(u->name, gc_apply, (void *)u, &x, 1, 1e-3, 2e-3);
    sg_dispose(x);
  }
}

/* The backward kernels against the double derivative, with dy = 1 and the saved tensor from
   the float forward (as the tape feeds them), on the current backend. */
Test(unary, backward_matches_double_derivative) {
  enum { N = 512 };
  const sg_backend *be = sg_backend_current();
  float x[N], y[N], dy[N], dx[N];
  for (int i = 0; i < N; i++) dy[i] = 1.0f;
  for (int k = 0; k < N_OPS; k++) {
    const uop *u = &k_ops[k];
    if (u->kind == K_STEP) continue;
    for (int i = 0; i < N; i++) x[i] = rnd(u->info->domain.lo, u->info->domain.hi);
    x[0] = u->info->domain.lo;
    x[1] = u->info->domain.hi;
    run_fwd(be, u, x, y, N);
    run_bwd(be, u, dy, u->saved == S_Y ? y : x, dx, N);
    for (int i = 0; i < N; i++) {
      /* Skip the kinks themselves, where either one-sided derivative is right. */
      if (x[i] == 0 || (u->kind == K_CLIP && (x[i] == CLIP_LO || x[i] == CLIP_HI))) continue;
      double want = u->info->dref((double)x[i]);
      cr_assert(close_to(dx[i], want, u->info->vs_double.batol, u->info->vs_double.brtol),
                "%s'(%.9g) = %.9g, want %.17g", u->name, x[i], dx[i], want);
    }
  }
}

Test(unary, kinks_have_the_stated_gradient) {
  /* abs and relu: 0 at 0; relu6: 0 at 0 and 6; clip: 1 on [lo, hi] inclusive. */
  const sg_backend *be = sg_backend_current();
  const float dy[4] = {1, 1, 1, 1};
  float dx[4];
  const float z[3] = {0, -0.0f, 6};
  be->abs_backward(dy, z, NULL, dx, 2);
  cr_assert(dx[0] == 0 && dx[1] == 0);
  be->relu_backward(dy, z, NULL, dx, 3);
  cr_assert(dx[0] == 0 && dx[1] == 0 && dx[2] == 1);
  be->relu6_backward(dy, z, NULL, dx, 3);
  cr_assert(dx[0] == 0 && dx[1] == 0 && dx[2] == 0);
  const float c[4] = {CLIP_LO, CLIP_HI, nextafterf(CLIP_LO, -10), nextafterf(CLIP_HI, 10)};
  be->clip_backward(dy, c, dx, 4, CLIP_LO, CLIP_HI);
  cr_assert(dx[0] == 1 && dx[1] == 1 && dx[2] == 0 && dx[3] == 0);
}

Test(unary, step_ops_have_zero_gradient) {
  int64_t live0 = t_live_tensors();
  const float v[5] = {-2.5f, -0.3f, 0.4f, 1.5f, 7.2f};
  for (int k = 0; k < N_OPS; k++) {
    const uop *u = &k_ops[k];
    if (u->kind != K_STEP) continue;
    sg_tensor *x = vec(v, 5);
    /* Directly, and behind exp (the path through the step op carries nothing). */
    for (int chain = 0; chain < 2; chain++) {
      cr_assert_eq(sg_tape_begin(), SG_OK);
      sg_tensor *h = chain ? sg_exp(x) : NULL;
      sg_tensor *y = u->op(chain ? h : x);
      sg_tensor *g = NULL;
      cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "%s: %s", u->name, sg_last_error());
      t_expect_f32(g, (const float[]){0, 0, 0, 0, 0}, 1, (int64_t[]){5}, 0, 0);
      sg_dispose(g);
      sg_dispose(y);
      sg_dispose(h);
    }
    sg_dispose(x);
  }
  cr_assert_eq(t_live_tensors(), live0);
}

Test(unary, saved_tensors_outlive_dispose) {
  /* log(exp(x)): log saves exp's output, which the caller drops before back-propagating. */
  int64_t live0 = t_live_tensors();
  sg_tensor *x = vec((const float[]){-1, 0.5f, 2}, 3);
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *h = sg_exp(x);
  sg_tensor *y = sg_log(h);
  sg_dispose(h);
  sg_tensor *g = NULL;
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g, (const float[]){1, 1, 1}, 1, (int64_t[]){3}, 0, 1e-6);
  sg_dispose(g);
  sg_dispose(y);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live0);
}

Test(unary, parameters_reach_the_gradient) {
  int64_t live0 = t_live_tensors();
  sg_tensor *x = vec((const float[]){-2, 0.5f, 3, 6}, 4);
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_leaky_relu(x, 0.3f);
  sg_tensor *g = NULL;
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK);
  t_expect_f32(g, (const float[]){0.3f, 1, 1, 1}, 1, (int64_t[]){4}, 0, 0);
  sg_dispose(g);
  sg_dispose(y);
  cr_assert_eq(sg_tape_begin(), SG_OK);
  y = sg_clip(x, 0.5f, 3);
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK);
  t_expect_f32(g, (const float[]){0, 1, 1, 0}, 1, (int64_t[]){4}, 0, 0);
  sg_dispose(g);
  sg_dispose(y);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live0);
}

/* ---- Errors -------------------------------------------------------------------------------- */

static void expect_error_from(const char *op, sg_status st) {
  cr_assert_eq(sg_last_status(), st, "%s: status %d (%s)", op, sg_last_status(), sg_last_error());
  size_t len = strlen(op);
  cr_assert(strncmp(sg_last_error(), op, len) == 0 && sg_last_error()[len] == ':',
            "error \"%s\" does not name %s", sg_last_error(), op);
  sg_clear_error();
}

Test(unary, errors_name_the_op) {
  int64_t live0 = t_live_tensors();
  const int64_t shape[1] = {3};
  sg_tensor *xi = sg_tensor_i32((const int32_t[]){1, 2, 3}, shape, 1);
  sg_tensor *xb = sg_tensor_bool((const uint8_t[]){1, 0, 1}, shape, 1);
  for (int k = 0; k < N_OPS; k++) {
    const uop *u = &k_ops[k];
    sg_clear_error();
    cr_assert_null(u->op(NULL));
    expect_error_from(u->name, SG_ERR_ARG);
    cr_assert_null(u->op(xi));
    expect_error_from(u->name, SG_ERR_DTYPE);
    cr_assert_null(u->op(xb));
    expect_error_from(u->name, SG_ERR_DTYPE);
  }
  sg_clear_error();
  sg_tensor *y = sg_relu(xi);
  t_expect_error(y, SG_ERR_DTYPE, "relu", "i32", NULL);
  sg_dispose(xi);
  sg_dispose(xb);
  cr_assert_eq(t_live_tensors(), live0);
}

Test(unary, null_keeps_the_first_error) {
  int64_t live0 = t_live_tensors();
  sg_tensor *xi = sg_tensor_i32((const int32_t[]){1}, NULL, 0);
  sg_clear_error();
  /* A chain is checked once at the end: the error is the innermost failure. */
  sg_tensor *y = sg_tanh(sg_relu(sg_exp(xi)));
  cr_assert_null(y);
  expect_error_from("exp", SG_ERR_DTYPE);
  cr_assert_null(sg_exp(xi));
  cr_assert_null(sg_clip(NULL, 0, 1));
  cr_assert_null(sg_leaky_relu(NULL, 0.1f));
  cr_assert_null(sg_floor(NULL));
  expect_error_from("exp", SG_ERR_DTYPE);
  sg_dispose(xi);
  cr_assert_eq(t_live_tensors(), live0);
}

Test(unary, bad_parameters_and_states) {
  int64_t live0 = t_live_tensors();
  sg_tensor *x = vec((const float[]){1, 2}, 2);
  sg_clear_error();
  t_expect_error(sg_clip(x, 3, 1), SG_ERR_ARG, "clip", "lo = 3", "hi = 1", NULL);
  t_expect_error(sg_clip(x, NAN, 1), SG_ERR_ARG, "clip", "nan", NULL);
  sg_scope_begin("model");
  sg_scope_begin("act");
  t_expect_error(sg_gelu(NULL), SG_ERR_ARG, "gelu", "'x'", "model/act", NULL);
  sg_scope_end(NULL, 0);
  sg_scope_end(NULL, 0);
  sg_tensor *d = vec((const float[]){1}, 1);
  sg_dispose(d);
  t_expect_error(sg_sqrt(d), SG_ERR_STATE, "sqrt", "disposed", NULL);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live0);
}

Test(unary, failed_op_inside_a_tape) {
  /* A failing op records nothing and leaks nothing; the tape still closes. */
  int64_t live0 = t_live_tensors();
  sg_tensor *x = vec((const float[]){1, 2}, 2);
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_clip(x, 2, 1);
  cr_assert_null(y);
  sg_tensor *g = NULL;
  cr_assert_neq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK);
  cr_assert_null(g);
  cr_assert(!sg_tape_active());
  sg_clear_error();
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live0);
}

/* ---- The engine calls the backend's kernels --------------------------------------------- */

/* Each backend's kernels against the scalar ones are tests/test_conformance_unary.c's, on more
   sizes and offsets with tighter bounds; here, on every backend, the op through the engine and
   the tape give exactly the kernel's bits, and in place equals out of place. */

static const char *const k_backends[] = {"scalar", "avx2", "avx512", "neon"};
static const size_t k_sizes[] = {0, 1, 7, 15, 16, 17, 31, 33, 1000, 100003};
#define MAX_N 100003
#define BUF_FLOATS 100032 /* >= MAX_N + 3 + a guard; 16 | it, as aligned_alloc wants */

/* Values in the op's domain, with NaN, +-Inf and +-0 in both the vector body and the tail. */
static void fill_input(const uop *u, float *x, size_t n) {
  const float edges[5] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
  for (size_t i = 0; i < n; i++) x[i] = rnd(u->info->domain.lo, u->info->domain.hi);
  for (size_t i = 3; i < n; i += 29) x[i] = edges[(i / 29) % 5];
  if (n >= 2) x[n - 1] = edges[n % 5];
  if (n >= 3) x[n - 2] = edges[(n + 2) % 5];
}

typedef struct conf_buffers {
  float *x, *y, *dy, *dx, *s;
} conf_buffers;

static float *buf(void) {
  float *p = aligned_alloc(64, BUF_FLOATS * sizeof(float));
  cr_assert_not_null(p);
  return p;
}

/* The op through the engine equals the kernel on a 64-byte aligned buffer, bit for bit
   (elementwise kernels and chunk boundaries at multiples of 64 bytes); at offsets 1..3 floats
   the kernel in place (y aliasing x) equals it out of place. */
static void engine_forward(const sg_backend *be, const uop *u, size_t n, conf_buffers *b) {
  fill_input(u, b->x, n);
  run_fwd(be, u, b->x, b->y, n);
  int64_t shape = (int64_t)n;
  sg_tensor *t = t_f32(b->x, 1, &shape);
  sg_tensor *y = u->op(t);
  cr_assert_not_null(y, "%s/%s n=%zu: %s", be->name, u->name, n, sg_last_error());
  const float *got = sg_data_f32(y);
  for (size_t i = 0; i < n; i++)
    cr_assert(same_bits(got[i], b->y[i]), "%s/%s n=%zu: op[%zu] = %.9g, kernel %.9g", be->name,
              u->name, n, i, got[i], b->y[i]);
  sg_dispose(y);
  sg_dispose(t);

  for (size_t off = 1; off <= 3; off++) {
    float *x = b->x + off, *yo = b->y + off, *io = b->s + off;
    memmove(x, b->x, n * sizeof *x);
    run_fwd(be, u, x, yo, n);
    memcpy(io, x, n * sizeof *x);
    run_fwd(be, u, io, io, n);
    for (size_t i = 0; i < n; i++)
      cr_assert(same_bits(io[i], yo[i]), "%s/%s n=%zu in place differs at %zu", be->name, u->name,
                n, i);
    memmove(b->x, x, n * sizeof *x);
  }
}

/* The tape's gradient equals the backward kernel fed with the saved tensor, and the backward
   kernel in place (dx aliasing dy) equals it out of place at offsets 1..3. */
static void engine_backward(const sg_backend *be, const uop *u, size_t n, conf_buffers *b) {
  fill_input(u, b->x, n);
  for (size_t i = 0; i < n; i++) b->dy[i] = rnd(-2, 2);
  run_fwd(be, u, b->x, b->y, n);
  const float *saved = u->saved == S_Y ? b->y : b->x;
  run_bwd(be, u, b->dy, saved, b->dx, n);

  int64_t shape = (int64_t)n;
  sg_tensor *t = t_f32(b->x, 1, &shape), *dy = t_f32(b->dy, 1, &shape);
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = u->op(t), *g = NULL;
  cr_assert_eq(sg_tape_end(y, dy, &t, 1, &g), SG_OK, "%s: %s", u->name, sg_last_error());
  const float *got = sg_data_f32(g);
  for (size_t i = 0; i < n; i++)
    cr_assert(same_bits(got[i], b->dx[i]), "%s/%s' n=%zu: tape[%zu] = %.9g, kernel %.9g", be->name,
              u->name, n, i, got[i], b->dx[i]);
  sg_dispose(g);
  sg_dispose(y);
  sg_dispose(dy);
  sg_dispose(t);

  for (size_t off = 1; off <= 3; off++) {
    float *s = b->s + off, *d = b->dx + off, *dyo = b->y + off;
    memmove(s, saved, n * sizeof *s);
    memcpy(dyo, b->dy, n * sizeof *dyo);
    run_bwd(be, u, dyo, s, d, n);
    run_bwd(be, u, dyo, s, dyo, n);
    for (size_t i = 0; i < n; i++)
      cr_assert(same_bits(dyo[i], d[i]), "%s/%s' n=%zu in place differs at %zu", be->name, u->name,
                n, i);
  }
}

Test(unary, engine_and_tape_give_the_kernels_bits) {
  int64_t live0 = t_live_tensors();
  const char *initial = sg_backend_name();
  conf_buffers b = {buf(), buf(), buf(), buf(), buf()};
  int tested = 0;
  for (size_t k = 0; k < sizeof k_backends / sizeof k_backends[0]; k++) {
    const sg_backend *be = sg_backend_get(k_backends[k]);
    if (!be) continue;
    cr_assert_eq(sg_use_backend(k_backends[k]), SG_OK);
    cr_assert_eq(sg_backend_current(), be);
    tested++;
    for (int o = 0; o < N_OPS; o++) {
      const uop *u = &k_ops[o];
      for (size_t s = 0; s < sizeof k_sizes / sizeof k_sizes[0]; s++) {
        engine_forward(be, u, k_sizes[s], &b);
        if (u->kind != K_STEP) engine_backward(be, u, k_sizes[s], &b);
      }
    }
  }
  cr_assert_geq(tested, 1);
  cr_assert_eq(sg_use_backend(initial), SG_OK);
  free(b.x);
  free(b.y);
  free(b.dy);
  free(b.dx);
  free(b.s);
  cr_assert_eq(t_live_tensors(), live0);
}
