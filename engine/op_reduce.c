/* Reductions: sg_sum, sg_mean, sg_max, sg_min and sg_logsumexp over any set of axes, with their
 * gradients; sg_argmax and sg_argmin over one axis (SG_I32, no gradient).
 *
 * How axes reach the kernels: x's shape is compacted (size-1 dims dropped, neighbouring dims
 * that are all reduced or all kept merged), so a contiguous run of reduced axes is one kernel
 * call on [outer, r, inner]. Runs that are not contiguous (axes {0, 2} of [2, 3, 4]) are reduced
 * one run at a time from the last to the first. mean is the sum divided once by the count.
 *
 * Note [deterministic reductions]: work is split into chunks whose bounds depend on the shape
 * only. When there is a single output row (outer == 1) and it is long, r is cut into at most
 * SPLIT_MAX pieces, each reduced to a partial, and the partials are reduced in order by the same
 * kernel, so results are bit-identical for any thread count. */
#include <stdint.h>

#include "engine.h"

enum { K_SUM, K_MEAN, K_MAX, K_MIN, K_LSE };
static const char *const k_names[] = {"sum", "mean", "max", "min", "logsumexp"};

#define CHUNK SG_GRAIN_ELEMENTWISE
#define SPLIT_MAX 16

static sg_reduce_kernel fwd_kernel(int kind) {
  const sg_backend *be = sg__backend();
  switch (kind) {
  case K_MAX:
    return be->reduce_max;
  case K_MIN:
    return be->reduce_min;
  case K_LSE:
    return be->reduce_logsumexp;
  default:
    return be->reduce_sum;
  }
}

static sg_reduce_backward_kernel bwd_kernel(int kind) {
  const sg_backend *be = sg__backend();
  switch (kind) {
  case K_MAX:
    return be->reduce_max_backward;
  case K_MIN:
    return be->reduce_min_backward;
  case K_LSE:
    return be->reduce_logsumexp_backward;
  default:
    return be->reduce_sum_backward;
  }
}

/* ---- Shapes ---------------------------------------------------------------------------------- */

/* x's shape (no zero dims) compacted: size-1 dims dropped, runs of reduced or kept dims merged. */
typedef struct layout {
  int n;
  int64_t dim[SG_MAX_RANK];
  bool red[SG_MAX_RANK];
  int n_groups; /* runs of reduced dims */
} layout;

static void make_layout(const int64_t *shape, int rank, unsigned mask, layout *l) {
  l->n = 0;
  l->n_groups = 0;
  for (int a = 0; a < rank; a++) {
    bool red = (mask >> a) & 1u;
    if (shape[a] == 1) continue;
    if (l->n > 0 && l->red[l->n - 1] == red) {
      l->dim[l->n - 1] *= shape[a];
      continue;
    }
    l->dim[l->n] = shape[a];
    l->red[l->n] = red;
    l->n_groups += red;
    l->n++;
  }
}

static int64_t prod(const int64_t *d, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++) p *= d[i];
  return p;
}

/* The [outer, r, inner] view of a layout with at most one reduced run (none: r = 1). */
static void single_view(const layout *l, int64_t *outer, int64_t *r, int64_t *inner) {
  for (int g = 0; g < l->n; g++)
    if (l->red[g]) {
      *outer = prod(l->dim, 0, g);
      *r = l->dim[g];
      *inner = prod(l->dim, g + 1, l->n);
      return;
    }
  *outer = prod(l->dim, 0, l->n);
  *r = 1;
  *inner = 1;
}

