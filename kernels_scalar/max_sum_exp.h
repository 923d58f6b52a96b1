/* The first half of softmax and of logsumexp over the middle axis of [outer, r, inner]: the
 * column maxima and the sums of e^(x - max). Shared by the scalar reference kernels (softmax.c,
 * reduce.c) so both reduce a row the same way. */
#ifndef SIMDGRAD_MAX_SUM_EXP_H
#define SIMDGRAD_MAX_SUM_EXP_H

#include <math.h>
#include <stddef.h>

/* Per column j of the nb columns at i0 of xo (r rows of stride inner): m[j] = the max of the
   column (NaN if it holds a NaN), s[j] = sum(e^(x - m[j])) in double. Where m[j] is not finite,
   s[j] is NaN (or 0 for r == 0). */
static inline void sg_max_and_sum_exp(const float *xo, size_t r, size_t inner, size_t i0, size_t nb,
                                      float *m, double *s) {
  for (size_t j = 0; j < nb; j++) {
    m[j] = -INFINITY;
    s[j] = 0.0;
  }
  for (size_t k = 0; k < r; k++)
    for (size_t j = 0; j < nb; j++) {
      float v = xo[k * inner + i0 + j];
      if (v > m[j] || isnan(v)) m[j] = v;
    }
  for (size_t k = 0; k < r; k++)
    for (size_t j = 0; j < nb; j++) s[j] += expf(xo[k * inner + i0 + j] - m[j]);
}

#endif
