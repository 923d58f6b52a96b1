/* sg_matmul: rank-2 and batched matrix products (batch dims broadcast like NumPy) and their
 * gradient, all through the backend's gemm slot.
 *
 * Every product here, forward or backward, is one "job": for each matrix of the result C and
 * each block of it (rows x columns), sum gemm over the output batches that map to that matrix.
 * In the forward pass that is exactly one batch; in the backward pass an operand that was
 * broadcast along a batch dim gathers the sum over that dim, accumulated with beta = 1 in a
 * fixed order. Work items (matrix, block) write disjoint parts of C and their boundaries depend
 * only on the shapes, so the result does not depend on the thread count.
 *
 * Why so few blocks: every gemm call packs its own panels of A and B, so each extra block of
 * rows packs all of B once more and each extra block of columns all of A. A matrix is cut only
 * to give the threads work, and along its longer side. Whether cut or not, each C element gets
 * the same arithmetic (the gemm kernels' k slices depend on k alone). */
#include <string.h>

#include "engine.h"

/* The fewest rows and columns a cut may leave. */
#define MIN_BLOCK_ROWS 32
#define MIN_BLOCK_COLS 128
/* Multiply-adds a work item (and a parallel chunk) should have at least: below this the
   fork/join of the threads costs more than it saves. 2^17 (about 2.5 us of one core's FMAs)
   lets a 64^3 product use both cores: halved by rows it took 4.0 us against 5.2 serially,
   and 128^3 21 us against 39 (docs/bench.md, "Small matmuls on two threads"); at 2^21 every
   product up to 128^3 ran on one thread. */
#define GEMM_GRAIN_MACS (1 << 17)
/* Items a job is cut into, at least, when its work allows: one per core of this machine class
   (2). More would only repack more: each block of rows packs all of B again, each block of
   columns all of A. */
#define MIN_ITEMS 2

/* The shapes of one matmul: batch dims aligned to nb (1 where an operand has fewer dims). */
typedef struct mm_shapes {
  int nb;
  int64_t abat[SG_MAX_RANK], bbat[SG_MAX_RANK], obat[SG_MAX_RANK];
  int64_t m, n, k, ka, kb;
  int64_t a_rows, a_cols, b_rows, b_cols;
} mm_shapes;

enum { MM_OK, MM_INNER, MM_BATCH };

static int mm_shapes_of(const int64_t *as, int ar, const int64_t *bs, int br, bool ta, bool tb,
                        mm_shapes *s) {
  s->a_rows = as[ar - 2], s->a_cols = as[ar - 1];
  s->b_rows = bs[br - 2], s->b_cols = bs[br - 1];
  s->m = ta ? s->a_cols : s->a_rows;
  s->ka = ta ? s->a_rows : s->a_cols;
  s->kb = tb ? s->b_cols : s->b_rows;
  s->n = tb ? s->b_rows : s->b_cols;
  s->k = s->ka;
  s->nb = (ar > br ? ar : br) - 2;
  int da = s->nb - (ar - 2), db = s->nb - (br - 2);
  bool batch_ok = true;
  for (int d = 0; d < s->nb; d++) {
    s->abat[d] = d < da ? 1 : as[d - da];
    s->bbat[d] = d < db ? 1 : bs[d - db];
    if (s->abat[d] == s->bbat[d] || s->bbat[d] == 1)
      s->obat[d] = s->abat[d];
    else if (s->abat[d] == 1)
      s->obat[d] = s->bbat[d];
    else
      batch_ok = false;
  }
  if (s->ka != s->kb) return MM_INNER;
  return batch_ok ? MM_OK : MM_BATCH;
}

/* One gemm input: batched matrices of `elems` floats with row stride ld. The matrix used for
   output batch coords co is number sum(co[d] * bstride[d]); bstride is 0 along broadcast dims. */
typedef struct gemm_operand {
  const float *p;
  int64_t elems, ld;
  bool trans;
  int64_t bstride[SG_MAX_RANK];
} gemm_operand;

static gemm_operand operand(const float *p, const int64_t *bat, int nb, int64_t rows, int64_t cols,
                            bool trans) {
  gemm_operand o = {.p = p, .elems = rows * cols, .ld = cols, .trans = trans};
  int64_t stride = 1;
  for (int d = nb - 1; d >= 0; d--) {
    o.bstride[d] = bat[d] == 1 ? 0 : stride;
    stride *= bat[d];
  }
  return o;
}

typedef struct gemm_job {
  const sg_backend *be;
  int nb;
  const int64_t *obat; /* output batch dims: what the sum runs over */
  const int64_t *cbat; /* C's batch dims, aligned to obat */
  int64_t m, n, k;     /* each gemm call: C is m x n, the sum runs over k */
  gemm_operand a, b;
  float *c;
  int64_t rb, cb; /* rows and columns of a block */
  int64_t rblocks, cblocks;
} gemm_job;