/* Validates axes into a bit mask over x's axes (NULL or n_axes == 0: all of them). */
static bool axes_mask(const sg_tensor *x, const int *axes, int n_axes, const char *name,
                      unsigned *mask) {
  char buf[SG_SHAPE_STR_MAX];
  if (n_axes < 0) {
    sg__error(SG_ERR_ARG, name, "n_axes is %d; it must be >= 0", n_axes);
    return false;
  }
  if (!axes || n_axes == 0) {
    *mask = (1u << x->rank) - 1u;
    return true;
  }
  *mask = 0;
  for (int i = 0; i < n_axes; i++) {
    int a;
    if (!sg__norm_axis(axes[i], x, name, "x", &a)) return false;
    if ((*mask >> a) & 1u) {
      sg__error(SG_ERR_ARG, name, "axis %d appears twice in axes (x has shape %s)", axes[i],
                sg__shape_str(x->shape, x->rank, buf, sizeof buf));
      return false;
    }
    *mask |= 1u << a;
  }
  return true;
}

/* ---- Parallel drivers ------------------------------------------------------------------------ */

typedef struct fwd_job {
  sg_reduce_kernel k;
  const float *x;
  float *y;
  int64_t r, inner, rc;
} fwd_job;

static void fwd_outer(int64_t lo, int64_t hi, void *arg) {
  const fwd_job *j = arg;
  j->k(j->x + lo * j->r * j->inner, (size_t)(hi - lo), (size_t)j->r, (size_t)j->inner,
       j->y + lo * j->inner);
}

static void fwd_split(int64_t lo, int64_t hi, void *arg) {
  const fwd_job *j = arg;
  for (int64_t c = lo; c < hi; c++) {
    int64_t r0 = c * j->rc, r1 = r0 + j->rc < j->r ? r0 + j->rc : j->r;
    j->k(j->x + r0 * j->inner, 1, (size_t)(r1 - r0), (size_t)j->inner, j->y + c * j->inner);
  }
}

/* y [outer, inner] = k over the middle axis of x [outer, r, inner]; r >= 1, inner >= 1. See
   Note [deterministic reductions]. False (error set) only if the partials cannot be allocated. */
static bool run_reduce(sg_reduce_kernel k, const float *x, int64_t outer, int64_t r, int64_t inner,
                       float *y) {
  fwd_job j = {k, x, y, r, inner, 0};
  int64_t row = r * inner;
  if (outer == 1 && row > CHUNK && r >= 2) {
    int64_t rc = (CHUNK + inner - 1) / inner, min_rc = (r + SPLIT_MAX - 1) / SPLIT_MAX;
    if (rc < min_rc) rc = min_rc;
    int64_t n_chunks = (r + rc - 1) / rc;
    if (n_chunks >= 2) {
      int64_t pshape[2] = {n_chunks, inner};
      sg_tensor *part = sg__new(SG_F32, pshape, 2);
      if (!part) return false;
      j.y = sg__f32(part);
      j.rc = rc;
      sg__parallel_for(n_chunks, 1, fwd_split, &j);
      k(sg__f32(part), 1, (size_t)n_chunks, (size_t)inner, y);
      sg_dispose(part);
      return true;
    }
  }
  sg__parallel_for(outer, row >= CHUNK ? 1 : CHUNK / row, fwd_outer, &j);
  return true;
}

typedef struct bwd_job {
  sg_reduce_backward_kernel k;
  const float *dy, *x, *y;
  float *dx;
  int64_t r, inner, rc, n_rc;
} bwd_job;

static void bwd_outer(int64_t lo, int64_t hi, void *arg) {
  const bwd_job *j = arg;
  int64_t off = lo * j->r * j->inner;
  j->k(j->dy + lo * j->inner, j->x ? j->x + off : NULL, j->y ? j->y + lo * j->inner : NULL,
       (size_t)(hi - lo), (size_t)j->r, (size_t)j->inner, j->dx + off);
}

static void bwd_rows(int64_t lo, int64_t hi, void *arg) {
  const bwd_job *j = arg;
  for (int64_t u = lo; u < hi; u++) {
    int64_t o = u / j->n_rc, r0 = (u % j->n_rc) * j->rc;
    int64_t r1 = r0 + j->rc < j->r ? r0 + j->rc : j->r;
    int64_t off = (o * j->r + r0) * j->inner;
    j->k(j->dy + o * j->inner, j->x ? j->x + off : NULL, j->y ? j->y + o * j->inner : NULL, 1,
         (size_t)(r1 - r0), (size_t)j->inner, j->dx + off);
  }
}

