/* Embedding simdgrad in a host framework: the host's threads (OpenMP regions, a host pool lent
 * through sg_set_parallel_for, the per-thread count, the environment) and the caller's FP mode.
 * Thread counts are observed, never timed: the engine's test hook (sg__set_chunk_hook) runs on
 * the thread that runs each chunk, and a host pool counts what it is asked to run. */
#define _POSIX_C_SOURCE 200809L /* pthread barriers, readlink */
#include <limits.h>
#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/cpu.h"
#include "engine/engine.h"
#include "support.h"

/* ---- Observing who runs the chunks ---------------------------------------------------------- */

#define MAX_SEEN 64
typedef struct seen_threads {
  pthread_mutex_t lock;
  pthread_t ids[MAX_SEEN];
  int n_ids;
  atomic_int chunks;    /* chunks run, every thread */
  atomic_int max_level; /* deepest omp_get_level() a chunk ran at */
} seen_threads;

static seen_threads g_seen = {.lock = PTHREAD_MUTEX_INITIALIZER};
static _Thread_local int tls_chunks; /* chunks this thread ran */

static void on_chunk(void *ctx) {
  seen_threads *s = ctx;
  tls_chunks++;
  atomic_fetch_add(&s->chunks, 1);
  int level = omp_get_level(), prev = atomic_load(&s->max_level);
  while (level > prev && !atomic_compare_exchange_weak(&s->max_level, &prev, level)) {
  }
  pthread_t me = pthread_self();
  pthread_mutex_lock(&s->lock);
  bool known = false;
  for (int i = 0; i < s->n_ids; i++) known |= pthread_equal(s->ids[i], me) != 0;
  if (!known && s->n_ids < MAX_SEEN) s->ids[s->n_ids++] = me;
  pthread_mutex_unlock(&s->lock);
}

static void watch(void) {
  pthread_mutex_lock(&g_seen.lock);
  g_seen.n_ids = 0;
  pthread_mutex_unlock(&g_seen.lock);
  atomic_store(&g_seen.chunks, 0);
  atomic_store(&g_seen.max_level, 0);
  sg__set_chunk_hook(on_chunk, &g_seen);
}

static int distinct_threads(void) {
  pthread_mutex_lock(&g_seen.lock);
  int n = g_seen.n_ids;
  pthread_mutex_unlock(&g_seen.lock);
  return n;
}

/* 2^20 floats: 16 chunks of the elementwise grain, enough for every path to split. */
#define N_BIG (1 << 20)

static sg_tensor *big_input(uint64_t seed) {
  const int64_t n = N_BIG;
  return sg_random_uniform(&n, 1, -2.0f, 2.0f, seed);
}

static bool same_bits(const sg_tensor *a, const sg_tensor *b) {
  return sg_numel(a) == sg_numel(b) &&
         memcmp(sg_data_f32(a), sg_data_f32(b), (size_t)sg_numel(a) * sizeof(float)) == 0;
}

/* The chunks one sg_exp of x takes, counted on one thread. */
static int chunks_of_exp(sg_tensor *x) {
  int saved = sg_threads();
  sg_set_threads(1);
  watch();
  sg_dispose(sg_exp(x));
  sg__set_chunk_hook(NULL, NULL);
  sg_set_threads(saved);
  return atomic_load(&g_seen.chunks);
}

/* ---- How finely an op is split ------------------------------------------------------------- */

/* An op of x for chunks_of: unary(x), binary(x, b) or where(c, x, b). */
typedef struct taped_op {
  sg_tensor *(*unary)(sg_tensor *);
  sg_tensor *(*binary)(sg_tensor *, sg_tensor *);
  sg_tensor *c, *b;
} taped_op;

/* Chunks the forward op(x) takes, and then its backward to x through the tape with a given dy
   (a dy of NULL would add the fill of its uniform blocks). */
static void chunks_of(const taped_op *op, sg_tensor *x, int *fwd, int *bwd) {
  sg_tensor *dy = sg_random_uniform(sg_shape(x), sg_rank(x), -1.0f, 1.0f, 6);
  watch();
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = op->c        ? sg_where(op->c, x, op->b)
                 : op->binary ? op->binary(x, op->b)
                              : op->unary(x),
            *dx = NULL;
  *fwd = atomic_load(&g_seen.chunks);
  atomic_store(&g_seen.chunks, 0);
  cr_assert_eq(sg_tape_end(y, dy, &x, 1, &dx), SG_OK, "%s", sg_last_error());
  *bwd = atomic_load(&g_seen.chunks);
  sg__set_chunk_hook(NULL, NULL);
  sg_dispose(y);
  sg_dispose(dx);
  sg_dispose(dy);
}
static void chunks_of_unary(sg_tensor *(*op)(sg_tensor *), sg_tensor *x, int *fwd, int *bwd) {
  const taped_op t = {.unary = op};
  chunks_of(&t, x, fwd, bwd);
}

/* op's forward and backward passes over x ran in want_fwd and want_bwd chunks (when: the case,
   for the message). */
