/* Differential fuzzer of the window kernels on one NHWC image: im2col and col2im (the dense
 * convolution's), the depthwise convolution (forward, backward_input, backward_filter) and max /
 * average pooling (forward and backward). Each input picks one slot and a geometry: empty images
 * and channel counts around the vector widths, kernels, strides, dilations and paddings that
 * put whole windows outside the image, depthwise multipliers past a vector; then the output
 * rows or pixels to compute, pointer offsets and values (NaN, infinities, denormals, huge
 * values, ties). Every backend of this CPU must agree with the scalar backend under the slot's
 * conformance contract (opinfo_kernel.c: bit-exact, as the SIMD kernels keep the scalar order of
 * operations), leave its inputs alone, leave a forward's rows outside its range alone, and add
 * (backward kernels) to what the output held. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

enum { W_IM2COL, W_COL2IM, W_DW, W_DW_BI, W_DW_BF, W_MAXP, W_AVGP, W_MAXP_B, W_AVGP_B, W_COUNT };
static const char *const k_slot[W_COUNT] = {"im2col",
                                            "col2im",
                                            "depthwise_conv2d",
                                            "depthwise_conv2d_backward_input",
                                            "depthwise_conv2d_backward_filter",
                                            "max_pool",
                                            "avg_pool",
                                            "max_pool_backward",
                                            "avg_pool_backward"};

/* Floats per buffer: image, output image, filter, im2col rows. */
#define MAX_BUF 12000

/* Outputs along one axis of a window of k taps dil apart, over an input padded by pad0 and pad1;
   0 when even one window does not fit. */
static size_t out_size(size_t in, size_t pad0, size_t pad1, size_t k, size_t dil, size_t stride) {
  size_t span = in + pad0 + pad1, reach = dil * (k - 1) + 1;
  return span < reach ? 0 : (span - reach) / stride + 1;
}

/* The sizes of a case's buffers, in floats. */
typedef struct sizes {
  size_t x, y, f, col, taps; /* taps: one im2col row */
} sizes;

static sizes sizes_of(const sg_window2d *g, int kind) {
  sizes s;
  s.x = g->in_h * g->in_w * g->in_c;
  s.y = g->out_h * g->out_w * g->out_c;
  s.f = kind >= W_DW && kind <= W_DW_BF ? g->k_h * g->k_w * g->out_c : 0;
  s.taps = g->k_h * g->k_w * g->in_c;
  s.col = kind <= W_COL2IM ? g->out_h * g->out_w * s.taps : 0;
  return s;
}

static sg_window2d read_geometry(fz *f, int kind) {
  bool pool = kind >= W_MAXP, dw = kind >= W_DW && kind <= W_DW_BF;
  sg_window2d g = {.batch = 1, .multiplier = 1};
  g.in_h = fz_range(f, 0, 9);
  g.in_w = fz_range(f, 0, 9);
  g.in_c = fz_size(f, 300);
  g.k_h = fz_range(f, 1, 5);
  g.k_w = fz_range(f, 1, 5);
  g.stride_h = fz_range(f, 1, 3);
  g.stride_w = fz_range(f, 1, 3);
  /* Pooling windows are dense (backend.h). */
  g.dilation_h = pool ? 1 : fz_range(f, 1, 3);
  g.dilation_w = pool ? 1 : fz_range(f, 1, 3);
  /* Paddings up to past the kernel: windows wholly outside the image. */
  g.pad_top = fz_range(f, 0, 6);
  g.pad_left = fz_range(f, 0, 6);
  size_t pad_bottom = fz_range(f, 0, 6), pad_right = fz_range(f, 0, 6);
  if (dw) g.multiplier = fz_u8(f) < 200 ? fz_range(f, 1, 4) : fz_range(f, 5, 20);
  for (;;) {
    g.out_c = g.in_c * g.multiplier;
    g.out_h = out_size(g.in_h, g.pad_top, pad_bottom, g.k_h, g.dilation_h, g.stride_h);
    g.out_w = out_size(g.in_w, g.pad_left, pad_right, g.k_w, g.dilation_w, g.stride_w);
    sizes s = sizes_of(&g, kind);
    if ((s.x <= MAX_BUF && s.y <= MAX_BUF && s.col <= MAX_BUF) || g.in_c == 0) break;
    g.in_c /= 2;
  }
  return g;
}

