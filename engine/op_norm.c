/* sg_batch_norm (per-channel normalisation over x's last axis, differentiable in x and in all
 * four per-channel tensors) and sg_moments (mean and variance, composed of recorded ops so it
 * trains through). The batch-norm kernels work on x viewed as [rows, channels]; the backward's
 * per-channel sums are taken per chunk (chunks fixed by the shape) and added in chunk order,
 * so the gradients do not depend on the thread count. */
#include <math.h>
#include <string.h>

#include "engine.h"

#define BN_GRAIN SG_GRAIN_ELEMENTWISE

typedef struct bn_job {
  const sg_backend *be;
  const float *x, *dy, *a, *b, *mean;
  float *y, *dx, *sums; /* sums: per chunk, sum_dy [C] then sum_dy_xc [C] */
  int64_t c, grain;
} bn_job;

static void forward_range(int64_t lo, int64_t hi, void *arg) {
  const bn_job *j = arg;
  j->be->batch_norm(j->x + lo * j->c, (size_t)(hi - lo), (size_t)j->c, j->a, j->b,
                    j->y + lo * j->c);
}

static void backward_range(int64_t lo, int64_t hi, void *arg) {
  const bn_job *j = arg;
  float *s = j->sums + (lo / j->grain) * 2 * j->c;
  memset(s, 0, (size_t)(2 * j->c) * sizeof(float));
  j->be->batch_norm_backward(j->dy + lo * j->c, j->x + lo * j->c, (size_t)(hi - lo), (size_t)j->c,
                             j->a, j->mean, j->dx ? j->dx + lo * j->c : NULL, s, s + j->c);
}

/* A per-channel operand: c values, any rank up to x's whose dims are 1 except the last. */
static bool per_channel(const sg_tensor *t, const sg_tensor *x, const char *arg) {
  char a[SG_SHAPE_STR_MAX], b[SG_SHAPE_STR_MAX];
  int64_t c = x->shape[x->rank - 1];
  bool ok = t->rank >= 1 && t->rank <= x->rank && t->shape[t->rank - 1] == c;
  for (int i = 0; ok && i < t->rank - 1; i++) ok = t->shape[i] == 1;
  if (!ok)
    sg__error(SG_ERR_SHAPE, "batch_norm",
              "%s must hold one value per channel of x ([%lld] or [1, .., %lld]), got %s for x "
              "of shape %s",
              arg, (long long)c, (long long)c, sg__shape_str(t->shape, t->rank, a, sizeof a),
              sg__shape_str(x->shape, x->rank, b, sizeof b));
  return ok;
}

/* Per-channel a = scale / sqrt(var + eps), b = offset - mean * a, and r = 1 / sqrt(var + eps),
   in double then rounded. ab holds a [C], b [C], r [C]. */
static void coefficients(const float *mean, const float *var, const float *offset,
                         const float *scale, int64_t c, float eps, float *ab) {
  for (int64_t i = 0; i < c; i++) {
    double r = 1.0 / sqrt((double)var[i] + eps);
    double a = (scale ? scale[i] : 1.0) * r;
    ab[i] = (float)a;
    ab[c + i] = (float)((offset ? offset[i] : 0.0) - mean[i] * a);
    ab[2 * c + i] = (float)r;
  }
}

/* Scratch floats from the engine's storage cache; NULL with the error set. */
static sg_storage *scratch(int64_t floats) {
  sg_storage *s = sg__storage_new((size_t)floats * sizeof(float));
  if (!s) sg__oom("batch_norm", "scratch");
  return s;
}

/* Inputs x, mean, variance, offset, scale; saved the same but offset; fparam[0]: epsilon. */
static sg_status bn_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  const sg_tensor *x = node->saved[0], *mean = node->saved[1], *var = node->saved[2],
                  *scale = node->saved[3];
  int64_t c = x->shape[x->rank - 1], rows = c ? x->numel / c : 0;
  int64_t grain = sg__grain_for((double)c, BN_GRAIN);
  int64_t n_parts = sg__ceil_div(rows, grain);
  /* One block: the coefficients a, b, r [3C], then each chunk's sums [2C]. */
  sg_storage *work = scratch(3 * c + n_parts * 2 * c);
  if (!work) return sg_last_status();
  float *ab = work->data;
  coefficients(sg__f32(mean), sg__f32(var), NULL, sg__f32(scale), c, node->fparam[0], ab);
  bn_job j = {.be = sg__backend(),
              .x = sg__f32(x),
              .dy = sg__f32(dy),
              .a = ab,
              .mean = sg__f32(mean),
              .sums = ab + 3 * c,
              .c = c,
              .grain = grain};
  sg_status status = SG_OK;
  if (need[0]) {
    dx[0] = sg__new(SG_F32, x->shape, x->rank);
    if (!dx[0]) {
      status = sg_last_status();
      goto done;
    }
    j.dx = sg__f32(dx[0]);
  }
  if (rows > 0 && c > 0) sg__parallel_for(rows, j.grain, backward_range, &j);
  /* Per-channel totals in double, in chunk order. */
  for (int k = 1; k < 5; k++) {
    if (!need[k]) continue;
    const sg_node_input *in = &node->inputs[k];
    dx[k] = sg__new(SG_F32, in->shape, in->rank);
    if (!dx[k]) {
      status = sg_last_status();
      goto done;
    }
  }
  const float *s = sg__f32(scale), *v = sg__f32(var);
  for (int64_t i = 0; i < c; i++) {
    double sdy = 0, sdxc = 0;
    for (int64_t p = 0; p < n_parts; p++) {
      sdy += j.sums[p * 2 * c + i];
      sdxc += j.sums[p * 2 * c + c + i];
    }
    double r = ab[2 * c + i];
    if (need[1]) sg__f32(dx[1])[i] = (float)(-sdy * ab[i]);
    if (need[2])
      sg__f32(dx[2])[i] = (float)(sdxc * s[i] * -0.5 * pow((double)v[i] + node->fparam[0], -1.5));
    if (need[3]) sg__f32(dx[3])[i] = (float)sdy;
    if (need[4]) sg__f32(dx[4])[i] = (float)(sdxc * r);
  }
