/* Shape ops that keep every element: sg_reshape (a view on the same storage), sg_transpose
 * (any dtype; the backend's transpose kernel moves 4-byte elements, a byte loop moves bool) and
 * sg_cast, with their gradients.
 *
 * Casting rules (sg_cast):
 * - f32 -> i32 truncates toward zero. NaN and values outside [-2^31, 2^31) become INT32_MIN,
 *   which is what x86's cvttss2si gives, so the result is the same on every backend and CPU
 *   (C leaves that conversion undefined, so it is never done directly). Both conversions
 *   between f32 and i32 are backend kernels (cast_f32_i32, cast_i32_f32).
 * - i32 -> f32 rounds to nearest even; bool -> f32 or i32 gives 0 or 1.
 * - anything -> bool is x != 0 (NaN gives 1, -0 gives 0).
 * - the gradient flows through f32 -> f32 only (identity); other casts pass none.
 */
#include <string.h>

#include "engine.h"

/* ---- reshape ---------------------------------------------------------------------------- */

static sg_status reshape_grad(const sg_node *node, sg_tensor *dy, const bool *need,
                              sg_tensor **dx) {
  if (need[0]) {
    dx[0] = sg__view(dy, node->inputs[0].shape, node->inputs[0].rank);
    if (!dx[0]) return sg_last_status();
  }
  return SG_OK;
}

sg_tensor *sg_reshape(sg_tensor *x, const int64_t *shape, int rank) {
  sg_op op;
  if (!sg__op_begin(&op, "reshape") || !sg__check(x, "reshape", "x")) return sg__op_fail(&op);
  if (rank < 0 || rank > SG_MAX_RANK || (rank > 0 && !shape)) {
    sg__error(rank > 0 && !shape ? SG_ERR_ARG : SG_ERR_SHAPE, "reshape",
              "shape is NULL or rank %d is outside [0, %d]", rank, SG_MAX_RANK);
    return sg__op_fail(&op);
  }
  int64_t dims[SG_MAX_RANK], known;
  int infer = -1;
  for (int i = 0; i < rank; i++) {
    dims[i] = shape[i] == -1 ? 1 : shape[i];
    if (shape[i] != -1) continue;
    if (infer >= 0) {
      sg__error(SG_ERR_ARG, "reshape", "only one -1 is allowed, got one at axes %d and %d", infer,
                i);
      return sg__op_fail(&op);
    }
    infer = i;
  }
  if (!sg__check_shape(dims, rank, "reshape", &known)) return sg__op_fail(&op);
  if (infer >= 0 && known != 0 && x->numel % known == 0) {
    dims[infer] = x->numel / known;
    known = x->numel;
  }
  if (known != x->numel || (infer >= 0 && known == 0)) {
    char xs[SG_SHAPE_STR_MAX], ws[SG_SHAPE_STR_MAX];
    sg__error(SG_ERR_SHAPE, "reshape", "cannot reshape x %s (%lld elements) into %s",
              sg__shape_str(x->shape, x->rank, xs, sizeof xs), (long long)x->numel,
              sg__shape_str(shape, rank, ws, sizeof ws));
    return sg__op_fail(&op);
  }
  sg_tensor *y = sg__view(x, dims, rank);
  if (!y) return sg__op_fail(&op);
  if (x->dtype == SG_F32 && !sg__record(&op, reshape_grad, &x, 1, y) && op.record) {
    sg_dispose(y);
    return sg__op_fail(&op);
  }
  return sg__op_end(&op, y);
}

/* ---- transpose -------------------------------------------------------------------------- */

/* Drops size-1 axes and merges x axes that stay neighbours in y, e.g. [2,3,4,5] by [0,3,1,2]
   becomes [2,12,5] by [0,2,1]. Returns the new rank (0 or 1: a plain copy). */
static int coalesce(const int64_t *shape, const int *perm, int rank, int64_t *cshape, int *cperm) {
  int map[SG_MAX_RANK], p[SG_MAX_RANK], r = 0, n = 0;
  for (int i = 0; i < rank; i++) map[i] = shape[i] == 1 ? -1 : r++;
  for (int i = 0; i < rank; i++)
    if (map[perm[i]] >= 0) p[n++] = map[perm[i]];
  int64_t dims[SG_MAX_RANK];
  for (int i = 0; i < rank; i++)
    if (map[i] >= 0) dims[map[i]] = shape[i];
  /* Runs of y axes reading consecutive x axes become one axis: start[g] is its first x axis. */
  int start[SG_MAX_RANK], len[SG_MAX_RANK], groups = 0;
  for (int i = 0; i < n; i++) {
    if (groups > 0 && p[i] == start[groups - 1] + len[groups - 1]) {
      len[groups - 1]++;
    } else {
      start[groups] = p[i];
      len[groups++] = 1;
    }
  }
  /* x's new axes are the groups in x order. */
  for (int g = 0; g < groups; g++) {
    int rank_g = 0;
    for (int h = 0; h < groups; h++) rank_g += start[h] < start[g];
    cperm[g] = rank_g;
    int64_t d = 1;
    for (int l = 0; l < len[g]; l++) d *= dims[start[g] + l];
    cshape[rank_g] = d;
  }
  return groups;
}