/* Cuts each m x n matrix of C (a sum over k) into rblocks x cblocks blocks, from the shapes
   alone. A cut of the rows repacks B (k x n) once more, a cut of the columns A (m x k): cut
   the longer side. */
static void plan_blocks(gemm_job *j, int64_t c_count, int64_t terms) {
  int64_t m = j->m, n = j->n;
  double macs = (double)m * (double)n * (double)(j->k ? j->k : 1) * (double)terms;
  /* Blocks per matrix for a multiple of MIN_ITEMS in all: the threads share evenly. */
  int64_t g = MIN_ITEMS, r = c_count;
  while (r) {
    int64_t t = g % r;
    g = r, r = t;
  }
  int64_t want = MIN_ITEMS / g;
  if (macs < (double)want * GEMM_GRAIN_MACS) want = (int64_t)(macs / GEMM_GRAIN_MACS);
  int64_t most_r = sg__ceil_div(m, MIN_BLOCK_ROWS), most_c = sg__ceil_div(n, MIN_BLOCK_COLS);
  int64_t nr = 1, nc = 1;
  if (want > 1) {
    if (n > m || most_r == 1)
      nc = want < most_c ? want : most_c;
    else
      nr = want < most_r ? want : most_r;
  }
  /* Columns in multiples of 64: whole 16-, 32- and 64-wide register tiles. */
  j->rb = sg__ceil_div(m, nr);
  j->cb = nc > 1 ? sg__ceil_div(sg__ceil_div(n, nc), 64) * 64 : n;
  j->rblocks = sg__ceil_div(m, j->rb);
  j->cblocks = sg__ceil_div(n, j->cb);
}

static void gemm_range(int64_t lo, int64_t hi, void *arg) {
  const gemm_job *j = arg;
  int64_t per_c = j->rblocks * j->cblocks;
  for (int64_t item = lo; item < hi; item++) {
    int64_t cb = item / per_c, blk = item % per_c;
    int64_t i0 = blk / j->cblocks * j->rb, j0 = blk % j->cblocks * j->cb;
    int64_t rows = j->m - i0 < j->rb ? j->m - i0 : j->rb;
    int64_t cols = j->n - j0 < j->cb ? j->n - j0 : j->cb;
    float *c = j->c + (cb * j->m + i0) * j->n + j0;
    /* C's batch coords; the output coords run over the dims where C was broadcast. */
    int64_t co[SG_MAX_RANK];
    int free_dims[SG_MAX_RANK], n_free = 0;
    bool empty = false;
    int64_t rest = cb;
    for (int d = j->nb - 1; d >= 0; d--) {
      co[d] = rest % j->cbat[d];
      rest /= j->cbat[d];
      if (j->cbat[d] == 1 && j->obat[d] != 1) {
        free_dims[n_free++] = d;
        empty |= j->obat[d] == 0;
      }
    }
    bool first = true;
    while (!empty) {
      int64_t ai = 0, bi = 0;
      for (int d = 0; d < j->nb; d++) {
        ai += co[d] * j->a.bstride[d];
        bi += co[d] * j->b.bstride[d];
      }
      const float *a = j->a.p + ai * j->a.elems + (j->a.trans ? i0 : i0 * j->a.ld);
      const float *b = j->b.p + bi * j->b.elems + (j->b.trans ? j0 * j->b.ld : j0);
      j->be->gemm((size_t)rows, (size_t)cols, (size_t)j->k, a, (size_t)j->a.ld, j->a.trans, b,
                  (size_t)j->b.ld, j->b.trans, first ? 0.0f : 1.0f, c, (size_t)j->n);
      first = false;
      int f = 0; /* free_dims is innermost first */
      for (; f < n_free; f++) {
        if (++co[free_dims[f]] < j->obat[free_dims[f]]) break;
        co[free_dims[f]] = 0;
      }
      if (f == n_free) break;
    }
    if (first)
      for (int64_t r = 0; r < rows; r++) memset(c + r * j->n, 0, (size_t)cols * sizeof(float));
  }
}

static void run_job(gemm_job *j, int64_t c_count) {
  j->be = sg__backend();
  if (c_count == 0 || j->m == 0 || j->n == 0) return;
  int64_t out_count = 1;
  for (int d = 0; d < j->nb; d++) out_count *= j->obat[d];
  int64_t terms = out_count > c_count ? out_count / c_count : 1; /* gemms summed per block */
  plan_blocks(j, c_count, terms);
  int64_t items = c_count * j->rblocks * j->cblocks;
  double per_item = (double)j->rb * (double)j->cb * (double)(j->k ? j->k : 1) * (double)terms;
  sg__parallel_for(items, sg__grain_for(per_item, GEMM_GRAIN_MACS), gemm_range, j);
}

static int64_t batch_count(const int64_t *bat, int nb) {
  int64_t n = 1;
  for (int d = 0; d < nb; d++) n *= bat[d];
  return n;
}

