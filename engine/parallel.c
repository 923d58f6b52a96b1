/* The one parallel-for: the only place that uses OpenMP, the one place where a host's own
 * parallel-for (sg_set_parallel_for) takes over, and the thread counts behind sg_threads().
 *
 * Note [host threads]
 * A library inside another framework must not add threads the host did not ask for: the
 * host's own pool already fills the cores. So the count is worked out for the calling thread
 * on every call (threads_here): 1 inside a host's OpenMP region (any level, nested or not:
 * with nesting on, a team per host thread would oversubscribe the machine) and inside a chunk
 * of the engine's own work; else the thread's own count (sg_set_thread_local_threads), else the
 * process's; never above OMP_THREAD_LIMIT. With one thread the chunks run in order on the
 * caller; with more, a host's parallel-for runs them when one is set, else an OpenMP team.
 * Chunk boundaries depend on n and grain alone, so every path gives the same bits. */
#include <limits.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"
#include "engine/fpmode.h"

/* ---- Thread counts --------------------------------------------------------------------------- */

static atomic_int g_threads = 1;     /* the process's count (sg_set_threads) */
static int g_thread_limit = INT_MAX; /* OMP_THREAD_LIMIT, read once at start-up */
/* Initial-exec: in the shared library a plain _Thread_local access calls __tls_get_addr. */
static _Thread_local int tls_threads __attribute__((tls_model("initial-exec"))); /* 0: process's */
static _Thread_local bool tls_in_chunk __attribute__((tls_model("initial-exec")));

/* A whole decimal int, nothing after it but blanks. */
static bool parse_int(const char *s, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  while (end != s && (*end == ' ' || *end == '\t' || *end == '\n')) end++;
  if (end == s || *end != '\0' || v < INT_MIN || v > INT_MAX) return false;
  *out = (int)v;
  return true;
}

bool sg__threads_init(char *problem, size_t size) {
  int procs = omp_get_num_procs(), n = procs, v;
  bool ok = true;
  g_thread_limit = omp_get_thread_limit();
  if (g_thread_limit < 1) g_thread_limit = 1;
  const char *env = getenv("SIMDGRAD_THREADS");
  const char *omp = getenv("OMP_NUM_THREADS");
  if (env && *env) {
    if (parse_int(env, &v)) {
      n = v > 0 ? v : procs;
    } else {
      snprintf(problem, size,
               "SIMDGRAD_THREADS=%s is not an integer (N threads, or 0 for one per core); "
               "using %d, one per core",
               env, procs);
      ok = false;
    }
  } else if (omp && *omp) {
    /* OMP_NUM_THREADS may list a count per nesting level ("4,2"): the first is the outermost.
       One that does not parse is left to the OpenMP runtime to complain about. */
    char first[32];
    size_t len = 0;
    while (omp[len] && omp[len] != ',' && len + 1 < sizeof first) len++;
    snprintf(first, sizeof first, "%.*s", (int)len, omp);
    if (parse_int(first, &v) && v > 0) n = v;
  }
  atomic_store(&g_threads, n);
  return ok;
}

void sg_set_threads(int n) {
  sg__ensure_init();
  atomic_store(&g_threads, n > 0 ? n : omp_get_num_procs());
}

void sg_set_thread_local_threads(int n) {
  sg__ensure_init();
  tls_threads = n > 0 ? n : 0;
}

/* Note [host threads]. */
static int threads_here(void) {
  if (tls_in_chunk || omp_get_level() > 0) return 1;
  int n = tls_threads ? tls_threads : atomic_load_explicit(&g_threads, memory_order_relaxed);
  return n < g_thread_limit ? n : g_thread_limit;
}

int sg_threads(void) {
  sg__ensure_init();
  return threads_here();
}

/* ---- The host's parallel-for ----------------------------------------------------------------- */

/* The pair (fn, ctx) under a sequence lock: a reader never sees one host's fn with another's
   ctx, and pays two loads of the sequence besides the pair; writers take the mutex. */
static atomic_uint g_host_seq;
static _Atomic(sg_parallel_for_fn) g_host_fn;
static _Atomic(void *) g_host_ctx;
static pthread_mutex_t g_host_lock = PTHREAD_MUTEX_INITIALIZER;

