/* Engine overhead through the public API, on the engine's backend: what an op costs beyond its
 * kernel. "engine.op_1elem" is a 1-element sg_add (checks, allocation, scope tracking, dispose);
 * "engine.scope" an empty sg_scope_begin/end; "engine.tape_chain10" the tape recording a chain
 * of 10 1-element ops and back-propagating through it; "engine.op_1elem.taped" the 1-element
 * sg_add with a tape open (64 per tape, each tape's begin and end shared among its 64 ops);
 * "engine.fork_join" an sg_neg just above the serial grain (two chunks: one of BENCH_GRAIN
 * elements, one of 1), whose threads:N time minus its threads:1 time is the parallel-for's
 * fork/join; "engine.omp_region" an empty OpenMP parallel region in the bench, the runtime's own
 * floor. The time column is per iteration. */
#include <simdgrad/simdgrad.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "roofline.h"

typedef enum engine_kind {
  OP_1ELEM,
  OP_1ELEM_TAPED,
  SCOPE,
  TAPE_CHAIN,
  FORK_JOIN,
  OMP_REGION
} engine_kind;

typedef struct engine_case {
  engine_kind kind;
  int threads;
} engine_case;

/* Ten ops, each depending on the one before, as a small model's forward does. */
static sg_tensor *chain10(sg_tensor *x, sg_tensor *w) {
  sg_tensor *h = sg_mul(x, w);
  h = sg_add(h, x);
  h = sg_tanh(h);
  h = sg_mul(h, w);
  h = sg_sigmoid(h);
  h = sg_sub(h, x);
  h = sg_square(h);
  h = sg_exp(h);
  h = sg_add(h, w);
  return sg_relu(h);
}

enum { TAPED_OPS = 64 };

static void run_engine(bench_state *st, void *arg) {
  const engine_case *c = arg;
  int prev_threads = sg_threads();
  sg_set_threads(c->threads);
  sg_scope_begin("bench");
  int64_t one[1] = {1}, big[1] = {BENCH_GRAIN + 1};
  sg_tensor *a = sg_fill(one, 1, 0.5f), *b = sg_fill(one, 1, 0.25f);
  sg_tensor *x = c->kind == FORK_JOIN ? sg_fill(big, 1, 1.0f) : NULL;
  const char *error = NULL;
  double ops = 1;
  switch (c->kind) {
  case OP_1ELEM:
    while (bench_keep_running(st)) {
      sg_tensor *y = sg_add(a, b);
      bench_do_not_optimize(y);
      sg_dispose(y);
    }
    break;
  case OP_1ELEM_TAPED:
    while (!error && bench_keep_running_batch(st, TAPED_OPS)) {
      sg_tensor *y = NULL, *grad;
      sg_tape_begin();
      for (int i = 0; i < TAPED_OPS; i++) {
        sg_dispose(y);
        y = sg_add(a, b);
      }
      if (sg_tape_end(y, NULL, &a, 1, &grad) != SG_OK) error = sg_last_error();
      sg_dispose(y);
      sg_dispose(grad);
    }
    break;
  case SCOPE:
    while (bench_keep_running(st)) {
      sg_scope_begin("inner");
      sg_scope_end(NULL, 0);
    }
    break;
  case TAPE_CHAIN:
    ops = 10;
    while (bench_keep_running(st)) {
      sg_scope_begin("step");
      sg_tensor *xs[2] = {a, b}, *grads[2];
      sg_tape_begin();
      if (sg_tape_end(chain10(a, b), NULL, xs, 2, grads) != SG_OK) error = sg_last_error();
      sg_scope_end(NULL, 0);
      if (error) break;
    }
    break;
  case FORK_JOIN:
    while (bench_keep_running(st)) {
      sg_tensor *y = sg_neg(x);
      bench_do_not_optimize(y);
      sg_dispose(y);
    }
    break;
  case OMP_REGION:
    while (bench_keep_running(st)) {
      int sink = 0;
#pragma omp parallel num_threads(c->threads)
      bench_do_not_optimize(&sink);
    }
    break;
  }
  if (error) bench_skip_with_error(st, error);
  sg_scope_end(NULL, 0);
  sg_set_threads(prev_threads);
  if (error) return;
  bench_work w = {.items = ops, .threads = c->threads};
  if (c->kind == FORK_JOIN) { /* neg: read and write each element */
    w.bytes = 8.0 * (BENCH_GRAIN + 1);
    w.written = 4.0 * (BENCH_GRAIN + 1);
    w.items = BENCH_GRAIN + 1;
    w.isa = roofline_isa_of(sg_backend_name());
  }
  bench_report(st, &w);
}

static void add(engine_kind kind, const char *op, const char *shape, int threads) {
  engine_case *c = malloc(sizeof *c);
  if (!c) abort();
  *c = (engine_case){kind, threads};
  bench_add(op, sg_backend_name(), shape, threads, true, run_engine, c);
}

void bench_register_engine(void) {
  int threads[2], nt = bench_thread_counts(threads);
  char grain[32];
  snprintf(grain, sizeof grain, "%lld", (long long)BENCH_GRAIN + 1);
  add(OP_1ELEM, "engine.op_1elem", "1", 1);
  add(OP_1ELEM_TAPED, "engine.op_1elem.taped", "1", 1);
  add(SCOPE, "engine.scope", "0", 1);
  add(TAPE_CHAIN, "engine.tape_chain10", "1", 1);
  for (int t = 0; t < nt; t++) add(FORK_JOIN, "engine.fork_join", grain, threads[t]);
  for (int t = 0; t < nt; t++) add(OMP_REGION, "engine.omp_region", "0", threads[t]);
}
