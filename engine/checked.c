/* sg_backend_checked: kernel tables whose every slot first checks its arguments against the
 * preconditions written in backend.h and, when one does not hold, reports it through
 * sg_last_error() and returns without running the kernel (its outputs untouched).
 *
 * Kernels are plain function pointers without a context, so a wrapper must know its backend
 * by itself: engine/checked_table.inc is instantiated once per backend (CK_INDEX), each copy
 * calling the real kernels of that backend's table. The checks themselves are shared, below.
 *
 * What is checked (each a test in tests/test_checked.c):
 * - NULL buffers where the call would touch elements (n > 0, non-empty matrices); the
 *   buffers a slot allows to be NULL (an unwanted gradient, the tensor a backward kernel does
 *   not read) stay allowed;
 * - sizes that overflow: element counts whose product, or whose byte size, exceeds PTRDIFF_MAX;
 * - strides and leading dimensions: steps other than 0 or 1, gemm's lda / ldb / ldc below the
 *   row length of the matrix they stride;
 * - r == 0 (and r > INT32_MAX) for argmax / argmin, transpose's rank outside [0, 8] and a perm
 *   that is not a permutation, window geometries with a zero kernel, stride or dilation,
 *   pixel or row ranges outside the output, channel counts that do not match;
 * - overlap: an output that overlaps an input without being the same range (the elementwise
 *   kernels' in-place form), or that overlaps an input at all where the kernel cannot work in
 *   place (gemm, transpose, scatter, the window kernels, accumulated sums, optimizer state),
 *   and two outputs that overlap each other.
 * A valid call runs the real kernel with the same arguments: the results are the real ones. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

#define CK_MAX_BYTES ((size_t)PTRDIFF_MAX)

static bool ck_fail(const char *slot, sg_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool ck_fail(const char *slot, sg_status st, const char *fmt, ...) {
  char msg[512], op[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(op, sizeof op, "checked kernel %s", slot);
  sg__error(st, op, "%s", msg);
  return false;
}

/* a * b into *out; false + an error naming what when it overflows (or exceeds PTRDIFF_MAX). */
static bool ck_mul(const char *slot, const char *what, size_t a, size_t b, size_t *out) {
  if (__builtin_mul_overflow(a, b, out) || *out > CK_MAX_BYTES)
    return ck_fail(slot, SG_ERR_SHAPE, "%s: %zu x %zu overflows", what, a, b);
  return true;
}

static bool ck_mul3(const char *slot, const char *what, size_t a, size_t b, size_t c, size_t *out) {
  size_t ab;
  return ck_mul(slot, what, a, b, &ab) && ck_mul(slot, what, ab, c, out);
}

/* A buffer of count elements of size elem: its byte size fits, and it is not NULL when the call
   touches it. *bytes gets the size. */
static bool ck_buf(const char *slot, const char *name, const void *p, size_t count, size_t elem,
                   size_t *bytes) {
  if (__builtin_mul_overflow(count, elem, bytes) || *bytes > CK_MAX_BYTES)
    return ck_fail(slot, SG_ERR_SHAPE, "%s has %zu elements of %zu bytes, more than memory holds",
                   name, count, elem);
  if (count > 0 && p == NULL)
    return ck_fail(slot, SG_ERR_ARG, "%s is NULL with %zu elements", name, count);
  return true;
}

/* One buffer of a call: its name, start and size in bytes (0: not touched). */
typedef struct ck_range {
  const char *name;
  const void *p;
  size_t bytes;
} ck_range;

static bool ck_overlaps(ck_range a, ck_range b) {
  if (!a.p || !b.p || a.bytes == 0 || b.bytes == 0) return false;
  uintptr_t a0 = (uintptr_t)a.p, b0 = (uintptr_t)b.p;
  return a0 < b0 + b.bytes && b0 < a0 + a.bytes;
}

/* Output out against input in: no overlap, or (when in_place) exactly the same range. */
static bool ck_disjoint(const char *slot, ck_range out, ck_range in, bool in_place) {
  if (!ck_overlaps(out, in)) return true;
  if (in_place && out.p == in.p && out.bytes == in.bytes) return true;
  if (in_place)
    return ck_fail(slot, SG_ERR_ARG,
                   "output %s partially overlaps input %s (in place needs the same start and "
                   "length)",
                   out.name, in.name);
  return ck_fail(slot, SG_ERR_ARG,
                 "output %s overlaps input %s (this kernel does not work in place)", out.name,
                 in.name);
}

