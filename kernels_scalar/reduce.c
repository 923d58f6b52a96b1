/* Scalar reference kernels for reductions over the middle axis of x viewed as [outer, r, inner]:
 * sum, max, min, logsumexp with their backward kernels, and argmax / argmin.
 *
 * Policy (the SIMD kernels must agree, see tests/test_reduce.c):
 * - sum accumulates in double from +0, as TensorFlow does: an empty row and a row of -0 give
 *   +0.
 * - max / min: a NaN anywhere in the row gives NaN; an empty row gives -inf / +inf.
 * - logsumexp = m + ln(sum(e^(x - m))) with m the row max; a row whose max is +-inf (all -inf,
 *   or any +inf) gives that max, an empty row gives -inf, NaN propagates.
 * - argmax / argmin: the first NaN's index if the row has one, else the first extremum. They
 *   need r >= 1 (the engine rejects an empty axis) and write nothing when r == 0.
 *
 * With inner > 1 the rows are walked in blocks of BLOCK columns so x is read contiguously. */
#include <math.h>

#include "kernels_scalar.h"
#include "max_sum_exp.h"

#define BLOCK 64

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

void sg_f32_reduce_sum__scalar(const float *x, size_t outer, size_t r, size_t inner, float *y) {
  for (size_t o = 0; o < outer; o++) {
    const float *xo = x + o * r * inner;
    float *yo = y + o * inner;
    for (size_t i0 = 0; i0 < inner; i0 += BLOCK) {
      size_t nb = min_sz(BLOCK, inner - i0);
      double acc[BLOCK];
      for (size_t j = 0; j < nb; j++) acc[j] = 0.0;
      for (size_t k = 0; k < r; k++) {
        const float *row = xo + k * inner + i0;
        for (size_t j = 0; j < nb; j++) acc[j] += row[j];
      }
      for (size_t j = 0; j < nb; j++) yo[i0 + j] = (float)acc[j];
    }
  }
}

void sg_f32_reduce_sum_backward__scalar(const float *dy, const float *x, const float *y,
                                        size_t outer, size_t r, size_t inner, float *dx) {
  (void)x;
  (void)y;
  for (size_t o = 0; o < outer; o++)
    for (size_t k = 0; k < r; k++) {
      float *row = dx + (o * r + k) * inner;
      const float *g = dy + o * inner;
      for (size_t i = 0; i < inner; i++) row[i] = g[i];
    }
}

/* max or min with NaN propagation. */
static void extremum(const float *x, size_t outer, size_t r, size_t inner, float *y, bool is_max) {
  for (size_t o = 0; o < outer; o++) {
    const float *xo = x + o * r * inner;
    float *yo = y + o * inner;
    for (size_t i0 = 0; i0 < inner; i0 += BLOCK) {
      size_t nb = min_sz(BLOCK, inner - i0);
      float m[BLOCK];
      for (size_t j = 0; j < nb; j++) m[j] = is_max ? -INFINITY : INFINITY;
      for (size_t k = 0; k < r; k++) {
        const float *row = xo + k * inner + i0;
        for (size_t j = 0; j < nb; j++) {
          float v = row[j];
          /* Once m is NaN neither test is true again, so the NaN sticks. */
          if ((is_max ? v > m[j] : v < m[j]) || isnan(v)) m[j] = v;
        }
      }
      for (size_t j = 0; j < nb; j++) yo[i0 + j] = m[j];
    }
  }
}

void sg_f32_reduce_max__scalar(const float *x, size_t outer, size_t r, size_t inner, float *y) {
  extremum(x, outer, r, inner, y, true);
}

void sg_f32_reduce_min__scalar(const float *x, size_t outer, size_t r, size_t inner, float *y) {
  extremum(x, outer, r, inner, y, false);
}

/* dx = dy where x == y (every tied position gets the full dy), else 0. */
static void extremum_backward(const float *dy, const float *x, const float *y, size_t outer,
                              size_t r, size_t inner, float *dx) {
  for (size_t o = 0; o < outer; o++)
    for (size_t k = 0; k < r; k++) {
      size_t off = (o * r + k) * inner;
      const float *g = dy + o * inner, *m = y + o * inner;
      for (size_t i = 0; i < inner; i++) dx[off + i] = x[off + i] == m[i] ? g[i] : 0.0f;
    }
}

void sg_f32_reduce_max_backward__scalar(const float *dy, const float *x, const float *y,
                                        size_t outer, size_t r, size_t inner, float *dx) {
  extremum_backward(dy, x, y, outer, r, inner, dx);
}

void sg_f32_reduce_min_backward__scalar(const float *dy, const float *x, const float *y,
                                        size_t outer, size_t r, size_t inner, float *dx) {
  extremum_backward(dy, x, y, outer, r, inner, dx);
}

void sg_f32_reduce_logsumexp__scalar(const float *x, size_t outer, size_t r, size_t inner,
                                     float *y) {
  for (size_t o = 0; o < outer; o++) {
    const float *xo = x + o * r * inner;
    float *yo = y + o * inner;
    for (size_t i0 = 0; i0 < inner; i0 += BLOCK) {
      size_t nb = min_sz(BLOCK, inner - i0);
      float m[BLOCK];
      double s[BLOCK];
      sg_max_and_sum_exp(xo, r, inner, i0, nb, m, s);
      /* A non-finite max (NaN, +inf, or -inf for all -inf / empty) is the answer itself. */
      for (size_t j = 0; j < nb; j++)
        yo[i0 + j] = isfinite(m[j]) ? (float)(m[j] + log(s[j])) : m[j];
    }
  }
}

void sg_f32_reduce_logsumexp_backward__scalar(const float *dy, const float *x, const float *y,
                                              size_t outer, size_t r, size_t inner, float *dx) {
  for (size_t o = 0; o < outer; o++)
    for (size_t k = 0; k < r; k++) {
      size_t off = (o * r + k) * inner;
      const float *g = dy + o * inner, *l = y + o * inner;
      for (size_t i = 0; i < inner; i++) dx[off + i] = g[i] * expf(x[off + i] - l[i]);
    }
}

static void arg_extremum(const float *x, size_t outer, size_t r, size_t inner, int32_t *y,
                         bool is_max) {
  if (r == 0) return;
  for (size_t o = 0; o < outer; o++) {
    const float *xo = x + o * r * inner;
    for (size_t i = 0; i < inner; i++) {
      size_t best = 0;
      float bv = xo[i];
      for (size_t k = 1; k < r && !isnan(bv); k++) {
        float v = xo[k * inner + i];
        if ((is_max ? v > bv : v < bv) || isnan(v)) {
          best = k;
          bv = v;
        }
      }
      y[o * inner + i] = (int32_t)best;
    }
  }
}

void sg_f32_argmax__scalar(const float *x, size_t outer, size_t r, size_t inner, int32_t *y) {
  arg_extremum(x, outer, r, inner, y, true);
}

void sg_f32_argmin__scalar(const float *x, size_t outer, size_t r, size_t inner, int32_t *y) {
  arg_extremum(x, outer, r, inner, y, false);
}
