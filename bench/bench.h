/* What the benchmark files share: the suites each registers, and input buffers. */
#ifndef SIMDGRAD_BENCH_H
#define SIMDGRAD_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "gbench_shim.h"

/* Kernel benchmarks, "<slot>/<backend>/<size>", for each backend this CPU runs (or scalar and
   the one SIMDGRAD_BACKEND names). */
void bench_register_kernels(void);
/* Engine overhead through the public API on the current backend: "api_*". */
void bench_register_engine(void);

/* n floats, 64-byte aligned, uniform in [lo, hi) from a fixed seed; abort()s if out of memory
   (a benchmark cannot go on without its buffers). Free with free(). */
float *bench_floats(size_t n, float lo, float hi, uint64_t seed);

#endif /* SIMDGRAD_BENCH_H */