/* Every output against every input, and the outputs against each other. */
static bool ck_overlap_all(const char *slot, const ck_range *outs, int n_outs, const ck_range *ins,
                           int n_ins, bool in_place) {
  for (int o = 0; o < n_outs; o++) {
    for (int i = 0; i < n_ins; i++)
      if (!ck_disjoint(slot, outs[o], ins[i], in_place)) return false;
    for (int j = o + 1; j < n_outs; j++)
      if (ck_overlaps(outs[o], outs[j]))
        return ck_fail(slot, SG_ERR_ARG, "outputs %s and %s overlap", outs[o].name, outs[j].name);
  }
  return true;
}

static bool ck_step(const char *slot, const char *name, size_t step) {
  if (step <= 1) return true;
  return ck_fail(slot, SG_ERR_ARG, "%s is %zu (0 broadcasts, 1 walks; nothing else)", name, step);
}

/* Elements an operand walked with step over n outputs reads. */
static size_t ck_walked(size_t step, size_t n) { return step ? n : (n ? 1 : 0); }

#define F sizeof(float)
#define R(name, p, bytes) ((ck_range){name, p, bytes})

/* ---- Kinds of the op lists ------------------------------------------------------------------ */

static bool ck_unary(const char *s, const float *x, float *y, size_t n) {
  size_t bx, by;
  return ck_buf(s, "x", x, n, F, &bx) && ck_buf(s, "y", y, n, F, &by) &&
         ck_disjoint(s, R("y", y, by), R("x", x, bx), true);
}

static bool ck_unary_backward(const char *s, bool needs_x, bool needs_y, const float *dy,
                              const float *x, const float *y, float *dx, size_t n) {
  size_t bdy, bx = 0, by = 0, bdx;
  if (!ck_buf(s, "dy", dy, n, F, &bdy) || !ck_buf(s, "dx", dx, n, F, &bdx)) return false;
  if (needs_x && !ck_buf(s, "x", x, n, F, &bx)) return false;
  if (needs_y && !ck_buf(s, "y", y, n, F, &by)) return false;
  const ck_range out = R("dx", dx, bdx);
  const ck_range ins[] = {R("dy", dy, bdy), R("x", x, bx), R("y", y, by)};
  return ck_overlap_all(s, &out, 1, ins, 3, true);
}

static bool ck_binary_in(const char *s, const void *a, size_t as, const void *b, size_t bs,
                         size_t n, ck_range *ra, ck_range *rb) {
  size_t ba, bb;
  if (!ck_step(s, "a_step", as) || !ck_step(s, "b_step", bs) ||
      !ck_buf(s, "a", a, ck_walked(as, n), F, &ba) || !ck_buf(s, "b", b, ck_walked(bs, n), F, &bb))
    return false;
  *ra = R("a", a, ba);
  *rb = R("b", b, bb);
  return true;
}

static bool ck_binary(const char *s, const float *a, size_t as, const float *b, size_t bs,
                      const void *y, size_t y_elem, size_t n) {
  ck_range ins[2];
  size_t by;
  if (!ck_binary_in(s, a, as, b, bs, n, &ins[0], &ins[1]) || !ck_buf(s, "y", y, n, y_elem, &by))
    return false;
  const ck_range out = R("y", y, by);
  return ck_overlap_all(s, &out, 1, ins, 2, true);
}

static bool ck_binary_backward(const char *s, bool needs_y, const float *dy, const float *a,
                               size_t as, const float *b, size_t bs, const float *y, float *da,
                               float *db, size_t n) {
  ck_range ins[4];
  size_t bdy, by = 0, bda = 0, bdb = 0;
  if (!ck_buf(s, "dy", dy, n, F, &bdy) || !ck_binary_in(s, a, as, b, bs, n, &ins[1], &ins[2]) ||
      (needs_y && !ck_buf(s, "y", y, n, F, &by)) || (da && !ck_buf(s, "da", da, n, F, &bda)) ||
      (db && !ck_buf(s, "db", db, n, F, &bdb)))
    return false;
  ins[0] = R("dy", dy, bdy);
  ins[3] = R("y", y, by);
  const ck_range outs[] = {R("da", da, bda), R("db", db, bdb)};
  return ck_overlap_all(s, outs, 2, ins, 4, true);
}

