/* simdgrad_bench: registers every suite, then hands over to Google Benchmark (see
 * gbench_shim.h for --table). */
#include <simdgrad/simdgrad.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

float *bench_floats(size_t n, float lo, float hi, uint64_t seed) {
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  float *p = aligned_alloc(64, bytes ? bytes : 64);
  if (!p) {
    fprintf(stderr, "simdgrad_bench: out of memory for %zu floats\n", n);
    abort();
  }
  uint64_t s = seed * 0x9e3779b97f4a7c15u + 1;
  for (size_t i = 0; i < n; i++) {
    s = s * 6364136223846793005u + 1442695040888963407u; /* LCG; the top 24 bits are uniform */
    p[i] = lo + (hi - lo) * (float)(s >> 40) * 0x1p-24f;
  }
  return p;
}

int main(int argc, char **argv) {
  sg_init();
  fprintf(stderr, "simdgrad_bench: CPU features: %s\nsimdgrad_bench: engine backend: %s\n",
          sg_cpu_features(), sg_backend_name());
  bench_register_kernels();
  bench_register_engine();
  return bench_main(argc, argv);
}