static void expect_unary_chunks(sg_tensor *(*op)(sg_tensor *), const char *name, sg_tensor *x,
                                int want_fwd, int want_bwd, const char *when) {
  int fwd, bwd;
  chunks_of_unary(op, x, &fwd, &bwd);
  cr_assert_eq(fwd, want_fwd, "%s %s ran in %d chunks", name, when, fwd);
  cr_assert_eq(bwd, want_bwd, "%s's backward %s ran in %d chunks", name, when, bwd);
}

/* The costly kernels of engine/unary_cost.h are split finer than cheap elementwise work, so
   that 2^15 elements of tanh take both cores: two chunks there, where relu (and tanh's own
   backward, a multiply-add) keeps one up to 2^16. gelu's backward is costly too. */
Test(host_threads, costly_unary_kernels_split_finer) {
  const int64_t n = 1 << 15;
  sg_tensor *x = sg_random_uniform(&n, 1, -2.0f, 2.0f, 5);
  expect_unary_chunks(sg_tanh, "tanh", x, 2, 1, "on 2^15");
  expect_unary_chunks(sg_gelu, "gelu", x, 2, 2, "on 2^15");
  expect_unary_chunks(sg_relu, "relu", x, 1, 1, "on 2^15");
  sg_dispose(x);
}

static sg_tensor *softmax_rows(sg_tensor *x) { return sg_softmax(x, 1); }
static sg_tensor *log_softmax_rows(sg_tensor *x) { return sg_log_softmax(x, 1); }

/* Chunks of softmax_cross_entropy(labels, logits) and then of its backward to the logits
   alone (n_xs 1) or to both (2). */
static void chunks_of_ce(sg_tensor *labels, sg_tensor *logits, int n_xs, int *fwd, int *bwd) {
  sg_tensor *dy = sg_scalar(0.5f), *xs[2] = {logits, labels}, *dx[2] = {NULL, NULL};
  watch();
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_softmax_cross_entropy(labels, logits);
  *fwd = atomic_load(&g_seen.chunks);
  atomic_store(&g_seen.chunks, 0);
  cr_assert_eq(sg_tape_end(y, dy, xs, n_xs, dx), SG_OK, "%s", sg_last_error());
  *bwd = atomic_load(&g_seen.chunks);
  sg__set_chunk_hook(NULL, NULL);
  sg_dispose(y);
  sg_dispose(dx[0]);
  sg_dispose(dx[1]);
  sg_dispose(dy);
}

/* Chunks of the passes that stream since the fourteenth landing: mul's gradient to a (dy, a, b,
   da), where (a byte of condition and three floats) and its gradient to a (dy, the condition,
   da), softmax over rows of 1024 (x, y) and its gradient (dy, y, dx); and since the fifteenth
   softmax_cross_entropy over the same rows (labels, logits, log_probs) and its gradient to the
   logits (labels, log_probs, dlogits) and to both (and dlabels). */
typedef struct stream_chunks {
  int mul_bwd, where_fwd, where_bwd, softmax_fwd, softmax_bwd, ce_fwd, ce_bwd_logits, ce_bwd;
} stream_chunks;
static stream_chunks chunks_of_streamed(sg_tensor *x, sg_tensor *x2, sg_tensor *c, sg_tensor *m,
                                        sg_tensor *m2) {
  stream_chunks k;
  int unused;
  const taped_op mul = {.binary = sg_mul, .b = x2}, where = {.c = c, .b = x2};
  chunks_of(&mul, x, &unused, &k.mul_bwd);
  chunks_of(&where, x, &k.where_fwd, &k.where_bwd);
  chunks_of_unary(softmax_rows, m, &k.softmax_fwd, &k.softmax_bwd);
  chunks_of_ce(m2, m, 1, &k.ce_fwd, &k.ce_bwd_logits);
  chunks_of_ce(m2, m, 2, &unused, &k.ce_bwd);
  return k;
}

/* A flat pass streams its output (chunks of 2^21, which the kernels write with non-temporal
   stores) only where its footprint outgrows the last-level cache; one the cache holds runs in
   the usual grain and stores normally. Judged against a set cache size, whatever this CPU's. */