/* x [outer, r, inner] into y [outer, inner] (elem: y's element size). */
static bool ck_reduce(const char *s, const float *x, size_t outer, size_t r, size_t inner,
                      const void *y, size_t y_elem) {
  size_t nx, ny, bx, by;
  if (!ck_mul3(s, "outer x r x inner", outer, r, inner, &nx) ||
      !ck_mul(s, "outer x inner", outer, inner, &ny) || !ck_buf(s, "x", x, nx, F, &bx) ||
      !ck_buf(s, "y", y, ny, y_elem, &by))
    return false;
  return ck_disjoint(s, R("y", y, by), R("x", x, bx), true);
}

static bool ck_reduce_backward(const char *s, bool needs_xy, const float *dy, const float *x,
                               const float *y, size_t outer, size_t r, size_t inner, float *dx) {
  size_t nx, ny, bdy, bx = 0, by = 0, bdx;
  if (!ck_mul3(s, "outer x r x inner", outer, r, inner, &nx) ||
      !ck_mul(s, "outer x inner", outer, inner, &ny) || !ck_buf(s, "dy", dy, ny, F, &bdy) ||
      !ck_buf(s, "dx", dx, nx, F, &bdx) || (needs_xy && !ck_buf(s, "x", x, nx, F, &bx)) ||
      (needs_xy && !ck_buf(s, "y", y, ny, F, &by)))
    return false;
  const ck_range out = R("dx", dx, bdx);
  const ck_range ins[] = {R("dy", dy, bdy), R("x", x, bx), R("y", y, by)};
  return ck_overlap_all(s, &out, 1, ins, 3, true);
}

static bool ck_arg_reduce(const char *s, const float *x, size_t outer, size_t r, size_t inner,
                          int32_t *y) {
  if (r == 0)
    return ck_fail(s, SG_ERR_SHAPE, "r is 0: an empty axis has no extremum (r must be >= 1)");
  if (r > INT32_MAX) return ck_fail(s, SG_ERR_SHAPE, "r is %zu: an index does not fit in int32", r);
  return ck_reduce(s, x, outer, r, inner, y, sizeof(int32_t));
}

static bool ck_softmax(const char *s, const float *x, size_t outer, size_t r, size_t inner,
                       float *y) {
  size_t nx, bx, by;
  return ck_mul3(s, "outer x r x inner", outer, r, inner, &nx) && ck_buf(s, "x", x, nx, F, &bx) &&
         ck_buf(s, "y", y, nx, F, &by) && ck_disjoint(s, R("y", y, by), R("x", x, bx), true);
}

static bool ck_softmax_backward(const char *s, const float *dy, const float *y, size_t outer,
                                size_t r, size_t inner, float *dx) {
  size_t nx, bdy, by, bdx;
  if (!ck_mul3(s, "outer x r x inner", outer, r, inner, &nx) || !ck_buf(s, "dy", dy, nx, F, &bdy) ||
      !ck_buf(s, "y", y, nx, F, &by) || !ck_buf(s, "dx", dx, nx, F, &bdx))
    return false;
  const ck_range out = R("dx", dx, bdx);
  const ck_range ins[] = {R("dy", dy, bdy), R("y", y, by)};
  return ck_overlap_all(s, &out, 1, ins, 2, true);
}

/* ---- The hand-written slots ---------------------------------------------------------------- */

static bool ck_where(const char *s, const uint8_t *c, size_t cs, const float *a, size_t as,
                     const float *b, size_t bs, float *y, size_t n) {
  size_t bc, by;
  ck_range ins[3];
  if (!ck_step(s, "c_step", cs) || !ck_buf(s, "c", c, ck_walked(cs, n), 1, &bc) ||
      !ck_binary_in(s, a, as, b, bs, n, &ins[1], &ins[2]) || !ck_buf(s, "y", y, n, F, &by))
    return false;
  ins[0] = R("c", c, bc);
  const ck_range out = R("y", y, by);
  return ck_overlap_all(s, &out, 1, ins, 3, true);
}