done:
  sg__storage_release(work);
  return status;
}

sg_tensor *sg_batch_norm(sg_tensor *x, sg_tensor *mean, sg_tensor *variance, sg_tensor *offset,
                         sg_tensor *scale, float epsilon) {
  const char *name = "batch_norm";
  char buf[SG_SHAPE_STR_MAX];
  sg_op op;
  if (!sg__op_begin(&op, name)) return NULL;
  if (!sg__check_f32(x, name, "x") || !sg__check_f32(mean, name, "mean") ||
      !sg__check_f32(variance, name, "variance") || !sg__check_f32(offset, name, "offset") ||
      !sg__check_f32(scale, name, "scale"))
    return sg__op_fail(&op);
  if (x->rank < 1) {
    sg__error(SG_ERR_SHAPE, name,
              "x must have rank >= 1 (the last axis holds the channels), got %s",
              sg__shape_str(x->shape, x->rank, buf, sizeof buf));
    return sg__op_fail(&op);
  }
  if (!per_channel(mean, x, "mean") || !per_channel(variance, x, "variance") ||
      !per_channel(offset, x, "offset") || !per_channel(scale, x, "scale"))
    return sg__op_fail(&op);
  if (!(epsilon > 0.0f)) {
    sg__error(SG_ERR_ARG, name, "epsilon must be > 0, got %g", (double)epsilon);
    return sg__op_fail(&op);
  }
  int64_t c = x->shape[x->rank - 1], rows = c ? x->numel / c : 0;
  sg_storage *work = scratch(3 * c); /* a, b, r */
  sg_tensor *y = work ? sg__new(SG_F32, x->shape, x->rank) : NULL;
  if (!y) {
    sg__storage_release(work);
    return sg__op_fail(&op);
  }
  float *ab = work->data;
  coefficients(sg__f32(mean), sg__f32(variance), sg__f32(offset), sg__f32(scale), c, epsilon, ab);
  bn_job j = {.be = sg__backend(), .x = sg__f32(x), .a = ab, .b = ab + c, .y = sg__f32(y), .c = c};
  if (rows > 0 && c > 0)
    sg__parallel_for(rows, sg__grain_for((double)c, BN_GRAIN), forward_range, &j);
  sg__storage_release(work);
  sg_tensor *inputs[5] = {x, mean, variance, offset, scale};
  sg_node *node = sg__record(&op, bn_grad, inputs, 5, y);
  if (op.record) {
    if (!node || !sg__save(node, x) || !sg__save(node, mean) || !sg__save(node, variance) ||
        !sg__save(node, scale)) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    node->fparam[0] = epsilon;
  }
  return sg__op_end(&op, y);
}

sg_status sg_moments(sg_tensor *x, const int *axes, int n_axes, bool keep_dims, sg_tensor **mean,
                     sg_tensor **variance) {
  if (!mean || !variance) return sg__error(SG_ERR_ARG, "moments", "mean or variance is NULL");
  *mean = *variance = NULL;
  /* Recorded ops, one node each: the tape differentiates through them. */
  sg_tensor *m = sg_mean(x, axes, n_axes, true);
  sg_tensor *d = sg_squared_difference(x, m);
  sg_tensor *v = sg_mean(d, axes, n_axes, keep_dims);
  sg_dispose(d);
  sg_tensor *mo = v && !keep_dims ? sg_reshape(m, sg_shape(v), sg_rank(v)) : m;
  if (mo != m) sg_dispose(m);
  if (!v || !mo) {
    sg_dispose(v);
    sg_dispose(mo);
    return sg_last_status();
  }
  *mean = mo;
  *variance = v;
  return SG_OK;
}