Test(host_threads, large_passes_stream_only_past_the_last_level_cache) {
  const size_t llc = sg__llc_bytes();
  const int64_t n = 1 << 22; /* 16 MiB a tensor */
  sg_tensor *x = sg_random_uniform(&n, 1, -2.0f, 2.0f, 7);
  int fwd, bwd;
  sg__set_llc_bytes((size_t)32 << 20);
  chunks_of_unary(sg_relu, x, &fwd, &bwd); /* 32 MiB forward, 48 MiB backward (dy, x, dx) */
  cr_assert_eq(fwd, 64, "relu of 2^22 in a 32 MiB cache ran in %d chunks", fwd);
  cr_assert_eq(bwd, 2, "relu's backward on 2^22 past a 32 MiB cache ran in %d chunks", bwd);
  chunks_of_unary(sg_tanh, x, &fwd, &bwd);
  cr_assert_eq(fwd, 256, "tanh of 2^22 in a 32 MiB cache ran in %d chunks", fwd);
  watch();
  sg_dispose(sg_add(x, x)); /* 48 MiB */
  sg__set_chunk_hook(NULL, NULL);
  cr_assert_eq(atomic_load(&g_seen.chunks), 2, "add of 2^22 ran in %d chunks",
               atomic_load(&g_seen.chunks));
  /* The passes streamed since the fourteenth landing, under four cache sizes; 40 and 50 MiB
     tell their byte counts apart (a where counted at 12 bytes, 48 MiB, would fit 50). */
  sg_tensor *c = sg_greater(x, x), *x2 = sg_random_uniform(&n, 1, -2.0f, 2.0f, 8);
  const int64_t rows_shape[2] = {4096, 1024};
  sg_tensor *m = sg_random_uniform(rows_shape, 2, -2.0f, 2.0f, 9);
  sg_tensor *m2 = sg_random_uniform(rows_shape, 2, 0.0f, 1.0f, 10);
  static const struct {
    size_t llc_mib;
    stream_chunks want;
  } caches[] = {{32, {2, 2, 2, 64, 2, 2, 2, 2}},
                {40, {2, 2, 64, 64, 2, 2, 2, 2}},
                {50, {2, 2, 64, 64, 64, 64, 64, 2}},
                {1024, {64, 64, 64, 64, 64, 64, 64, 64}}};
  for (size_t k = 0; k < sizeof caches / sizeof caches[0]; k++) {
    sg__set_llc_bytes(caches[k].llc_mib << 20);
    stream_chunks got = chunks_of_streamed(x, x2, c, m, m2), want = caches[k].want;
    cr_assert_eq(got.mul_bwd, want.mul_bwd,
                 "mul's gradient to a (64 MiB), %zu MiB cache: %d chunks", caches[k].llc_mib,
                 got.mul_bwd);
    cr_assert_eq(got.where_fwd, want.where_fwd, "where (52 MiB), %zu MiB cache: %d chunks",
                 caches[k].llc_mib, got.where_fwd);
    cr_assert_eq(got.where_bwd, want.where_bwd,
                 "where's gradient to a (36 MiB), %zu MiB cache: %d chunks", caches[k].llc_mib,
                 got.where_bwd);
    cr_assert_eq(got.softmax_fwd, want.softmax_fwd,
                 "softmax of [4096, 1024] (32 MiB), %zu MiB cache: %d chunks", caches[k].llc_mib,
                 got.softmax_fwd);
    cr_assert_eq(got.softmax_bwd, want.softmax_bwd,
                 "softmax's gradient (48 MiB), %zu MiB cache: %d chunks", caches[k].llc_mib,
                 got.softmax_bwd);
    cr_assert_eq(got.ce_fwd, want.ce_fwd,
                 "softmax_cross_entropy of [4096, 1024] (48 MiB), %zu MiB cache: %d chunks",
                 caches[k].llc_mib, got.ce_fwd);
    cr_assert_eq(
        got.ce_bwd_logits, want.ce_bwd_logits,
        "softmax_cross_entropy's gradient to the logits (48 MiB), %zu MiB cache: %d chunks",
        caches[k].llc_mib, got.ce_bwd_logits);
    cr_assert_eq(got.ce_bwd, want.ce_bwd,
                 "softmax_cross_entropy's gradient to both (64 MiB), %zu MiB cache: %d chunks",
                 caches[k].llc_mib, got.ce_bwd);
  }
  /* softmax and log_softmax stream y since the twenty-seventh landing (x and y: 32 MiB). */
  sg__set_llc_bytes((size_t)16 << 20);
  expect_unary_chunks(log_softmax_rows, "log_softmax of [4096, 1024]", m, 2, 2,
                      "past a 16 MiB cache");
  expect_unary_chunks(softmax_rows, "softmax of [4096, 1024]", m, 2, 2, "past a 16 MiB cache");
  sg__set_llc_bytes((size_t)1 << 30);
  expect_unary_chunks(log_softmax_rows, "log_softmax of [4096, 1024]", m, 64, 64,
                      "in a 1 GiB cache");
  sg_dispose(m2);
  sg_dispose(m);
  sg_dispose(c);
  sg_dispose(x2);
  sg__set_llc_bytes((size_t)1 << 30);
  chunks_of_unary(sg_relu, x, &fwd, &bwd);
  cr_assert_eq(bwd, 64, "relu's backward on 2^22 in a 1 GiB cache ran in %d chunks", bwd);
  sg__set_llc_bytes(0); /* unknown: streamed from 2^22 elements, as before the cache was read */
  chunks_of_unary(sg_relu, x, &fwd, &bwd);
  cr_assert_eq(fwd, 2, "relu of 2^22 with no known cache ran in %d chunks", fwd);
  chunks_of_unary(sg_tanh, x, &fwd, &bwd);
  cr_assert_eq(fwd, 2, "tanh of 2^22 with no known cache ran in %d chunks", fwd);
  cr_assert_eq(bwd, 2, "tanh's backward on 2^22 with no known cache ran in %d chunks", bwd);
  /* The costliest kernels stream past the cache too (their streamed loops prefetch), and in it
     keep the costly grain, 2^14. */
  expect_unary_chunks(sg_gelu, "gelu", x, 2, 2, "on 2^22 with no known cache");
  expect_unary_chunks(sg_log, "log", x, 2, 2, "on 2^22 with no known cache");
  sg__set_llc_bytes((size_t)1 << 30);
  expect_unary_chunks(sg_gelu, "gelu", x, 256, 256, "on 2^22 in a 1 GiB cache");
  expect_unary_chunks(sg_log, "log", x, 256, 64, "on 2^22 in a 1 GiB cache");
  sg__set_llc_bytes(0);
  /* Kernels that never stream keep the usual grain at any size. */
  watch();
  sg_dispose(sg_leaky_relu(x, 0.1f));
  sg_dispose(sg_fill(&n, 1, 2.0f));
  sg__set_chunk_hook(NULL, NULL);
  cr_assert_eq(atomic_load(&g_seen.chunks), 128, "leaky_relu and fill of 2^22 ran in %d chunks",
               atomic_load(&g_seen.chunks));
  sg__set_llc_bytes(llc);
  sg_dispose(x);
}