static bool ck_where_backward(const char *s, const float *dy, const uint8_t *c, size_t cs,
                              float *da, float *db, size_t n) {
  size_t bdy, bc, bda = 0, bdb = 0;
  if (!ck_buf(s, "dy", dy, n, F, &bdy) || !ck_step(s, "c_step", cs) ||
      !ck_buf(s, "c", c, ck_walked(cs, n), 1, &bc) || (da && !ck_buf(s, "da", da, n, F, &bda)) ||
      (db && !ck_buf(s, "db", db, n, F, &bdb)))
    return false;
  const ck_range outs[] = {R("da", da, bda), R("db", db, bdb)};
  const ck_range ins[] = {R("dy", dy, bdy), R("c", c, bc)};
  return ck_overlap_all(s, outs, 2, ins, 2, true);
}

static bool ck_sce(const char *s, const float *labels, const float *logits, size_t rows,
                   size_t classes, float *loss, float *log_probs) {
  size_t n, bl, bg, bloss, blp;
  if (!ck_mul(s, "rows x classes", rows, classes, &n) || !ck_buf(s, "labels", labels, n, F, &bl) ||
      !ck_buf(s, "logits", logits, n, F, &bg) || !ck_buf(s, "loss", loss, rows, F, &bloss) ||
      !ck_buf(s, "log_probs", log_probs, n, F, &blp))
    return false;
  /* log_probs may be written over logits, not over labels (read after it is written). */
  const ck_range outs[] = {R("loss", loss, bloss), R("log_probs", log_probs, blp)};
  const ck_range ins[] = {R("labels", labels, bl), R("logits", logits, bg)};
  return ck_overlap_all(s, outs, 2, ins + 1, 1, true) && ck_overlap_all(s, outs, 2, ins, 1, false);
}

static bool ck_sce_backward(const char *s, const float *dloss, const float *labels,
                            const float *log_probs, size_t rows, size_t classes, float *dlabels,
                            float *dlogits) {
  size_t n, bd, bl, blp, bdl = 0, bdg = 0;
  if (!ck_mul(s, "rows x classes", rows, classes, &n) || !ck_buf(s, "dloss", dloss, rows, F, &bd) ||
      !ck_buf(s, "labels", labels, n, F, &bl) || !ck_buf(s, "log_probs", log_probs, n, F, &blp) ||
      (dlabels && !ck_buf(s, "dlabels", dlabels, n, F, &bdl)) ||
      (dlogits && !ck_buf(s, "dlogits", dlogits, n, F, &bdg)))
    return false;
  const ck_range outs[] = {R("dlabels", dlabels, bdl), R("dlogits", dlogits, bdg)};
  const ck_range ins[] = {R("dloss", dloss, bd), R("labels", labels, bl),
                          R("log_probs", log_probs, blp)};
  return ck_overlap_all(s, outs, 2, ins, 3, true);
}

/* A rows x cols matrix with row stride ld: ld >= cols, and its extent in bytes. */
static bool ck_matrix(const char *s, const char *name, const char *ld_name, const void *p,
                      size_t rows, size_t cols, size_t ld, size_t *bytes) {
  *bytes = 0;
  if (rows == 0 || cols == 0) return true;
  if (ld < cols)
    return ck_fail(s, SG_ERR_ARG, "%s is %zu, less than the %zu columns of %s as stored", ld_name,
                   ld, cols, name);
  size_t last;
  if (!ck_mul(s, ld_name, rows - 1, ld, &last) || __builtin_add_overflow(last, cols, &last))
    return ck_fail(s, SG_ERR_SHAPE, "%s: %zu rows of stride %zu overflow", name, rows, ld);
  return ck_buf(s, name, p, last, F, bytes);
}

static bool ck_gemm(const char *s, size_t m, size_t n, size_t k, const float *a, size_t lda,
                    bool ta, const float *b, size_t ldb, bool tb, float *c, size_t ldc) {
  size_t ba, bb, bc;
  if (!ck_matrix(s, "a", "lda", a, ta ? k : m, ta ? m : k, lda, &ba) ||
      !ck_matrix(s, "b", "ldb", b, tb ? n : k, tb ? k : n, ldb, &bb) ||
      !ck_matrix(s, "c", "ldc", c, m, n, ldc, &bc))
    return false;
  const ck_range out = R("c", c, bc);
  const ck_range ins[] = {R("a", a, ba), R("b", b, bb)};
  return ck_overlap_all(s, &out, 1, ins, 2, false);
}

