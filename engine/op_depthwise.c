/* sg_depthwise_conv2d: each input channel convolved with its own [KH, KW, M] filters, and the
 * gradients. The forward splits (image, output row) items across threads; dx splits images;
 * dfilter sums per-chunk partial filters (chunks fixed by the shape) in chunk order, so the
 * result does not depend on the thread count. */
#include <stdatomic.h>
#include <string.h>

#include "window2d.h"

/* Multiply-adds per parallel chunk. */
#define DW_GRAIN_MACS (1 << 18)
#define MAX_PARTS 32

typedef struct dw_job {
  const sg_backend *be;
  sg_window2d g;
  const float *x, *f, *dy;
  float *y, *dx, *parts;
  int64_t grain;
} dw_job;

static size_t in_image(const sg_window2d *g) { return g->in_h * g->in_w * g->in_c; }
static size_t out_image(const sg_window2d *g) { return g->out_h * g->out_w * g->out_c; }

static void forward_range(int64_t lo, int64_t hi, void *arg) {
  const dw_job *j = arg;
  for (int64_t it = lo; it < hi;) {
    int64_t n = it / (int64_t)j->g.out_h, oh0 = it % (int64_t)j->g.out_h;
    int64_t oh1 = oh0 + (hi - it) < (int64_t)j->g.out_h ? oh0 + (hi - it) : (int64_t)j->g.out_h;
    j->be->depthwise_conv2d(&j->g, j->x + (size_t)n * in_image(&j->g), j->f, (size_t)oh0,
                            (size_t)oh1, j->y + (size_t)n * out_image(&j->g));
    it += oh1 - oh0;
  }
}

static void input_grad_range(int64_t lo, int64_t hi, void *arg) {
  const dw_job *j = arg;
  for (int64_t n = lo; n < hi; n++)
    j->be->depthwise_conv2d_backward_input(&j->g, j->dy + (size_t)n * out_image(&j->g), j->f,
                                           j->dx + (size_t)n * in_image(&j->g));
}

static void filter_grad_range(int64_t lo, int64_t hi, void *arg) {
  const dw_job *j = arg;
  size_t size = j->g.k_h * j->g.k_w * j->g.out_c;
  float *part = j->parts + (size_t)(lo / j->grain) * size;
  memset(part, 0, size * sizeof(float));
  for (int64_t n = lo; n < hi; n++)
    j->be->depthwise_conv2d_backward_filter(&j->g, j->dy + (size_t)n * out_image(&j->g),
                                            j->x + (size_t)n * in_image(&j->g), part);
}

/* Saved: x and the filter; iparam: the geometry. */
static sg_status depthwise_grad(const sg_node *node, sg_tensor *dy, const bool *need,
                                sg_tensor **dx) {
  const sg_tensor *x = node->saved[0], *f = node->saved[1];
  dw_job j = {.be = sg__backend(),
              .g = sg__window2d_load(node),
              .x = sg__f32(x),
              .f = sg__f32(f),
              .dy = sg__f32(dy)};
  double per_image = (double)(j.g.out_h * j.g.out_w * j.g.out_c * j.g.k_h * j.g.k_w);
  int64_t batch = (int64_t)j.g.batch;
  if (need[0]) {
    dx[0] = sg__new_zeros(SG_F32, x->shape, x->rank);
    if (!dx[0]) return sg_last_status();
    j.dx = sg__f32(dx[0]);
    sg__parallel_for(batch, sg__grain_for(per_image, DW_GRAIN_MACS), input_grad_range, &j);
  }
  if (need[1]) {
    dx[1] = sg__new_zeros(SG_F32, f->shape, f->rank);
    if (!dx[1]) return sg_last_status();
    int64_t size = f->numel;
    if (batch > 0 && size > 0) {
      j.grain = sg__grain_for(per_image, DW_GRAIN_MACS);
      if (j.grain < (batch + MAX_PARTS - 1) / MAX_PARTS)
        j.grain = (batch + MAX_PARTS - 1) / MAX_PARTS;
      int64_t n_parts = (batch + j.grain - 1) / j.grain;
      sg_storage *ps = sg__storage_new((size_t)(n_parts * size) * sizeof(float));
      if (!ps) return sg__oom("depthwise_conv2d", "the filter gradient's partial sums");
      j.parts = ps->data;
      sg__parallel_for(batch, j.grain, filter_grad_range, &j);
      sg__sum_parts(j.be, sg__f32(dx[1]), j.parts, n_parts, size);
      sg__storage_release(ps);
    }
  }
  return SG_OK;
}

sg_tensor *sg_depthwise_conv2d(sg_tensor *x, sg_tensor *filter, const int64_t *strides,
                               sg_padding padding, const int64_t *pads, const int64_t *dilations) {
  const char *name = "depthwise_conv2d";
  sg_op op;
  if (!sg__op_begin(&op, name)) return NULL;
  dw_job j = {.be = sg__backend()};
  if (!sg__window2d_filtered(name, x, filter, "M", strides, padding, pads, dilations, &j.g))
    return sg__op_fail(&op);
  j.x = sg__f32(x);
  j.f = sg__f32(filter);
  j.g.multiplier = (size_t)filter->shape[3];
  j.g.out_c = j.g.in_c * j.g.multiplier;
  const int64_t oshape[4] = {x->shape[0], (int64_t)j.g.out_h, (int64_t)j.g.out_w,
                             (int64_t)j.g.out_c};
  sg_tensor *y = sg__new(SG_F32, oshape, 4);
  if (!y) return sg__op_fail(&op);
  j.y = sg__f32(y);
  double per_row = (double)(j.g.out_w * j.g.out_c * j.g.k_h * j.g.k_w);
  if (y->numel > 0)
    sg__parallel_for(x->shape[0] * (int64_t)j.g.out_h, sg__grain_for(per_row, DW_GRAIN_MACS),
                     forward_range, &j);
  return sg__window2d_filtered_end(&op, depthwise_grad, x, filter, y, &j.g);
}