/* ---- Inside a host OpenMP region ------------------------------------------------------------- */

/* With nesting on, the old engine opened a team of sg_threads() per host thread (2 x 2 threads
   on a 2-thread region): every chunk of an op must now run on the thread that called it, at the
   host's level, and give the same bits as outside. */
Test(host_threads, inside_an_omp_region_the_caller_runs_alone) {
  sg_set_threads(2);
  omp_set_max_active_levels(4); /* nesting on */
  sg_tensor *x = big_input(1);
  sg_tensor *want = sg_exp(x);
  const int k = chunks_of_exp(x);
  cr_assert_gt(k, 1);
  int team = 0, threads_in[2] = {0, 0}, chunks_in[2] = {0, 0};
  bool same[2] = {false, false};
  watch();
#pragma omp parallel num_threads(2)
  {
    int me = omp_get_thread_num();
    if (me == 0) team = omp_get_num_threads();
    threads_in[me] = sg_threads();
    tls_chunks = 0;
    sg_tensor *y = sg_exp(x);
    chunks_in[me] = tls_chunks;
    same[me] = y && same_bits(y, want);
    sg_dispose(y);
  }
  sg__set_chunk_hook(NULL, NULL);
  if (team != 2) cr_skip_test("the host region got %d threads (OMP_THREAD_LIMIT?)", team);
  for (int t = 0; t < 2; t++) {
    cr_assert_eq(threads_in[t], 1, "sg_threads() in the region is %d", threads_in[t]);
    cr_assert_eq(chunks_in[t], k, "host thread %d ran %d of its op's %d chunks itself", t,
                 chunks_in[t], k);
    cr_assert(same[t], "host thread %d got other bits", t);
  }
  cr_assert_eq(distinct_threads(), 2, "chunks ran on %d threads", distinct_threads());
  cr_assert_eq(atomic_load(&g_seen.max_level), 1, "a chunk ran in a nested region");
  cr_assert_eq(sg_threads(), 2, "outside the region the process count holds again");
  sg_dispose(want);
  sg_dispose(x);
}

/* Even a one-thread (inactive) host region counts: the host asked for one thread there. */
Test(host_threads, an_inactive_host_region_also_counts) {
  sg_set_threads(2);
  int inside = 0;
#pragma omp parallel num_threads(1)
  inside = sg_threads();
  cr_assert_eq(inside, 1);
}

/* ---- A host pool ------------------------------------------------------------------------------
 */

typedef struct host_pool {
  int workers; /* pthreads started per call, besides the caller */
  bool reverse;
  atomic_int calls;
  atomic_llong chunks_asked, chunks_run;
} host_pool;

typedef struct pool_call {
  host_pool *pool;
  int64_t n_chunks;
  void (*body)(int64_t, void *);
  void *arg;
} pool_call;

typedef struct pool_share {
  pool_call *call;
  int index; /* this thread runs chunks index, index + threads, ... */
} pool_share;

static void *pool_worker(void *p) {
  pool_share *w = p;
  pool_call *c = w->call;
  for (int64_t i = w->index; i < c->n_chunks; i += c->pool->workers + 1) {
    c->body(c->pool->reverse ? c->n_chunks - 1 - i : i, c->arg);
    atomic_fetch_add(&c->pool->chunks_run, 1);
  }
  return NULL;
}

/* Starts pool->workers pthreads per call and shares the chunks out among them and the caller
   round-robin, so that with 2 chunks or more at least two threads run some. */