static void permute_bytes(const uint8_t *x, const int64_t *shape, const int *perm, int rank,
                          uint8_t *y) {
  int64_t xstride[SG_MAX_RANK], ydim[SG_MAX_RANK], ystep[SG_MAX_RANK], idx[SG_MAX_RANK] = {0};
  int64_t numel = 1;
  for (int i = rank - 1; i >= 0; i--) {
    xstride[i] = numel;
    numel *= shape[i];
  }
  for (int i = 0; i < rank; i++) ydim[i] = shape[perm[i]], ystep[i] = xstride[perm[i]];
  int64_t off = 0;
  for (int64_t e = 0; e < numel; e++) {
    y[e] = x[off];
    for (int d = rank - 1; d >= 0; d--) {
      off += ystep[d];
      if (++idx[d] < ydim[d]) break;
      off -= ystep[d] * ydim[d];
      idx[d] = 0;
    }
  }
}

typedef struct permute_ctx {
  const char *x;
  char *y;
  size_t es;
  int64_t slice; /* elements per slice of the leading (unmoved) axis */
  int64_t shape[SG_MAX_RANK];
  int perm[SG_MAX_RANK];
  int rank; /* of one slice */
} permute_ctx;

static void permute_range(int64_t lo, int64_t hi, void *arg) {
  const permute_ctx *c = arg;
  for (int64_t s = lo; s < hi; s++) {
    const char *x = c->x + (size_t)(s * c->slice) * c->es;
    char *y = c->y + (size_t)(s * c->slice) * c->es;
    if (c->es == 4)
      sg__backend()->transpose((const float *)x, c->shape, c->perm, c->rank, (float *)y);
    else
      permute_bytes((const uint8_t *)x, c->shape, c->perm, c->rank, (uint8_t *)y);
  }
}

/* y = x permuted (y's axis i is x's axis perm[i]); y already has the permuted shape. */
static void permute_into(const sg_tensor *x, const int *perm, sg_tensor *y) {
  if (x->numel == 0) return;
  size_t es = sg__dtype_size(x->dtype);
  permute_ctx c = {.x = x->data, .y = y->data, .es = es};
  int64_t cshape[SG_MAX_RANK];
  int cperm[SG_MAX_RANK];
  int r = coalesce(x->shape, perm, x->rank, cshape, cperm);
  if (r <= 1) {
    memcpy(y->data, x->data, (size_t)x->numel * es);
    return;
  }
  /* A leading axis that stays in place is a batch of independent transposes: split it. */
  int lead = cperm[0] == 0 ? 1 : 0;
  int64_t slices = lead ? cshape[0] : 1;
  c.rank = r - lead;
  c.slice = x->numel / slices;
  for (int i = 0; i < c.rank; i++) {
    c.shape[i] = cshape[i + lead];
    c.perm[i] = cperm[i + lead] - lead;
  }
  int64_t grain = SG_GRAIN_ELEMENTWISE / c.slice;
  sg__parallel_for(slices, grain > 1 ? grain : 1, permute_range, &c);
}

static sg_status transpose_grad(const sg_node *node, sg_tensor *dy, const bool *need,
                                sg_tensor **dx) {
  if (!need[0]) return SG_OK;
  const sg_node_input *in = &node->inputs[0];
  int inv[SG_MAX_RANK];
  for (int i = 0; i < in->rank; i++) inv[node->iparam[i]] = i;
  dx[0] = sg__new(SG_F32, in->shape, in->rank);
  if (!dx[0]) return sg_last_status();
  permute_into(dy, inv, dx[0]);
  return SG_OK;
}

