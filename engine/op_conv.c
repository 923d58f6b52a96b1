/* sg_conv2d: 2-D convolution of NHWC images with an HWIO filter, and its gradients, as im2col +
 * the backend's packed gemm.
 *
 * Work items are (image, block of output pixels). For each item the forward pass gathers the
 * block's windows into a col buffer [pixels, K = KH*KW*C] (im2col) and multiplies it by the
 * filter viewed as [K, O]; a 1x1, stride-1, unpadded convolution skips im2col (x already is
 * the col matrix). The backward passes reuse the same items: dx gathers dcol = dy filter^T and
 * scatters it back (col2im), one image per item since windows of neighbouring blocks overlap;
 * dfilter sums col^T dy over every item into per-chunk partial sums that are added in chunk
 * order, so results do not depend on the thread count. Scratch buffers come from the caching
 * allocator, one per chunk. Where the input and output channels are wide enough, all three
 * skip im2col and run as shifted products summed over the taps instead (conv_shifted.h), the
 * filter gradient in chunks of output rows. */
#include <stdatomic.h>
#include <string.h>

#include "conv_shifted.h"
#include "window2d.h"

/* Bytes of col buffer per block: a few hundred KiB keeps a block in L2 while gemm packs it. */
#define COL_BLOCK_BYTES (192 * 1024)
/* Multiply-adds per parallel chunk (about 100 us of gemm). */
#define CONV_GRAIN_MACS (1 << 21)
/* Most partial filter gradients kept at once (bounded again by bytes below). */
#define MAX_PARTS 32
#define MAX_PART_BYTES (32 << 20)

typedef struct conv_job {
  const sg_backend *be;
  sg_window2d g;
  const float *x, *f, *dy;
  float *y, *dx, *parts;
  int64_t k, p, pb, blocks; /* K, pixels per image, pixels per block, blocks per image */
  int64_t items, grain;
  bool pointwise;
  atomic_bool oom;
} conv_job;

static void conv_plan(conv_job *j) {
  const sg_window2d *g = &j->g;
  j->k = (int64_t)(g->k_h * g->k_w * g->in_c);
  j->p = (int64_t)(g->out_h * g->out_w);
  j->pointwise = g->k_h == 1 && g->k_w == 1 && g->stride_h == 1 && g->stride_w == 1 &&
                 g->pad_top == 0 && g->pad_left == 0 && g->out_h == g->in_h && g->out_w == g->in_w;
  /* The fewest blocks that keep a col buffer near COL_BLOCK_BYTES, then equal-sized blocks (a
     multiple of 8 rows, the gemm's row tile) rather than a full one and a ragged rest. */
  int64_t pb = COL_BLOCK_BYTES / (int64_t)sizeof(float) / (j->k > 0 ? j->k : 1);
  pb = pb < 16 ? 16 : pb;
  j->blocks = j->p > 0 ? (j->p + pb - 1) / pb : 0;
  j->pb = j->blocks > 0 ? ((j->p + j->blocks - 1) / j->blocks + 7) / 8 * 8 : 0;
  if (j->pb > j->p) j->pb = j->p;
  j->blocks = j->pb > 0 ? (j->p + j->pb - 1) / j->pb : 0;
  j->items = (int64_t)g->batch * j->blocks;
  j->grain = sg__grain_for((double)j->pb * (double)j->k * (double)g->out_c, CONV_GRAIN_MACS);
}

/* The col matrix of item (n, block): x itself when pointwise, else im2col into buf. */
static const float *col_of(const conv_job *j, int64_t n, int64_t p0, int64_t p1, float *buf) {
  const size_t in_image = j->g.in_h * j->g.in_w * j->g.in_c;
  const float *x = j->x + (size_t)n * in_image;
  if (j->pointwise) return x + p0 * j->k;
  j->be->im2col(&j->g, x, (size_t)p0, (size_t)p1, buf);
  return buf;
}

static float *scratch(conv_job *j, sg_storage **s, int64_t floats) {
  *s = sg__storage_new((size_t)floats * sizeof(float));
  if (!*s) atomic_store(&j->oom, true);
  return *s ? (*s)->data : NULL;
}