static void pool_parallel_for(void *host_ctx, int64_t n_chunks, void (*body)(int64_t, void *),
                              void *arg) {
  host_pool *pool = host_ctx;
  atomic_fetch_add(&pool->calls, 1);
  atomic_fetch_add(&pool->chunks_asked, n_chunks);
  pool_call c = {.pool = pool, .n_chunks = n_chunks, .body = body, .arg = arg};
  pool_share share[8];
  pthread_t th[8];
  for (int i = 0; i <= pool->workers; i++) share[i] = (pool_share){&c, i};
  for (int i = 1; i <= pool->workers; i++) pthread_create(&th[i], NULL, pool_worker, &share[i]);
  pool_worker(&share[0]);
  for (int i = 1; i <= pool->workers; i++) pthread_join(th[i], NULL);
}

/* A small model's worth of ops, forward and backward: elementwise, broadcast, a matmul, a
   reduction that splits one row, softmax. Each result is kept. */
enum { N_RESULTS = 6 };
static void model(sg_tensor *x, sg_tensor *w, sg_tensor *out[N_RESULTS]) {
  sg_scope_begin("model");
  cr_assert_eq(sg_tape_begin(), SG_OK);
  const int64_t rows[2] = {512, 512};
  sg_tensor *m = sg_reshape(x, rows, 2);
  sg_tensor *h = sg_tanh(sg_matmul(m, w, false, false));
  sg_tensor *s = sg_softmax(sg_mul(h, m), 1);
  sg_tensor *total = sg_sum(sg_exp(s), NULL, 0, false);
  cr_assert_not_null(total, "%s", sg_last_error());
  sg_tensor *xs[2] = {x, w}, *g[2];
  cr_assert_eq(sg_tape_end(total, NULL, xs, 2, g), SG_OK, "%s", sg_last_error());
  sg_tensor *all[N_RESULTS] = {h, s, total, g[0], g[1], sg_sum(x, NULL, 0, false)};
  for (int i = 0; i < N_RESULTS; i++) out[i] = sg_keep(all[i]);
  sg_scope_end(NULL, 0);
}

static void dispose_all(sg_tensor *t[N_RESULTS]) {
  for (int i = 0; i < N_RESULTS; i++) sg_dispose(t[i]);
}

Test(host_threads, a_host_pool_runs_the_chunks_with_the_same_bits) {
  int64_t live = t_live_tensors();
  const int64_t n = 512 * 512, ws[2] = {512, 512};
  sg_tensor *x = sg_random_uniform(&n, 1, -2.0f, 2.0f, 2);
  sg_tensor *w = sg_random_uniform(ws, 2, -0.05f, 0.05f, 3);
  sg_tensor *one[N_RESULTS], *omp[N_RESULTS], *pool[N_RESULTS], *rev[N_RESULTS];
  sg_set_threads(1);
  model(x, w, one);
  sg_set_threads(2);
  model(x, w, omp);

  host_pool p = {.workers = 3};
  sg_set_parallel_for(pool_parallel_for, &p);
  watch();
  model(x, w, pool);
  sg__set_chunk_hook(NULL, NULL);
  cr_assert_gt(atomic_load(&p.calls), 10, "the pool ran %d parallel-fors", atomic_load(&p.calls));
  cr_assert_eq(atomic_load(&p.chunks_run), atomic_load(&p.chunks_asked));
  cr_assert_gt(distinct_threads(), 1, "the pool's threads ran chunks");

  host_pool r = {.workers = 0, .reverse = true}; /* the caller alone, last chunk first */
  sg_set_parallel_for(pool_parallel_for, &r);
  model(x, w, rev);
  cr_assert_gt(atomic_load(&r.calls), 10);

  sg_set_parallel_for(NULL, NULL); /* OpenMP again: the pools see nothing more */
  int calls = atomic_load(&p.calls) + atomic_load(&r.calls);
  sg_dispose(sg_exp(x));
  cr_assert_eq(atomic_load(&p.calls) + atomic_load(&r.calls), calls);

  for (int i = 0; i < N_RESULTS; i++) {
    cr_assert(same_bits(one[i], omp[i]), "result %d: 1 thread and OpenMP differ", i);
    cr_assert(same_bits(one[i], pool[i]), "result %d: 1 thread and the host pool differ", i);
    cr_assert(same_bits(one[i], rev[i]), "result %d: 1 thread and reversed chunks differ", i);
  }
  dispose_all(one);
  dispose_all(omp);
  dispose_all(pool);
  dispose_all(rev);
  sg_dispose(x);
  sg_dispose(w);
  cr_assert_eq(t_live_tensors(), live);
}

/* A thread marked with sg_set_thread_local_threads(1) keeps its ops to itself even when a host
   pool is set; so does a process count of 1. */
Test(host_threads, a_marked_thread_does_not_call_the_host_pool) {
  sg_tensor *x = big_input(4);
  host_pool p = {.workers = 1};
  sg_set_threads(2);
  sg_set_parallel_for(pool_parallel_for, &p);
  sg_set_thread_local_threads(1);
  cr_assert_eq(sg_threads(), 1);
  sg_dispose(sg_exp(x));
  cr_assert_eq(atomic_load(&p.calls), 0);
  sg_set_thread_local_threads(0);
  cr_assert_eq(sg_threads(), 2);
  sg_dispose(sg_exp(x));
  cr_assert_eq(atomic_load(&p.calls), 1);
  sg_set_threads(1);
  sg_dispose(sg_exp(x));
  cr_assert_eq(atomic_load(&p.calls), 1);
  sg_set_parallel_for(NULL, NULL);
  sg_dispose(x);
}