/* dop(A) = dC op(B)^T and dop(B) = op(A)^T dC, written as gemms on the stored layouts. */
static sg_status matmul_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  const sg_tensor *a = node->saved[0], *b = node->saved[1];
  bool ta = node->iparam[0] != 0, tb = node->iparam[1] != 0;
  mm_shapes s;
  mm_shapes_of(a->shape, a->rank, b->shape, b->rank, ta, tb, &s);
  gemm_operand dc = operand(sg__f32(dy), s.obat, s.nb, s.m, s.n, false);
  gemm_operand dct = dc;
  dct.trans = true;
  if (need[0]) {
    dx[0] = sg__new(SG_F32, a->shape, a->rank);
    if (!dx[0]) return sg_last_status();
    gemm_operand bop = operand(sg__f32(b), s.bbat, s.nb, s.b_rows, s.b_cols, !tb);
    gemm_job j = {.nb = s.nb, .obat = s.obat, .cbat = s.abat, .c = sg__f32(dx[0])};
    if (!ta) { /* dA = dC op(B)^T */
      j.m = s.m, j.n = s.k, j.k = s.n, j.a = dc, j.b = bop;
    } else { /* A stored k x m: dA = op(B) dC^T */
      bop.trans = tb;
      j.m = s.k, j.n = s.m, j.k = s.n, j.a = bop, j.b = dct;
    }
    run_job(&j, batch_count(s.abat, s.nb));
  }
  if (need[1]) {
    dx[1] = sg__new(SG_F32, b->shape, b->rank);
    if (!dx[1]) return sg_last_status();
    gemm_operand aop = operand(sg__f32(a), s.abat, s.nb, s.a_rows, s.a_cols, !ta);
    gemm_job j = {.nb = s.nb, .obat = s.obat, .cbat = s.bbat, .c = sg__f32(dx[1])};
    if (!tb) { /* dB = op(A)^T dC */
      j.m = s.k, j.n = s.n, j.k = s.m, j.a = aop, j.b = dc;
    } else { /* B stored n x k: dB = dC^T op(A) */
      aop.trans = ta;
      j.m = s.n, j.n = s.k, j.k = s.m, j.a = dct, j.b = aop;
    }
    run_job(&j, batch_count(s.bbat, s.nb));
  }
  return SG_OK;
}

sg_tensor *sg_matmul(sg_tensor *a, sg_tensor *b, bool transpose_a, bool transpose_b) {
  sg_op op;
  if (!sg__op_begin(&op, "matmul") || !sg__check_f32(a, "matmul", "a") ||
      !sg__check_f32(b, "matmul", "b"))
    return sg__op_fail(&op);
  char as[SG_SHAPE_STR_MAX], bs[SG_SHAPE_STR_MAX];
  sg__shape_str(a->shape, a->rank, as, sizeof as);
  sg__shape_str(b->shape, b->rank, bs, sizeof bs);
  if (a->rank < 2 || b->rank < 2) {
    sg__error(SG_ERR_SHAPE, "matmul", "both operands need rank >= 2 (a is %s, b is %s)", as, bs);
    return sg__op_fail(&op);
  }
  mm_shapes s;
  int bad = mm_shapes_of(a->shape, a->rank, b->shape, b->rank, transpose_a, transpose_b, &s);
  if (bad != MM_OK) {
    const char *what =
        bad == MM_INNER ? "inner dimensions differ" : "batch dimensions do not broadcast";
    sg__error(SG_ERR_SHAPE, "matmul", "%s (a is %s%s, b is %s%s)", what, as,
              transpose_a ? " transposed" : "", bs, transpose_b ? " transposed" : "");
    return sg__op_fail(&op);
  }
  int64_t oshape[SG_MAX_RANK];
  for (int d = 0; d < s.nb; d++) oshape[d] = s.obat[d];
  oshape[s.nb] = s.m;
  oshape[s.nb + 1] = s.n;
  sg_tensor *y = sg__new(SG_F32, oshape, s.nb + 2);
  if (!y) return sg__op_fail(&op);
  gemm_job j = {
      .nb = s.nb, .obat = s.obat, .cbat = s.obat, .m = s.m, .n = s.n, .k = s.k, .c = sg__f32(y)};
  j.a = operand(sg__f32(a), s.abat, s.nb, s.a_rows, s.a_cols, transpose_a);
  j.b = operand(sg__f32(b), s.bbat, s.nb, s.b_rows, s.b_cols, transpose_b);
  run_job(&j, batch_count(s.obat, s.nb));

  sg_tensor *inputs[2] = {a, b};
  sg_node *node = sg__record(&op, matmul_grad, inputs, 2, y);
  if (op.record) {
    if (!node || !sg__save(node, a) || !sg__save(node, b)) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    node->iparam[0] = transpose_a;
    node->iparam[1] = transpose_b;
  }
  return sg__op_end(&op, y);
}
