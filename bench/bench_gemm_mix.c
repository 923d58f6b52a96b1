/* "gemm.mix/<isa>/<rows>x<cols>/threads:1" (AVX2 and AVX-512, --suite=all): the GEMM
 * micro-kernel's k step alone (roofline_isa.h, bench_gemm_mix__<isa>), its B vectors and A
 * values loaded from the same few lines in L1 every step. It reads against the FMA peak as matmul
 * does: what that register tile's loads, broadcasts and FMAs reach on this core with nothing else
 * in the way, so that matmul's own row over it is what the rest of the product costs (packing,
 * edges, C, the blocks' traffic). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "roofline.h"
#include "roofline_isa.h"

#ifdef SIMDGRAD_BENCH_X86_ISAS
#define MIX_STEPS 4096 /* k steps a call: 7 us (AVX2) and 16 us (AVX-512) on the Intel Xeon */

typedef double mix_fn(int64_t iters, const float *ab, float *sink);

typedef struct mix_case {
  mix_fn *probe;
  const char *isa;
  int rows, cols;
} mix_case;

static void run_mix(bench_state *st, void *arg) {
  const mix_case *c = arg;
  float *ab = bench_alloc(4096);
  for (int i = 0; i < 1024; i++) ab[i] = 1.0f / (float)(i + 2); /* FMAs of normal numbers */
  float sink = 0, total = 0;
  double flops = 0;
  while (bench_keep_running(st)) {
    flops = c->probe(MIX_STEPS, ab, &sink);
    total += sink;
  }
  bench_do_not_optimize(&total);
  free(ab);
  char desc[64];
  snprintf(desc, sizeof desc, "%d x %d tile's k step, in L1", c->rows, c->cols);
  bench_work w = {.flops = flops,
                  .items = MIX_STEPS,
                  .isa = roofline_isa_of(c->isa),
                  .threads = 1,
                  .desc = desc};
  bench_report(st, &w);
}
#endif

void bench_register_gemm_mix(void) {
#ifdef SIMDGRAD_BENCH_X86_ISAS
  const sg_backend *backends[4];
  int nb = bench_backends(backends);
  for (int b = 0; b < nb; b++) {
    const char *name = backends[b]->name;
    mix_case c = {NULL, name, 0, 0};
    if (strcmp(name, "avx2") == 0) {
      c.probe = bench_gemm_mix__avx2;
      bench_gemm_tile__avx2(&c.rows, &c.cols);
    } else if (strcmp(name, "avx512") == 0) {
      c.probe = bench_gemm_mix__avx512;
      bench_gemm_tile__avx512(&c.rows, &c.cols);
    } else {
      continue;
    }
    mix_case *p = malloc(sizeof *p);
    if (!p) abort();
    *p = c;
    char shape[32];
    snprintf(shape, sizeof shape, "%dx%d", c.rows, c.cols);
    bench_add("gemm.mix", name, shape, 1, bench_in_default("gemm.mix", 0), run_mix, p);
  }
#endif
}
