/* Scalar reference kernels of the unary ops: SG_FOR_EACH_UNARY_OP (forward and backward),
 * SG_FOR_EACH_STEP_OP (forward only), leaky_relu and clip.
 *
 * Plain loops on float so gcc can vectorise the cheap ones; libm for the transcendental ones.
 * No `restrict`: the ABI lets y alias x (and dx alias dy) for in-place use, which restrict
 * would make undefined; gcc still vectorises these loops behind a run-time overlap check.
 *
 * Note [NaN policy]: NaN propagates through every op here, including relu, relu6, clip,
 * leaky_relu and sign; comparisons are written so a NaN input falls through to a branch that
 * returns it (fmaxf/fminf would drop it). Backward kernels of piecewise ops give 0 for NaN x.
 */
#include <math.h>

#include "kernels_scalar.h"

#define SG_SELU_SCALE 1.0507009873554804934193349852946f
#define SG_SELU_ALPHA 1.6732632423543772848170429916717f
#define SG_SQRT1_2_D 0.70710678118654752440
#define SG_INV_SQRT2PI 0.39894228040143267794f /* 1 / sqrt(2 pi) */
/* Below this gelu and its derivative are 0 in float; the guard also keeps -inf from 0 * inf. */
#define SG_GELU_ZERO_BELOW -20.0f
/* Above this the derivative of gelu is 1 in float; the guard keeps +inf from inf * 0. */
#define SG_GELU_GRAD_ONE_ABOVE 20.0f

/* ---- Forward ------------------------------------------------------------------------------- */

void sg_f32_neg__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = -x[i];
}

void sg_f32_abs__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = fabsf(x[i]);
}

void sg_f32_exp__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = expf(x[i]);
}

void sg_f32_expm1__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = expm1f(x[i]);
}

void sg_f32_log__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = logf(x[i]);
}

void sg_f32_log1p__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = log1pf(x[i]);
}

void sg_f32_sqrt__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = sqrtf(x[i]);
}

void sg_f32_rsqrt__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = 1.0f / sqrtf(x[i]);
}

void sg_f32_square__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = x[i] * x[i];
}

void sg_f32_reciprocal__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = 1.0f / x[i];
}

void sg_f32_relu__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = (v > 0.0f || v != v) ? v : 0.0f;
  }
}

void sg_f32_relu6__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = v > 6.0f ? 6.0f : (v > 0.0f || v != v) ? v : 0.0f;
  }
}

void sg_f32_elu__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = v > 0.0f ? v : expm1f(v);
  }
}

void sg_f32_selu__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = v > 0.0f ? SG_SELU_SCALE * v : (SG_SELU_SCALE * SG_SELU_ALPHA) * expm1f(v);
  }
}

void sg_f32_sigmoid__scalar(const float *x, float *y, size_t n) {
  /* From e = e^-|x| (never overflows): 1 / (1 + e) for x >= 0, e / (1 + e) below, which keeps
     the relative accuracy in the left tail (1 / (1 + e^-x) would flush it to 0 at x < -88). */
  for (size_t i = 0; i < n; i++) {
    const float v = x[i], e = expf(-fabsf(v)), r = 1.0f / (1.0f + e);
    y[i] = v >= 0.0f ? r : e * r;
  }
}

void sg_f32_tanh__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = tanhf(x[i]);
}

void sg_f32_softplus__scalar(const float *x, float *y, size_t n) {
  /* ln(1 + e^x) = ln(1 + e^-|x|) + max(x, 0): never overflows. */
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = log1pf(expf(-fabsf(v))) + (v > 0.0f ? v : 0.0f);
  }
}

void sg_f32_gelu__scalar(const float *x, float *y, size_t n) {
  /* x * Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2: erfc keeps Phi accurate for x << 0, where
     1 + erf would cancel. */
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    /* erfc in double: rounding its argument to float costs ~z^2 ulp far in the left tail. */
    y[i] = v < SG_GELU_ZERO_BELOW ? -0.0f : (float)(0.5 * v * erfc(-(double)v * SG_SQRT1_2_D));
  }
}

void sg_f32_sin__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = sinf(x[i]);
}

void sg_f32_cos__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = cosf(x[i]);
}

/* ---- Step ops (no backward kernel) -------------------------------------------------------- */

void sg_f32_floor__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = floorf(x[i]);
}

void sg_f32_ceil__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = ceilf(x[i]);
}

void sg_f32_round__scalar(const float *x, float *y, size_t n) {
  /* Under the default rounding mode nearbyintf rounds half to even. */
  for (size_t i = 0; i < n; i++) y[i] = nearbyintf(x[i]);
}

void sg_f32_sign__scalar(const float *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = v > 0.0f ? 1.0f : v < 0.0f ? -1.0f : v != v ? v : 0.0f;
  }
}

/* ---- Parametric ---------------------------------------------------------------------------- */

void sg_f32_leaky_relu__scalar(const float *x, float *y, size_t n, float alpha) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = v > 0.0f ? v : alpha * v;
  }
}

void sg_f32_clip__scalar(const float *x, float *y, size_t n, float lo, float hi) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    y[i] = v < lo ? lo : v > hi ? hi : v;
  }
}

/* ---- Backward: dx = dy * f'(x), from the saved tensor named in SG_FOR_EACH_UNARY_OP ---------- */

void sg_f32_neg_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                 size_t n) {
  (void)x;
  (void)y;
  for (size_t i = 0; i < n; i++) dx[i] = -dy[i];
}