/* dx [outer, r, inner] from dy, y [outer, inner] and x; rows are independent, so long rows are
   cut into pieces of about CHUNK elements. */
static void run_backward(sg_reduce_backward_kernel k, const float *dy, const float *x,
                         const float *y, int64_t outer, int64_t r, int64_t inner, float *dx) {
  bwd_job j = {k, dy, x, y, dx, r, inner, 0, 0};
  int64_t row = r * inner;
  if (outer == 0 || row == 0) return;
  if (row > CHUNK && r >= 2) {
    j.rc = (CHUNK + inner - 1) / inner;
    j.n_rc = (r + j.rc - 1) / j.rc;
    sg__parallel_for(outer * j.n_rc, 1, bwd_rows, &j);
    return;
  }
  sg__parallel_for(outer, row >= CHUNK ? 1 : CHUNK / row, bwd_outer, &j);
}

/* ---- Forward --------------------------------------------------------------------------------- */

/* y (out_n elements) = the reduction of x over the axes in mask. */
static bool reduce_forward(int kind, const sg_tensor *x, unsigned mask, float *y, int64_t out_n) {
  sg_reduce_kernel k = fwd_kernel(kind);
  int64_t count = 1;
  for (int a = 0; a < x->rank; a++)
    if ((mask >> a) & 1u) count *= x->shape[a];
  if (x->numel == 0) {
    if (out_n > 0) k(sg__f32(x), 1, 0, (size_t)out_n, y); /* an empty reduced axis: identity */
  } else {
    layout l;
    make_layout(x->shape, x->rank, mask, &l);
    if (l.n_groups <= 1) {
      int64_t outer, r, inner;
      single_view(&l, &outer, &r, &inner);
      if (!run_reduce(k, sg__f32(x), outer, r, inner, y)) return false;
    } else {
      /* One run at a time, last first; each pass collapses its run to 1. */
      const float *src = sg__f32(x);
      sg_tensor *tmp = NULL;
      int first = 0;
      while (!l.red[first]) first++;
      for (int g = l.n - 1; g >= first; g--) {
        if (!l.red[g]) continue;
        int64_t outer = prod(l.dim, 0, g), r = l.dim[g], inner = prod(l.dim, g + 1, l.n);
        float *dst = y;
        sg_tensor *next = NULL;
        if (g != first) {
          int64_t shape[1] = {outer * inner};
          next = sg__new(SG_F32, shape, 1);
          if (!next) {
            sg_dispose(tmp);
            return false;
          }
          dst = sg__f32(next);
        }
        bool ok = run_reduce(k, src, outer, r, inner, dst);
        sg_dispose(tmp);
        tmp = next;
        if (!ok) {
          sg_dispose(tmp);
          return false;
        }
        src = dst;
        l.dim[g] = 1;
      }
    }
  }
  if (kind == K_MEAN)
    for (int64_t i = 0; i < out_n; i++) y[i] = (float)((double)y[i] / (double)count);
  return true;
}

/* ---- Backward -------------------------------------------------------------------------------- */

/* Broadcasts src (x's shape with the reduced runs of l collapsed to 1) to x's full shape in dst,
   one run at a time. */
static bool broadcast_runs(const float *src, const layout *l, float *dst) {
  sg_reduce_backward_kernel k = sg__backend()->reduce_sum_backward;
  int64_t cur[SG_MAX_RANK];
  int first = -1;
  for (int g = 0; g < l->n; g++) {
    cur[g] = l->red[g] ? 1 : l->dim[g];
    if (l->red[g] && first < 0) first = g;
  }
  sg_tensor *tmp = NULL;
  for (int g = l->n - 1; g >= first; g--) {
    if (!l->red[g]) continue;
    int64_t outer = prod(cur, 0, g), r = l->dim[g], inner = prod(cur, g + 1, l->n);
    float *out = dst;
    sg_tensor *next = NULL;
    if (g != first) {
      int64_t shape[1] = {outer * r * inner};
      next = sg__new(SG_F32, shape, 1);
      if (!next) {
        sg_dispose(tmp);
        return false;
      }
      out = sg__f32(next);
    }
    run_backward(k, src, NULL, NULL, outer, r, inner, out);
    sg_dispose(tmp);
    tmp = next;
    src = out;
    cur[g] = l->dim[g];
  }
  return true;
}