/* ---- Host pthreads with their own count --------------------------------------------------- */

typedef struct host_thread {
  sg_tensor *x, *want;
  pthread_barrier_t *start;
  int threads_seen, chunks_run;
  bool same;
} host_thread;

static void *host_thread_main(void *p) {
  host_thread *h = p;
  sg_set_thread_local_threads(1);
  h->threads_seen = sg_threads();
  pthread_barrier_wait(h->start); /* all four call ops at once */
  tls_chunks = 0;
  sg_tensor *y = sg_exp(h->x);
  h->chunks_run = tls_chunks;
  h->same = y && same_bits(y, h->want);
  sg_dispose(y);
  return NULL;
}

/* Four host threads on a process count of 2: each runs its ops alone (4 compute threads in
   all, where the old engine made a team per host thread: 8). */
Test(host_threads, four_pthreads_with_a_count_of_one_each) {
  sg_set_threads(2);
  sg_tensor *x = big_input(5);
  sg_tensor *want = sg_exp(x);
  const int k = chunks_of_exp(x);
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, 4);
  host_thread h[4];
  pthread_t th[4];
  watch();
  for (int i = 0; i < 4; i++) {
    h[i] = (host_thread){.x = x, .want = want, .start = &start};
    cr_assert_eq(pthread_create(&th[i], NULL, host_thread_main, &h[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  sg__set_chunk_hook(NULL, NULL);
  pthread_barrier_destroy(&start);
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(h[i].threads_seen, 1);
    cr_assert_eq(h[i].chunks_run, k, "host thread %d ran %d of its %d chunks", i, h[i].chunks_run,
                 k);
    cr_assert(h[i].same, "host thread %d got other bits", i);
  }
  cr_assert_eq(distinct_threads(), 4, "chunks ran on %d threads", distinct_threads());
  cr_assert_eq(sg_threads(), 2, "the override is per thread");
  sg_dispose(want);
  sg_dispose(x);
}

/* A thread may also ask for more than the process count. */
Test(host_threads, a_thread_count_above_the_process_count) {
  sg_set_threads(1);
  sg_tensor *x = big_input(6);
  sg_set_thread_local_threads(2);
  cr_assert_eq(sg_threads(), 2);
  watch();
  sg_dispose(sg_exp(x));
  sg__set_chunk_hook(NULL, NULL);
  cr_assert_eq(distinct_threads(), 2, "chunks ran on %d threads", distinct_threads());
  sg_set_thread_local_threads(0);
  cr_assert_eq(sg_threads(), 1);
  sg_dispose(x);
}

/* ---- The environment, read at start-up: checked in a fresh process ----------------------- */

/* Runs this test binary again with `env_args` (env(1) arguments) on the test `name` alone, with
   SG_HOST_CHILD=1 so that the test runs its checks instead of spawning; true when that one test
   ran and passed, else *out holds the child's output. Criterion's sandbox hands its workers a
   map through BXFI_MAP: the child must start as a runner of its own, so it must not see it.
   Not under an emulator, where the tests below skip. */
#if !defined(SIMDGRAD_TEST_EMULATED)
static bool run_child(const char *env_args, const char *name, char *out, size_t size) {
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  cr_assert_gt(len, 0);
  self[len] = '\0';
  char cmd[2 * PATH_MAX];
  snprintf(cmd, sizeof cmd,
           "env -u BXFI_MAP -u SIMDGRAD_THREADS -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT "
           "-u SIMDGRAD_UNARY_LOOPS "
           "SG_HOST_CHILD=1 %s '%s' --filter 'host_env/%s' --jobs 1 2>&1",
           env_args, self, name);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p);
  size_t used = fread(out, 1, size - 1, p);
  out[used] = '\0';
  int status = pclose(p);
  return status == 0 && strstr(out, "Tested: 1 | Passing: 1 ") != NULL;
}
#endif

#if defined(SIMDGRAD_TEST_EMULATED)
#define IN_CHILD(env_args, name)                                                                   \
  if (!getenv("SG_HOST_CHILD")) cr_skip_test("needs to start itself again (emulated here)")
#else
#define IN_CHILD(env_args, name)                                                                   \
  if (!getenv("SG_HOST_CHILD")) {                                                                  \
    char out[4096];                                                                                \
    cr_assert(run_child(env_args, name, out, sizeof out),                                          \
              "the check in a process with %s failed:\n%s", env_args, out);                        \
    return;                                                                                        \
  }
#endif

Test(host_env, simdgrad_threads_that_does_not_parse_is_an_error) {
  IN_CHILD("SIMDGRAD_THREADS=abc", "simdgrad_threads_that_does_not_parse_is_an_error");
  cr_assert_eq(sg_init(), SG_ERR_ARG);
  cr_assert(strstr(sg_last_error(), "SIMDGRAD_THREADS=abc is not an integer"), "%s",
            sg_last_error());
  cr_assert_eq(sg_threads(), omp_get_num_procs(), "falls back to one thread per core");
}

Test(host_env, simdgrad_threads_with_trailing_junk_is_an_error) {
  IN_CHILD("SIMDGRAD_THREADS=4x", "simdgrad_threads_with_trailing_junk_is_an_error");
  cr_assert_eq(sg_init(), SG_ERR_ARG);
  cr_assert(strstr(sg_last_error(), "SIMDGRAD_THREADS=4x"), "%s", sg_last_error());
}

Test(host_env, omp_num_threads_is_honoured) {
  IN_CHILD("OMP_NUM_THREADS=3,1", "omp_num_threads_is_honoured");
  cr_assert_eq(sg_init(), SG_OK, "%s", sg_last_error());
  cr_assert_eq(sg_threads(), 3);
}

Test(host_env, simdgrad_threads_wins_over_omp_num_threads) {
  IN_CHILD("OMP_NUM_THREADS=3 SIMDGRAD_THREADS=2", "simdgrad_threads_wins_over_omp_num_threads");
  cr_assert_eq(sg_init(), SG_OK, "%s", sg_last_error());
  cr_assert_eq(sg_threads(), 2);
}

/* sg_threads() reports what really runs: OMP_THREAD_LIMIT=1 caps a count of 4, and an op's
   chunks all run on one thread. */
Test(host_env, omp_thread_limit_caps_sg_threads) {
  IN_CHILD("OMP_THREAD_LIMIT=1 SIMDGRAD_THREADS=4", "omp_thread_limit_caps_sg_threads");
  cr_assert_eq(sg_threads(), 1);
  sg_set_threads(4);
  cr_assert_eq(sg_threads(), 1);
  sg_tensor *x = big_input(7);
  watch();
  sg_dispose(sg_exp(x));
  sg__set_chunk_hook(NULL, NULL);
  cr_assert_eq(distinct_threads(), 1);
  sg_dispose(x);
}

/* SIMDGRAD_UNARY_LOOPS picks the plain or the staged loops of the unary kernels that have both
   (AVX-512's exp and selu_backward, AVX2's staged forward ops); unset, the CPU's vendor does.
   AVX-512's table, built on AVX2's, keeps its own kernels either way. */
#if defined(__x86_64__)
sg_unary_fn sg_f32_exp__avx512, sg_f32_exp_plain__avx512;
sg_unary_backward_fn sg_f32_selu_backward__avx512, sg_f32_selu_backward_plain__avx512;
#define AVX2_PLAIN_OPS_(X) X(tanh) X(sigmoid) X(expm1) X(elu) X(selu) X(gelu)
#define DECLARE_AVX2_PLAIN_(op)                                                                    \
  sg_unary_fn sg_f32_##op##__avx2, sg_f32_##op##_plain__avx2, sg_f32_##op##__avx512;
AVX2_PLAIN_OPS_(DECLARE_AVX2_PLAIN_)
#endif
static void expect_unary_loops(const char *want) {
  cr_assert_eq(sg_init(), SG_OK, "%s", sg_last_error());
  cr_assert(strcmp(sg__unary_loops(), want) == 0, "loops %s, want %s", sg__unary_loops(), want);
#if defined(__x86_64__)
  bool plain = strcmp(want, "plain") == 0;
  const sg_backend *b = sg_backend_get("avx512"), *b2 = sg_backend_get("avx2");
  if (b) {
    cr_assert(b->exp == (plain ? sg_f32_exp_plain__avx512 : sg_f32_exp__avx512),
              "the avx512 table's exp is not its %s loop", want);
    cr_assert(b->selu_backward ==
                  (plain ? sg_f32_selu_backward_plain__avx512 : sg_f32_selu_backward__avx512),
              "the avx512 table's selu_backward is not its %s loop", want);
  }
#define EXPECT_AVX2_PLAIN_(op)                                                                     \
  if (b) cr_assert(b->op == sg_f32_##op##__avx512, "the avx512 table's " #op " is not its own");   \
  if (b2)                                                                                          \
    cr_assert(b2->op == (plain ? sg_f32_##op##_plain__avx2 : sg_f32_##op##__avx2),                 \
              "the avx2 table's " #op " is not its %s loop", want);
  AVX2_PLAIN_OPS_(EXPECT_AVX2_PLAIN_)
#endif
}

Test(host_env, simdgrad_unary_loops_plain) {
  IN_CHILD("SIMDGRAD_UNARY_LOOPS=plain", "simdgrad_unary_loops_plain");
  expect_unary_loops("plain");
}

Test(host_env, simdgrad_unary_loops_staged) {
  IN_CHILD("SIMDGRAD_UNARY_LOOPS=staged", "simdgrad_unary_loops_staged");
  expect_unary_loops("staged");
}

Test(host_env, unset_unary_loops_follow_the_cpu) {
  IN_CHILD("", "unset_unary_loops_follow_the_cpu");
  sg_cpu_info c = sg__cpu_detect();
  expect_unary_loops(sg__cpu_prefers_plain_loops(&c) ? "plain" : "staged");
}

Test(host_env, simdgrad_unary_loops_that_is_neither_is_an_error) {
  IN_CHILD("SIMDGRAD_UNARY_LOOPS=fast", "simdgrad_unary_loops_that_is_neither_is_an_error");
  cr_assert_eq(sg_init(), SG_ERR_ARG);
  cr_assert(strstr(sg_last_error(), "SIMDGRAD_UNARY_LOOPS=fast is neither plain nor staged"), "%s",
            sg_last_error());
  sg_cpu_info c = sg__cpu_detect();
  const char *want = sg__cpu_prefers_plain_loops(&c) ? "plain" : "staged";
  cr_assert(strcmp(sg__unary_loops(), want) == 0, "loops %s, want %s", sg__unary_loops(), want);
}

/* ---- The caller's floating-point mode -------------------------------------------------------- */

#if defined(__x86_64__)
#include <xmmintrin.h>
#define FLUSH_BITS 0x8040u /* FTZ | DAZ */
static uint64_t fp_mode(void) { return _mm_getcsr(); }
static void set_fp_mode(uint64_t v) { _mm_setcsr((unsigned)v); }
#elif defined(__aarch64__)
#define FLUSH_BITS (1ull << 24) /* FPCR.FZ */
static uint64_t fp_mode(void) {
  uint64_t v;
  __asm__ volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
static void set_fp_mode(uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }
#else
#define FLUSH_BITS 0u
static uint64_t fp_mode(void) { return 0; }
static void set_fp_mode(uint64_t v) { (void)v; }
#endif

/* Every kind of call: a one-chunk op, a split op on two threads, a failing op, the tape, a
   random tensor. */
static void every_kind_of_call(sg_tensor *tiny, sg_tensor *big, uint64_t mode) {
  sg_dispose(sg_add(tiny, tiny));
  cr_assert_eq(fp_mode(), mode, "after a small op");
  sg_dispose(sg_mul(big, big));
  cr_assert_eq(fp_mode(), mode, "after a split op");
  const int64_t s3[1] = {3};
  sg_tensor *other = sg_zeros(s3, 1);
  cr_assert_null(sg_add(big, other));
  sg_clear_error();
  sg_dispose(other);
  cr_assert_eq(fp_mode(), mode, "after a failing op");
  sg_scope_begin("tape");
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_sum(sg_exp(big), NULL, 0, false), *g;
  cr_assert_eq(sg_tape_end(y, NULL, &big, 1, &g), SG_OK, "%s", sg_last_error());
  cr_assert_eq(fp_mode(), mode, "after sg_tape_end");
  sg_scope_end(NULL, 0);
  sg_dispose(sg_random_normal(s3, 1, 0, 1, 1));
  cr_assert_eq(fp_mode(), mode, "after sg_random_normal");
}

Test(host_fpmode, flushing_applies_inside_and_the_caller_keeps_its_mode) {
  if (FLUSH_BITS == 0) cr_skip_test("no FP mode register known here");
  sg_set_threads(2);
  const int64_t one = 1;
  const float denormal = 1e-40f;
  sg_tensor *tiny = sg_tensor_f32(&denormal, &one, 1), *big = big_input(8);
  const uint64_t ieee = fp_mode() & ~(uint64_t)FLUSH_BITS;
  set_fp_mode(ieee);

  sg_set_flush_denormals(true);
  cr_assert_eq(fp_mode(), ieee, "sg_set_flush_denormals leaves the caller alone");
  sg_tensor *z = sg_add(tiny, tiny);
  cr_assert_eq(sg_data_f32(z)[0], 0.0f, "flushed inside the op: %g", sg_data_f32(z)[0]);
  sg_dispose(z);
  every_kind_of_call(tiny, big, ieee);

  /* A host that flushes on its own thread while the engine keeps denormals: the engine's
     setting holds inside, the host's mode after. */
  sg_set_flush_denormals(false);
  set_fp_mode(ieee | FLUSH_BITS);
  z = sg_add(tiny, tiny);
  cr_assert_eq(sg_data_f32(z)[0], denormal + denormal, "kept inside the op");
  sg_dispose(z);
  every_kind_of_call(tiny, big, ieee | FLUSH_BITS);
  set_fp_mode(ieee);

  /* The threads of the host's own OpenMP team, which the engine's regions share, are left in
     IEEE mode too. */
  sg_set_flush_denormals(true);
  sg_dispose(sg_mul(big, big));
  uint64_t seen[2] = {0, 0};
#pragma omp parallel num_threads(2)
  seen[omp_get_thread_num()] = fp_mode() & FLUSH_BITS;
  cr_assert_eq(seen[0] | seen[1], 0, "an OpenMP thread kept the engine's flush bits");
  sg_set_flush_denormals(false);
  sg_dispose(tiny);
  sg_dispose(big);
}