sg_tensor *sg_transpose(sg_tensor *x, const int *perm) {
  sg_op op;
  if (!sg__op_begin(&op, "transpose") || !sg__check(x, "transpose", "x")) return sg__op_fail(&op);
  int p[SG_MAX_RANK];
  bool seen[SG_MAX_RANK] = {false}, ok = true;
  for (int i = 0; i < x->rank; i++) {
    p[i] = perm ? perm[i] : x->rank - 1 - i;
    ok = ok && p[i] >= 0 && p[i] < x->rank && !seen[p[i]];
    if (ok) seen[p[i]] = true;
  }
  if (!ok) {
    char ps[SG_SHAPE_STR_MAX], xs[SG_SHAPE_STR_MAX];
    int64_t p64[SG_MAX_RANK];
    for (int i = 0; i < x->rank; i++) p64[i] = perm[i];
    sg__error(SG_ERR_ARG, "transpose", "perm %s is not a permutation of the axes of x %s",
              sg__shape_str(p64, x->rank, ps, sizeof ps),
              sg__shape_str(x->shape, x->rank, xs, sizeof xs));
    return sg__op_fail(&op);
  }
  int64_t shape[SG_MAX_RANK];
  for (int i = 0; i < x->rank; i++) shape[i] = x->shape[p[i]];
  sg_tensor *y = sg__new(x->dtype, shape, x->rank);
  if (!y) return sg__op_fail(&op);
  permute_into(x, p, y);
  if (x->dtype == SG_F32) {
    sg_node *node = sg__record(&op, transpose_grad, &x, 1, y);
    if (op.record && !node) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    for (int i = 0; node && i < x->rank; i++) node->iparam[i] = p[i];
  }
  return sg__op_end(&op, y);
}

/* ---- cast ------------------------------------------------------------------------------- */

typedef struct cast_ctx {
  const sg_backend *be;
  const void *x;
  void *y;
  sg_dtype from, to;
} cast_ctx;

/* f32 <-> i32 through the backend's conversions; the byte casts (bool on either side) in one
   plain loop per pair, which the compiler vectorises for the baseline ISA. */
static void cast_range(int64_t lo, int64_t hi, void *arg) {
  const cast_ctx *c = arg;
  size_t n = (size_t)(hi - lo);
  /* Each pointer is formed only for the dtype x has: offset as another, it could lie past x. */
  const float *xf = c->from == SG_F32 ? (const float *)c->x + lo : NULL;
  const int32_t *xi = c->from == SG_I32 ? (const int32_t *)c->x + lo : NULL;
  const uint8_t *xb = c->from == SG_BOOL ? (const uint8_t *)c->x + lo : NULL;
  if (c->from == SG_F32 && c->to == SG_I32) {
    c->be->cast_f32_i32(xf, (int32_t *)c->y + lo, n);
  } else if (c->from == SG_I32 && c->to == SG_F32) {
    c->be->cast_i32_f32(xi, (float *)c->y + lo, n);
  } else if (c->to == SG_BOOL) {
    uint8_t *y = (uint8_t *)c->y + lo;
    if (c->from == SG_F32)
      for (size_t i = 0; i < n; i++) y[i] = xf[i] != 0.0f;
    else
      for (size_t i = 0; i < n; i++) y[i] = xi[i] != 0;
  } else if (c->to == SG_F32) {
    float *y = (float *)c->y + lo;
    for (size_t i = 0; i < n; i++) y[i] = (float)xb[i];
  } else {
    int32_t *y = (int32_t *)c->y + lo;
    for (size_t i = 0; i < n; i++) y[i] = (int32_t)xb[i];
  }
}

static sg_status cast_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  if (need[0]) {
    dx[0] = sg__view(dy, node->inputs[0].shape, node->inputs[0].rank);
    if (!dx[0]) return sg_last_status();
  }
  return SG_OK;
}

sg_tensor *sg_cast(sg_tensor *x, sg_dtype dtype) {
  sg_op op;
  if (!sg__op_begin(&op, "cast") || !sg__check(x, "cast", "x")) return sg__op_fail(&op);
  if (dtype != SG_F32 && dtype != SG_I32 && dtype != SG_BOOL) {
    sg__error(SG_ERR_DTYPE, "cast", "unknown dtype %d", (int)dtype);
    return sg__op_fail(&op);
  }
  sg_tensor *y;
  if (dtype == x->dtype) {
    y = sg__copy(x);
  } else {
    y = sg__new(dtype, x->shape, x->rank);
    cast_ctx c = {
        .be = sg__backend(), .x = x->data, .y = y ? y->data : NULL, .from = x->dtype, .to = dtype};
    /* The conversions' kernels stream a large output past the last-level cache (sg__flat_grain:
       4 bytes read and 4 written an element); the byte loops never do. */
    bool streams = dtype != SG_BOOL && x->dtype != SG_BOOL;
    if (y)
      sg__parallel_for(x->numel, streams ? sg__flat_grain(x->numel, 8) : SG_GRAIN_ELEMENTWISE,
                       cast_range, &c);
  }
  if (!y) return sg__op_fail(&op);
  /* Only f32 -> f32 passes a gradient; other casts are not recorded, so none flows. */
  if (x->dtype == SG_F32 && dtype == SG_F32 && !sg__record(&op, cast_grad, &x, 1, y) && op.record) {
    sg_dispose(y);
    return sg__op_fail(&op);
  }
  return sg__op_end(&op, y);
}
