/* Tests of the unary ops (SG_FOR_EACH_UNARY_OP, SG_FOR_EACH_STEP_OP, leaky_relu, clip): known
 * values against double-precision libm, hand values, IEEE edge values, empty and rank-0
 * tensors, gradients (finite differences and the backward kernels against double
 * derivatives), the NaN policy, errors, and cross-backend conformance of every available
 * backend against the scalar reference on awkward sizes and unaligned pointers. */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

typedef enum { K_PLAIN, K_STEP, K_LEAKY, K_CLIP } op_kind;
typedef enum { S_NONE, S_X, S_Y } op_saved;

#define LEAKY_ALPHA 0.1f
#define CLIP_LO -1.0f
#define CLIP_HI 2.0f
#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717
#define LN2 0.69314718055994530942
#define PI 3.14159265358979323846
#define N_ NAN
#define I_ INFINITY

/* Accuracy contract of one op: |got - want| <= atol + rtol * |want| against the double
   reference (forward) or double derivative (backward, from the float saved tensor). The same
   bounds, doubled, are what another backend may differ from the scalar one by. */
typedef struct uop {
  const char *name;
  sg_tensor *(*op)(sg_tensor *);
  double (*ref)(double);
  double (*dref)(double); /* derivative; NULL for step ops */
  op_kind kind;
  op_saved saved;
  size_t fwd, bwd; /* offsetof(sg_backend, slot), K_PLAIN / K_STEP */
  float lo, hi;    /* sample domain */
  float glo, ghi;  /* gradient-check domain, whose sample points avoid the kinks */
  double rtol, atol, brtol, batol;
  float edge[5];    /* f(NaN), f(+inf), f(-inf), f(+0), f(-0) */
  bool zero_signed; /* the sign of a zero result in edge[] is part of the contract */
} uop;

/* ---- Double references ----------------------------------------------------------------- */

