/* The shape kernels: transpose of [rows, cols] (perm {1, 0}) and scatter_add, the backward of a
 * gather of `rows` rows of [rows, cols] along axis 0. Named "<slot>/<backend>/<rows>x<cols>/
 * threads:1": the engine runs both on one thread for these shapes (it splits a transpose only
 * along a leading axis that stays in place, and a scatter only along the axes before the
 * gathered one), so there is no threads:N entry; sg_transpose and sg_gather through the tape,
 * with their threads, are in bench_api.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "roofline.h"

typedef struct shape_case {
  bool scatter;
  const sg_backend *be;
  int64_t rows, cols;
} shape_case;

static void run_shape(bench_state *st, void *arg) {
  const shape_case *c = arg;
  size_t rows = (size_t)c->rows, cols = (size_t)c->cols, n = rows * cols;
  const float *x = bench_buffer(0, n, -4, 4);
  float *y = bench_output(1, n);
  memset(y, 0, n * sizeof(float)); /* scatter_add accumulates into it */
  const int32_t *idx = bench_buffer_index(2, rows, (int32_t)rows);
  int64_t shape[2] = {c->rows, c->cols};
  static const int perm[2] = {1, 0};
  if (c->scatter) {
    /* Accumulates into y over and over: the values stay finite and the work is the same. */
    while (bench_keep_running(st)) {
      c->be->scatter_add(x, idx, 1, rows, cols, rows, y);
      bench_clobber_memory();
    }
  } else {
    while (bench_keep_running(st)) {
      c->be->transpose(x, shape, perm, 2, y);
      bench_clobber_memory();
    }
  }
  char desc[64];
  snprintf(desc, sizeof desc, "[%zu,%zu]%s", rows, cols, c->scatter ? " gathered rows" : "^T");
  bench_work w = {.flops = c->scatter ? (double)n : 0,
                  .bytes = c->scatter ? 12.0 * (double)n + 4.0 * (double)rows : 8.0 * (double)n,
                  .written = 4.0 * (double)n, /* y: scatter_add reads and writes it in place */
                  .footprint = c->scatter ? 8.0 * (double)n + 4.0 * (double)rows : 0,
                  .items = (double)n,
                  .isa = roofline_isa_of(c->be->name),
                  .threads = 1,
                  .desc = desc};
  bench_report(st, &w);
}

void bench_register_shape(void) {
  const sg_backend *backends[4];
  int nb = bench_backends(backends);
  static const char *const names[] = {"transpose", "scatter_add"};
  for (int k = 0; k < 2; k++) {
    for (int s = 0; s < bench_n_sizes; s++) {
      int64_t rows, cols, n = bench_sizes[s];
      bench_rows_of(n, &rows, &cols);
      char shape[32];
      snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows, (long long)cols);
      for (int b = 0; b < nb; b++) {
        shape_case *c = malloc(sizeof *c);
        if (!c) abort();
        *c = (shape_case){k == 1, backends[b], rows, cols};
        bench_add(names[k], backends[b]->name, shape, 1, bench_in_default(names[k], n), run_shape,
                  c);
      }
    }
  }
}
