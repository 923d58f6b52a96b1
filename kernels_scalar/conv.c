/* Scalar reference kernels of the convolutions: im2col and its adjoint col2im (the dense
 * convolution runs as im2col + gemm), and the direct depthwise convolution with both
 * backward passes. All work on one NHWC image described by a sg_window2d. */
#include "kernels_scalar.h"
#include "window_taps.h"

void sg_f32_im2col__scalar(const sg_window2d *g, const float *x, size_t p0, size_t p1, float *col) {
  const size_t c = g->in_c, row = g->k_h * g->k_w * c;
  for (size_t p = p0; p < p1; p++) {
    size_t oh = p / g->out_w, ow = p % g->out_w;
    float *d = col + (p - p0) * row;
    for (size_t i = 0; i < g->k_h; i++) {
      ptrdiff_t ih = sg_window_tap(oh, i, g->stride_h, g->pad_top, g->dilation_h, g->in_h);
      for (size_t j = 0; j < g->k_w; j++, d += c) {
        ptrdiff_t iw = sg_window_tap(ow, j, g->stride_w, g->pad_left, g->dilation_w, g->in_w);
        if (ih < 0 || iw < 0) {
          for (size_t k = 0; k < c; k++) d[k] = 0.0f;
        } else {
          const float *s = x + ((size_t)ih * g->in_w + (size_t)iw) * c;
          for (size_t k = 0; k < c; k++) d[k] = s[k];
        }
      }
    }
  }
}

void sg_f32_col2im__scalar(const sg_window2d *g, const float *col, size_t p0, size_t p1,
                           float *dx) {
  const size_t c = g->in_c, row = g->k_h * g->k_w * c;
  for (size_t p = p0; p < p1; p++) {
    size_t oh = p / g->out_w, ow = p % g->out_w;
    const float *s = col + (p - p0) * row;
    for (size_t i = 0; i < g->k_h; i++) {
      ptrdiff_t ih = sg_window_tap(oh, i, g->stride_h, g->pad_top, g->dilation_h, g->in_h);
      for (size_t j = 0; j < g->k_w; j++, s += c) {
        ptrdiff_t iw = sg_window_tap(ow, j, g->stride_w, g->pad_left, g->dilation_w, g->in_w);
        if (ih < 0 || iw < 0) continue;
        float *d = dx + ((size_t)ih * g->in_w + (size_t)iw) * c;
        for (size_t k = 0; k < c; k++) d[k] += s[k];
      }
    }
  }
}

void sg_f32_depthwise_conv2d__scalar(const sg_window2d *g, const float *x, const float *f,
                                     size_t oh0, size_t oh1, float *y) {
  const size_t c = g->in_c, m = g->multiplier, oc = g->out_c;
  for (size_t oh = oh0; oh < oh1; oh++)
    for (size_t ow = 0; ow < g->out_w; ow++) {
      float *d = y + (oh * g->out_w + ow) * oc;
      for (size_t k = 0; k < oc; k++) d[k] = 0.0f;
      for (size_t i = 0; i < g->k_h; i++) {
        ptrdiff_t ih = sg_window_tap(oh, i, g->stride_h, g->pad_top, g->dilation_h, g->in_h);
        if (ih < 0) continue;
        for (size_t j = 0; j < g->k_w; j++) {
          ptrdiff_t iw = sg_window_tap(ow, j, g->stride_w, g->pad_left, g->dilation_w, g->in_w);
          if (iw < 0) continue;
          const float *s = x + ((size_t)ih * g->in_w + (size_t)iw) * c;
          const float *w = f + (i * g->k_w + j) * oc;
          for (size_t ch = 0; ch < c; ch++)
            for (size_t q = 0; q < m; q++) d[ch * m + q] += s[ch] * w[ch * m + q];
        }
      }
    }
}

/* Both backward passes walk the same taps: for each output pixel and each of its taps inside
   the image, with f and dx given, dx gets the tap's products of dy and the filter summed over
   the multiplier; with x and df given, df gets x times dy. */
static void depthwise_backward(const sg_window2d *g, const float *dy, const float *f, float *dx,
                               const float *x, float *df) {
  const size_t c = g->in_c, m = g->multiplier, oc = g->out_c;
  for (size_t oh = 0; oh < g->out_h; oh++)
    for (size_t ow = 0; ow < g->out_w; ow++) {
      const float *e = dy + (oh * g->out_w + ow) * oc;
      for (size_t i = 0; i < g->k_h; i++) {
        ptrdiff_t ih = sg_window_tap(oh, i, g->stride_h, g->pad_top, g->dilation_h, g->in_h);
        if (ih < 0) continue;
        for (size_t j = 0; j < g->k_w; j++) {
          ptrdiff_t iw = sg_window_tap(ow, j, g->stride_w, g->pad_left, g->dilation_w, g->in_w);
          if (iw < 0) continue;
          size_t in = ((size_t)ih * g->in_w + (size_t)iw) * c, tap = (i * g->k_w + j) * oc;
          for (size_t ch = 0; ch < c; ch++) {
            if (dx) {
              float s = 0.0f;
              for (size_t q = 0; q < m; q++) s += e[ch * m + q] * f[tap + ch * m + q];
              dx[in + ch] += s;
            } else {
              for (size_t q = 0; q < m; q++) df[tap + ch * m + q] += x[in + ch] * e[ch * m + q];
            }
          }
        }
      }
    }
}

void sg_f32_depthwise_conv2d_backward_input__scalar(const sg_window2d *g, const float *dy,
                                                    const float *f, float *dx) {
  depthwise_backward(g, dy, f, dx, NULL, NULL);
}

void sg_f32_depthwise_conv2d_backward_filter__scalar(const sg_window2d *g, const float *dy,
                                                     const float *x, float *df) {
  depthwise_backward(g, dy, NULL, NULL, x, df);
}