static double r_neg(double x) { return -x; }
static double d_neg(double x) { return (void)x, -1.0; }
static double d_abs(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
static double d_exp(double x) { return exp(x); }
static double d_log(double x) { return 1.0 / x; }
static double d_log1p(double x) { return 1.0 / (1.0 + x); }
static double d_sqrt(double x) { return 0.5 / sqrt(x); }
static double r_rsqrt(double x) { return 1.0 / sqrt(x); }
static double d_rsqrt(double x) { return -0.5 / (x * sqrt(x)); }
static double r_square(double x) { return x * x; }
static double d_square(double x) { return 2.0 * x; }
static double r_reciprocal(double x) { return 1.0 / x; }
static double d_reciprocal(double x) { return -1.0 / (x * x); }
static double r_relu(double x) { return x > 0 ? x : 0.0; }
static double d_relu(double x) { return x > 0 ? 1.0 : 0.0; }
static double r_relu6(double x) { return x > 6 ? 6.0 : x > 0 ? x : 0.0; }
static double d_relu6(double x) { return x > 0 && x < 6 ? 1.0 : 0.0; }
static double r_elu(double x) { return x > 0 ? x : expm1(x); }
static double d_elu(double x) { return x > 0 ? 1.0 : exp(x); }
static double r_selu(double x) { return SELU_SCALE * (x > 0 ? x : SELU_ALPHA * expm1(x)); }
static double d_selu(double x) { return SELU_SCALE * (x > 0 ? 1.0 : SELU_ALPHA * exp(x)); }
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double d_sigmoid(double x) { return r_sigmoid(x) * r_sigmoid(-x); }
static double d_tanh(double x) { return 1.0 / (cosh(x) * cosh(x)); }
static double r_softplus(double x) { return (x > 0 ? x : 0.0) + log1p(exp(-fabs(x))); }
static double r_gelu(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double d_gelu(double x) {
  return 0.5 * erfc(-x / sqrt(2.0)) + x * exp(-0.5 * x * x) / sqrt(2.0 * PI);
}
static double d_sin(double x) { return cos(x); }
static double d_cos(double x) { return -sin(x); }
static double r_sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
static double r_leaky(double x) { return x > 0 ? x : LEAKY_ALPHA * x; }
static double d_leaky(double x) { return x > 0 ? 1.0 : LEAKY_ALPHA; }
static double r_clip(double x) { return x < CLIP_LO ? CLIP_LO : x > CLIP_HI ? CLIP_HI : x; }
static double d_clip(double x) { return x >= CLIP_LO && x <= CLIP_HI ? 1.0 : 0.0; }

static sg_tensor *op_leaky(sg_tensor *x) { return sg_leaky_relu(x, LEAKY_ALPHA); }
static sg_tensor *op_clip(sg_tensor *x) { return sg_clip(x, CLIP_LO, CLIP_HI); }

/* ---- The op table ---------------------------------------------------------------------- */

#define EPS ((double)FLT_EPSILON)
/* clang-format off */
#define PLAIN(nm, sv, ref, dref, lo, hi, glo, ghi, rtol, atol, brtol, batol, e0, e1, e2, e3, e4, \
              zs)                                                                             \
  {#nm,  sg_##nm, ref,  dref, K_PLAIN, S_##sv, offsetof(sg_backend, nm),                       \
   offsetof(sg_backend, nm##_backward), lo, hi, glo, ghi, rtol, atol, brtol, batol,            \
   {e0, e1, e2, e3, e4}, zs}
#define STEP(nm, ref, e0, e1, e2, e3, e4, zs)                                                    \
  {#nm, sg_##nm, ref, NULL, K_STEP, S_NONE, offsetof(sg_backend, nm), 0, -100, 100, -3, 3, 0, 0, \
   0, 0, {e0, e1, e2, e3, e4}, zs}

#define SELU_MIN ((float)(-SELU_SCALE * SELU_ALPHA))
static const uop k_ops[] = {
    /* name, saved, ref, dref, sample domain, gradcheck domain, rtol, atol, brtol, batol,
       f(NaN, +inf, -inf, +0, -0), signed zeros */
    PLAIN(neg, NONE, r_neg, d_neg, -10, 10, -3, 3, 0, 0, 0, 0, N_, -I_, I_, -0.0f, 0.0f, true),
    PLAIN(abs, X, fabs, d_abs, -10, 10, -3, 3, 0, 0, 0, 0, N_, I_, I_, 0, 0, true),
    /* Backward kernels that read y (expm1, elu, sigmoid, tanh) lose the derivative's tiny
       value where y rounds to its limit (-1, 0 or 1), hence an absolute bound there. */
    PLAIN(exp, Y, exp, d_exp, -87, 88, -3, 3, 2 * EPS, 0, 3 * EPS, 0, N_, I_, 0, 1, 1, false),
    PLAIN(expm1, Y, expm1, d_exp, -87, 88, -3, 3, 2 * EPS, 0, 4 * EPS, EPS, N_, I_, -1, 0, -0.0f,
          true),
    PLAIN(log, X, log, d_log, 1e-3f, 1e4f, 0.2f, 5, 2 * EPS, 0, 2 * EPS, 0, N_, I_, N_, -I_, -I_,
          false),
    PLAIN(log1p, X, log1p, d_log1p, -0.999f, 1e4f, -0.8f, 5, 2 * EPS, 0, 2 * EPS, 0, N_, I_, N_, 0,
          -0.0f, true),
    PLAIN(sqrt, Y, sqrt, d_sqrt, 0, 1e4f, 0.2f, 5, EPS, 0, 3 * EPS, 0, N_, I_, N_, 0, -0.0f, true),
    PLAIN(rsqrt, Y, r_rsqrt, d_rsqrt, 1e-3f, 1e4f, 0.2f, 5, 2 * EPS, 0, 6 * EPS, 0, N_, 0, N_, I_,
          -I_, false),
    PLAIN(square, X, r_square, d_square, -1e3f, 1e3f, -3, 3, EPS, 0, EPS, 0, N_, I_, I_, 0, 0,
          true),
    PLAIN(reciprocal, Y, r_reciprocal, d_reciprocal, -10, 10, -4, 4, EPS, 0, 4 * EPS, 0, N_, 0,
          -0.0f, I_, -I_, true),
    PLAIN(relu, X, r_relu, d_relu, -10, 10, -3, 3, 0, 0, 0, 0, N_, I_, 0, 0, 0, false),
    PLAIN(relu6, X, r_relu6, d_relu6, -3, 9, -2, 8, 0, 0, 0, 0, N_, 6, 0, 0, 0, false),
    PLAIN(elu, Y, r_elu, d_elu, -20, 5, -3, 3, 2 * EPS, 0, 4 * EPS, EPS, N_, I_, -1, 0, -0.0f,
          false),
    PLAIN(selu, X, r_selu, d_selu, -20, 5, -3, 3, 4 * EPS, 0, 4 * EPS, 0, N_, I_, SELU_MIN, 0,
          -0.0f, false),
    PLAIN(sigmoid, Y, r_sigmoid, d_sigmoid, -40, 40, -5, 5, 4 * EPS, 0, 8 * EPS, EPS, N_, 1, 0,
          0.5f, 0.5f, false),
    PLAIN(tanh, Y, tanh, d_tanh, -10, 10, -3, 3, 4 * EPS, 0, 8 * EPS, EPS, N_, 1, -1, 0, -0.0f,
          true),
    PLAIN(softplus, X, r_softplus, r_sigmoid, -40, 40, -5, 5, 4 * EPS, 0, 4 * EPS, 0, N_, I_, 0,
          (float)LN2, (float)LN2, false),
    /* gelu: an absolute bound too, as x Phi(x) is tiny for x << 0, where the textbook
       1 + erf(x / sqrt 2) cancels (the scalar kernel uses erfc, accurate there, but the
       contract does not demand it); the derivative crosses 0 near x = -0.75. */
    PLAIN(gelu, X, r_gelu, d_gelu, -10, 10, -4, 4, 4 * EPS, 4 * EPS, 8 * EPS, EPS, N_, I_, 0, 0,
          -0.0f, false),
    PLAIN(sin, X, sin, d_sin, -100, 100, -4, 4, 2 * EPS, 0, 2 * EPS, 0, N_, N_, N_, 0, -0.0f,
          true),
    PLAIN(cos, X, cos, d_cos, -100, 100, -4, 4, 2 * EPS, 0, 2 * EPS, 0, N_, N_, N_, 1, 1, false),
    STEP(floor, floor, N_, I_, -I_, 0, -0.0f, true),
    STEP(ceil, ceil, N_, I_, -I_, 0, -0.0f, true),
    STEP(round, nearbyint, N_, I_, -I_, 0, -0.0f, true),
    STEP(sign, r_sign, N_, 1, -1, 0, 0, false),
    {"leaky_relu", op_leaky, r_leaky, d_leaky, K_LEAKY, S_X, 0, 0, -10, 10, -3, 3, EPS, 0, EPS,
     0, {N_, I_, -I_, 0, -0.0f}, false},
    {"clip", op_clip, r_clip, d_clip, K_CLIP, S_X, 0, 0, -3, 4, -3, 4, 0, 0, 0, 0,
     {N_, CLIP_HI, CLIP_LO, 0, -0.0f}, false},
};
/* clang-format on */
#define N_OPS ((int)(sizeof k_ops / sizeof k_ops[0]))

/* The op lists of backend.h. */
#define LIST_ENTRY_(name, saved, doc) {#name, S_##saved},
static const struct {
  const char *name;
  op_saved saved;
} k_list[] = {SG_FOR_EACH_UNARY_OP(LIST_ENTRY_)};
#define STEP_NAME_(name, doc) #name,
static const char *const k_step_list[] = {SG_FOR_EACH_STEP_OP(STEP_NAME_)};

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

/* Two backends' results: NaN matches NaN, infinities exactly, else within the op's bounds. */
static bool agree(float a, float b, double atol, double rtol) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
  if (isinf(a) || isinf(b)) return a == b;
  return fabs((double)a - b) <= atol + rtol * fmax(fabs(a), fabs(b)) + FLT_MIN;
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
    double want = u->ref((double)x[i]);
    cr_assert(close_to(got[i], want, u->atol, u->rtol), "%s %s(%.9g) = %.9g, want %.17g", what,
              u->name, x[i], got[i], want);
  }
}

