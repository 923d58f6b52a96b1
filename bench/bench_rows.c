/* Kernel benchmarks over [rows, cols] (cols = BENCH_COLS): the reductions of backend.h's list
 * over the last axis and over the first ("reduce_sum.axis0"), forward and backward, argmax and
 * argmin, softmax and log_softmax and their backward (over the last axis, and over the first:
 * "softmax.axis0"), the fused softmax cross-entropy and batch norm (cols being the channels).
 * Named "<slot>/<backend>/<rows>x<cols>/threads:<T>". Work is split as the engine splits the op
 * (engine/op_reduce.c, op_nn.c, op_norm.c): blocks of rows, or for a reduction over the first axis,
 * blocks of the reduced axis into partials that one more call reduces in order. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "roofline.h"

typedef enum rw_kind {
  RW_REDUCE,       /* over axis 1 */
  RW_REDUCE0,      /* over axis 0 */
  RW_REDUCE_BWD,   /* of a reduction over axis 1 */
  RW_REDUCE0_BWD,  /* of a reduction over axis 0 */
  RW_ARG,          /* argmax, argmin over axis 1 */
  RW_SOFTMAX,      /* softmax, log_softmax over axis 1 */
  RW_SOFTMAX0,     /* softmax, log_softmax over axis 0: one call, as the engine makes it */
  RW_SOFTMAX0_BWD, /* their backward over axis 0, one call */
  RW_SOFTMAX_BWD,
  RW_CE, /* softmax cross-entropy over rows */
  RW_CE_BWD,
  RW_BN, /* batch norm over [rows, channels]: y = x a + b per channel */
  RW_BN_BWD
} rw_kind;

typedef struct rw_op {
  const char *name;       /* benchmark op name: "reduce_sum.axis0" */
  const char *flops_slot; /* bench_op_flops key: "reduce_sum" */
  rw_kind kind;
  size_t offset, fwd_offset; /* the slot, and for a backward its forward */
} rw_op;