static void forward_range(int64_t lo, int64_t hi, void *arg) {
  conv_job *j = arg;
  sg_storage *s = NULL;
  float *buf = j->pointwise ? NULL : scratch(j, &s, j->pb * j->k);
  if (!j->pointwise && !buf) return;
  const size_t o = j->g.out_c;
  for (int64_t it = lo; it < hi; it++) {
    int64_t n = it / j->blocks, p0 = (it % j->blocks) * j->pb;
    int64_t p1 = p0 + j->pb < j->p ? p0 + j->pb : j->p;
    const float *col = col_of(j, n, p0, p1, buf);
    j->be->gemm((size_t)(p1 - p0), o, (size_t)j->k, col, (size_t)j->k, false, j->f, o, false, 0.0f,
                j->y + ((size_t)n * (size_t)j->p + (size_t)p0) * o, o);
  }
  sg__storage_release(s);
}

/* One chunk of images: dx = col2im(dy filter^T), image by image. */
static void input_grad_range(int64_t lo, int64_t hi, void *arg) {
  conv_job *j = arg;
  sg_storage *s = NULL;
  float *buf = j->pointwise ? NULL : scratch(j, &s, j->pb * j->k);
  if (!j->pointwise && !buf) return;
  const size_t o = j->g.out_c, in_image = j->g.in_h * j->g.in_w * j->g.in_c;
  for (int64_t n = lo; n < hi; n++) {
    float *dx = j->dx + (size_t)n * in_image;
    if (!j->pointwise) memset(dx, 0, in_image * sizeof(float));
    for (int64_t b = 0; b < j->blocks; b++) {
      int64_t p0 = b * j->pb, p1 = p0 + j->pb < j->p ? p0 + j->pb : j->p;
      const float *dy = j->dy + ((size_t)n * (size_t)j->p + (size_t)p0) * o;
      float *dcol = j->pointwise ? dx + p0 * j->k : buf;
      j->be->gemm((size_t)(p1 - p0), (size_t)j->k, o, dy, o, false, j->f, o, true, 0.0f, dcol,
                  (size_t)j->k);
      if (!j->pointwise) j->be->col2im(&j->g, dcol, (size_t)p0, (size_t)p1, dx);
    }
  }
  sg__storage_release(s);
}

/* One chunk of items: its partial dfilter = sum of col^T dy. */
static void filter_grad_range(int64_t lo, int64_t hi, void *arg) {
  conv_job *j = arg;
  sg_storage *s = NULL;
  float *buf = j->pointwise ? NULL : scratch(j, &s, j->pb * j->k);
  if (!j->pointwise && !buf) return;
  const size_t o = j->g.out_c;
  float *part = j->parts + (size_t)(lo / j->grain) * (size_t)j->k * o;
  for (int64_t it = lo; it < hi; it++) {
    int64_t n = it / j->blocks, p0 = (it % j->blocks) * j->pb;
    int64_t p1 = p0 + j->pb < j->p ? p0 + j->pb : j->p;
    const float *col = col_of(j, n, p0, p1, buf);
    const float *dy = j->dy + ((size_t)n * (size_t)j->p + (size_t)p0) * o;
    j->be->gemm((size_t)j->k, o, (size_t)(p1 - p0), col, (size_t)j->k, true, dy, o, false,
                it == lo ? 0.0f : 1.0f, part, o);
  }
  sg__storage_release(s);
}

/* One chunk of output rows: its partial dfilter by the shifted form (conv_shifted.h). */
static void shifted_filter_grad_range(int64_t lo, int64_t hi, void *arg) {
  conv_job *j = arg;
  float *part = j->parts + (size_t)(lo / j->grain) * (size_t)j->k * j->g.out_c;
  sg__conv_shifted_filter_grad(j->be, &j->g, j->x, j->dy, lo, hi, part);
}

static sg_status oom_error(void) { return sg__oom("conv2d", "the im2col buffers"); }

