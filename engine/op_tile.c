/* sg_tile, for every dtype, and its gradient: the sum of dy over the tiled copies, one tiled
 * axis at a time through the backend's reduce_sum ([r0*s0, ...] viewed as [outer, r0, s0*...]). */
#include <string.h>

#include "engine.h"

typedef struct tile_ctx {
  const char *x;
  char *y;
  size_t es;
  int rank;
  int64_t xdim[SG_MAX_RANK], ydim[SG_MAX_RANK], xstride[SG_MAX_RANK];
} tile_ctx;

/* y rows [lo, hi) (every axis but the last): each is reps copies of one row of x. */
static void tile_range(int64_t lo, int64_t hi, void *arg) {
  const tile_ctx *c = arg;
  int last = c->rank - 1;
  size_t run = (size_t)c->xdim[last] * c->es;
  for (int64_t row = lo; row < hi; row++) {
    int64_t rest = row, xoff = 0;
    for (int d = last - 1; d >= 0; d--) {
      xoff += (rest % c->ydim[d]) % c->xdim[d] * c->xstride[d];
      rest /= c->ydim[d];
    }
    const char *src = c->x + (size_t)xoff * c->es;
    char *dst = c->y + (size_t)(row * c->ydim[last]) * c->es;
    for (int64_t r = 0; r < c->ydim[last] / c->xdim[last]; r++) memcpy(dst + r * run, src, run);
  }
}

typedef struct rsum_ctx {
  const float *x;
  float *y;
  int64_t r, inner;
} rsum_ctx;

static void rsum_range(int64_t lo, int64_t hi, void *arg) {
  const rsum_ctx *c = arg;
  sg__backend()->reduce_sum(c->x + lo * c->r * c->inner, (size_t)(hi - lo), (size_t)c->r,
                            (size_t)c->inner, c->y + lo * c->inner);
}

static sg_status tile_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  if (!need[0]) return SG_OK;
  const sg_node_input *in = &node->inputs[0];
  if (dy->numel == 0) { /* a zero rep: x reached no output */
    dx[0] = sg__new_zeros(SG_F32, in->shape, in->rank);
    return dx[0] ? SG_OK : sg_last_status();
  }
  int64_t cur[SG_MAX_RANK];
  memcpy(cur, dy->shape, sizeof cur);
  sg_tensor *t = dy;
  for (int d = 0; d < in->rank; d++) {
    int64_t reps = node->iparam[d];
    if (reps == 1) continue;
    rsum_ctx c = {.x = t->data, .r = reps, .inner = in->shape[d]};
    int64_t outer = 1;
    for (int i = 0; i < d; i++) outer *= cur[i];
    for (int i = d + 1; i < in->rank; i++) c.inner *= cur[i];
    cur[d] = in->shape[d];
    sg_tensor *next = sg__new(SG_F32, cur, in->rank);
    if (!next) {
      if (t != dy) sg_dispose(t);
      return sg_last_status();
    }
    c.y = next->data;
    int64_t grain = SG_GRAIN_ELEMENTWISE / (c.r * c.inner);
    sg__parallel_for(outer, grain > 1 ? grain : 1, rsum_range, &c);
    if (t != dy) sg_dispose(t);
    t = next;
  }
  dx[0] = t != dy ? t : sg__view(dy, in->shape, in->rank);
  return dx[0] ? SG_OK : sg_last_status();
}

sg_tensor *sg_tile(sg_tensor *x, const int64_t *reps) {
  sg_op op;
  if (!sg__op_begin(&op, "tile") || !sg__check(x, "tile", "x")) return sg__op_fail(&op);
  char xs[SG_SHAPE_STR_MAX];
  sg__shape_str(x->shape, x->rank, xs, sizeof xs);
  if (x->rank > 0 && !reps) {
    sg__error(SG_ERR_ARG, "tile", "reps must hold %d entries for x %s", x->rank, xs);
    return sg__op_fail(&op);
  }
  int64_t shape[SG_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    if (reps[d] < 0) {
      sg__error(SG_ERR_ARG, "tile", "reps %lld at axis %d of x %s is negative", (long long)reps[d],
                d, xs);
      return sg__op_fail(&op);
    }
    if (x->shape[d] != 0 && reps[d] > INT64_MAX / 8 / x->shape[d]) {
      sg__error(SG_ERR_SHAPE, "tile", "reps %lld at axis %d of x %s overflows the shape",
                (long long)reps[d], d, xs);
      return sg__op_fail(&op);
    }
    shape[d] = x->shape[d] * reps[d];
  }
  if (!sg__check_shape(shape, x->rank, "tile", NULL)) return sg__op_fail(&op);
  sg_tensor *y = sg__new(x->dtype, shape, x->rank);
  if (!y) return sg__op_fail(&op);
  tile_ctx c = {.x = x->data, .y = y->data, .es = sg__dtype_size(x->dtype), .rank = x->rank};
  if (x->rank == 0) {
    memcpy(y->data, x->data, c.es);
  } else if (y->numel > 0) {
    int64_t stride = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
      c.xdim[d] = x->shape[d];
      c.ydim[d] = shape[d];
      c.xstride[d] = stride;
      stride *= x->shape[d];
    }
    int64_t rows = y->numel / shape[x->rank - 1];
    int64_t grain = SG_GRAIN_ELEMENTWISE / shape[x->rank - 1];
    sg__parallel_for(rows, grain > 1 ? grain : 1, tile_range, &c);
  }
  if (x->dtype == SG_F32) {
    sg_node *node = sg__record(&op, tile_grad, &x, 1, y);
    if (op.record && !node) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    for (int d = 0; node && d < x->rank; d++) node->iparam[d] = reps[d];
  }
  return sg__op_end(&op, y);
}