/* Runs slot `kind` of be: in[] are the inputs in the slot's order, out the output, [r0, r1) the
   rows (forward pooling and depthwise) or pixels (im2col, col2im) to do. */
static void call(const sg_backend *be, int kind, const sg_window2d *g, const float *const *in,
                 float *out, size_t r0, size_t r1) {
  switch (kind) {
  case W_IM2COL:
    be->im2col(g, in[0], r0, r1, out);
    break;
  case W_COL2IM:
    be->col2im(g, in[0], r0, r1, out);
    break;
  case W_DW:
    be->depthwise_conv2d(g, in[0], in[1], r0, r1, out);
    break;
  case W_DW_BI:
    be->depthwise_conv2d_backward_input(g, in[0], in[1], out);
    break;
  case W_DW_BF:
    be->depthwise_conv2d_backward_filter(g, in[0], in[1], out);
    break;
  case W_MAXP:
    be->max_pool(g, in[0], r0, r1, out);
    break;
  case W_AVGP:
    be->avg_pool(g, in[0], r0, r1, out);
    break;
  case W_MAXP_B:
    be->max_pool_backward(g, in[0], in[1], in[2], out);
    break;
  default:
    be->avg_pool_backward(g, in[0], out);
    break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz f = fz_make(data, size);
  int kind = (int)fz_range(&f, 0, W_COUNT - 1);
  const char *slot = k_slot[kind];
  sg_window2d g = read_geometry(&f, kind);
  sizes s = sizes_of(&g, kind);
  /* The range a forward kernel covers: all of it often, else a fuzzed part (maybe empty). */
  bool by_pixel = kind <= W_COL2IM, fwd_rows = kind == W_DW || kind == W_MAXP || kind == W_AVGP;
  size_t total = by_pixel ? g.out_h * g.out_w : g.out_h, r0 = 0, r1 = total;
  if ((by_pixel || fwd_rows) && fz_bool(&f)) {
    r0 = fz_range(&f, 0, total);
    r1 = fz_range(&f, r0, total);
  }
  size_t off[4];
  for (int i = 0; i < 4; i++) off[i] = fz_range(&f, 0, 15);
  snprintf(fz_case, sizeof fz_case,
           "%s in=%zux%zux%zu k=%zux%zu stride=%zu,%zu dil=%zu,%zu pad=%zu,%zu out=%zux%zux%zu "
           "m=%zu range=[%zu,%zu) off=(%zu,%zu,%zu,%zu)",
           slot, g.in_h, g.in_w, g.in_c, g.k_h, g.k_w, g.stride_h, g.stride_w, g.dilation_h,
           g.dilation_w, g.pad_top, g.pad_left, g.out_h, g.out_w, g.out_c, g.multiplier, r0, r1,
           off[0], off[1], off[2], off[3]);
  opinfo_bound b = fz_bound(slot);
  opinfo_range dom = fz_domain(slot, false);

  /* One kind of edge value per case keeps most windows free of NaN (which would hide the rest);
     small integers make ties for max pooling's routing. im2col only moves bits: signalling NaNs
     too. */
  static const unsigned kinds_of[] = {FZ_DOMAIN, FZ_SPECIAL, FZ_HUGE, FZ_WIDE, FZ_ANY};
  unsigned kinds = kinds_of[fz_range(&f, 0, FZ_COUNT(kinds_of) - 1)];
  if (kind == W_IM2COL) kinds |= FZ_SNAN;
  bool ties = fz_u8(&f) < 80;

  /* Inputs (in the slot's order), their sizes and names; the output and what it holds first. */
  float *x = fz_malloc(s.x * 4), *fl = fz_malloc(s.f * 4), *dy = fz_malloc(s.y * 4);
  float *col = fz_malloc(s.col * 4), *y = fz_malloc(s.y * 4);
  fz_floats(&f, x, s.x, dom.lo, dom.hi, kinds);
  if (ties)
    for (size_t i = 0; i < s.x; i++)
      if (isfinite(x[i]) && fabsf(x[i]) < 1e6f) x[i] = roundf(x[i]);
  fz_floats(&f, fl, s.f, dom.lo, dom.hi, kinds);
  fz_floats(&f, dy, s.y, dom.lo, dom.hi, kinds);
  fz_floats(&f, col, s.col, dom.lo, dom.hi, kinds);
  const float *in[3] = {0};
  size_t n_in[3] = {0}, n_out = 0;
  const char *in_name[3] = {0};
  switch (kind) {
  case W_IM2COL:
    in[0] = x, n_in[0] = s.x, in_name[0] = "x", n_out = (r1 - r0) * s.taps;
    break;
  case W_COL2IM:
    in[0] = col, n_in[0] = (r1 - r0) * s.taps, in_name[0] = "col", n_out = s.x;
    break;
  case W_DW:
  case W_MAXP:
  case W_AVGP:
    in[0] = x, n_in[0] = s.x, in_name[0] = "x", n_out = s.y;
    if (kind == W_DW) in[1] = fl, n_in[1] = s.f, in_name[1] = "f";
    break;
  case W_DW_BI:
    in[0] = dy, n_in[0] = s.y, in[1] = fl, n_in[1] = s.f, n_out = s.x;
    in_name[0] = "dy", in_name[1] = "f";
    break;
  case W_DW_BF:
    in[0] = dy, n_in[0] = s.y, in[1] = x, n_in[1] = s.x, n_out = s.f;
    in_name[0] = "dy", in_name[1] = "x";
    break;
  case W_MAXP_B:
    /* y is the forward's, so dy goes to the first tap equal to it; a few y values changed to
       ones no tap may hold (or NaN) route nowhere, or to another tap. */
    fz_scalar()->max_pool(&g, x, 0, g.out_h, y);
    for (size_t i = 0; i < s.y; i++)
      if (fz_u8(&f) < 8) y[i] = fz_float(&f, dom.lo, dom.hi, kinds);
    in[0] = dy, n_in[0] = s.y, in[1] = x, n_in[1] = s.x, in[2] = y, n_in[2] = s.y, n_out = s.x;
    in_name[0] = "dy", in_name[1] = "x", in_name[2] = "y";
    break;
  default:
    in[0] = dy, n_in[0] = s.y, in_name[0] = "dy", n_out = s.x;
    break;
  }
  /* im2col's rows are all written (canary bytes first, 0xA5: NaN); every other output starts
     as values the forward must keep outside its range and the backward adds to. */
  float *out0 = fz_malloc(n_out * 4), *want = fz_malloc(n_out * 4);
  if (kind == W_IM2COL)
    memset(out0, 0xA5, n_out * 4);
  else
    fz_floats(&f, out0, n_out, dom.lo, dom.hi, kinds);
  memcpy(want, out0, n_out * 4);
  call(fz_scalar(), kind, &g, in, want, r0, r1);
  /* The part of a ranged forward's output outside [r0, r1). */
  size_t keep0 = r0 * g.out_w * g.out_c, keep1 = r1 * g.out_w * g.out_c;

  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    fz_buf gin[3], gout = fz_buf_make(out0, n_out, 4, off[3]);
    const float *pin[3] = {0};
    for (int i = 0; i < 3; i++)
      if (in[i]) {
        gin[i] = fz_buf_make(in[i], n_in[i], 4, off[i]);
        pin[i] = fz_f(&gin[i]);
      }
    call(be, kind, &g, pin, fz_f(&gout), r0, r1);
    for (int i = 0; i < 3; i++)
      if (in[i]) fz_buf_unchanged(&gin[i], in[i], in_name[i]);
    const float *got = fz_f(&gout);
    if (fwd_rows && (memcmp(got, out0, keep0 * 4) != 0 ||
                     memcmp(got + keep1, out0 + keep1, (n_out - keep1) * 4) != 0))
      fz_fail("%s %s: wrote output rows outside [%zu, %zu)", be->name, slot, r0, r1);
    if (kind == W_IM2COL)
      fz_check_bytes(be, slot, got, want, n_out, 4);
    else
      fz_check_f32(be, slot, &b, got, want, n_out, 1, NULL, NULL, NULL);
    for (int i = 0; i < 3; i++)
      if (in[i]) fz_buf_free(&gin[i], in_name[i]);
    fz_buf_free(&gout, "the output");
  }
  free(x);
  free(fl);
  free(dy);
  free(col);
  free(y);
  free(out0);
  free(want);
  return 0;
}