/* Saved: nothing for sum and mean; x then y for max, min and logsumexp. */
static sg_status reduce_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  if (!need[0]) return SG_OK;
  const sg_node_input *in = &node->inputs[0];
  int kind = (int)node->iparam[0];
  unsigned mask = (unsigned)node->iparam[1];
  sg_tensor *g = sg__new(SG_F32, in->shape, in->rank);
  if (!g) return sg_last_status();
  if (g->numel == 0) {
    dx[0] = g;
    return SG_OK;
  }
  const float *dyd = sg__f32(dy), *xd = NULL, *yd = NULL;
  if (kind == K_MAX || kind == K_MIN || kind == K_LSE) {
    xd = sg__f32(node->saved[0]);
    yd = sg__f32(node->saved[1]);
  }
  sg_tensor *scaled = NULL, *dyb = NULL, *yb = NULL;
  if (kind == K_MEAN) {
    double count = (double)g->numel / (double)dy->numel;
    scaled = sg__new(SG_F32, dy->shape, dy->rank);
    if (!scaled) goto fail;
    for (int64_t i = 0; i < dy->numel; i++) sg__f32(scaled)[i] = (float)(dyd[i] / count);
    dyd = sg__f32(scaled);
  }
  layout l;
  make_layout(in->shape, in->rank, mask, &l);
  if (l.n_groups <= 1) {
    int64_t outer, r, inner;
    single_view(&l, &outer, &r, &inner);
    run_backward(bwd_kernel(kind), dyd, xd, yd, outer, r, inner, sg__f32(g));
  } else if (!xd) {
    if (!broadcast_runs(dyd, &l, sg__f32(g))) goto fail;
  } else {
    /* dy and y broadcast to x's shape, then the backward kernel elementwise (r = 1). */
    dyb = sg__new(SG_F32, in->shape, in->rank);
    yb = sg__new(SG_F32, in->shape, in->rank);
    if (!dyb || !yb || !broadcast_runs(dyd, &l, sg__f32(dyb)) ||
        !broadcast_runs(yd, &l, sg__f32(yb)))
      goto fail;
    run_backward(bwd_kernel(kind), sg__f32(dyb), xd, sg__f32(yb), g->numel, 1, 1, sg__f32(g));
  }
  sg_dispose(scaled);
  sg_dispose(dyb);
  sg_dispose(yb);
  dx[0] = g;
  return SG_OK;
fail:
  sg_dispose(scaled);
  sg_dispose(dyb);
  sg_dispose(yb);
  sg_dispose(g);
  return sg_last_status();
}

/* ---- The ops --------------------------------------------------------------------------------- */

static sg_tensor *reduce_op(int kind, sg_tensor *x, const int *axes, int n_axes, bool keep_dims) {
  const char *name = k_names[kind];
  sg_op op;
  unsigned mask;
  if (!sg__op_begin(&op, name)) return NULL;
  if (!sg__check_f32(x, name, "x") || !axes_mask(x, axes, n_axes, name, &mask))
    return sg__op_fail(&op);
  int64_t shape[SG_MAX_RANK], out_n = 1;
  int rank = 0;
  for (int a = 0; a < x->rank; a++) {
    if (!((mask >> a) & 1u)) {
      out_n *= x->shape[a];
      shape[rank++] = x->shape[a];
    } else if (keep_dims) {
      shape[rank++] = 1;
    }
  }
  sg_tensor *y = sg__new(SG_F32, shape, rank);
  if (!y) return sg__op_fail(&op);
  if (!reduce_forward(kind, x, mask, sg__f32(y), out_n)) goto fail;
  sg_node *node = sg__record(&op, reduce_grad, &x, 1, y);
  if (op.record) {
    if (!node) goto fail;
    node->iparam[0] = kind;
    node->iparam[1] = mask;
    if (kind == K_MAX || kind == K_MIN || kind == K_LSE) {
      sg__save(node, x);
      sg__save(node, y);
    }
  }
  return sg__op_end(&op, y);
fail:
  sg_dispose(y);
  return sg__op_fail(&op);
}

