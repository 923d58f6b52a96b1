/* sg_max_pool and sg_avg_pool over NHWC windows, and their gradients. The forward splits
 * (image, output row) items across threads; the backward splits images (windows of
 * neighbouring rows overlap, so an image's dx is written by one chunk). */
#include "window2d.h"

/* Window taps per parallel chunk. */
#define POOL_GRAIN (1 << 16)

typedef struct pool_job {
  const sg_backend *be;
  sg_window2d g;
  bool is_max;
  const float *x, *y, *dy;
  float *out;
} pool_job;

static size_t in_image(const sg_window2d *g) { return g->in_h * g->in_w * g->in_c; }
static size_t out_image(const sg_window2d *g) { return g->out_h * g->out_w * g->out_c; }

static void forward_range(int64_t lo, int64_t hi, void *arg) {
  const pool_job *j = arg;
  const int64_t oh_n = (int64_t)j->g.out_h;
  for (int64_t it = lo; it < hi;) {
    int64_t n = it / oh_n, oh0 = it % oh_n;
    int64_t oh1 = oh0 + (hi - it) < oh_n ? oh0 + (hi - it) : oh_n;
    (j->is_max ? j->be->max_pool : j->be->avg_pool)(&j->g, j->x + (size_t)n * in_image(&j->g),
                                                    (size_t)oh0, (size_t)oh1,
                                                    j->out + (size_t)n * out_image(&j->g));
    it += oh1 - oh0;
  }
}

static void backward_range(int64_t lo, int64_t hi, void *arg) {
  const pool_job *j = arg;
  for (int64_t n = lo; n < hi; n++) {
    const float *dy = j->dy + (size_t)n * out_image(&j->g);
    float *dx = j->out + (size_t)n * in_image(&j->g);
    if (j->is_max)
      j->be->max_pool_backward(&j->g, dy, j->x + (size_t)n * in_image(&j->g),
                               j->y + (size_t)n * out_image(&j->g), dx);
    else
      j->be->avg_pool_backward(&j->g, dy, dx);
  }
}

/* iparam: the geometry, iparam[16]: 1 for max. Saved: x and y (max only). */
static sg_status pool_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  if (!need[0]) return SG_OK;
  const sg_node_input *in = &node->inputs[0];
  pool_job j = {.be = sg__backend(),
                .g = sg__window2d_load(node),
                .is_max = node->iparam[16] != 0,
                .dy = sg__f32(dy)};
  if (j.is_max) {
    j.x = sg__f32(node->saved[0]);
    j.y = sg__f32(node->saved[1]);
  }
  sg_tensor *g = sg__new_zeros(SG_F32, in->shape, in->rank);
  if (!g) return sg_last_status();
  j.out = sg__f32(g);
  double per_image = (double)(out_image(&j.g) * j.g.k_h * j.g.k_w);
  sg__parallel_for((int64_t)j.g.batch, sg__grain_for(per_image, POOL_GRAIN), backward_range, &j);
  dx[0] = g;
  return SG_OK;
}

static sg_tensor *pool_op(bool is_max, sg_tensor *x, const int64_t *ksize, const int64_t *strides,
                          sg_padding padding, const int64_t *pads) {
  const char *name = is_max ? "max_pool" : "avg_pool";
  sg_op op;
  if (!sg__op_begin(&op, name)) return NULL;
  if (!sg__check_f32(x, name, "x")) return sg__op_fail(&op);
  if (!ksize) {
    sg__error(SG_ERR_ARG, name, "ksize is NULL");
    return sg__op_fail(&op);
  }
  pool_job j = {.be = sg__backend(), .is_max = is_max, .x = sg__f32(x)};
  if (!sg__window2d(name, x, ksize[0], ksize[1], strides, ksize, padding, pads, NULL, &j.g))
    return sg__op_fail(&op);
  const int64_t oshape[4] = {x->shape[0], (int64_t)j.g.out_h, (int64_t)j.g.out_w, x->shape[3]};
  sg_tensor *y = sg__new(SG_F32, oshape, 4);
  if (!y) return sg__op_fail(&op);
  j.out = sg__f32(y);
  double per_row = (double)(j.g.out_w * j.g.out_c * j.g.k_h * j.g.k_w);
  if (y->numel > 0)
    sg__parallel_for(x->shape[0] * (int64_t)j.g.out_h, sg__grain_for(per_row, POOL_GRAIN),
                     forward_range, &j);
  sg_node *node = sg__record(&op, pool_grad, &x, 1, y);
  if (op.record) {
    if (!node || (is_max && (!sg__save(node, x) || !sg__save(node, y)))) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    sg__window2d_save(node, &j.g);
    node->iparam[16] = is_max;
  }
  return sg__op_end(&op, y);
}

sg_tensor *sg_max_pool(sg_tensor *x, const int64_t *ksize, const int64_t *strides,
                       sg_padding padding, const int64_t *pads) {
  return pool_op(true, x, ksize, strides, padding, pads);
}

sg_tensor *sg_avg_pool(sg_tensor *x, const int64_t *ksize, const int64_t *strides,
                       sg_padding padding, const int64_t *pads) {
  return pool_op(false, x, ksize, strides, padding, pads);
}
