/* The shape kernels: transpose of [rows, cols] (perm {1, 0}) and scatter_add, the backward of a
 * gather of `rows` rows of [rows, cols] along axis 0. Named "<slot>/<backend>/<rows>x<cols>/
 * threads:1": the engine runs both on one thread for these shapes (it splits a transpose only
 * along a leading axis that stays in place, and a scatter only along the axes before the
 * gathered one), so there is no threads:N entry; sg_transpose and sg_gather through the tape,
 * with their threads, are in bench_api.c.
 *
 * transpose.pattern, its .reads and .writes, and transpose.copy (AVX2 and AVX-512, --suite=all)
 * split what a transpose costs beyond moving its bytes; bench/transpose_pattern.inc holds their
 * kernels. The pattern is the transpose kernel's own loads and stores, the same addresses in the
 * same order and sizes, non-temporal where it streams, with its register transposes taken out;
 * .reads and .writes keep one half of it and make the other front to back; the copy reads x and
 * writes y front to back in vectors with the same kind of stores. transpose against pattern is
 * the shuffles' share, pattern against copy the access order's, .reads and .writes against copy
 * which side of it; the copy is the floor for these bytes and stores (relu's regular stores also
 * read each line of y first). Their rows report the transpose's bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "roofline.h"

/* In the order of the table: the pattern and the copy beside the transpose. */
typedef enum shape_kind {
  SHAPE_TRANSPOSE,
  SHAPE_PATTERN,
  SHAPE_READS,
  SHAPE_WRITES,
  SHAPE_COPY,
  SHAPE_SCATTER
} shape_kind;

typedef struct shape_case {
  shape_kind kind;
  const sg_backend *be;
  sg_transpose_fn *probe; /* SHAPE_PATTERN to SHAPE_COPY: the backend's kernel of that row */
  int64_t rows, cols;
} shape_case;

/* The kernel of row `kind` on backend `name` (SHAPE_PATTERN to SHAPE_COPY); NULL where none. */
static sg_transpose_fn *probe_kernel(shape_kind kind, const char *name) {
#ifdef SIMDGRAD_BENCH_X86_ISAS
  static sg_transpose_fn *const avx2[] = {bench_transpose_pattern__avx2,
                                          bench_transpose_reads__avx2, bench_transpose_writes__avx2,
                                          bench_transpose_copy__avx2};
  static sg_transpose_fn *const avx512[] = {
      bench_transpose_pattern__avx512, bench_transpose_reads__avx512,
      bench_transpose_writes__avx512, bench_transpose_copy__avx512};
  if (strcmp(name, "avx2") == 0) return avx2[kind - SHAPE_PATTERN];
  if (strcmp(name, "avx512") == 0) return avx512[kind - SHAPE_PATTERN];
#endif
  (void)kind, (void)name;
  return NULL;
}

static void run_shape(bench_state *st, void *arg) {
  const shape_case *c = arg;
  size_t rows = (size_t)c->rows, cols = (size_t)c->cols, n = rows * cols;
  const float *x = bench_buffer(0, n, -4, 4);
  float *y = bench_output(1, n);
  memset(y, 0, n * sizeof(float)); /* scatter_add accumulates into it */
  const int32_t *idx = bench_buffer_index(2, rows, (int32_t)rows);
  int64_t shape[2] = {c->rows, c->cols};
  static const int perm[2] = {1, 0};
  bool scatter = c->kind == SHAPE_SCATTER;
  sg_transpose_fn *transpose = c->probe ? c->probe : c->be->transpose;
  if (scatter) {
    /* Accumulates into y over and over: the values stay finite and the work is the same. */
    while (bench_keep_running(st)) {
      c->be->scatter_add(x, idx, 1, rows, cols, rows, y);
      bench_clobber_memory();
    }
  } else {
    while (bench_keep_running(st)) {
      transpose(x, shape, perm, 2, y);
      bench_clobber_memory();
    }
  }
  char desc[64];
  snprintf(desc, sizeof desc, "[%zu,%zu]%s", rows, cols,
           scatter                    ? " gathered rows"
           : c->kind == SHAPE_PATTERN ? "^T's loads and stores"
           : c->kind == SHAPE_READS   ? "^T's loads"
           : c->kind == SHAPE_WRITES  ? "^T's stores"
           : c->kind == SHAPE_COPY    ? " copied"
                                      : "^T");
  /* scatter_add reads and writes in place (judged by its reads, roof_model.h) the rows of y that
     idx names: with indices drawn at random, about 63% of them. Counting every row read 1.4x the
     bytes, and the row 138% of its bound at [4096, 1024] on the Intel Xeon VM of the
     thirty-third landing. */
  double y_bytes =
      scatter ? 4.0 * (double)cols * (double)bench_index_distinct(rows, (int32_t)rows) : 0;
  bench_work w = {.flops = scatter ? (double)n : 0,
                  .bytes = scatter ? 4.0 * (double)n + 2.0 * y_bytes + 4.0 * (double)rows
                                   : 8.0 * (double)n,
                  .written = scatter ? y_bytes : 4.0 * (double)n,
                  .written_in_place = y_bytes,
                  .footprint = scatter ? 4.0 * (double)n + y_bytes + 4.0 * (double)rows : 0,
                  .items = (double)n,
                  .isa = roofline_isa_of(c->be->name),
                  .threads = 1,
                  .desc = desc};
  bench_report(st, &w);
}

void bench_register_shape(void) {
  const sg_backend *backends[4];
  int nb = bench_backends(backends);
  static const char *const names[] = {
      "transpose",      "transpose.pattern", "transpose.pattern.reads", "transpose.pattern.writes",
      "transpose.copy", "scatter_add"};
  for (int k = SHAPE_TRANSPOSE; k <= SHAPE_SCATTER; k++) {
    for (int s = 0; s < bench_n_sizes; s++) {
      int64_t rows, cols, n = bench_sizes[s];
      bench_rows_of(n, &rows, &cols);
      char shape[32];
      snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows, (long long)cols);
      for (int b = 0; b < nb; b++) {
        sg_transpose_fn *probe = NULL;
        if (k >= SHAPE_PATTERN && k <= SHAPE_COPY) {
          probe = probe_kernel((shape_kind)k, backends[b]->name);
          /* The halves only where the kernel streams whole buffered strips. */
          bool half = k == SHAPE_READS || k == SHAPE_WRITES;
          if (!probe || (half && n < ((int64_t)2 << 20))) continue;
        }
        shape_case *c = malloc(sizeof *c);
        if (!c) abort();
        *c = (shape_case){(shape_kind)k, backends[b], probe, rows, cols};
        bench_add(names[k], backends[b]->name, shape, 1, bench_in_default(names[k], n), run_shape,
                  c);
      }
    }
  }
}
