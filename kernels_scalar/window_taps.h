/* Where a window's taps fall along one axis of an NHWC image: shared by the scalar reference
 * kernels and the SIMD templates (plain C, compiled with whatever flags the includer has). */
#ifndef SIMDGRAD_WINDOW_TAPS_H
#define SIMDGRAD_WINDOW_TAPS_H

#include <stddef.h>

/* Input coordinate of tap t along one axis for output o, or -1 when it falls outside. */
static inline ptrdiff_t sg_window_tap(size_t o, size_t t, size_t stride, size_t pad, size_t dil,
                                      size_t size) {
  ptrdiff_t i = (ptrdiff_t)(o * stride + t * dil) - (ptrdiff_t)pad;
  return i >= 0 && i < (ptrdiff_t)size ? i : -1;
}

/* The range [lo, hi) of the k taps (dilation 1) of one axis that fall inside the image for
   output o. */
static inline void sg_window_tap_range(size_t o, size_t stride, size_t pad, size_t k, size_t size,
                                       size_t *lo, size_t *hi) {
  ptrdiff_t first = (ptrdiff_t)(o * stride) - (ptrdiff_t)pad;
  ptrdiff_t a = first < 0 ? -first : 0, b = (ptrdiff_t)size - first;
  if (b > (ptrdiff_t)k) b = (ptrdiff_t)k;
  if (b < a) b = a;
  *lo = (size_t)a;
  *hi = (size_t)b;
}

#endif
