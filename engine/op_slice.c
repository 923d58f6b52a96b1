/* Shape ops that copy boxes of elements: sg_slice, sg_pad and sg_concat, for every dtype, with
 * their gradients (a zero-padded dy, a slice of dy, slices of dy). All of them, forward and
 * backward, go through one strided box copy split across threads by rows. */
#include <stdio.h>
#include <string.h>

#include "engine.h"

/* ---- The box copy ----------------------------------------------------------------------- */

typedef struct box_copy {
  const char *src; /* at the box's origin */
  char *dst;
  size_t es;
  int rank;
  int64_t box[SG_MAX_RANK];
  int64_t sstride[SG_MAX_RANK], dstride[SG_MAX_RANK]; /* in elements */
} box_copy;

/* Rows [lo, hi) of the box: every axis but the last, whose run is contiguous on both sides. */
static void box_range(int64_t lo, int64_t hi, void *arg) {
  const box_copy *b = arg;
  int last = b->rank - 1;
  int64_t idx[SG_MAX_RANK], so = 0, doff = 0, rest = lo;
  for (int d = last - 1; d >= 0; d--) {
    idx[d] = rest % b->box[d];
    rest /= b->box[d];
    so += idx[d] * b->sstride[d];
    doff += idx[d] * b->dstride[d];
  }
  size_t run = (size_t)b->box[last] * b->es;
  for (int64_t row = lo; row < hi; row++) {
    memcpy(b->dst + (size_t)doff * b->es, b->src + (size_t)so * b->es, run);
    for (int d = last - 1; d >= 0; d--) {
      so += b->sstride[d];
      doff += b->dstride[d];
      if (++idx[d] < b->box[d]) break;
      so -= b->sstride[d] * b->box[d];
      doff -= b->dstride[d] * b->box[d];
      idx[d] = 0;
    }
  }
}

static void strides_of(const int64_t *shape, int rank, int64_t *stride) {
  int64_t s = 1;
  for (int d = rank - 1; d >= 0; d--) {
    stride[d] = s;
    s *= shape[d];
  }
}

/* Copies the box of shape `box` at src_origin in src (shape sshape) to dst_origin in dst (shape
   dshape); a NULL origin is all zeros. */
static void copy_box(const void *src, const int64_t *sshape, const int64_t *src_origin, void *dst,
                     const int64_t *dshape, const int64_t *dst_origin, const int64_t *box, int rank,
                     size_t es) {
  box_copy b = {.es = es, .rank = rank};
  int64_t rows = 1, so = 0, doff = 0;
  strides_of(sshape, rank, b.sstride);
  strides_of(dshape, rank, b.dstride);
  for (int d = 0; d < rank; d++) {
    if (box[d] == 0) return;
    b.box[d] = box[d];
    if (d < rank - 1) rows *= box[d];
    so += (src_origin ? src_origin[d] : 0) * b.sstride[d];
    doff += (dst_origin ? dst_origin[d] : 0) * b.dstride[d];
  }
  b.src = (const char *)src + (size_t)so * es;
  b.dst = (char *)dst + (size_t)doff * es;
  if (rank == 0) {
    memcpy(b.dst, b.src, es);
    return;
  }
  int64_t grain = SG_GRAIN_ELEMENTWISE / box[rank - 1];
  sg__parallel_for(rows, grain > 1 ? grain : 1, box_range, &b);
}

/* ---- Filling around a box ---------------------------------------------------------------- */

/* What a box copy does not write: pad's border, and the zeros of slice's gradient. Filling only
   there, and not the whole tensor before the copy, writes each element once. */
typedef struct outside_fill {
  char *dst;
  size_t es;
  int rank;
  int64_t shape[SG_MAX_RANK], lo[SG_MAX_RANK], hi[SG_MAX_RANK]; /* the box is [lo, hi) */
  unsigned char value[4];                                       /* es bytes */
} outside_fill;

static void fill_run(const outside_fill *f, char *p, int64_t n) {
  if (n <= 0) return;
  if (f->es == 1 || (f->value[0] == 0 && !memcmp(f->value, f->value + 1, f->es - 1))) {
    memset(p, f->value[0], (size_t)n * f->es);
    return;
  }
  for (int64_t k = 0; k < n; k++) memcpy(p + (size_t)k * f->es, f->value, f->es);
}

/* Rows [lo, hi) of dst (every axis but the last): a row outside the box on some axis is filled
   whole, one inside it before and after the box's run. */
static void outside_range(int64_t lo, int64_t hi, void *arg) {
  const outside_fill *f = arg;
  int last = f->rank - 1;
  int64_t idx[SG_MAX_RANK], rest = lo, width = f->shape[last];
  for (int d = last - 1; d >= 0; d--) {
    idx[d] = rest % f->shape[d];
    rest /= f->shape[d];
  }
  for (int64_t row = lo; row < hi; row++) {
    char *p = f->dst + (size_t)row * (size_t)width * f->es;
    bool inside = f->hi[last] > f->lo[last];
    for (int d = 0; d < last && inside; d++) inside = idx[d] >= f->lo[d] && idx[d] < f->hi[d];
    if (!inside) {
      fill_run(f, p, width);
    } else {
      fill_run(f, p, f->lo[last]);
      fill_run(f, p + (size_t)f->hi[last] * f->es, width - f->hi[last]);
    }
    for (int d = last - 1; d >= 0; d--) {
      if (++idx[d] < f->shape[d]) break;
      idx[d] = 0;
    }
  }
}