/* Saved: x and the filter; iparam: the geometry. */
static sg_status conv2d_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  const sg_tensor *x = node->saved[0], *f = node->saved[1];
  conv_job j = {.be = sg__backend(),
                .g = sg__window2d_load(node),
                .x = sg__f32(x),
                .f = sg__f32(f),
                .dy = sg__f32(dy)};
  atomic_init(&j.oom, false);
  conv_plan(&j);
  if (need[0]) {
    /* Each image is cleared by its chunk, unless no chunk runs (no output channels). */
    sg_tensor *gx = j.g.out_c == 0 || j.k == 0 ? sg__new_zeros(SG_F32, x->shape, x->rank)
                                               : sg__new(SG_F32, x->shape, x->rank);
    if (!gx) return sg_last_status();
    dx[0] = gx;
    j.dx = sg__f32(gx);
    if (sg__conv_shifted_suits(&j.g)) {
      /* The shifted form wants each tap transposed: ft [KH, KW, O, C]. */
      sg_storage *ts = sg__storage_new((size_t)(j.k * (int64_t)j.g.out_c) * sizeof(float));
      if (!ts) return oom_error();
      const int64_t taps[3] = {(int64_t)(j.g.k_h * j.g.k_w), (int64_t)j.g.in_c, (int64_t)j.g.out_c};
      static const int swap[3] = {0, 2, 1};
      j.be->transpose(j.f, taps, swap, 3, ts->data);
      sg__conv_shifted_input_grad(j.be, &j.g, j.dy, ts->data, j.dx);
      sg__storage_release(ts);
    } else if (j.g.out_c > 0 && j.k > 0) {
      double per_image = (double)j.p * (double)j.k * (double)j.g.out_c;
      sg__parallel_for((int64_t)j.g.batch, sg__grain_for(per_image, CONV_GRAIN_MACS),
                       input_grad_range, &j);
    }
  }
  if (need[1]) {
    sg_tensor *gf = sg__new_zeros(SG_F32, f->shape, f->rank);
    if (!gf) return sg_last_status();
    dx[1] = gf;
    int64_t size = j.k * (int64_t)j.g.out_c;
    /* Items: output rows for the shifted form, else (image, pixel block). */
    bool shifted = sg__conv_shifted_suits(&j.g);
    int64_t items = shifted ? (int64_t)(j.g.batch * j.g.out_h) : j.items;
    if (shifted) j.grain = sg__grain_for((double)j.g.out_w * (double)size, CONV_GRAIN_MACS);
    if (items > 0 && size > 0) {
      /* Chunks fixed by the shape: at most MAX_PARTS partial sums (fewer if they are big). */
      int64_t max_parts = MAX_PART_BYTES / (size * (int64_t)sizeof(float));
      if (max_parts > MAX_PARTS) max_parts = MAX_PARTS;
      if (max_parts < 1) max_parts = 1;
      int64_t min_grain = (items + max_parts - 1) / max_parts;
      if (j.grain < min_grain) j.grain = min_grain;
      int64_t n_parts = (items + j.grain - 1) / j.grain;
      sg_storage *ps = sg__storage_new((size_t)(n_parts * size) * sizeof(float));
      if (!ps) return sg__oom("conv2d", "the filter gradient's partial sums");
      j.parts = ps->data;
      sg__parallel_for(items, j.grain, shifted ? shifted_filter_grad_range : filter_grad_range, &j);
      sg__sum_parts(j.be, sg__f32(gf), j.parts, n_parts, size);
      sg__storage_release(ps);
    }
  }
  return atomic_load(&j.oom) ? oom_error() : SG_OK;
}

sg_tensor *sg_conv2d(sg_tensor *x, sg_tensor *filter, const int64_t *strides, sg_padding padding,
                     const int64_t *pads, const int64_t *dilations) {
  const char *name = "conv2d";
  sg_op op;
  if (!sg__op_begin(&op, name)) return NULL;
  conv_job j = {.be = sg__backend()};
  atomic_init(&j.oom, false);
  if (!sg__window2d_filtered(name, x, filter, "O", strides, padding, pads, dilations, &j.g))
    return sg__op_fail(&op);
  j.x = sg__f32(x);
  j.f = sg__f32(filter);
  j.g.out_c = (size_t)filter->shape[3];
  const int64_t oshape[4] = {x->shape[0], (int64_t)j.g.out_h, (int64_t)j.g.out_w, filter->shape[3]};
  conv_plan(&j);
  /* K == 0 (no input channels) sums nothing: zeros. */
  sg_tensor *y = j.k == 0 ? sg__new_zeros(SG_F32, oshape, 4) : sg__new(SG_F32, oshape, 4);
  if (!y) return sg__op_fail(&op);
  j.y = sg__f32(y);
  if (j.k > 0 && j.g.out_c > 0 && sg__conv_shifted_suits(&j.g))
    sg__conv_shifted_forward(j.be, &j.g, j.x, j.f, j.y);
  else if (j.k > 0 && j.g.out_c > 0)
    sg__parallel_for(j.items, j.grain, forward_range, &j);
  if (atomic_load(&j.oom)) {
    oom_error();
    sg_dispose(y);
    return sg__op_fail(&op);
  }
  return sg__window2d_filtered_end(&op, conv2d_grad, x, filter, y, &j.g);
}
