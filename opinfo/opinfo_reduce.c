/* The reductions' rows (SG_FOR_EACH_REDUCE_OP as "reduce_<name>", argmax, argmin) and the
 * softmax family's (softmax, log_softmax, softmax_cross_entropy with an entry per extra
 * output): their double references (opinfo_row_ref, the only place they are written) and
 * their bounds, forward and backward per kernel (opinfo_bound). */
#include <math.h>
#include <stdbool.h>

#include "opinfo.h"

/* ---- The double references (the policy and the row layout: opinfo_row_ref) ---- */

static double ref_sum(const float *x, size_t r, size_t stride) {
  double s = 0;
  for (size_t k = 0; k < r; k++) s += x[k * stride];
  return s;
}

/* The first extremum's index, or the first NaN's; want_max picks the comparison. */
static size_t ref_arg(const float *x, size_t r, size_t stride, bool want_max) {
  double best = want_max ? -INFINITY : INFINITY;
  size_t at = 0;
  for (size_t k = 0; k < r; k++) {
    double v = x[k * stride];
    if (isnan(v)) return k;
    if (want_max ? v > best : v < best) best = v, at = k;
  }
  return at;
}
static size_t ref_argmax(const float *x, size_t r, size_t stride) {
  return ref_arg(x, r, stride, true);
}
static size_t ref_argmin(const float *x, size_t r, size_t stride) {
  return ref_arg(x, r, stride, false);
}

/* The extremum: NaN if the row holds one, -inf (max) or +inf (min) if it is empty. */
static double ref_max(const float *x, size_t r, size_t stride) {
  size_t at = ref_argmax(x, r, stride);
  return r == 0 ? -INFINITY : x[at * stride];
}
static double ref_min(const float *x, size_t r, size_t stride) {
  size_t at = ref_argmin(x, r, stride);
  return r == 0 ? INFINITY : x[at * stride];
}

/* m + log(sum e^(x - m)), m the row's max; a row whose max is not finite gives it (NaN, -inf
   for an empty or all -inf row, +inf). */
static double ref_logsumexp(const float *x, size_t r, size_t stride) {
  double m = ref_max(x, r, stride), s = 0;
  if (!isfinite(m)) return m;
  for (size_t k = 0; k < r; k++) s += exp(x[k * stride] - m);
  return m + log(s);
}

static double ref_sum_dx(double dy, double x, double y) {
  (void)x, (void)y;
  return dy;
}
/* Every element equal to the extremum (each of several ties) gets the full dy. */
static double ref_extremum_dx(double dy, double x, double y) { return x == y ? dy : 0.0; }
static double ref_logsumexp_dx(double dy, double x, double y) { return dy * exp(x - y); }

/* softmax e^(x - m) / s and log_softmax x - m - log(s), with m the row's max and s the sum of
   e^(x - m): a NaN anywhere in the row (m or s NaN) makes the whole row NaN, as does +inf
   (e^(inf - inf)) or a row of only -inf. */
static void ref_softmax_row(const float *x, size_t r, size_t stride, bool log_form, double *y) {
  double m = ref_max(x, r, stride), s = 0;
  for (size_t k = 0; k < r; k++) s += exp(x[k * stride] - m);
  for (size_t k = 0; k < r; k++)
    y[k * stride] = log_form ? x[k * stride] - m - log(s) : exp(x[k * stride] - m) / s;
}
static void ref_softmax(const float *x, size_t r, size_t stride, double *y) {
  ref_softmax_row(x, r, stride, false, y);
}
static void ref_log_softmax(const float *x, size_t r, size_t stride, double *y) {
  ref_softmax_row(x, r, stride, true, y);
}

static void ref_softmax_backward(const float *dy, const double *p, size_t r, size_t stride,
                                 double *dx) {
  double s = 0;
  for (size_t k = 0; k < r; k++) s += dy[k * stride] * p[k * stride];
  for (size_t k = 0; k < r; k++) dx[k * stride] = p[k * stride] * (dy[k * stride] - s);
}
static void ref_log_softmax_backward(const float *dy, const double *p, size_t r, size_t stride,
                                     double *dx) {
  double s = 0;
  for (size_t k = 0; k < r; k++) s += dy[k * stride];
  for (size_t k = 0; k < r; k++) dx[k * stride] = dy[k * stride] - p[k * stride] * s;
}

static double ref_cross_entropy(const float *labels, const double *lp, size_t r, size_t stride) {
  double l = 0;
  for (size_t k = 0; k < r; k++) l -= labels[k * stride] * lp[k * stride];
  return l;
}
/* dlogits = dloss (e^lp - label), dlabels = -dloss lp. */
static double ref_cross_entropy_dlogits(double dloss, double label, double lp) {
  return dloss * (exp(lp) - label);
}
static double ref_cross_entropy_dlabels(double dloss, double label, double lp) {
  (void)label;
  return -dloss * lp;
}

/* ---- The rows ---- */

#define EXACT                                                                                      \
  { 0 }
/* The reductions' inputs: multiples of 1/8 in this range in the clean pass, so every partial
   sum is exact. */
