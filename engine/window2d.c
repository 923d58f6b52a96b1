/* Geometry of the NHWC window ops: TensorFlow's SAME / VALID rules and explicit padding turned
 * into a sg_window2d (engine/window2d.h), with the argument checks every window op shares. */
#include "window2d.h"

#include <string.h>

/* The dilated window's extent, (k - 1) d + 1; false when it overflows. */
static bool window_extent(int64_t k, int64_t d, int64_t *eff) {
  return !__builtin_mul_overflow(k - 1, d, eff) && !__builtin_add_overflow(*eff, 1, eff);
}

/* One axis's output size and leading pad under `padding` (pads: {before, after} for EXPLICIT);
   false when a size overflows. Strides, extents and sizes are >= 1, >= 1 and >= 0 here. */
static bool padded_out(sg_padding padding, int64_t in, int64_t eff, int64_t s, const int64_t *pads,
                       int64_t *out, int64_t *before) {
  int64_t padded, total;
  switch (padding) {
  case SG_PADDING_SAME: /* out = ceil(in / s), padded by what that takes, the smaller half first */
    *out = sg__ceil_div(in, s);
    if (__builtin_mul_overflow(*out - 1, s, &total) || __builtin_add_overflow(total, eff, &total) ||
        __builtin_sub_overflow(total, in, &total))
      return false;
    *before = total > 0 ? total / 2 : 0;
    return true;
  case SG_PADDING_VALID:
    *out = in >= eff ? (in - eff) / s + 1 : 0;
    return true;
  default: /* SG_PADDING_EXPLICIT */
    if (__builtin_add_overflow(in, pads[0], &padded) ||
        __builtin_add_overflow(padded, pads[1], &padded))
      return false;
    *out = padded >= eff ? (padded - eff) / s + 1 : 0;
    *before = pads[0];
    return true;
  }
}

bool sg__window2d(const char *op, const sg_tensor *x, int64_t k_h, int64_t k_w,
                  const int64_t *strides, const int64_t *default_strides, sg_padding padding,
                  const int64_t *pads, const int64_t *dilations, sg_window2d *g) {
  char buf[SG_SHAPE_STR_MAX];
  if (x->rank != 4) {
    sg__error(SG_ERR_SHAPE, op, "x must be [batch, height, width, channels], got %s",
              sg__shape_str(x->shape, x->rank, buf, sizeof buf));
    return false;
  }
  const int64_t *st = strides ? strides : default_strides;
  int64_t sh = st[0], sw = st[1];
  int64_t dh = dilations ? dilations[0] : 1, dw = dilations ? dilations[1] : 1;
  if (k_h < 1 || k_w < 1 || sh < 1 || sw < 1 || dh < 1 || dw < 1) {
    sg__error(SG_ERR_ARG, op,
              "window %lldx%lld, strides %lldx%lld and dilations %lldx%lld must all be >= 1",
              (long long)k_h, (long long)k_w, (long long)sh, (long long)sw, (long long)dh,
              (long long)dw);
    return false;
  }
  int64_t in_h = x->shape[1], in_w = x->shape[2];
  int64_t eff_h, eff_w, out_h, out_w, pt = 0, pl = 0;
  if (padding == SG_PADDING_EXPLICIT &&
      (!pads || pads[0] < 0 || pads[1] < 0 || pads[2] < 0 || pads[3] < 0)) {
    sg__error(SG_ERR_ARG, op, "explicit padding needs pads = {top, bottom, left, right} >= 0");
    return false;
  }
  if (padding != SG_PADDING_SAME && padding != SG_PADDING_VALID && padding != SG_PADDING_EXPLICIT) {
    sg__error(SG_ERR_ARG, op, "unknown padding %d", (int)padding);
    return false;
  }
  if (!window_extent(k_h, dh, &eff_h) || !window_extent(k_w, dw, &eff_w) ||
      !padded_out(padding, in_h, eff_h, sh, pads, &out_h, &pt) ||
      !padded_out(padding, in_w, eff_w, sw, pads ? pads + 2 : NULL, &out_w, &pl)) {
    sg__error(SG_ERR_ARG, op,
              "window %lldx%lld with strides %lldx%lld, dilations %lldx%lld and this padding "
              "overflows 64-bit sizes",
              (long long)k_h, (long long)k_w, (long long)sh, (long long)sw, (long long)dh,
              (long long)dw);
    return false;
  }
  /* The output's rows and columns must be sizes a tensor can have: the ops plan their work from
     them before they make the output. Explicit pads can ask for more. */
  int64_t pixels;
  if (!sg__check_shape((const int64_t[]){out_h, out_w}, 2, op, &pixels)) return false;
  if ((out_h == 0 || out_w == 0) && in_h > 0 && in_w > 0) {
    sg__error(SG_ERR_SHAPE, op, "a %lldx%lld window (dilated) does not fit x of shape %s",
              (long long)k_h, (long long)k_w, sg__shape_str(x->shape, x->rank, buf, sizeof buf));
    return false;
  }
  *g = (sg_window2d){.batch = (size_t)x->shape[0],
                     .in_h = (size_t)in_h,
                     .in_w = (size_t)in_w,
                     .in_c = (size_t)x->shape[3],
                     .out_h = (size_t)out_h,
                     .out_w = (size_t)out_w,
                     .out_c = (size_t)x->shape[3],
                     .k_h = (size_t)k_h,
                     .k_w = (size_t)k_w,
                     .stride_h = (size_t)sh,
                     .stride_w = (size_t)sw,
                     .dilation_h = (size_t)dh,
                     .dilation_w = (size_t)dw,
                     .pad_top = (size_t)pt,
                     .pad_left = (size_t)pl,
                     .multiplier = 1};
  return true;
}