#define REDUCE_(name, doc)                                                                         \
  {"reduce_" #name, "reduce_" #name, RW_REDUCE, offsetof(sg_backend, reduce_##name), 0},           \
      {"reduce_" #name ".axis0", "reduce_" #name, RW_REDUCE0, offsetof(sg_backend, reduce_##name), \
       0},                                                                                         \
      {"reduce_" #name "_backward", "reduce_" #name "_backward", RW_REDUCE_BWD,                    \
       offsetof(sg_backend, reduce_##name##_backward), offsetof(sg_backend, reduce_##name)},       \
      {"reduce_" #name "_backward.axis0", "reduce_" #name "_backward", RW_REDUCE0_BWD,             \
       offsetof(sg_backend, reduce_##name##_backward), offsetof(sg_backend, reduce_##name)},

#define SLOT_(name, kind, fwd)                                                                     \
  { #name, #name, kind, offsetof(sg_backend, name), fwd }
static const rw_op k_ops[] = {
    SG_FOR_EACH_REDUCE_OP(REDUCE_) SLOT_(argmax, RW_ARG, 0),
    SLOT_(argmin, RW_ARG, 0),
    SLOT_(softmax, RW_SOFTMAX, 0),
    SLOT_(softmax_backward, RW_SOFTMAX_BWD, offsetof(sg_backend, softmax)),
    SLOT_(log_softmax, RW_SOFTMAX, 0),
    SLOT_(log_softmax_backward, RW_SOFTMAX_BWD, offsetof(sg_backend, log_softmax)),
    {"softmax.axis0", "softmax", RW_SOFTMAX0, offsetof(sg_backend, softmax), 0},
    {"log_softmax.axis0", "log_softmax", RW_SOFTMAX0, offsetof(sg_backend, log_softmax), 0},
    {"softmax_backward.axis0", "softmax_backward", RW_SOFTMAX0_BWD,
     offsetof(sg_backend, softmax_backward), offsetof(sg_backend, softmax)},
    {"log_softmax_backward.axis0", "log_softmax_backward", RW_SOFTMAX0_BWD,
     offsetof(sg_backend, log_softmax_backward), offsetof(sg_backend, log_softmax)},
    SLOT_(softmax_cross_entropy, RW_CE, 0),
    SLOT_(softmax_cross_entropy_backward, RW_CE_BWD, offsetof(sg_backend, softmax_cross_entropy)),
    SLOT_(batch_norm, RW_BN, 0),
    SLOT_(batch_norm_backward, RW_BN_BWD, 0),
};
#define N_OPS (sizeof k_ops / sizeof k_ops[0])

typedef union rw_fn {
  sg_reduce_kernel reduce;
  sg_reduce_backward_kernel reduce_bwd;
  sg_arg_reduce_kernel arg;
  sg_softmax_kernel softmax;
  sg_softmax_backward_kernel softmax_bwd;
  void (*ce)(const float *, const float *, size_t, size_t, float *, float *);
  void (*ce_bwd)(const float *, const float *, const float *, size_t, size_t, float *, float *);
  void (*bn)(const float *, size_t, size_t, const float *, const float *, float *);
  void (*bn_bwd)(const float *, const float *, size_t, size_t, const float *, const float *,
                 float *, float *, float *);
} rw_fn;

static rw_fn slot_fn(const sg_backend *be, size_t offset) {
  rw_fn f;
  memcpy(&f, (const char *)be + offset, sizeof f.reduce);
  return f;
}

typedef struct rw_case {
  const rw_op *op;
  const sg_backend *be;
  int64_t rows, cols;
  int threads;
} rw_case;

typedef struct rw_job {
  rw_kind kind;
  rw_fn f;
  int64_t rows, cols, rc; /* rc: rows per block of the reduced axis (axis 0 cases) */
  const float *x, *dy, *y, *labels;
  const float *a, *b; /* batch norm: per-channel scale and shift (b is also the mean) */
  float *out, *part;
  int32_t *idx;
} rw_job;

static void rw_range(int64_t lo, int64_t hi, void *ctx) {
  const rw_job *j = ctx;
  size_t n = (size_t)(hi - lo), cols = (size_t)j->cols, o = (size_t)lo;
  switch (j->kind) {
  case RW_REDUCE:
    j->f.reduce(j->x + o * cols, n, cols, 1, j->out + o);
    break;
  case RW_REDUCE0: /* lo..hi are blocks of rc rows, each reduced to a partial row */
  case RW_REDUCE0_BWD:
    for (int64_t blk = lo; blk < hi; blk++) {
      int64_t r0 = blk * j->rc, r1 = r0 + j->rc < j->rows ? r0 + j->rc : j->rows;
      size_t off = (size_t)r0 * cols;
      if (j->kind == RW_REDUCE0)
        j->f.reduce(j->x + off, 1, (size_t)(r1 - r0), cols, j->part + (size_t)blk * cols);
      else
        j->f.reduce_bwd(j->dy, j->x + off, j->y, 1, (size_t)(r1 - r0), cols, j->out + off);
    }
    break;
  case RW_REDUCE_BWD:
    j->f.reduce_bwd(j->dy + o, j->x + o * cols, j->y + o, n, cols, 1, j->out + o * cols);
    break;
  case RW_ARG:
    j->f.arg(j->x + o * cols, n, cols, 1, j->idx + o);
    break;
  case RW_SOFTMAX:
    j->f.softmax(j->x + o * cols, n, cols, 1, j->out + o * cols);
    break;
  case RW_SOFTMAX0: /* one call over the rows lo..hi (the run: all of them, as the engine) */
    j->f.softmax(j->x + o * cols, 1, n, cols, j->out + o * cols);
    break;
  case RW_SOFTMAX0_BWD:
    j->f.softmax_bwd(j->dy + o * cols, j->y + o * cols, 1, n, cols, j->out + o * cols);
    break;
  case RW_SOFTMAX_BWD:
    j->f.softmax_bwd(j->dy + o * cols, j->y + o * cols, n, cols, 1, j->out + o * cols);
    break;
  case RW_CE:
    j->f.ce(j->labels + o * cols, j->x + o * cols, n, cols, j->part + o, j->out + o * cols);
    break;
  case RW_CE_BWD:
    j->f.ce_bwd(j->dy + o, j->labels + o * cols, j->y + o * cols, n, cols, NULL, j->out + o * cols);
    break;
  case RW_BN:
    j->f.bn(j->x + o * cols, n, cols, j->a, j->b, j->out + o * cols);
    break;
  case RW_BN_BWD: { /* each chunk sums into its own pair of per-channel rows, as the engine */
    float *s = j->part + (size_t)(lo / bench_rows_grain(j->cols)) * 2 * cols;
    memset(s, 0, 2 * cols * sizeof(float));
    j->f.bn_bwd(j->dy + o * cols, j->x + o * cols, n, cols, j->a, j->b, j->out + o * cols, s,
                s + cols);
    break;
  }
  }
}

/* The engine's split of a reduction over axis 0 (engine/op_reduce.c run_reduce, run_backward):
   blocks of *rc rows; 1 block means one call on the whole. */
static int64_t axis0_blocks(const rw_op *op, int64_t rows, int64_t cols, int64_t *rc) {
  *rc = rows;
  if (rows * cols <= BENCH_GRAIN || rows < 2) return 1;
  *rc = (BENCH_GRAIN + cols - 1) / cols;
  if (op->kind == RW_REDUCE0) {
    int64_t min_rc = (rows + 15) / 16; /* at most 16 partials */
    if (*rc < min_rc) *rc = min_rc;
  }
  int64_t blocks = bench_chunks(rows, *rc);
  if (blocks < 2) *rc = rows;
  return blocks < 2 ? 1 : blocks;
}

/* The engine's rows per chunk over rows (engine/op_nn.c rows_grain_streamed): the softmax
   kernels stream y or dx and the cross-entropy kernels log_probs or dlogits, so past the
   last-level cache (12 bytes an element: dy, y, dx; labels, logits, log_probs; labels,
   log_probs, dlogits; 8 for softmax's and log_softmax's x and y) they get the engine's
   streamed chunks (bench_rows_stream_grain); everything else rows_grain's. */
static int64_t rows_per_chunk(const rw_op *op, int64_t rows, int64_t cols) {
  bool streams = op->kind == RW_SOFTMAX_BWD || op->kind == RW_CE || op->kind == RW_CE_BWD;
  int64_t g = op->kind == RW_SOFTMAX ? bench_rows_stream_grain(rows, cols, 8)
              : streams              ? bench_rows_stream_grain(rows, cols, 12)
                                     : 0;
  return g ? g : bench_rows_grain(cols);
}

/* The softmax over axis 0 of [rows, cols]: outer is 1, so the engine makes one call. */
static bool softmax_axis0(rw_kind k) { return k == RW_SOFTMAX0 || k == RW_SOFTMAX0_BWD; }

static int64_t chunks_of(const rw_op *op, int64_t rows, int64_t cols) {
  int64_t rc;
  if (softmax_axis0(op->kind)) return 1;
  if (op->kind == RW_REDUCE0 || op->kind == RW_REDUCE0_BWD)
    return axis0_blocks(op, rows, cols, &rc);
  return bench_chunks(rows, rows_per_chunk(op, rows, cols));
}

/* Bytes a call reads and writes (every buffer distinct: the footprint is their sum). */
static void bytes_of(const rw_op *op, double rows, double cols, double *read, double *written) {
  double n = rows * cols;
  bool sum = strncmp(op->name, "reduce_sum", 10) == 0; /* its backward reads neither x nor y */
  *read = 4 * n, *written = 4 * n;
  switch (op->kind) {
  case RW_REDUCE:
  case RW_ARG:
    *written = 4 * rows;
    break;
  case RW_REDUCE0:
    *written = 4 * cols;
    break;
  case RW_REDUCE_BWD: /* dy, and x and y unless a sum's; dx */
    *read = 4 * (rows + (sum ? 0 : n + rows));
    break;
  case RW_REDUCE0_BWD:
    *read = 4 * (cols + (sum ? 0 : n + cols));
    break;
  case RW_SOFTMAX:
  case RW_SOFTMAX0:
  case RW_BN:
    break;
  case RW_SOFTMAX_BWD:
  case RW_SOFTMAX0_BWD:
  case RW_BN_BWD: /* dy and y (or x) in, dx out */
    *read = 8 * n;
    break;
  case RW_CE: /* labels and logits in; log-probs and the loss out */
    *read = 8 * n, *written = 4 * n + 4 * rows;
    break;
  case RW_CE_BWD: /* dy, labels, log-probs in; dlogits out */
    *read = 8 * n + 4 * rows;
    break;
  }
}

/* j's kernel and buffers for [rows, cols] of op on be, as the row runs them. */
static void rw_setup(const rw_op *op, const sg_backend *be, size_t rows, size_t cols, rw_job *j) {
  size_t n = rows * cols;
  *j = (rw_job){
      .kind = op->kind, .f = slot_fn(be, op->offset), .rows = (int64_t)rows, .cols = (int64_t)cols};
  j->x = bench_buffer(0, n, -4, 4);
  j->dy = bench_buffer(1, n, -1, 1);
  float *y = bench_output(2, n);
  j->y = y;
  j->out = bench_output(3, n);
  j->part = bench_output(4, n + 2 * cols); /* batch norm: 2 rows of sums per chunk */
  j->idx = (int32_t *)j->out;
  if (op->kind == RW_CE || op->kind == RW_CE_BWD) j->labels = bench_buffer_labels(5, rows, cols);
  j->a = bench_buffer(6, cols, 0.5f, 1.5f);
  j->b = bench_buffer(7, cols, -1, 1);
  /* A backward reads its forward's output: computed here with the same backend. */
  rw_fn fwd = slot_fn(be, op->fwd_offset ? op->fwd_offset : op->offset);
  if (op->kind == RW_REDUCE_BWD) fwd.reduce(j->x, rows, cols, 1, y);
  if (op->kind == RW_REDUCE0_BWD) fwd.reduce(j->x, 1, rows, cols, y);
  if (op->kind == RW_SOFTMAX_BWD) fwd.softmax(j->x, rows, cols, 1, y);
  if (op->kind == RW_SOFTMAX0_BWD) fwd.softmax(j->x, 1, rows, cols, y);
  if (op->kind == RW_CE_BWD) fwd.ce(j->labels, j->x, rows, cols, j->part, y);
}

/* Seconds per element of j's kernel over its first rows (about BENCH_RATE_N elements), in
   cache. A reduction over axis 0 is timed over axis 1: the same arithmetic per element. */
static double rw_rate(const rw_job *j) {
  rw_job r = *j;
  if (r.kind == RW_REDUCE0) r.kind = RW_REDUCE;
  if (r.kind == RW_REDUCE0_BWD) r.kind = RW_REDUCE_BWD;
  if (r.kind == RW_SOFTMAX0) r.kind = RW_SOFTMAX;
  if (r.kind == RW_SOFTMAX0_BWD) r.kind = RW_SOFTMAX_BWD;
  int64_t m = BENCH_RATE_N / r.cols;
  m = m < 1 ? 1 : m > r.rows ? r.rows : m;
  return m > 0 ? bench_kernel_seconds(rw_range, m, &r) / (double)(m * r.cols) : 0;
}

typedef struct rw_rate_entry {
  const sg_backend *be;
  const rw_op *op;
  double rate;
} rw_rate_entry;

double bench_rows_rate(const sg_backend *be, const char *slot) {
  static rw_rate_entry cache[64];
  static int cached;
  const rw_op *op = NULL;
  for (size_t o = 0; o < N_OPS && !op; o++)
    if (strcmp(k_ops[o].name, slot) == 0) op = &k_ops[o];
  if (!op) return 0;
  for (int i = 0; i < cached; i++)
    if (cache[i].be == be && cache[i].op == op) return cache[i].rate;
  size_t cols = BENCH_COLS, rows = (BENCH_RATE_N + cols - 1) / cols;
  rw_job j;
  rw_setup(op, be, rows, cols, &j);
  double rate = rw_rate(&j);
  if (cached < 64) cache[cached++] = (rw_rate_entry){be, op, rate};
  return rate;
}

static void run_rw(bench_state *st, void *arg) {
  const rw_case *c = arg;
  const rw_op *op = c->op;
  size_t rows = (size_t)c->rows, cols = (size_t)c->cols, n = rows * cols;
  rw_job j;
  rw_setup(op, c->be, rows, cols, &j);
  /* A library call's rate, before the row and after it, the faster counting (as in
     bench_elementwise.c). */
  bool opaque = bench_kernel_opaque(op->flops_slot, c->be->name);
  double rate = opaque ? rw_rate(&j) : 0;

  int64_t blocks = 1;
  if (op->kind == RW_REDUCE0 || op->kind == RW_REDUCE0_BWD)
    blocks = axis0_blocks(op, c->rows, c->cols, &j.rc);
  while (bench_keep_running(st)) {
    if (op->kind == RW_REDUCE0 && blocks == 1) {
      j.f.reduce(j.x, 1, rows, cols, j.out);
    } else if (op->kind == RW_REDUCE0) {
      bench_parallel_for(blocks, 1, c->threads, rw_range, &j);
      j.f.reduce(j.part, 1, (size_t)blocks, cols, j.out); /* the partials, in order */
    } else if (op->kind == RW_REDUCE0_BWD) {
      bench_parallel_for(blocks, 1, c->threads, rw_range, &j);
    } else if (softmax_axis0(op->kind)) {
      rw_range(0, c->rows, &j);
    } else {
      bench_parallel_for(c->rows, rows_per_chunk(op, c->rows, c->cols), c->threads, rw_range, &j);
    }
    bench_clobber_memory();
  }
  char desc[64];
  snprintf(desc, sizeof desc, "[%zu,%zu] over axis %d", rows, cols,
           op->kind == RW_REDUCE0 || op->kind == RW_REDUCE0_BWD || softmax_axis0(op->kind) ? 0 : 1);
  double read, written;
  bytes_of(op, (double)rows, (double)cols, &read, &written);
  bench_work w = {.flops = bench_kernel_flops(op->flops_slot, c->be->name) * (double)n,
                  .kernel_s = opaque ? fmin(rate, rw_rate(&j)) * (double)n / c->threads : 0,
                  .bytes = read + written,
                  .written = written,
                  .items = (double)n,
                  .isa = roofline_isa_of(c->be->name),
                  .threads = c->threads,
                  .desc = desc};
  if (w.kernel_s > 0) w.kernel_flops = w.flops;
  bench_report(st, &w);
}

void bench_register_rows(void) {
  const sg_backend *backends[4];
  int nb = bench_backends(backends), threads[2], nt = bench_thread_counts(threads);
  for (size_t o = 0; o < N_OPS; o++) {
    for (int s = 0; s < bench_n_sizes; s++) {
      int64_t rows, cols, n = bench_sizes[s];
      bench_rows_of(n, &rows, &cols);
      char shape[32];
      snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows, (long long)cols);
      for (int t = 0; t < nt; t++) {
        if (threads[t] > 1 && chunks_of(&k_ops[o], rows, cols) < 2) continue;
        for (int b = 0; b < nb; b++) {
          rw_case *c = malloc(sizeof *c);
          if (!c) abort();
          *c = (rw_case){&k_ops[o], backends[b], rows, cols, threads[t]};
          bench_add(k_ops[o].name, backends[b]->name, shape, threads[t],
                    bench_in_default(k_ops[o].name, n), run_rw, c);
        }
      }
    }
  }
}