sg_tensor *sg_sum(sg_tensor *x, const int *axes, int n_axes, bool keep_dims) {
  return reduce_op(K_SUM, x, axes, n_axes, keep_dims);
}

sg_tensor *sg_mean(sg_tensor *x, const int *axes, int n_axes, bool keep_dims) {
  return reduce_op(K_MEAN, x, axes, n_axes, keep_dims);
}

sg_tensor *sg_max(sg_tensor *x, const int *axes, int n_axes, bool keep_dims) {
  return reduce_op(K_MAX, x, axes, n_axes, keep_dims);
}

sg_tensor *sg_min(sg_tensor *x, const int *axes, int n_axes, bool keep_dims) {
  return reduce_op(K_MIN, x, axes, n_axes, keep_dims);
}

sg_tensor *sg_logsumexp(sg_tensor *x, const int *axes, int n_axes, bool keep_dims) {
  return reduce_op(K_LSE, x, axes, n_axes, keep_dims);
}

/* ---- argmax / argmin ------------------------------------------------------------------------- */

typedef struct arg_job {
  sg_arg_reduce_kernel k;
  const float *x;
  int32_t *y;
  int64_t r, inner;
} arg_job;

static void arg_outer(int64_t lo, int64_t hi, void *arg) {
  const arg_job *j = arg;
  j->k(j->x + lo * j->r * j->inner, (size_t)(hi - lo), (size_t)j->r, (size_t)j->inner,
       j->y + lo * j->inner);
}

/* Not recorded: the output is SG_I32, so no gradient can flow through it. */
static sg_tensor *arg_op(bool is_max, sg_tensor *x, int axis) {
  const char *name = is_max ? "argmax" : "argmin";
  char buf[SG_SHAPE_STR_MAX];
  sg_op op;
  if (!sg__op_begin(&op, name)) return NULL;
  int a;
  if (!sg__check_f32(x, name, "x") || !sg__norm_axis(axis, x, name, "x", &a))
    return sg__op_fail(&op);
  int64_t r = x->shape[a];
  if (r == 0 || r > INT32_MAX) {
    sg__error(SG_ERR_SHAPE, name, "axis %d of x (shape %s) has %lld elements; need 1 to %d", axis,
              sg__shape_str(x->shape, x->rank, buf, sizeof buf), (long long)r, INT32_MAX);
    return sg__op_fail(&op);
  }
  int64_t shape[SG_MAX_RANK];
  for (int i = 0, n = 0; i < x->rank; i++)
    if (i != a) shape[n++] = x->shape[i];
  sg_tensor *y = sg__new(SG_I32, shape, x->rank - 1);
  if (!y) return sg__op_fail(&op);
  const sg_backend *be = sg__backend();
  arg_job j = {is_max ? be->argmax : be->argmin, sg__f32(x), y->data, r,
               prod(x->shape, a + 1, x->rank)};
  int64_t outer = prod(x->shape, 0, a), row = r * j.inner;
  if (row > 0) sg__parallel_for(outer, row >= CHUNK ? 1 : CHUNK / row, arg_outer, &j);
  return sg__op_end(&op, y);
}

sg_tensor *sg_argmax(sg_tensor *x, int axis) { return arg_op(true, x, axis); }
sg_tensor *sg_argmin(sg_tensor *x, int axis) { return arg_op(false, x, axis); }