/* Fills the elements of dst (shape dshape) outside the box of shape `box` at origin with the
   es-byte value. */
static void fill_outside_box(void *dst, const int64_t *dshape, const int64_t *origin,
                             const int64_t *box, int rank, size_t es, const void *value) {
  if (rank == 0) return; /* the box is the whole scalar */
  outside_fill f = {.dst = dst, .es = es, .rank = rank};
  memcpy(f.value, value, es);
  int64_t rows = 1;
  for (int d = 0; d < rank; d++) {
    if (dshape[d] == 0) return;
    f.shape[d] = dshape[d];
    f.lo[d] = origin[d];
    f.hi[d] = origin[d] + box[d];
    if (d < rank - 1) rows *= dshape[d];
  }
  int64_t grain = SG_GRAIN_ELEMENTWISE / dshape[rank - 1];
  sg__parallel_for(rows, grain > 1 ? grain : 1, outside_range, &f);
}

/* ---- slice ------------------------------------------------------------------------------ */

static sg_status slice_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  if (!need[0]) return SG_OK;
  const sg_node_input *in = &node->inputs[0];
  dx[0] = sg__new(SG_F32, in->shape, in->rank);
  if (!dx[0]) return sg_last_status();
  const float zero = 0.0f;
  fill_outside_box(dx[0]->data, in->shape, node->iparam, dy->shape, in->rank, sizeof(float), &zero);
  copy_box(dy->data, dy->shape, NULL, dx[0]->data, in->shape, node->iparam, dy->shape, in->rank,
           sizeof(float));
  return SG_OK;
}

sg_tensor *sg_slice(sg_tensor *x, const int64_t *begin, const int64_t *size) {
  sg_op op;
  if (!sg__op_begin(&op, "slice") || !sg__check(x, "slice", "x")) return sg__op_fail(&op);
  char xs[SG_SHAPE_STR_MAX];
  sg__shape_str(x->shape, x->rank, xs, sizeof xs);
  if (x->rank > 0 && (!begin || !size)) {
    sg__error(SG_ERR_ARG, "slice", "begin and size must hold %d entries for x %s", x->rank, xs);
    return sg__op_fail(&op);
  }
  int64_t shape[SG_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    int64_t b = begin[d], s = size[d] == -1 && b >= 0 ? x->shape[d] - b : size[d];
    if (b < 0 || b > x->shape[d] || s < 0 || s > x->shape[d] - b) {
      sg__error(SG_ERR_ARG, "slice",
                "begin %lld and size %lld at axis %d do not fit in dimension %lld of x %s",
                (long long)begin[d], (long long)size[d], d, (long long)x->shape[d], xs);
      return sg__op_fail(&op);
    }
    shape[d] = s;
  }
  sg_tensor *y = sg__new(x->dtype, shape, x->rank);
  if (!y) return sg__op_fail(&op);
  copy_box(x->data, x->shape, begin, y->data, shape, NULL, shape, x->rank,
           sg__dtype_size(x->dtype));
  if (x->dtype == SG_F32) {
    sg_node *node = sg__record(&op, slice_grad, &x, 1, y);
    if (op.record && !node) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    for (int d = 0; node && d < x->rank; d++) node->iparam[d] = begin[d];
  }
  return sg__op_end(&op, y);
}

/* ---- pad -------------------------------------------------------------------------------- */

static sg_status pad_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  if (!need[0]) return SG_OK;
  const sg_node_input *in = &node->inputs[0];
  dx[0] = sg__new(SG_F32, in->shape, in->rank);
  if (!dx[0]) return sg_last_status();
  copy_box(dy->data, dy->shape, node->iparam, dx[0]->data, in->shape, NULL, in->shape, in->rank,
           sizeof(float));
  return SG_OK;
}

