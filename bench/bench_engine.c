/* Engine overhead through the public API, on the current backend: what one op costs beyond its
 * kernel (checks, allocation, scope tracking), with and without a tape, and a scope's
 * begin/end. Compare api_add/<backend>/16384 with add/<backend>/16384 for the op's cost. */
#include <simdgrad/simdgrad.h>
#include <stdio.h>

#include "bench.h"

/* Runs of this many ops share one tape: a tape records a node per op, so one endless tape
   would grow without bound. Its begin/end is part of the per-op figure. */
#define TAPE_RUN 256

typedef enum mode { PLAIN, TAPE, SCOPED } mode;
static const mode k_modes[] = {PLAIN, TAPE, SCOPED};

static sg_tensor *vector_of(int64_t n, float v) {
  int64_t shape[1] = {n};
  return sg_fill(shape, 1, v);
}

static void api_add(bench_state *st, void *arg) {
  mode m = *(const mode *)arg;
  int64_t n = bench_range(st, 0);
  sg_tensor *a = vector_of(n, 1.0f), *b = vector_of(n, 2.0f);
  sg_tensor *probe = sg_add(a, b);
  if (!probe) {
    bench_skip_with_error(st, sg_last_error());
  } else if (m == TAPE) {
    sg_dispose(probe);
    while (bench_keep_running_batch(st, TAPE_RUN)) {
      sg_tape_begin();
      sg_tensor *y = NULL;
      for (int i = 0; i < TAPE_RUN; i++) {
        sg_dispose(y);
        y = sg_add(a, b);
      }
      sg_tape_end(y, NULL, NULL, 0, NULL);
      sg_dispose(y);
    }
  } else if (m == SCOPED) {
    sg_dispose(probe);
    while (bench_keep_running(st)) {
      sg_scope_begin("bench");
      bench_do_not_optimize(sg_add(a, b));
      sg_scope_end(NULL, 0);
    }
  } else {
    sg_dispose(probe);
    while (bench_keep_running(st)) {
      sg_tensor *y = sg_add(a, b);
      bench_do_not_optimize(y);
      sg_dispose(y);
    }
  }
  bench_set_items_processed(st, n * bench_iterations(st));
  /* At one element the figure of interest is ops per second (the items rate), not bytes. */
  if (n > 1) bench_set_bytes_processed(st, 3 * n * (int64_t)sizeof(float) * bench_iterations(st));
  sg_dispose(a);
  sg_dispose(b);
}

static void api_scope(bench_state *st, void *arg) {
  (void)arg;
  while (bench_keep_running(st)) {
    sg_scope_begin("bench");
    sg_scope_end(NULL, 0);
  }
}

void bench_register_engine(void) {
  static const char *const names[] = {"api_add", "api_add_tape", "api_add_scoped"};
  static const int64_t sizes[] = {1, 1 << 14, 1 << 20};
  char name[64];
  for (size_t i = 0; i < sizeof k_modes / sizeof k_modes[0]; i++) {
    snprintf(name, sizeof name, "%s/%s", names[i], sg_backend_name());
    bench_register_args(name, api_add, (void *)&k_modes[i], sizes, 3);
  }
  snprintf(name, sizeof name, "api_scope/%s", sg_backend_name());
  static const int64_t one = 1;
  bench_register_args(name, api_scope, NULL, &one, 1);
}