/* ---- The table matches backend.h ------------------------------------------------------- */

Test(unary, table_covers_the_op_lists) {
  int n_list = (int)(sizeof k_list / sizeof k_list[0]);
  int n_steps = (int)(sizeof k_step_list / sizeof k_step_list[0]);
  cr_assert_eq(N_OPS, n_list + n_steps + 2, "a unary op was added without a test entry");
  for (int i = 0; i < n_list; i++) {
    const uop *u = find_op(k_list[i].name);
    cr_assert_not_null(u, "no test entry for %s", k_list[i].name);
    cr_assert_eq(u->kind, K_PLAIN, "%s", u->name);
    cr_assert_eq(u->saved, k_list[i].saved, "%s saves the wrong tensor in the test", u->name);
  }
  for (int i = 0; i < n_steps; i++) {
    const uop *u = find_op(k_step_list[i]);
    cr_assert_not_null(u, "no test entry for %s", k_step_list[i]);
    cr_assert_eq(u->kind, K_STEP, "%s", u->name);
  }
}

/* ---- Known values ------------------------------------------------------------------------ */

Test(unary, values_match_double_libm) {
  int64_t live0 = t_live_tensors();
  enum { N = 512 };
  float x[N];
  for (int k = 0; k < N_OPS; k++) {
    const uop *u = &k_ops[k];
    for (int i = 0; i < N; i++) x[i] = rnd(u->lo, u->hi);
    /* The ends of the domain and small magnitudes. */
    x[0] = u->lo;
    x[1] = u->hi;
    if (u->lo <= 0 && u->hi >= 0) {
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
      float w = u->edge[i];
      cr_assert(isnan(w) ? isnan(got[i]) : got[i] == w, "%s(%g) = %g, want %g", u->name, x[i],
                got[i], w);
      if (u->zero_signed && w == 0)
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

    float v = 0.37f * u->glo + 0.63f * u->ghi;
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
    for (int i = 0; i < 6; i++) v[i] = (float)(u->glo + (u->ghi - u->glo) * frac[i]);
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
    for (int i = 0; i < N; i++) x[i] = rnd(u->lo, u->hi);
    x[0] = u->lo;
    x[1] = u->hi;
    run_fwd(be, u, x, y, N);
    run_bwd(be, u, dy, u->saved == S_Y ? y : x, dx, N);
    for (int i = 0; i < N; i++) {
      /* Skip the kinks themselves, where either one-sided derivative is right. */
      if (x[i] == 0 || (u->kind == K_CLIP && (x[i] == CLIP_LO || x[i] == CLIP_HI))) continue;
      double want = u->dref((double)x[i]);
      cr_assert(close_to(dx[i], want, u->batol, u->brtol), "%s'(%.9g) = %.9g, want %.17g", u->name,
                x[i], dx[i], want);
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

/* ---- Cross-backend conformance ------------------------------------------------------------- */

static const char *const k_backends[] = {"scalar", "avx2", "avx512", "neon"};
static const size_t k_sizes[] = {0, 1, 7, 15, 16, 17, 31, 33, 1000, 100003};
#define MAX_N 100003
#define BUF_FLOATS 100032 /* >= MAX_N + 3 + a guard; 16 | it, as aligned_alloc wants */

/* Values in the op's domain, with NaN, +-Inf and +-0 in both the vector body and the tail. */
static void fill_input(const uop *u, float *x, size_t n) {
  const float edges[5] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
  for (size_t i = 0; i < n; i++) x[i] = rnd(u->lo, u->hi);
  for (size_t i = 3; i < n; i += 29) x[i] = edges[(i / 29) % 5];
  if (n >= 2) x[n - 1] = edges[n % 5];
  if (n >= 3) x[n - 2] = edges[(n + 2) % 5];
}

typedef struct conf_buffers {
  float *x, *y, *ys, *dy, *dx, *dxs, *s;
} conf_buffers;

static float *buf(void) {
  float *p = aligned_alloc(64, BUF_FLOATS * sizeof(float));
  cr_assert_not_null(p);
  return p;
}

/* The op through the engine equals the kernel on a 64-byte aligned buffer, bit for bit
   (elementwise kernels and chunk boundaries at multiples of 64 bytes); the kernel at
   offsets 1..3 floats agrees with the scalar reference within the op's bounds. */
static void conform_forward(const sg_backend *be, const sg_backend *ref, const uop *u, size_t n,
                            conf_buffers *b) {
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
    float *x = b->x + off, *yo = b->y + off, *ys = b->ys + off;
    memmove(x, b->x, n * sizeof *x);
    yo[n] = 12345.0f; /* guard: kernels write exactly n elements */
    run_fwd(be, u, x, yo, n);
    run_fwd(ref, u, x, ys, n);
    cr_assert(yo[n] == 12345.0f, "%s/%s n=%zu wrote past the end", be->name, u->name, n);
    for (size_t i = 0; i < n; i++)
      cr_assert(agree(yo[i], ys[i], 2 * u->atol, 2 * u->rtol),
                "%s/%s n=%zu off=%zu: f(%.9g) = %.9g, scalar %.9g", be->name, u->name, n, off, x[i],
                yo[i], ys[i]);
    /* In place (y aliasing x) gives the same result. */
    float *io = b->s + off;
    memcpy(io, x, n * sizeof *x);
    run_fwd(be, u, io, io, n);
    for (size_t i = 0; i < n; i++)
      cr_assert(same_bits(io[i], yo[i]), "%s/%s n=%zu in place differs at %zu", be->name, u->name,
                n, i);
    memmove(b->x, x, n * sizeof *x);
  }
}

/* The tape's gradient equals the backward kernel fed with the saved tensor, and the backward
   kernel agrees with the scalar one at offsets 1..3. */
static void conform_backward(const sg_backend *be, const sg_backend *ref, const uop *u, size_t n,
                             conf_buffers *b) {
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

  /* The saved tensor comes from the reference forward, so both kernels read the same input. */
  run_fwd(ref, u, b->x, b->y, n);
  for (size_t off = 1; off <= 3; off++) {
    float *s = b->s + off, *d = b->dx + off, *ds = b->dxs + off, *dyo = b->ys + off;
    memcpy(s, saved, n * sizeof *s);
    memcpy(dyo, b->dy, n * sizeof *dyo);
    d[n] = 12345.0f;
    run_bwd(be, u, dyo, s, d, n);
    run_bwd(ref, u, dyo, s, ds, n);
    cr_assert(d[n] == 12345.0f, "%s/%s' n=%zu wrote past the end", be->name, u->name, n);
    for (size_t i = 0; i < n; i++)
      cr_assert(agree(d[i], ds[i], 2 * u->batol, 2 * u->brtol),
                "%s/%s' n=%zu off=%zu: at %.9g (dy %.9g) got %.9g, scalar %.9g", be->name, u->name,
                n, off, s[i], dyo[i], d[i], ds[i]);
    /* In place (dx aliasing dy). */
    run_bwd(be, u, dyo, s, dyo, n);
    for (size_t i = 0; i < n; i++)
      cr_assert(same_bits(dyo[i], d[i]), "%s/%s' n=%zu in place differs at %zu", be->name, u->name,
                n, i);
  }
}

Test(unary, backends_conform) {
  int64_t live0 = t_live_tensors();
  const sg_backend *ref = sg_backend_get("scalar");
  cr_assert_not_null(ref);
  const char *initial = sg_backend_name();
  conf_buffers b = {buf(), buf(), buf(), buf(), buf(), buf(), buf()};
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
        conform_forward(be, ref, u, k_sizes[s], &b);
        if (u->kind != K_STEP) conform_backward(be, ref, u, k_sizes[s], &b);
      }
    }
  }
  cr_assert_geq(tested, 1);
  cr_assert_eq(sg_use_backend(initial), SG_OK);
  free(b.x);
  free(b.y);
  free(b.ys);
  free(b.dy);
  free(b.dx);
  free(b.dxs);
  free(b.s);
  cr_assert_eq(t_live_tensors(), live0);
}