void sg_set_parallel_for(sg_parallel_for_fn fn, void *host_ctx) {
  pthread_mutex_lock(&g_host_lock);
  unsigned seq = atomic_load_explicit(&g_host_seq, memory_order_relaxed);
  atomic_store_explicit(&g_host_seq, seq + 1, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&g_host_fn, fn, memory_order_relaxed);
  atomic_store_explicit(&g_host_ctx, fn ? host_ctx : NULL, memory_order_relaxed);
  atomic_store_explicit(&g_host_seq, seq + 2, memory_order_release);
  pthread_mutex_unlock(&g_host_lock);
}

static sg_parallel_for_fn host_parallel_for(void **ctx) {
  for (;;) {
    unsigned seq = atomic_load_explicit(&g_host_seq, memory_order_acquire);
    sg_parallel_for_fn fn = atomic_load_explicit(&g_host_fn, memory_order_relaxed);
    *ctx = atomic_load_explicit(&g_host_ctx, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (!(seq & 1) && atomic_load_explicit(&g_host_seq, memory_order_relaxed) == seq) return fn;
  }
}

/* ---- The parallel-for ------------------------------------------------------------------------ */

typedef void (*chunk_hook_fn)(void *ctx);
static _Atomic(chunk_hook_fn) g_chunk_hook;
static _Atomic(void *) g_chunk_hook_ctx;

void sg__set_chunk_hook(void (*hook)(void *ctx), void *ctx) {
  atomic_store(&g_chunk_hook, NULL);
  atomic_store(&g_chunk_hook_ctx, ctx);
  atomic_store(&g_chunk_hook, hook);
}

typedef struct range_job {
  sg_range_fn fn;
  void *arg;
  int64_t n, grain, chunks;
} range_job;

static inline void run_chunk(const range_job *j, int64_t c) {
  chunk_hook_fn hook = atomic_load_explicit(&g_chunk_hook, memory_order_relaxed);
  if (__builtin_expect(hook != NULL, 0)) hook(atomic_load(&g_chunk_hook_ctx));
  int64_t lo = c * j->grain;
  j->fn(lo, lo + j->grain < j->n ? lo + j->grain : j->n, j->arg);
}

/* One chunk on a host thread: the engine's FP mode around it, and nested parallel-fors serial
   (a host pool that waits for its own tasks could deadlock on them). */
static void host_body(int64_t chunk, void *arg) {
  const range_job *j = arg;
  if (chunk < 0 || chunk >= j->chunks) return;
  sg_fpmode fp;
  sg__fpmode_enter(&fp);
  bool nested = tls_in_chunk;
  tls_in_chunk = true;
  run_chunk(j, chunk);
  tls_in_chunk = nested;
  sg__fpmode_leave(&fp);
}

void sg__parallel_for(int64_t n, int64_t grain, sg_range_fn fn, void *arg) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  range_job j = {fn, arg, n, grain, 1};
  sg_fpmode fp;
  /* One chunk (tested first, so that tiny ops pay no division and no thread count) or one
     thread: no region, since even an empty one costs microseconds. */
  if (n <= grain) {
    sg__fpmode_enter(&fp);
    run_chunk(&j, 0);
    sg__fpmode_leave(&fp);
    return;
  }
  j.chunks = (n + grain - 1) / grain;
  int threads = threads_here();
  if (threads == 1) {
    sg__fpmode_enter(&fp);
    for (int64_t c = 0; c < j.chunks; c++) run_chunk(&j, c);
    sg__fpmode_leave(&fp);
    return;
  }
  void *host_ctx;
  sg_parallel_for_fn host = host_parallel_for(&host_ctx);
  sg__fpmode_suspend(&fp); /* threads started now copy the caller's mode (engine/fpmode.h) */
  if (host) {
    host(host_ctx, j.chunks, host_body, &j);
  } else {
    if (threads > j.chunks) threads = (int)j.chunks;
#pragma omp parallel num_threads(threads)
    {
      sg_fpmode mode;
      sg__fpmode_enter(&mode);
#pragma omp for schedule(static)
      for (int64_t c = 0; c < j.chunks; c++) run_chunk(&j, c);
      sg__fpmode_leave(&mode);
    }
  }
  sg__fpmode_resume(&fp);
}
