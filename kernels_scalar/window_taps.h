/* Where a window's taps fall along one axis of an NHWC image, and which taps of a pooling window
 * fall inside it: shared by the scalar reference kernels and the SIMD templates (plain C,
 * compiled with whatever flags the includer has). */
#ifndef SIMDGRAD_WINDOW_TAPS_H
#define SIMDGRAD_WINDOW_TAPS_H

#include <simdgrad/backend.h>
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

/* The taps of output pixel (oh, ow)'s pooling window (dilation 1) that fall inside the image:
   window rows [i0, i1), columns [j0, j1). */
typedef struct sg_pool_window {
  size_t oh, ow, i0, i1, j0, j1;
} sg_pool_window;

static inline sg_pool_window sg_pool_window_at(const sg_window2d *g, size_t oh, size_t ow) {
  sg_pool_window w = {.oh = oh, .ow = ow};
  sg_window_tap_range(oh, g->stride_h, g->pad_top, g->k_h, g->in_h, &w.i0, &w.i1);
  sg_window_tap_range(ow, g->stride_w, g->pad_left, g->k_w, g->in_w, &w.j0, &w.j1);
  return w;
}

/* Offset in the image of tap (i, j)'s channel 0, for a tap inside it. */
static inline size_t sg_pool_tap(const sg_window2d *g, const sg_pool_window *w, size_t i,
                                 size_t j) {
  size_t ih = w->oh * g->stride_h + i - g->pad_top, iw = w->ow * g->stride_w + j - g->pad_left;
  return (ih * g->in_w + iw) * g->in_c;
}

#endif