void sg__window2d_save(sg_node *node, const sg_window2d *g) {
  const size_t f[16] = {g->batch,      g->in_h,     g->in_w,     g->in_c,
                        g->out_h,      g->out_w,    g->out_c,    g->k_h,
                        g->k_w,        g->stride_h, g->stride_w, g->dilation_h,
                        g->dilation_w, g->pad_top,  g->pad_left, g->multiplier};
  for (int i = 0; i < 16; i++) node->iparam[i] = (int64_t)f[i];
}

sg_window2d sg__window2d_load(const sg_node *node) {
  const int64_t *p = node->iparam;
  return (sg_window2d){(size_t)p[0],  (size_t)p[1],  (size_t)p[2],  (size_t)p[3],
                       (size_t)p[4],  (size_t)p[5],  (size_t)p[6],  (size_t)p[7],
                       (size_t)p[8],  (size_t)p[9],  (size_t)p[10], (size_t)p[11],
                       (size_t)p[12], (size_t)p[13], (size_t)p[14], (size_t)p[15]};
}

bool sg__window2d_filtered(const char *op, const sg_tensor *x, const sg_tensor *filter,
                           const char *last, const int64_t *strides, sg_padding padding,
                           const int64_t *pads, const int64_t *dilations, sg_window2d *g) {
  static const int64_t ones[2] = {1, 1};
  char a[SG_SHAPE_STR_MAX], b[SG_SHAPE_STR_MAX];
  if (!sg__check_f32(x, op, "x") || !sg__check_f32(filter, op, "filter")) return false;
  if (filter->rank != 4 || x->rank != 4 || filter->shape[2] != x->shape[3]) {
    sg__error(SG_ERR_SHAPE, op,
              "needs x [N, H, W, C] and filter [KH, KW, C, %s] with the same C (x is %s, filter "
              "is %s)",
              last, sg__shape_str(x->shape, x->rank, a, sizeof a),
              sg__shape_str(filter->shape, filter->rank, b, sizeof b));
    return false;
  }
  return sg__window2d(op, x, filter->shape[0], filter->shape[1], strides, ones, padding, pads,
                      dilations, g);
}

sg_tensor *sg__window2d_filtered_end(sg_op *op, sg_grad_fn grad, sg_tensor *x, sg_tensor *filter,
                                     sg_tensor *y, const sg_window2d *g) {
  sg_tensor *inputs[2] = {x, filter};
  sg_node *node = sg__record(op, grad, inputs, 2, y);
  if (op->record) {
    if (!node || !sg__save(node, x) || !sg__save(node, filter)) {
      sg_dispose(y);
      return sg__op_fail(op);
    }
    sg__window2d_save(node, g);
  }
  return sg__op_end(op, y);
}

void sg__sum_parts(const sg_backend *be, float *out, const float *parts, int64_t n_parts,
                   int64_t size) {
  memcpy(out, parts, (size_t)size * sizeof(float));
  for (int64_t p = 1; p < n_parts; p++) be->add(out, 1, parts + p * size, 1, out, (size_t)size);
}