static bool ck_gemm_taps(const char *s, size_t m, size_t n, size_t k, size_t taps,
                         const float *const *a, size_t lda, bool ta, const float *const *b,
                         size_t ldb, float *c, size_t ldc) {
  size_t bc, bt;
  if (!ck_matrix(s, "c", "ldc", c, m, n, ldc, &bc)) return false;
  const bool used = m > 0 && n > 0 && k > 0;
  if (used &&
      (!ck_buf(s, "a", a, taps, sizeof *a, &bt) || !ck_buf(s, "b", b, taps, sizeof *b, &bt)))
    return false;
  for (size_t t = 0; used && t < taps; t++) {
    size_t ba, bb;
    char an[32], bn[32];
    snprintf(an, sizeof an, "a[%zu]", t);
    snprintf(bn, sizeof bn, "b[%zu]", t);
    if (!ck_matrix(s, an, "lda", a[t], ta ? k : m, ta ? m : k, lda, &ba) ||
        !ck_matrix(s, bn, "ldb", b[t], k, n, ldb, &bb))
      return false;
    const ck_range out = R("c", c, bc);
    const ck_range ins[] = {R(an, a[t], ba), R(bn, b[t], bb)};
    if (!ck_overlap_all(s, &out, 1, ins, 2, false)) return false;
  }
  return true;
}

static bool ck_transpose(const char *s, const float *x, const int64_t *shape, const int *perm,
                         int rank, float *y) {
  if (rank < 0 || rank > 8) return ck_fail(s, SG_ERR_SHAPE, "rank is %d, outside [0, 8]", rank);
  if (rank > 0 && (!shape || !perm))
    return ck_fail(s, SG_ERR_ARG, "%s is NULL with rank %d", shape ? "perm" : "shape", rank);
  size_t count = 1;
  bool seen[8] = {false};
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) return ck_fail(s, SG_ERR_SHAPE, "shape[%d] is %lld", i, (long long)shape[i]);
    if (!ck_mul(s, "the shape's element count", count, (size_t)shape[i], &count)) return false;
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]])
      return ck_fail(s, SG_ERR_ARG, "perm is not a permutation of [0, %d): perm[%d] is %d", rank, i,
                     perm[i]);
    seen[perm[i]] = true;
  }
  size_t bx, by;
  return ck_buf(s, "x", x, count, F, &bx) && ck_buf(s, "y", y, count, F, &by) &&
         ck_disjoint(s, R("y", y, by), R("x", x, bx), false);
}

static bool ck_scatter_add(const char *s, const float *dy, const int32_t *idx, size_t outer,
                           size_t n_idx, size_t inner, size_t axis_dim, float *dx) {
  size_t ndy, ndx, bdy, bi, bdx;
  if (!ck_mul3(s, "outer x n_idx x inner", outer, n_idx, inner, &ndy) ||
      !ck_mul3(s, "outer x axis_dim x inner", outer, axis_dim, inner, &ndx) ||
      !ck_buf(s, "dy", dy, ndy, F, &bdy) || !ck_buf(s, "idx", idx, ndy ? n_idx : 0, 4, &bi) ||
      !ck_buf(s, "dx", dx, ndx, F, &bdx))
    return false;
  const ck_range out = R("dx", dx, bdx);
  const ck_range ins[] = {R("dy", dy, bdy), R("idx", idx, bi)};
  return ck_overlap_all(s, &out, 1, ins, 2, false);
}

/* ---- Windows ------------------------------------------------------------------------------- */

typedef enum { CK_CONV, CK_DEPTHWISE, CK_POOL } ck_window_kind;

/* The geometry, and the element counts of one input image, one output image and (depthwise) the
   filter. */
