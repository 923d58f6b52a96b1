/* The gemm_taps kernel on one row of a 3x3 convolution, as engine/conv_shifted.c calls it for
 * the forward: "gemm_taps/<backend>/<O>/threads:1" sums, for the 56 output pixels of a row, the
 * 9 taps' products of the input pixels they meet (64 channels each, from 3 input rows of 58
 * padded pixels) with the tap's [64, O] filter slice. O = 64 is whole strips; O = 24 and 40 end
 * in a strip that is not whole vectors wide on AVX-512 (packed before the tile runs). */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "roofline.h"

#define PIXELS 56
#define CHANNELS 64
#define TAPS 9

typedef struct taps_case {
  const sg_backend *be;
  int64_t out_c;
} taps_case;

static void run_taps(bench_state *st, void *arg) {
  const taps_case *c = arg;
  const size_t o = (size_t)c->out_c, row = (PIXELS + 2) * CHANNELS;
  const float *x = bench_buffer(0, 3 * row, -1, 1);
  const float *f = bench_buffer(1, TAPS * CHANNELS * o, -1, 1);
  float *y = bench_output(2, PIXELS * o);
  const float *a[TAPS], *b[TAPS];
  for (size_t t = 0; t < TAPS; t++) {
    a[t] = x + (t / 3) * row + (t % 3) * CHANNELS; /* row kh, shifted kw pixels */
    b[t] = f + t * CHANNELS * o;
  }
  bench_time_each_call(st);
  while (bench_keep_running(st))
    c->be->gemm_taps(PIXELS, o, CHANNELS, TAPS, a, CHANNELS, false, b, o, 0.0f, y, o);
  char desc[64];
  snprintf(desc, sizeof desc, "m=%d n=%zu k=%d taps=%d", PIXELS, o, CHANNELS, TAPS);
  bench_work w = {.flops = 2.0 * PIXELS * (double)o * CHANNELS * TAPS,
                  .bytes =
                      4.0 * (3.0 * (double)row + TAPS * CHANNELS * (double)o + PIXELS * (double)o),
                  .written = 4.0 * PIXELS * (double)o,
                  .items = PIXELS * (double)o,
                  .isa = roofline_isa_of(c->be->name),
                  .threads = 1,
                  .desc = desc};
  bench_report(st, &w);
}

void bench_register_gemm_taps(void) {
  static const int64_t outs[] = {24, 40, 64};
  const sg_backend *backends[4];
  int nb = bench_backends(backends);
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++)
    for (int b = 0; b < nb; b++) {
      taps_case *c = malloc(sizeof *c);
      if (!c) abort();
      *c = (taps_case){backends[b], outs[i]};
      char shape[32];
      snprintf(shape, sizeof shape, "%lld", (long long)outs[i]);
      bench_add("gemm_taps", backends[b]->name, shape, 1, bench_in_default("gemm_taps", outs[i]),
                run_taps, c);
    }
}
