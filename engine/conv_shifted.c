/* conv2d forward and input gradient as shifted gemms (conv_shifted.h). Work items are output
 * rows (forward) or input rows (input gradient): each item writes its own row only, so the
 * result does not depend on the thread count. */
#include "conv_shifted.h"

#include <string.h>

#include "window2d.h"

/* Largest k and k * n of a product the backends' gemm multiplies without packing (GEMM_KC and
   GEMM_DIRECT_B of kernels_avx2/simd_gemm.inc); bigger taps are cut to fit. */
#define DIRECT_K 256
#define DIRECT_KN (1 << 16)
/* Multiply-adds per parallel chunk (about 100 us of gemm). */
#define GRAIN_MACS (1 << 21)

bool sg__conv_shifted_suits(const sg_window2d *g) {
  return g->k_h * g->k_w > 1 && g->in_c >= SG_CONV_SHIFTED_MIN_CHANNELS &&
         g->out_c >= SG_CONV_SHIFTED_MIN_CHANNELS;
}

/* c [m, n] (row stride ldc) += a [m, k] (row stride lda) b [k, n] (row stride ldb), cut into
   products the gemm runs unpacked. */
static void gemm_add(const sg_backend *be, size_t m, size_t n, size_t k, const float *a, size_t lda,
                     const float *b, size_t ldb, float *c, size_t ldc) {
  for (size_t k0 = 0; k0 < k; k0 += DIRECT_K) {
    size_t kc = k - k0 < DIRECT_K ? k - k0 : DIRECT_K;
    size_t nb = DIRECT_KN / kc / 16 * 16;
    for (size_t j0 = 0; j0 < n; j0 += nb) {
      size_t nc = n - j0 < nb ? n - j0 : nb;
      be->gemm(m, nc, kc, a + k0, lda, false, b + k0 * ldb + j0, ldb, false, 1.0f, c + j0, ldc);
    }
  }
}

/* Filter column kw reaches the output columns [*ow0, *ow1), whose input columns
   ow * stride_w + kw * dilation_w - pad_left lie in [0, in_w) and start at *iw0. False when
   there are none. */
static bool tap_span(const sg_window2d *g, size_t kw, size_t *ow0, size_t *ow1, size_t *iw0) {
  ptrdiff_t tap = (ptrdiff_t)(kw * g->dilation_w), s = (ptrdiff_t)g->stride_w;
  ptrdiff_t first = (ptrdiff_t)g->pad_left - tap,
            last = (ptrdiff_t)(g->in_w + g->pad_left) - 1 - tap;
  ptrdiff_t lo = first <= 0 ? 0 : (first + s - 1) / s, hi = last < 0 ? 0 : last / s + 1;
  if (hi > (ptrdiff_t)g->out_w) hi = (ptrdiff_t)g->out_w;
  if (lo >= hi) return false;
  *ow0 = (size_t)lo;
  *ow1 = (size_t)hi;
  *iw0 = (size_t)(lo * s - first);
  return true;
}

typedef struct shifted_job {
  const sg_backend *be;
  const sg_window2d *g;
  const float *in, *w; /* x and f (forward), dy and ft (input gradient) */
  float *out;
} shifted_job;

/* Output rows [lo, hi) of all images: y row (n, oh) = sum over taps of x rows times f taps. */
static void forward_rows(int64_t lo, int64_t hi, void *arg) {
  const shifted_job *j = arg;
  const sg_window2d *g = j->g;
  const size_t c = g->in_c, o = g->out_c;
  for (int64_t it = lo; it < hi; it++) {
    size_t n = (size_t)it / g->out_h, oh = (size_t)it % g->out_h;
    float *y = j->out + (n * g->out_h + oh) * g->out_w * o;
    memset(y, 0, g->out_w * o * sizeof(float));
    for (size_t kh = 0; kh < g->k_h; kh++) {
      ptrdiff_t ih = (ptrdiff_t)(oh * g->stride_h + kh * g->dilation_h) - (ptrdiff_t)g->pad_top;
      if (ih < 0 || ih >= (ptrdiff_t)g->in_h) continue;
      const float *x = j->in + (n * g->in_h + (size_t)ih) * g->in_w * c;
      for (size_t kw = 0, ow0, ow1, iw0; kw < g->k_w; kw++) {
        if (!tap_span(g, kw, &ow0, &ow1, &iw0)) continue;
        gemm_add(j->be, ow1 - ow0, o, c, x + iw0 * c, g->stride_w * c,
                 j->w + (kh * g->k_w + kw) * c * o, o, y + ow0 * o, o);
      }
    }
  }
}

void sg__conv_shifted_forward(const sg_backend *be, const sg_window2d *g, const float *x,
                              const float *f, float *y) {
  shifted_job j = {be, g, x, f, y};
  double per_row = (double)g->out_w * (double)(g->k_h * g->k_w * g->in_c) * (double)g->out_c;
  sg_parallel_for((int64_t)(g->batch * g->out_h), sg__grain_for(per_row, GRAIN_MACS), forward_rows,
                  &j);
}

/* Input rows [lo, hi): dx row (n, ih) = sum over the taps that reach it of dy rows times the
   transposed taps, scattered back to the input columns (stride_w * C apart). */
static void input_grad_rows(int64_t lo, int64_t hi, void *arg) {
  const shifted_job *j = arg;
  const sg_window2d *g = j->g;
  const size_t c = g->in_c, o = g->out_c;
  for (int64_t it = lo; it < hi; it++) {
    size_t n = (size_t)it / g->in_h, ih = (size_t)it % g->in_h;
    float *dx = j->out + (n * g->in_h + ih) * g->in_w * c;
    memset(dx, 0, g->in_w * c * sizeof(float));
    for (size_t kh = 0; kh < g->k_h; kh++) {
      /* oh * stride_h = ih + pad_top - kh * dilation_h */
      ptrdiff_t t = (ptrdiff_t)(ih + g->pad_top) - (ptrdiff_t)(kh * g->dilation_h);
      if (t < 0 || t % (ptrdiff_t)g->stride_h != 0) continue;
      size_t oh = (size_t)t / g->stride_h;
      if (oh >= g->out_h) continue;
      const float *dy = j->in + (n * g->out_h + oh) * g->out_w * o;
      for (size_t kw = 0, ow0, ow1, iw0; kw < g->k_w; kw++) {
        if (!tap_span(g, kw, &ow0, &ow1, &iw0)) continue;
        gemm_add(j->be, ow1 - ow0, c, o, dy + ow0 * o, o, j->w + (kh * g->k_w + kw) * o * c, c,
                 dx + iw0 * c, g->stride_w * c);
      }
    }
  }
}

void sg__conv_shifted_input_grad(const sg_backend *be, const sg_window2d *g, const float *dy,
                                 const float *ft, float *dx) {
  shifted_job j = {be, g, dy, ft, dx};
  double per_row = (double)g->in_w * (double)(g->k_h * g->k_w * g->in_c) * (double)g->out_c /
                   (double)(g->stride_h > 0 ? g->stride_h : 1);
  sg_parallel_for((int64_t)(g->batch * g->in_h), sg__grain_for(per_row, GRAIN_MACS),
                  input_grad_rows, &j);
}
