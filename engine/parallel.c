/* The one parallel-for: the only place that uses OpenMP. */
#include <omp.h>

#include "engine.h"

void sg__parallel_for(int64_t n, int64_t grain, sg_range_fn fn, void *arg) {
  if (n <= 0) return;
  /* One chunk (tested first, so that tiny ops pay no division and no thread count) or one
     thread: no region, since even an empty one costs microseconds. */
  if (n <= grain) {
    sg__fpmode_sync();
    fn(0, n, arg);
    return;
  }
  if (grain < 1) grain = 1;
  int64_t chunks = (n + grain - 1) / grain;
  int threads = sg_threads();
  if (threads == 1) {
    sg__fpmode_sync();
    for (int64_t c = 0; c < chunks; c++) {
      int64_t lo = c * grain;
      fn(lo, lo + grain < n ? lo + grain : n, arg);
    }
    return;
  }
  if (threads > chunks) threads = (int)chunks;
#pragma omp parallel num_threads(threads)
  {
    sg__fpmode_sync();
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; c++) {
      int64_t lo = c * grain;
      fn(lo, lo + grain < n ? lo + grain : n, arg);
    }
  }
}
