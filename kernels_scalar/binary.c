/* Scalar reference kernels for the broadcasting binary ops (SG_FOR_EACH_BINARY_OP), the
 * comparisons (SG_FOR_EACH_COMPARE_OP) and where, forward and backward.
 *
 * Operand x is read at x[i * x_step], step 0 or 1 (see backend.h). Backward kernels write
 * n-element da / db over the output; the engine sums them down to broadcast operands.
 * Backward kernels of add and sub never read a or b, and only pow reads y (the engine passes
 * y = NULL to the others).
 *
 * Note [NaN policy]: maximum and minimum return NaN when either operand is NaN; on ties
 * (and for +-0) the result and the gradient go to a. Comparisons follow IEEE: every one
 * with NaN is false except not_equal. */
#include <math.h>

#include "kernels_scalar.h"

/* An elementwise forward kernel from an expression in a and b. */
#define SG_BINARY_FORWARD_(name, expr)                                                             \
  void sg_f32_##name##__scalar(const float *ap, size_t a_step, const float *bp, size_t b_step,     \
                               float *y, size_t n) {                                               \
    for (size_t i = 0; i < n; i++) {                                                               \
      float a = ap[i * a_step], b = bp[i * b_step];                                                \
      y[i] = (expr);                                                                               \
    }                                                                                              \
  }

SG_BINARY_FORWARD_(add, a + b)
SG_BINARY_FORWARD_(sub, a - b)
SG_BINARY_FORWARD_(mul, (a) * (b))
SG_BINARY_FORWARD_(div, a / b)
SG_BINARY_FORWARD_(pow, powf(a, b))
SG_BINARY_FORWARD_(maximum, isnan(a) || a >= b ? a : b)
SG_BINARY_FORWARD_(minimum, isnan(a) || a <= b ? a : b)
SG_BINARY_FORWARD_(squared_difference, (a - b) * (a - b))

/* y and da / db may alias dy (in place), so each element is read before it is written. */
void sg_f32_add_backward__scalar(const float *dy, const float *a, size_t a_step, const float *b,
                                 size_t b_step, const float *y, float *da, float *db, size_t n) {
  (void)a, (void)a_step, (void)b, (void)b_step, (void)y;
  for (size_t i = 0; i < n; i++) {
    float g = dy[i];
    if (da) da[i] = g;
    if (db) db[i] = g;
  }
}

void sg_f32_sub_backward__scalar(const float *dy, const float *a, size_t a_step, const float *b,
                                 size_t b_step, const float *y, float *da, float *db, size_t n) {
  (void)a, (void)a_step, (void)b, (void)b_step, (void)y;
  for (size_t i = 0; i < n; i++) {
    float g = dy[i];
    if (da) da[i] = g;
    if (db) db[i] = -g;
  }
}

void sg_f32_mul_backward__scalar(const float *dy, const float *a, size_t a_step, const float *b,
                                 size_t b_step, const float *y, float *da, float *db, size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) {
    float g = dy[i], av = a[i * a_step], bv = b[i * b_step];
    if (da) da[i] = g * bv;
    if (db) db[i] = g * av;
  }
}

/* da = dy / b, db = -dy * a / b^2. */
void sg_f32_div_backward__scalar(const float *dy, const float *a, size_t a_step, const float *b,
                                 size_t b_step, const float *y, float *da, float *db, size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) {
    float g = dy[i], av = a[i * a_step], bv = b[i * b_step];
    if (da) da[i] = g / bv;
    if (db) db[i] = -g * av / (bv * bv);
  }
}

/* As TensorFlow.js: da = dy * b * a^(b-1); db = dy * y * ln(a) where a > 0, else 0. */
void sg_f32_pow_backward__scalar(const float *dy, const float *a, size_t a_step, const float *b,
                                 size_t b_step, const float *y, float *da, float *db, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float g = dy[i], av = a[i * a_step], bv = b[i * b_step], yv = y[i];
    if (da) da[i] = g * bv * powf(av, bv - 1.0f);
    if (db) db[i] = av > 0.0f ? g * yv * logf(av) : 0.0f;
  }
}

/* Note [NaN policy]: the gradient goes to a where a >= b, to b where a < b (neither at NaN). */
void sg_f32_maximum_backward__scalar(const float *dy, const float *a, size_t a_step, const float *b,
                                     size_t b_step, const float *y, float *da, float *db,
                                     size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) {
    float g = dy[i], av = a[i * a_step], bv = b[i * b_step];
    if (da) da[i] = av >= bv ? g : 0.0f;
    if (db) db[i] = av < bv ? g : 0.0f;
  }
}

void sg_f32_minimum_backward__scalar(const float *dy, const float *a, size_t a_step, const float *b,
                                     size_t b_step, const float *y, float *da, float *db,
                                     size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) {
    float g = dy[i], av = a[i * a_step], bv = b[i * b_step];
    if (da) da[i] = av <= bv ? g : 0.0f;
    if (db) db[i] = av > bv ? g : 0.0f;
  }
}

/* da = 2 (a - b) dy, db = -da. */
void sg_f32_squared_difference_backward__scalar(const float *dy, const float *a, size_t a_step,
                                                const float *b, size_t b_step, const float *y,
                                                float *da, float *db, size_t n) {
  (void)y;
  for (size_t i = 0; i < n; i++) {
    float d = 2.0f * (a[i * a_step] - b[i * b_step]) * dy[i];
    if (da) da[i] = d;
    if (db) db[i] = -d;
  }
}

#define SG_COMPARE_(name, op)                                                                      \
  void sg_f32_##name##__scalar(const float *a, size_t a_step, const float *b, size_t b_step,       \
                               uint8_t *y, size_t n) {                                             \
    for (size_t i = 0; i < n; i++) y[i] = (uint8_t)(a[i * a_step] op b[i * b_step]);               \
  }

SG_COMPARE_(equal, ==)
SG_COMPARE_(not_equal, !=)
SG_COMPARE_(less, <)
SG_COMPARE_(less_equal, <=)
SG_COMPARE_(greater, >)
SG_COMPARE_(greater_equal, >=)

/* Any non-zero condition byte selects a. */
void sg_f32_where__scalar(const uint8_t *c, size_t c_step, const float *a, size_t a_step,
                          const float *b, size_t b_step, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = c[i * c_step] ? a[i * a_step] : b[i * b_step];
}

void sg_f32_where_backward__scalar(const float *dy, const uint8_t *c, size_t c_step, float *da,
                                   float *db, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float g = dy[i];
    bool take_a = c[i * c_step] != 0;
    if (da) da[i] = take_a ? g : 0.0f;
    if (db) db[i] = take_a ? 0.0f : g;
  }
}

void sg_f32_fill__scalar(float *y, size_t n, float v) {
  for (size_t i = 0; i < n; i++) y[i] = v;
}
