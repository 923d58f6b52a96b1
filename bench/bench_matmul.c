/* The gemm kernel as the engine runs a matmul of two N x N matrices: "matmul/<backend>/<N>/
 * threads:<T>" is C = A B, "matmul_backward" the two products of its gradient, dA = dC B^T and
 * dB = A^T dC. Work is cut as engine/op_matmul.c cuts it (plan_blocks; keep the two in step): a
 * product is split into at most MIN_ITEMS blocks, along its longer side, only when each has at
 * least GEMM_GRAIN_MACS multiply-adds, and the blocks run on the threads. With OpenBLAS present,
 * "matmul/openblas/<N>/threads:<T>" is cblas_sgemm on the same matrices: the table's
 * "vs openblas" column.
 *
 * What keeps the 1024 product from the FMA peak, taken apart (docs/kernels.md, "Where a
 * matmul's time goes"): "matmul.no_edges/<backend>/1008x1024" is the product with m = 1008, a
 * multiple of 24: whole 6-row (AVX-512, AVX2) or 12-row (NEON) register tiles, also when halved
 * for 2 threads, so no call meets a ragged row strip (n = 1024 is whole strips on every tile);
 * against the 1024 row's GFLOP/s it prices the edge tiles. Rows on more than one thread
 * report how evenly the work items ran: busy_pct, the items' summed time over threads x wall
 * (the rest is fork/join and waiting for the slower thread), and item_skew_pct, the slowest
 * item's time over the fastest one's, less 100. The packing's share is read with perf (the
 * command is in docs/kernels.md): its functions are the kernel's own, not a slot. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "roofline.h"

/* engine/op_matmul.c's constants */
#define MIN_BLOCK_ROWS 32
#define MIN_BLOCK_COLS 128
#define GRAIN_MACS (1 << 17)
#define MIN_ITEMS 2

typedef enum mm_kind { MM_FORWARD, MM_BACKWARD, MM_OPENBLAS, MM_NO_EDGES } mm_kind;

/* Rows of the no-edges product: a multiple of 24 (two threads' whole 6- or 12-row tiles). */
#define NO_EDGES_M 1008
/* The most work items a job is timed over (plan gives at most MIN_ITEMS). */
#define MAX_TIMED_ITEMS 8

typedef struct mm_case {
  mm_kind kind;
  const sg_backend *be; /* NULL for OpenBLAS */
  int64_t n;
  int threads;
} mm_case;

/* One product C (m x n) = op(A) op(B), cut into rblocks x cblocks blocks of rb x cb. */
typedef struct mm_job {
  const sg_backend *be;
  size_t m, n, k;
  const float *a, *b;
  size_t lda, ldb;
  bool ta, tb;
  float *c;
  size_t rb, cb, rblocks, cblocks;
  double *busy; /* NULL, or each item's summed seconds (items_of(j) <= MAX_TIMED_ITEMS) */
} mm_job;

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* engine/op_matmul.c plan_blocks for one matrix (no batch, one gemm per block). */
static void plan(mm_job *j) {
  double macs = (double)j->m * (double)j->n * (double)(j->k ? j->k : 1);
  size_t want = MIN_ITEMS;
  if (macs < (double)want * GRAIN_MACS) want = (size_t)(macs / GRAIN_MACS);
  size_t most_r = ceil_div(j->m, MIN_BLOCK_ROWS), most_c = ceil_div(j->n, MIN_BLOCK_COLS);
  size_t nr = 1, nc = 1;
  if (want > 1) {
    if (j->n > j->m || most_r == 1)
      nc = want < most_c ? want : most_c;
    else
      nr = want < most_r ? want : most_r;
  }
  j->rb = ceil_div(j->m, nr);
  j->cb = nc > 1 ? ceil_div(ceil_div(j->n, nc), 64) * 64 : j->n;
  j->rblocks = ceil_div(j->m, j->rb);
  j->cblocks = ceil_div(j->n, j->cb);
}

static void mm_range(int64_t lo, int64_t hi, void *ctx) {
  const mm_job *j = ctx;
  for (int64_t item = lo; item < hi; item++) {
    size_t i0 = (size_t)item / j->cblocks * j->rb, j0 = (size_t)item % j->cblocks * j->cb;
    size_t rows = j->m - i0 < j->rb ? j->m - i0 : j->rb;
    size_t cols = j->n - j0 < j->cb ? j->n - j0 : j->cb;
    const float *a = j->a + (j->ta ? i0 : i0 * j->lda); /* op(A)'s rows i0.. */
    const float *b = j->b + (j->tb ? j0 * j->ldb : j0); /* op(B)'s columns j0.. */
    double t0 = j->busy ? bench_now() : 0;
    j->be->gemm(rows, cols, j->k, a, j->lda, j->ta, b, j->ldb, j->tb, 0.0f, j->c + i0 * j->n + j0,
                j->n);
    if (j->busy) j->busy[item] += bench_now() - t0; /* each item runs on one thread */
  }
}

static int64_t items_of(const mm_job *j) { return (int64_t)(j->rblocks * j->cblocks); }

static int64_t grain_of(const mm_job *j) {
  double per_item = (double)j->rb * (double)j->cb * (double)(j->k ? j->k : 1);
  return per_item >= GRAIN_MACS ? 1 : (int64_t)(GRAIN_MACS / per_item);
}

