/* sg_dropout: inverted dropout with a keep mask hashed from (seed, element index), so the mask
 * is the same on every backend and thread count and the backward recomputes it from the seed
 * instead of saving it. */
#include <math.h>

#include "engine.h"

typedef struct dropout_job {
  const sg_backend *be;
  const float *x;
  float *y;
  uint64_t seed, threshold;
  float scale;
} dropout_job;

static void dropout_range(int64_t lo, int64_t hi, void *arg) {
  const dropout_job *j = arg;
  j->be->dropout(j->x + lo, j->y + lo, (size_t)(hi - lo), (uint64_t)lo, j->seed, j->threshold,
                 j->scale);
}

static void run(const float *x, float *y, int64_t n, uint64_t seed, float rate) {
  dropout_job j = {.be = sg__backend(),
                   .x = x,
                   .y = y,
                   .seed = seed,
                   .threshold = (uint64_t)ldexp((double)rate, 32),
                   .scale = (float)(1.0 / (1.0 - (double)rate))};
  sg__parallel_for(n, SG_GRAIN_ELEMENTWISE, dropout_range, &j);
}

/* fparam[0]: rate; iparam[0]: the seed's bits. The same mask applied to dy. */
static sg_status dropout_grad(const sg_node *node, sg_tensor *dy, const bool *need,
                              sg_tensor **dx) {
  if (!need[0]) return SG_OK;
  sg_tensor *g = sg__new(SG_F32, dy->shape, dy->rank);
  if (!g) return sg_last_status();
  run(sg__f32(dy), sg__f32(g), dy->numel, (uint64_t)node->iparam[0], node->fparam[0]);
  dx[0] = g;
  return SG_OK;
}

sg_tensor *sg_dropout(sg_tensor *x, float rate, uint64_t seed) {
  sg_op op;
  if (!sg__op_begin(&op, "dropout") || !sg__check_f32(x, "dropout", "x")) return sg__op_fail(&op);
  if (!(rate >= 0.0f && rate < 1.0f)) {
    sg__error(SG_ERR_ARG, "dropout", "rate must be in [0, 1), got %g", (double)rate);
    return sg__op_fail(&op);
  }
  sg_tensor *y = sg__new(SG_F32, x->shape, x->rank);
  if (!y) return sg__op_fail(&op);
  run(sg__f32(x), sg__f32(y), x->numel, seed, rate);
  sg_node *node = sg__record(&op, dropout_grad, &x, 1, y);
  if (op.record) {
    if (!node) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    node->fparam[0] = rate;
    node->iparam[0] = (int64_t)seed;
  }
  return sg__op_end(&op, y);
}