sg_tensor *sg_pad(sg_tensor *x, const int64_t *paddings, float value) {
  sg_op op;
  if (!sg__op_begin(&op, "pad") || !sg__check(x, "pad", "x")) return sg__op_fail(&op);
  char xs[SG_SHAPE_STR_MAX];
  sg__shape_str(x->shape, x->rank, xs, sizeof xs);
  if (x->rank > 0 && !paddings) {
    sg__error(SG_ERR_ARG, "pad", "paddings must hold %d pairs for x %s", x->rank, xs);
    return sg__op_fail(&op);
  }
  int64_t shape[SG_MAX_RANK], before[SG_MAX_RANK];
  for (int d = 0; d < x->rank; d++) {
    int64_t lo = paddings[2 * d], hi = paddings[2 * d + 1];
    if (lo < 0 || hi < 0 || lo > INT64_MAX / 8 || hi > INT64_MAX / 8) {
      sg__error(SG_ERR_ARG, "pad", "paddings (%lld, %lld) at axis %d of x %s are out of range",
                (long long)lo, (long long)hi, d, xs);
      return sg__op_fail(&op);
    }
    before[d] = lo;
    shape[d] = x->shape[d] + lo + hi;
  }
  if (!sg__check_shape(shape, x->rank, "pad", NULL)) return sg__op_fail(&op);
  sg_tensor *y = sg__new(x->dtype, shape, x->rank);
  if (!y) return sg__op_fail(&op);
  /* The pad value in y's dtype: i32 truncates (as sg_cast does), bool is value != 0. */
  int32_t as_i32 = value >= -2147483648.0f && value < 2147483648.0f ? (int32_t)value : INT32_MIN;
  uint8_t as_bool = value != 0.0f;
  const void *fill = x->dtype == SG_F32   ? (const void *)&value
                     : x->dtype == SG_I32 ? (const void *)&as_i32
                                          : (const void *)&as_bool;
  fill_outside_box(y->data, shape, before, x->shape, x->rank, sg__dtype_size(x->dtype), fill);
  copy_box(x->data, x->shape, NULL, y->data, shape, before, x->shape, x->rank,
           sg__dtype_size(x->dtype));
  if (x->dtype == SG_F32) {
    sg_node *node = sg__record(&op, pad_grad, &x, 1, y);
    if (op.record && !node) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    for (int d = 0; node && d < x->rank; d++) node->iparam[d] = before[d];
  }
  return sg__op_end(&op, y);
}

/* ---- concat ----------------------------------------------------------------------------- */

static sg_status concat_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  int axis = (int)node->iparam[0];
  int64_t origin[SG_MAX_RANK] = {0};
  for (int i = 0; i < node->n_inputs; i++) {
    const sg_node_input *in = &node->inputs[i];
    if (need[i]) {
      dx[i] = sg__new(SG_F32, in->shape, in->rank);
      if (!dx[i]) return sg_last_status();
      copy_box(dy->data, dy->shape, origin, dx[i]->data, in->shape, NULL, in->shape, in->rank,
               sizeof(float));
    }
    origin[axis] += in->shape[axis];
  }
  return SG_OK;
}

sg_tensor *sg_concat(sg_tensor *const *xs, int n, int axis) {
  sg_op op;
  if (!sg__op_begin(&op, "concat")) return sg__op_fail(&op);
  if (!xs || n < 1) {
    sg__error(SG_ERR_ARG, "concat", "xs must hold at least one tensor (n = %d)", n);
    return sg__op_fail(&op);
  }
  char name[32], s0[SG_SHAPE_STR_MAX], si[SG_SHAPE_STR_MAX];
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "xs[%d]", i);
    if (!sg__check(xs[i], "concat", name)) return sg__op_fail(&op);
  }
  const sg_tensor *x0 = xs[0];
  int ax;
  if (!sg__norm_axis(axis, x0, "concat", "xs[0]", &ax)) return sg__op_fail(&op);
  sg__shape_str(x0->shape, x0->rank, s0, sizeof s0);
  int64_t shape[SG_MAX_RANK];
  for (int d = 0; d < x0->rank; d++) shape[d] = x0->shape[d];
  for (int i = 1; i < n; i++) {
    const sg_tensor *x = xs[i];
    sg__shape_str(x->shape, x->rank, si, sizeof si);
    if (x->dtype != x0->dtype) {
      sg__error(SG_ERR_DTYPE, "concat", "xs[0] is %s but xs[%d] is %s", sg__dtype_name(x0->dtype),
                i, sg__dtype_name(x->dtype));
      return sg__op_fail(&op);
    }
    bool fits = x->rank == x0->rank && x->shape[ax] <= INT64_MAX / 8 - shape[ax];
    for (int d = 0; fits && d < x->rank; d++) fits = d == ax || x->shape[d] == x0->shape[d];
    if (!fits) {
      sg__error(SG_ERR_SHAPE, "concat", "shapes differ outside axis %d (xs[0] is %s, xs[%d] is %s)",
                ax, s0, i, si);
      return sg__op_fail(&op);
    }
    shape[ax] += x->shape[ax];
  }
  if (!sg__check_shape(shape, x0->rank, "concat", NULL)) return sg__op_fail(&op);
  sg_tensor *y = sg__new(x0->dtype, shape, x0->rank);
  if (!y) return sg__op_fail(&op);
  int64_t origin[SG_MAX_RANK] = {0};
  for (int i = 0; i < n; i++) {
    copy_box(xs[i]->data, xs[i]->shape, NULL, y->data, shape, origin, xs[i]->shape, x0->rank,
             sg__dtype_size(x0->dtype));
    origin[ax] += xs[i]->shape[ax];
  }
  if (x0->dtype == SG_F32) {
    sg_node *node = sg__record(&op, concat_grad, xs, n, y);
    if (op.record && !node) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    if (node) node->iparam[0] = ax;
  }
  return sg__op_end(&op, y);
}
