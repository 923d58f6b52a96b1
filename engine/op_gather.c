/* Index ops: sg_gather (any dtype of x, SG_I32 indices; gradient through the backend's
 * scatter_add into zeros) and sg_one_hot (SG_F32 out; no gradient flows to integer indices). */
#include <string.h>

#include "engine.h"

typedef struct gather_ctx {
  const char *x;
  char *y;
  const int32_t *idx;
  size_t es;
  int64_t n_idx, inner, axis_dim;
} gather_ctx;

/* Output rows [lo, hi) of [outer, n_idx]: each is one run of `inner` elements of x. */
static void gather_range(int64_t lo, int64_t hi, void *arg) {
  const gather_ctx *c = arg;
  size_t run = (size_t)c->inner * c->es;
  for (int64_t row = lo; row < hi; row++) {
    int64_t o = row / c->n_idx, j = row % c->n_idx;
    memcpy(c->y + (size_t)row * run, c->x + (size_t)(o * c->axis_dim + c->idx[j]) * run, run);
  }
}

typedef struct scatter_ctx {
  const float *dy;
  const int32_t *idx;
  float *dx;
  int64_t n_idx, inner, axis_dim;
} scatter_ctx;

/* Outer slices [lo, hi): each zeroes its own slab of dx and scatters into it, so threads never
   collide. */
static void scatter_range(int64_t lo, int64_t hi, void *arg) {
  const scatter_ctx *c = arg;
  float *dx = c->dx + lo * c->axis_dim * c->inner;
  memset(dx, 0, (size_t)((hi - lo) * c->axis_dim * c->inner) * sizeof(float));
  sg__backend()->scatter_add(c->dy + lo * c->n_idx * c->inner, c->idx, (size_t)(hi - lo),
                             (size_t)c->n_idx, (size_t)c->inner, (size_t)c->axis_dim, dx);
}

/* Rows [lo, hi) of dx when there is one outer slice (a gather along the first axis, as an
   embedding's): zeroed, then the indices that name them scattered in, in order, each run of
   consecutive such indices in one kernel call. A row gets its adds in index order whichever
   chunk holds it, as in one call over all the indices (the kernels walk them in order), so the
   bits do not depend on the split; each chunk reads every index once. */
static void scatter_rows_range(int64_t lo, int64_t hi, void *arg) {
  const scatter_ctx *c = arg;
  memset(c->dx + lo * c->inner, 0, (size_t)((hi - lo) * c->inner) * sizeof(float));
  const sg_backend *be = sg__backend();
  for (int64_t j = 0; j < c->n_idx;) {
    while (j < c->n_idx && (c->idx[j] < lo || c->idx[j] >= hi)) j++;
    int64_t j0 = j;
    while (j < c->n_idx && c->idx[j] >= lo && c->idx[j] < hi) j++;
    if (j > j0)
      be->scatter_add(c->dy + j0 * c->inner, c->idx + j0, 1, (size_t)(j - j0), (size_t)c->inner,
                      (size_t)c->axis_dim, c->dx);
  }
}

/* The view of a shape around axis: [outer, axis_dim, inner]. */
static void split_at(const int64_t *shape, int rank, int axis, int64_t *outer, int64_t *inner) {
  *outer = 1, *inner = 1;
  for (int d = 0; d < axis; d++) *outer *= shape[d];
  for (int d = axis + 1; d < rank; d++) *inner *= shape[d];
}

/* Chunks of dx's rows for scatter_rows_range: at least SG_GRAIN_ELEMENTWISE floats each, and at
   most 16 chunks, so that the indices are read 16 times at most. */
#define SCATTER_ROW_CHUNKS 16

static sg_status gather_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  if (!need[0]) return SG_OK;
  const sg_node_input *in = &node->inputs[0];
  const sg_tensor *indices = node->saved[0];
  int axis = (int)node->iparam[0];
  dx[0] = sg__new(SG_F32, in->shape, in->rank); /* each chunk zeroes its part first */
  if (!dx[0]) return sg_last_status();
  int64_t outer, inner;
  split_at(in->shape, in->rank, axis, &outer, &inner);
  scatter_ctx c = {.dy = dy->data,
                   .idx = indices->data,
                   .dx = dx[0]->data,
                   .n_idx = indices->numel,
                   .inner = inner,
                   .axis_dim = in->shape[axis]};
  if (dx[0]->numel == 0) return SG_OK;
  if (outer == 1) {
    int64_t rows = c.axis_dim, grain = (rows + SCATTER_ROW_CHUNKS - 1) / SCATTER_ROW_CHUNKS,
            least = (SG_GRAIN_ELEMENTWISE + inner - 1) / inner;
    sg__parallel_for(rows, grain > least ? grain : least, scatter_rows_range, &c);
    return SG_OK;
  }
  int64_t per = (c.n_idx > c.axis_dim ? c.n_idx : c.axis_dim) * inner;
  int64_t grain = SG_GRAIN_ELEMENTWISE / per;
  sg__parallel_for(outer, grain > 1 ? grain : 1, scatter_range, &c);
  return SG_OK;
}