static void run_job(const mm_job *j, int threads) {
  bench_parallel_for(items_of(j), grain_of(j), threads, mm_range, (void *)j);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* busy_pct and item_skew_pct (the header says what they are) from each item's summed time. */
static void report_balance(bench_state *st, const double *busy, int items, int threads) {
  double sum = 0, lo = busy[0], hi = busy[0], wall = bench_elapsed(st);
  for (int i = 0; i < items; i++) {
    sum += busy[i];
    lo = busy[i] < lo ? busy[i] : lo;
    hi = busy[i] > hi ? busy[i] : hi;
  }
  if (wall > 0) bench_counter(st, "busy_pct", 100.0 * sum / ((double)threads * wall));
  if (lo > 0) bench_counter(st, "item_skew_pct", 100.0 * (hi / lo - 1.0));
}

static void run_mm(bench_state *st, void *arg) {
  const mm_case *c = arg;
  size_t n = (size_t)c->n, nn = n * n;
  const float *a = bench_buffer(0, nn, -1, 1), *b = bench_buffer(1, nn, -1, 1);
  const float *dc = bench_buffer(2, nn, -1, 1);
  float *out = bench_output(3, nn), *out2 = bench_output(4, nn);
  size_t m = c->kind == MM_NO_EDGES ? NO_EDGES_M : n; /* rows of the forward product */
  double busy[MAX_TIMED_ITEMS] = {0};
  mm_job fwd = {c->be, m, n, n, a, b, n, n, false, false, out, 0, 0, 0, 0, NULL};
  mm_job da = {c->be, n, n, n, dc, b, n, n, false, true, out, 0, 0, 0, 0, NULL};  /* dA = dC B^T */
  mm_job db = {c->be, n, n, n, a, dc, n, n, true, false, out2, 0, 0, 0, 0, NULL}; /* dB = A^T dC */
  plan(&fwd);
  plan(&da);
  plan(&db);
  if (c->threads > 1 && items_of(&fwd) <= MAX_TIMED_ITEMS) fwd.busy = busy;
  bench_time_each_call(st);
  if (c->kind == MM_OPENBLAS) {
    bench_openblas_set_threads(c->threads);
    while (bench_keep_running(st)) bench_openblas_sgemm((int)n, a, b, out);
    /* OpenBLAS's workers spin for a while after a call: let them sleep before the next run. */
    if (c->threads > 1) sleep_ms(150);
  } else if (c->kind != MM_BACKWARD) {
    while (bench_keep_running(st)) run_job(&fwd, c->threads);
    if (fwd.busy) report_balance(st, busy, (int)items_of(&fwd), c->threads);
  } else {
    while (bench_keep_running(st)) {
      run_job(&da, c->threads);
      run_job(&db, c->threads);
    }
  }
  char desc[48];
  if (m == n)
    snprintf(desc, sizeof desc, "m=n=k=%zu", n);
  else
    snprintf(desc, sizeof desc, "m=%zu n=k=%zu", m, n);
  double products = c->kind == MM_BACKWARD ? 2 : 1, mn = (double)m * (double)n;
  bench_work w = {.flops = products * 2.0 * mn * (double)n,
                  .bytes =
                      c->kind == MM_BACKWARD ? 4.0 * 5 * (double)nn : 4.0 * (2 * mn + (double)nn),
                  .written = 4.0 * (c->kind == MM_BACKWARD ? 2 * (double)nn : mn),
                  .items = products * mn,
                  .isa = roofline_isa_of(c->be ? c->be->name : "openblas"),
                  .threads = c->threads,
                  .desc = desc};
  bench_report(st, &w);
}

static void add(mm_kind kind, const sg_backend *be, int64_t n, int threads) {
  mm_case *c = malloc(sizeof *c);
  if (!c) abort();
  *c = (mm_case){kind, be, n, threads};
  const char *op = kind == MM_BACKWARD   ? "matmul_backward"
                   : kind == MM_NO_EDGES ? "matmul.no_edges"
                                         : "matmul";
  char shape[32];
  if (kind == MM_NO_EDGES)
    snprintf(shape, sizeof shape, "%dx%lld", NO_EDGES_M, (long long)n);
  else
    snprintf(shape, sizeof shape, "%lld", (long long)n);
  bench_add(op, be ? be->name : "openblas", shape, threads, bench_in_default(op, n), run_mm, c);
}

void bench_register_matmul(void) {
  const sg_backend *backends[4];
  int nb = bench_backends(backends), threads[2], nt = bench_thread_counts(threads);
  bool openblas = bench_openblas_load();
  for (int kind = MM_FORWARD; kind <= MM_BACKWARD; kind++) {
    for (int s = 0; s < bench_n_matmul_sizes; s++) {
      int64_t n = bench_matmul_sizes[s];
      mm_job probe = {.m = (size_t)n, .n = (size_t)n, .k = (size_t)n};
      plan(&probe);
      for (int t = 0; t < nt; t++) {
        if (threads[t] > 1 && bench_chunks(items_of(&probe), grain_of(&probe)) < 2) continue;
        for (int b = 0; b < nb; b++) {
          add((mm_kind)kind, backends[b], n, threads[t]);
          if (b == 0 && kind == MM_FORWARD && openblas) add(MM_OPENBLAS, NULL, n, threads[t]);
        }
      }
    }
  }
  /* The 1024 product without edge tiles, beside it in --suite=all (the SIMD backends). */
  for (int t = 0; t < nt; t++)
    for (int b = 1; b < nb; b++) add(MM_NO_EDGES, backends[b], 1024, threads[t]);
}