#define GRID                                                                                       \
  { -16, 16 }
/* The softmax family: a float row sum (grows like sqrt(r)) against a double one. */
#define ROWS                                                                                       \
  { -10, 10 }

const opinfo_kernel opinfo_reduce_table[] = {
    /* Exact on the dyadic grid; with edge values, within 2 (r + 2) eps sum|x| (the worst case
       of recursive summation, twice; the conformance test widens abs for those passes). */
    {.name = "reduce_sum",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = EXACT, .bwd = EXACT},
     .flops = OPINFO_FLOPS(1, 0),
     .row_ref = {.reduce = ref_sum, .dx = ref_sum_dx}},
    /* The sign of max(+0, -0) is open. */
    {.name = "reduce_max",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = {.zero_any = true}, .bwd = EXACT},
     .flops = OPINFO_FLOPS(1, 1),
     .row_ref = {.reduce = ref_max, .dx = ref_extremum_dx}},
    {.name = "reduce_min",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = {.zero_any = true}, .bwd = EXACT},
     .flops = OPINFO_FLOPS(1, 1),
     .row_ref = {.reduce = ref_min, .dx = ref_extremum_dx}},
    /* abs relative to 1 + |row max|; the backward's e^(x - y) is rounded among the denormals
       below x - y = -87 and then scaled by dy: tiny (4 ULP at 4.5e-38 with dy near 8, found by
       tests/fuzz). */
    {.name = "reduce_logsumexp",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = {.ulp = 4, .grow = 1, .abs = 4}, .bwd = {.ulp = 2, .tiny = 2}},
     .flops = OPINFO_FLOPS(OPINFO_TRANSC + 3, OPINFO_TRANSC + 2),
     .row_ref = {.reduce = ref_logsumexp, .dx = ref_logsumexp_dx}},
    {.name = "argmax",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = EXACT},
     .flops = OPINFO_FLOPS(1, 0),
     .row_ref = {.arg = ref_argmax}},
    {.name = "argmin",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = EXACT},
     .flops = OPINFO_FLOPS(1, 0),
     .row_ref = {.arg = ref_argmin}},
    /* FLOPs: max, subtract, exp, sum, scale; backward y * (dy - sum(dy * y)). Bounds: abs
       relative to 1 + |y| (log_softmax), |y| (|dy| + sum|dy y|) (softmax backward), |dy| + e^y
       sum|dy| (log_softmax backward). */
    {.name = "softmax",
     .has_conf = true,
     .conf = {.domain = ROWS, .fwd = {.ulp = 6, .grow = 1}, .bwd = {.ulp = 4, .grow = 1, .abs = 4}},
     /* SIMD: row_exp_store (vexp) and row_scale (a multiply), the max pass none; backward
        y (dy - s) a multiply and the dot product dy y an FMA. */
     .flops = OPINFO_FLOPS_SIMD(OPINFO_TRANSC + 4, 4, OPINFO_SIMD_EXP + 2, 4),
     .row_ref = {.map = ref_softmax, .map_backward = ref_softmax_backward}},
    {.name = "log_softmax",
     .has_conf = true,
     .conf = {.domain = ROWS,
              .fwd = {.ulp = 4, .grow = 1, .abs = 4},
              .bwd = {.ulp = 4, .grow = 1, .abs = 4}},
     .flops = OPINFO_FLOPS(OPINFO_TRANSC + 4, OPINFO_TRANSC + 3),
     .row_ref = {.map = ref_log_softmax, .map_backward = ref_log_softmax_backward}},
    /* The loss, abs relative to sum |t| (1 + |lp|): each lp is held to 1 + |lp| (the
       log_probs row), and a float log of a row sum near 1 leaves lp near 0 with an error of
       eps, not eps |lp| (a one-hot row whose class dominates: -lp ~ 0.008, 34 ULP apart on
       avx2; found by tests/fuzz/fuzz_nn). dlogits, abs relative to |g| (e^lp + |t|). */
    {.name = "softmax_cross_entropy",
     .has_conf = true,
     .conf = {.domain = ROWS, .fwd = {.ulp = 4, .grow = 1, .abs = 4}, .bwd = {.ulp = 2, .abs = 4}},
     .flops = OPINFO_FLOPS(OPINFO_TRANSC + 6, OPINFO_TRANSC + 4),
     .row_ref = {.loss = ref_cross_entropy, .dx = ref_cross_entropy_dlogits}},
    /* Its other outputs: the log-softmax it writes, and dlabels = -g lp (one product). */
    {.name = "softmax_cross_entropy:log_probs",
     .has_conf = true,
     .conf = {.domain = ROWS, .fwd = {.ulp = 4, .grow = 1, .abs = 4}},
     .row_ref = {.map = ref_log_softmax}},
    {.name = "softmax_cross_entropy_backward:dlabels",
     .has_conf = true,
     .conf = {.domain = ROWS, .fwd = EXACT},
     .row_ref = {.dx = ref_cross_entropy_dlabels}},
};
const size_t opinfo_reduce_count = sizeof opinfo_reduce_table / sizeof opinfo_reduce_table[0];
