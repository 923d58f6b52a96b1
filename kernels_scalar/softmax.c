/* Scalar reference kernels for softmax and log_softmax over the middle axis of [outer, r, inner],
 * their backward kernels (from the saved output), and the fused softmax cross-entropy.
 *
 * Policy: the row max is subtracted first, so finite logits of any size are safe; a NaN in a
 * row makes the whole row NaN, and so does a row whose max is +-inf (all -inf has no defined
 * softmax). Sums accumulate in double. The cross-entropy gradient for the logits,
 * dloss * (softmax - labels), assumes each row of labels sums to 1 (as TensorFlow does). */
#include <math.h>

#include "kernels_scalar.h"
#include "max_sum_exp.h"

#define BLOCK 64

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

static void softmax_impl(const float *x, size_t outer, size_t r, size_t inner, float *y,
                         bool log_form) {
  for (size_t o = 0; o < outer; o++) {
    const float *xo = x + o * r * inner;
    float *yo = y + o * r * inner;
    for (size_t i0 = 0; i0 < inner; i0 += BLOCK) {
      size_t nb = min_sz(BLOCK, inner - i0);
      float m[BLOCK];
      double s[BLOCK], ls[BLOCK];
      sg_max_and_sum_exp(xo, r, inner, i0, nb, m, s);
      for (size_t j = 0; j < nb; j++) ls[j] = log(s[j]);
      for (size_t k = 0; k < r; k++)
        for (size_t j = 0; j < nb; j++) {
          size_t at = k * inner + i0 + j;
          float d = xo[at] - m[j];
          yo[at] = log_form ? (float)((double)d - ls[j]) : (float)(expf(d) / s[j]);
        }
    }
  }
}

void sg_f32_softmax__scalar(const float *x, size_t outer, size_t r, size_t inner, float *y) {
  softmax_impl(x, outer, r, inner, y, false);
}

void sg_f32_log_softmax__scalar(const float *x, size_t outer, size_t r, size_t inner, float *y) {
  softmax_impl(x, outer, r, inner, y, true);
}

/* softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - e^y * sum(dy). */
static void softmax_backward_impl(const float *dy, const float *y, size_t outer, size_t r,
                                  size_t inner, float *dx, bool log_form) {
  for (size_t o = 0; o < outer; o++) {
    size_t base = o * r * inner;
    for (size_t i0 = 0; i0 < inner; i0 += BLOCK) {
      size_t nb = min_sz(BLOCK, inner - i0);
      double s[BLOCK];
      for (size_t j = 0; j < nb; j++) s[j] = 0.0;
      for (size_t k = 0; k < r; k++)
        for (size_t j = 0; j < nb; j++) {
          size_t at = base + k * inner + i0 + j;
          s[j] += log_form ? (double)dy[at] : (double)dy[at] * y[at];
        }
      for (size_t k = 0; k < r; k++)
        for (size_t j = 0; j < nb; j++) {
          size_t at = base + k * inner + i0 + j;
          dx[at] =
              log_form ? (float)(dy[at] - expf(y[at]) * s[j]) : (float)(y[at] * (dy[at] - s[j]));
        }
    }
  }
}

void sg_f32_softmax_backward__scalar(const float *dy, const float *y, size_t outer, size_t r,
                                     size_t inner, float *dx) {
  softmax_backward_impl(dy, y, outer, r, inner, dx, false);
}

void sg_f32_log_softmax_backward__scalar(const float *dy, const float *y, size_t outer, size_t r,
                                         size_t inner, float *dx) {
  softmax_backward_impl(dy, y, outer, r, inner, dx, true);
}

void sg_f32_softmax_cross_entropy__scalar(const float *labels, const float *logits, size_t rows,
                                          size_t classes, float *loss, float *log_probs) {
  for (size_t row = 0; row < rows; row++) {
    const float *x = logits + row * classes, *t = labels + row * classes;
    float *lp = log_probs + row * classes;
    float m;
    double s;
    sg_max_and_sum_exp(x, classes, 1, 0, 1, &m, &s);
    double ls = log(s), acc = 0.0;
    for (size_t c = 0; c < classes; c++) {
      lp[c] = (float)((double)(x[c] - m) - ls);
      acc += (double)t[c] * lp[c];
    }
    loss[row] = (float)-acc;
  }
}

void sg_f32_softmax_cross_entropy_backward__scalar(const float *dloss, const float *labels,
                                                   const float *log_probs, size_t rows,
                                                   size_t classes, float *dlabels, float *dlogits) {
  for (size_t row = 0; row < rows; row++) {
    size_t base = row * classes;
    float g = dloss[row];
    for (size_t c = 0; c < classes; c++) {
      float lp = log_probs[base + c];
      if (dlabels) dlabels[base + c] = -g * lp;
      if (dlogits) dlogits[base + c] = g * (expf(lp) - labels[base + c]);
    }
  }
}
