/* Scalar reference kernels of max and average pooling over NHWC windows, forward and backward,
 * one image at a time. Taps outside the image are skipped; the average divides by the taps
 * inside (TensorFlow's SAME average pooling). */
#include <math.h>

#include "kernels_scalar.h"
#include "window_taps.h"

static void pool_rows(const sg_window2d *g, const float *x, size_t oh0, size_t oh1, float *y,
                      bool is_max) {
  const size_t c = g->in_c;
  for (size_t oh = oh0; oh < oh1; oh++)
    for (size_t ow = 0; ow < g->out_w; ow++) {
      const sg_pool_window w = sg_pool_window_at(g, oh, ow);
      float *d = y + (oh * g->out_w + ow) * c;
      for (size_t k = 0; k < c; k++) d[k] = is_max ? -INFINITY : 0.0f;
      for (size_t i = w.i0; i < w.i1; i++)
        for (size_t j = w.j0; j < w.j1; j++) {
          const float *s = x + sg_pool_tap(g, &w, i, j);
          for (size_t k = 0; k < c; k++) {
            if (!is_max)
              d[k] += s[k];
            else if (s[k] > d[k] || isnan(s[k]))
              d[k] = isnan(d[k]) ? d[k] : s[k]; /* the first NaN wins */
          }
        }
      size_t count = (w.i1 - w.i0) * (w.j1 - w.j0);
      if (!is_max && count > 0) {
        float inv = 1.0f / (float)count;
        for (size_t k = 0; k < c; k++) d[k] *= inv;
      }
    }
}

void sg_f32_max_pool__scalar(const sg_window2d *g, const float *x, size_t oh0, size_t oh1,
                             float *y) {
  pool_rows(g, x, oh0, oh1, y, true);
}

void sg_f32_avg_pool__scalar(const sg_window2d *g, const float *x, size_t oh0, size_t oh1,
                             float *y) {
  pool_rows(g, x, oh0, oh1, y, false);
}

void sg_f32_max_pool_backward__scalar(const sg_window2d *g, const float *dy, const float *x,
                                      const float *y, float *dx) {
  const size_t c = g->in_c;
  for (size_t oh = 0; oh < g->out_h; oh++)
    for (size_t ow = 0; ow < g->out_w; ow++) {
      const sg_pool_window w = sg_pool_window_at(g, oh, ow);
      size_t at = (oh * g->out_w + ow) * c;
      for (size_t k = 0; k < c; k++) {
        float m = y[at + k];
        bool done = false;
        for (size_t i = w.i0; i < w.i1 && !done; i++)
          for (size_t j = w.j0; j < w.j1 && !done; j++) {
            size_t xi = sg_pool_tap(g, &w, i, j) + k;
            if (x[xi] == m || (isnan(m) && isnan(x[xi]))) {
              dx[xi] += dy[at + k];
              done = true;
            }
          }
      }
    }
}

void sg_f32_avg_pool_backward__scalar(const sg_window2d *g, const float *dy, float *dx) {
  const size_t c = g->in_c;
  for (size_t oh = 0; oh < g->out_h; oh++)
    for (size_t ow = 0; ow < g->out_w; ow++) {
      const sg_pool_window w = sg_pool_window_at(g, oh, ow);
      size_t count = (w.i1 - w.i0) * (w.j1 - w.j0);
      if (!count) continue;
      float inv = 1.0f / (float)count;
      const float *e = dy + (oh * g->out_w + ow) * c;
      for (size_t i = w.i0; i < w.i1; i++)
        for (size_t j = w.j0; j < w.j1; j++) {
          float *d = dx + sg_pool_tap(g, &w, i, j);
          for (size_t k = 0; k < c; k++) d[k] += e[k] * inv;
        }
    }
}