static bool ck_window(const char *s, const sg_window2d *g, ck_window_kind kind, size_t *nx,
                      size_t *ny, size_t *nf) {
  if (!g) return ck_fail(s, SG_ERR_ARG, "the geometry g is NULL");
  if (!g->k_h || !g->k_w || !g->stride_h || !g->stride_w || !g->dilation_h || !g->dilation_w)
    return ck_fail(s, SG_ERR_ARG,
                   "kernel %zux%zu, stride %zux%zu, dilation %zux%zu: each must be at least 1",
                   g->k_h, g->k_w, g->stride_h, g->stride_w, g->dilation_h, g->dilation_w);
  if (kind == CK_DEPTHWISE &&
      (g->multiplier == 0 || g->out_c / g->multiplier != g->in_c || g->out_c % g->multiplier != 0))
    return ck_fail(s, SG_ERR_SHAPE, "out_c %zu is not in_c %zu x multiplier %zu", g->out_c, g->in_c,
                   g->multiplier);
  if (kind == CK_POOL && (g->out_c != g->in_c || g->dilation_h != 1 || g->dilation_w != 1))
    return ck_fail(s, SG_ERR_SHAPE, "pooling needs out_c == in_c (%zu, %zu) and dilation 1",
                   g->out_c, g->in_c);
  *nf = 0;
  return ck_mul3(s, "in_h x in_w x in_c", g->in_h, g->in_w, g->in_c, nx) &&
         ck_mul3(s, "out_h x out_w x out_c", g->out_h, g->out_w, g->out_c, ny) &&
         (kind != CK_DEPTHWISE || ck_mul3(s, "k_h x k_w x out_c", g->k_h, g->k_w, g->out_c, nf));
}

static bool ck_rows(const char *s, const char *lo_name, size_t lo, size_t hi, size_t limit) {
  if (lo <= hi && hi <= limit) return true;
  return ck_fail(s, SG_ERR_ARG, "[%s, %s) = [%zu, %zu) is not inside [0, %zu)", lo_name,
                 lo_name[0] == 'p' ? "p1" : "oh1", lo, hi, limit);
}

static bool ck_im2col(const char *s, const sg_window2d *g, const float *img, size_t p0, size_t p1,
                      const float *col, bool forward) {
  size_t nx, ny, nf, pixels, cols, ncol, bx, bc;
  if (!ck_window(s, g, CK_CONV, &nx, &ny, &nf) ||
      !ck_mul(s, "out_h x out_w", g->out_h, g->out_w, &pixels) ||
      !ck_rows(s, "p0", p0, p1, pixels) ||
      !ck_mul3(s, "k_h x k_w x in_c", g->k_h, g->k_w, g->in_c, &cols) ||
      !ck_mul(s, "(p1 - p0) x k_h x k_w x in_c", p1 - p0, cols, &ncol) ||
      !ck_buf(s, forward ? "x" : "dx", img, nx, F, &bx) || !ck_buf(s, "col", col, ncol, F, &bc))
    return false;
  return forward ? ck_disjoint(s, R("col", col, bc), R("x", img, bx), false)
                 : ck_disjoint(s, R("dx", img, bx), R("col", col, bc), false);
}

/* A window kernel's buffers: ins[] (count nx, ny or nf by role), out (count by role). */
typedef enum { CK_X, CK_Y, CK_FILTER } ck_role;
typedef struct ck_wbuf {
  const char *name;
  const float *p;
  ck_role role;
} ck_wbuf;

static bool ck_window_bufs(const char *s, const sg_window2d *g, ck_window_kind kind,
                           const ck_wbuf *ins, int n_ins, ck_wbuf out, size_t oh0, size_t oh1,
                           bool rows) {
  size_t n[3];
  if (!ck_window(s, g, kind, &n[CK_X], &n[CK_Y], &n[CK_FILTER])) return false;
  if (rows && !ck_rows(s, "oh0", oh0, oh1, g->out_h)) return false;
  ck_range rin[4], rout;
  for (int i = 0; i < n_ins; i++) {
    rin[i] = R(ins[i].name, ins[i].p, 0);
    if (!ck_buf(s, ins[i].name, ins[i].p, n[ins[i].role], F, &rin[i].bytes)) return false;
  }
  rout = R(out.name, out.p, 0);
  if (!ck_buf(s, out.name, out.p, n[out.role], F, &rout.bytes)) return false;
  return ck_overlap_all(s, &rout, 1, rin, n_ins, false);
}

/* ---- Rows, dropout, optimizers ------------------------------------------------------------- */