static bool check_indices(const sg_tensor *indices, const char *op) {
  if (!sg__check(indices, op, "indices")) return false;
  if (indices->dtype != SG_I32) {
    sg__error(SG_ERR_DTYPE, op, "argument 'indices' must be i32, got %s",
              sg__dtype_name(indices->dtype));
    return false;
  }
  return true;
}

sg_tensor *sg_gather(sg_tensor *x, sg_tensor *indices, int axis) {
  sg_op op;
  int ax;
  if (!sg__op_begin(&op, "gather") || !sg__check(x, "gather", "x") ||
      !check_indices(indices, "gather") || !sg__norm_axis(axis, x, "gather", "x", &ax))
    return sg__op_fail(&op);
  char xs[SG_SHAPE_STR_MAX], is[SG_SHAPE_STR_MAX];
  sg__shape_str(x->shape, x->rank, xs, sizeof xs);
  sg__shape_str(indices->shape, indices->rank, is, sizeof is);
  int rank = x->rank - 1 + indices->rank;
  if (rank > SG_MAX_RANK) {
    sg__error(SG_ERR_SHAPE, "gather", "the output of x %s by indices %s would have rank %d > %d",
              xs, is, rank, SG_MAX_RANK);
    return sg__op_fail(&op);
  }
  const int32_t *idx = indices->data;
  for (int64_t j = 0; j < indices->numel; j++) {
    if (idx[j] < 0 || idx[j] >= x->shape[ax]) {
      sg__error(SG_ERR_ARG, "gather",
                "index %d (element %lld of indices %s) is out of range [0, %lld) for axis %d of "
                "x %s",
                (int)idx[j], (long long)j, is, (long long)x->shape[ax], ax, xs);
      return sg__op_fail(&op);
    }
  }
  int64_t shape[SG_MAX_RANK];
  int r = 0;
  for (int d = 0; d < ax; d++) shape[r++] = x->shape[d];
  for (int d = 0; d < indices->rank; d++) shape[r++] = indices->shape[d];
  for (int d = ax + 1; d < x->rank; d++) shape[r++] = x->shape[d];
  sg_tensor *y = sg__new(x->dtype, shape, rank);
  if (!y) return sg__op_fail(&op);
  int64_t outer;
  gather_ctx c = {.x = x->data,
                  .y = y->data,
                  .idx = idx,
                  .es = sg__dtype_size(x->dtype),
                  .n_idx = indices->numel,
                  .axis_dim = x->shape[ax]};
  split_at(x->shape, x->rank, ax, &outer, &c.inner);
  if (y->numel > 0) {
    int64_t grain = SG_GRAIN_ELEMENTWISE / c.inner;
    sg__parallel_for(outer * c.n_idx, grain > 1 ? grain : 1, gather_range, &c);
  }
  if (x->dtype == SG_F32) {
    sg_tensor *inputs[2] = {x, indices};
    sg_node *node = sg__record(&op, gather_grad, inputs, 2, y);
    if (op.record && (!node || !sg__save(node, indices))) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    if (node) node->iparam[0] = ax;
  }
  return sg__op_end(&op, y);
}

sg_tensor *sg_one_hot(sg_tensor *indices, int depth) {
  sg_op op;
  if (!sg__op_begin(&op, "one_hot") || !check_indices(indices, "one_hot")) return sg__op_fail(&op);
  char is[SG_SHAPE_STR_MAX];
  sg__shape_str(indices->shape, indices->rank, is, sizeof is);
  if (depth < 0) {
    sg__error(SG_ERR_ARG, "one_hot", "depth %d is negative", depth);
    return sg__op_fail(&op);
  }
  if (indices->rank + 1 > SG_MAX_RANK) {
    sg__error(SG_ERR_SHAPE, "one_hot", "indices %s leave no room for the depth axis (rank > %d)",
              is, SG_MAX_RANK);
    return sg__op_fail(&op);
  }
  int64_t shape[SG_MAX_RANK];
  memcpy(shape, indices->shape, sizeof shape);
  shape[indices->rank] = depth;
  if (!sg__check_shape(shape, indices->rank + 1, "one_hot", NULL)) return sg__op_fail(&op);
  sg_tensor *y = sg__new_zeros(SG_F32, shape, indices->rank + 1);
  if (!y) return sg__op_fail(&op);
  /* Out-of-range indices leave their row all zero, as in TensorFlow. */
  const int32_t *idx = indices->data;
  for (int64_t i = 0; i < indices->numel; i++)
    if (idx[i] >= 0 && idx[i] < depth) sg__f32(y)[i * depth + idx[i]] = 1.0f;
  return sg__op_end(&op, y);
}