void sg_f32_abs_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                 size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) {
    const float v = x[i], g = dy[i];
    dx[i] = v > 0.0f ? g : v < 0.0f ? -g : 0.0f;
  }
}

void sg_f32_exp_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                 size_t n) {
  (void)x;
  for (size_t i = 0; i < n; i++) dx[i] = dy[i] * y[i];
}

void sg_f32_expm1_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                   size_t n) {
  (void)x;
  for (size_t i = 0; i < n; i++) dx[i] = dy[i] * (y[i] + 1.0f);
}

void sg_f32_log_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                 size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) dx[i] = dy[i] / x[i];
}

void sg_f32_log1p_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                   size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) dx[i] = dy[i] / (1.0f + x[i]);
}

void sg_f32_sqrt_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                  size_t n) {
  (void)x;
  for (size_t i = 0; i < n; i++)
    dx[i] = dy[i] / (2.0f * y[i]); /* (dy / 2) / y drops bits of a tiny dy */
}

void sg_f32_rsqrt_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                   size_t n) {
  /* d/dx x^(-1/2) = -x^(-3/2) / 2 = -y^3 / 2. */
  (void)x;
  for (size_t i = 0; i < n; i++) {
    const float v = y[i];
    dx[i] = -0.5f * dy[i] * (v * v * v);
  }
}

void sg_f32_square_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                    size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) dx[i] = 2.0f * x[i] * dy[i];
}

void sg_f32_reciprocal_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                        size_t n) {
  (void)x;
  for (size_t i = 0; i < n; i++) dx[i] = -dy[i] * (y[i] * y[i]);
}

void sg_f32_relu_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                  size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) {
    const float g = dy[i];
    dx[i] = x[i] > 0.0f ? g : 0.0f;
  }
}

void sg_f32_relu6_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                   size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) {
    const float v = x[i], g = dy[i];
    dx[i] = (v > 0.0f && v < 6.0f) ? g : 0.0f;
  }
}

void sg_f32_elu_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                 size_t n) {
  /* y > 0 exactly when x > 0; below, d/dx (e^x - 1) = y + 1. */
  (void)x;
  for (size_t i = 0; i < n; i++) {
    const float v = y[i];
    dx[i] = dy[i] * (v > 0.0f ? 1.0f : v + 1.0f);
  }
}

void sg_f32_selu_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                  size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    dx[i] = dy[i] * (v > 0.0f ? SG_SELU_SCALE : (SG_SELU_SCALE * SG_SELU_ALPHA) * expf(v));
  }
}

void sg_f32_sigmoid_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                     size_t n) {
  (void)x;
  for (size_t i = 0; i < n; i++) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}

void sg_f32_tanh_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                  size_t n) {
  /* (1 - y)(1 + y), not 1 - y^2: near |y| = 1 the rounding of y^2 is relative to 1 while the
     result is tiny; 1 - y and 1 + y are exact there. */
  (void)x;
  for (size_t i = 0; i < n; i++) dx[i] = dy[i] * ((1.0f - y[i]) * (1.0f + y[i]));
}

void sg_f32_softplus_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                      size_t n) {
  /* d/dx softplus = sigmoid(x), in double and rounded once with dy: the reference the SIMD
     kernels (dy times their own sigmoid, up to 2.9 ulp) are held to within 4 ulp of. Its float
     version (4 roundings, ~2.2 ulp) put them 5 ulp apart near x = -7 (tests/fuzz). From e =
     e^-|x|, which never overflows, as sg_f32_sigmoid__scalar. */
  (void)y;
  for (size_t i = 0; i < n; i++) {
    const double v = x[i], e = exp(-fabs(v)), r = 1.0 / (1.0 + e), s = v >= 0.0 ? r : e * r;
    /* Where sigmoid(x) rounds to 0 in float (x < -103.97), the derivative is that 0, as in the
       float kernels: dy times it is dy * 0 (NaN for an infinite dy, tests/fuzz), not dy times a
       double below every float. */
    dx[i] = (float)s == 0.0f ? dy[i] * 0.0f : (float)((double)dy[i] * s);
  }
}

void sg_f32_gelu_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                  size_t n) {
  /* d/dx x Phi(x) = Phi(x) + x phi(x). */
  (void)y;
  for (size_t i = 0; i < n; i++) {
    const float v = x[i];
    const float d = v < SG_GELU_ZERO_BELOW ? 0.0f
                    : v > SG_GELU_GRAD_ONE_ABOVE
                        ? 1.0f
                        : (float)(0.5 * erfc(-(double)v * SG_SQRT1_2_D) +
                                  v * SG_INV_SQRT2PI * exp(-0.5 * (double)v * v));
    dx[i] = dy[i] * d;
  }
}

void sg_f32_sin_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                 size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) dx[i] = dy[i] * cosf(x[i]);
}

void sg_f32_cos_backward__scalar(const float *dy, const float *x, const float *y, float *dx,
                                 size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) dx[i] = -dy[i] * sinf(x[i]);
}

void sg_f32_leaky_relu_backward__scalar(const float *dy, const float *x, float *dx, size_t n,
                                        float alpha) {
  for (size_t i = 0; i < n; i++) {
    const float s = x[i] > 0.0f ? 1.0f : alpha;
    dx[i] = dy[i] * s;
  }
}

void sg_f32_clip_backward__scalar(const float *dy, const float *x, float *dx, size_t n, float lo,
                                  float hi) {
  for (size_t i = 0; i < n; i++) {
    const float v = x[i], g = dy[i];
    dx[i] = (v >= lo && v <= hi) ? g : 0.0f;
  }
}