static bool ck_batch_norm(const char *s, const float *x, size_t rows, size_t channels,
                          const float *a, const float *b, float *y) {
  size_t n, bx, ba, bb, by;
  if (!ck_mul(s, "rows x channels", rows, channels, &n) || !ck_buf(s, "x", x, n, F, &bx) ||
      !ck_buf(s, "a", a, n ? channels : 0, F, &ba) ||
      !ck_buf(s, "b", b, n ? channels : 0, F, &bb) || !ck_buf(s, "y", y, n, F, &by))
    return false;
  const ck_range out = R("y", y, by);
  const ck_range ins[] = {R("x", x, bx), R("a", a, ba), R("b", b, bb)};
  return ck_overlap_all(s, &out, 1, ins, 3, true);
}

static bool ck_batch_norm_backward(const char *s, const float *dy, const float *x, size_t rows,
                                   size_t channels, const float *a, const float *mean, float *dx,
                                   float *sum_dy, float *sum_dy_xc) {
  size_t n, bdy, bx, ba, bm, bdx = 0, bs1, bs2;
  if (!ck_mul(s, "rows x channels", rows, channels, &n) || !ck_buf(s, "dy", dy, n, F, &bdy) ||
      !ck_buf(s, "x", x, n, F, &bx) || !ck_buf(s, "a", a, n ? channels : 0, F, &ba) ||
      !ck_buf(s, "mean", mean, n ? channels : 0, F, &bm) ||
      (dx && !ck_buf(s, "dx", dx, n, F, &bdx)) ||
      !ck_buf(s, "sum_dy", sum_dy, n ? channels : 0, F, &bs1) ||
      !ck_buf(s, "sum_dy_xc", sum_dy_xc, n ? channels : 0, F, &bs2))
    return false;
  const ck_range ins[] = {R("dy", dy, bdy), R("x", x, bx), R("a", a, ba), R("mean", mean, bm)};
  const ck_range dxr = R("dx", dx, bdx);
  /* dx may be computed in place; the sums accumulate and must not touch anything else. */
  const ck_range sums[] = {R("sum_dy", sum_dy, bs1), R("sum_dy_xc", sum_dy_xc, bs2), dxr};
  return ck_overlap_all(s, &dxr, 1, ins, 4, true) && ck_overlap_all(s, sums, 3, ins, 4, false);
}

/* Buffers all n floats, the first n_out updated in place: none may overlap another. */
static bool ck_update(const char *s, size_t n, const ck_range *bufs, int count, int n_out) {
  ck_range r[4];
  for (int i = 0; i < count; i++) {
    r[i] = bufs[i];
    if (!ck_buf(s, r[i].name, r[i].p, n, F, &r[i].bytes)) return false;
  }
  return ck_overlap_all(s, r, n_out, r + n_out, count - n_out, false);
}

/* ---- The tables ----------------------------------------------------------------------------- */

enum { CK_SCALAR, CK_AVX2, CK_AVX512, CK_NEON, CK_COUNT };
static const char *const k_names[CK_COUNT] = {"scalar", "avx2", "avx512", "neon"};
static const char *const k_checked_names[CK_COUNT] = {"checked:scalar", "checked:avx2",
                                                      "checked:avx512", "checked:neon"};
static const sg_backend *g_real[CK_COUNT];
static sg_backend g_checked[CK_COUNT];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define CK_NEEDS_X_X true
#define CK_NEEDS_X_Y false
#define CK_NEEDS_X_NONE false
#define CK_NEEDS_Y_X false
#define CK_NEEDS_Y_Y true
#define CK_NEEDS_Y_NONE false

/* The wrappers of backend CK_INDEX: ck_<slot>_<CK_INDEX>, calling g_real[CK_INDEX]'s kernel. */
#define CK_CAT_(a, b) a##b
#define CK_CAT(a, b) CK_CAT_(a, b)
#define CK(slot) CK_CAT(ck_##slot##_, CK_INDEX)
#define CK_REAL g_real[CK_INDEX]

#define CK_UNARY_WRAPPERS_(name, saved, doc)                                                       \
  static void CK(name)(const float *x, float *y, size_t n) {                                       \
    if (ck_unary(#name, x, y, n)) CK_REAL->name(x, y, n);                                          \
  }                                                                                                \
  static void CK(name##_backward)(const float *dy, const float *x, const float *y, float *dx,      \
                                  size_t n) {                                                      \
    if (ck_unary_backward(#name "_backward", CK_NEEDS_X_##saved, CK_NEEDS_Y_##saved, dy, x, y, dx, \
                          n))                                                                      \
      CK_REAL->name##_backward(dy, x, y, dx, n);                                                   \
  }
#define CK_STEP_WRAPPER_(name, doc)                                                                \
  static void CK(name)(const float *x, float *y, size_t n) {                                       \
    if (ck_unary(#name, x, y, n)) CK_REAL->name(x, y, n);                                          \
  }
#define CK_BINARY_WRAPPERS_(name, doc)                                                             \
  static void CK(name)(const float *a, size_t as, const float *b, size_t bs, float *y, size_t n) { \
    if (ck_binary(#name, a, as, b, bs, y, sizeof(float), n)) CK_REAL->name(a, as, b, bs, y, n);    \
  }                                                                                                \
  static void CK(name##_backward)(const float *dy, const float *a, size_t as, const float *b,      \
                                  size_t bs, const float *y, float *da, float *db, size_t n) {     \
    if (ck_binary_backward(#name "_backward", strcmp(#name, "pow") == 0, dy, a, as, b, bs, y, da,  \
                           db, n))                                                                 \
      CK_REAL->name##_backward(dy, a, as, b, bs, y, da, db, n);                                    \
  }
#define CK_COMPARE_WRAPPER_(name, doc)                                                             \
  static void CK(name)(const float *a, size_t as, const float *b, size_t bs, uint8_t *y,           \
                       size_t n) {                                                                 \
    if (ck_binary(#name, a, as, b, bs, y, 1, n)) CK_REAL->name(a, as, b, bs, y, n);                \
  }
#define CK_REDUCE_WRAPPERS_(name, doc)                                                             \
  static void CK(reduce_##name)(const float *x, size_t outer, size_t r, size_t inner, float *y) {  \
    if (ck_reduce("reduce_" #name, x, outer, r, inner, y, sizeof(float)))                          \
      CK_REAL->reduce_##name(x, outer, r, inner, y);                                               \
  }                                                                                                \
  static void CK(reduce_##name##_backward)(const float *dy, const float *x, const float *y,        \
                                           size_t outer, size_t r, size_t inner, float *dx) {      \
    if (ck_reduce_backward("reduce_" #name "_backward", strcmp(#name, "sum") != 0, dy, x, y,       \
                           outer, r, inner, dx))                                                   \
      CK_REAL->reduce_##name##_backward(dy, x, y, outer, r, inner, dx);                            \
  }

#define CK_FILL_UNARY_(name, saved, doc)                                                           \
  t->name = CK(name);                                                                              \
  t->name##_backward = CK(name##_backward);
#define CK_FILL_STEP_(name, doc) t->name = CK(name);
#define CK_FILL_BINARY_(name, doc)                                                                 \
  t->name = CK(name);                                                                              \
  t->name##_backward = CK(name##_backward);
#define CK_FILL_COMPARE_(name, doc) t->name = CK(name);
#define CK_FILL_REDUCE_(name, doc)                                                                 \
  t->reduce_##name = CK(reduce_##name);                                                            \
  t->reduce_##name##_backward = CK(reduce_##name##_backward);

#define CK_INDEX 0
#include "engine/checked_table.inc"
#undef CK_INDEX
#define CK_INDEX 1
#include "engine/checked_table.inc"
#undef CK_INDEX
#define CK_INDEX 2
#include "engine/checked_table.inc"
#undef CK_INDEX
#define CK_INDEX 3
#include "engine/checked_table.inc"
#undef CK_INDEX

static void build_checked(void) {
  void (*const fill[CK_COUNT])(sg_backend *) = {ck_table_0, ck_table_1, ck_table_2, ck_table_3};
  for (int i = 0; i < CK_COUNT; i++) {
    g_real[i] = sg_backend_get(k_names[i]);
    if (!g_real[i]) continue;
    g_checked[i] = *g_real[i]; /* size and abi_version */
    g_checked[i].name = k_checked_names[i];
    fill[i](&g_checked[i]);
  }
}

const sg_backend *sg_backend_checked(const char *name) {
  sg__ensure_init();
  if (!name) name = sg_backend_name();
  for (int i = 0; i < CK_COUNT; i++)
    if (strcmp(name, k_names[i]) == 0) {
      if (!sg_backend_get(name)) return NULL;
      pthread_once(&g_once, build_checked);
      return &g_checked[i];
    }
  return NULL;
}
