/* Kernel benchmarks: representative backend slots called directly on raw buffers, per backend,
 * named "<slot>/<backend>/<size>" (size in elements; gemm: m = n = k). The scalar backend is
 * registered first for every slot and size: it is the baseline of the table's "vs scalar". */
#include <simdgrad/backend.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef enum kind {
  K_UNARY,        /* y = f(x) */
  K_UNARY_BWD_X,  /* dx from dy and the saved x */
  K_UNARY_BWD_Y,  /* dx from dy and the saved y */
  K_BINARY,       /* y = a op b, both contiguous */
  K_REDUCE_LAST,  /* [rows, 1024] summed over axis 1 */
  K_REDUCE_FIRST, /* [rows, 1024] summed over axis 0 */
  K_SOFTMAX,      /* [rows, 1024] over axis 1 */
  K_GEMM          /* n x n times n x n */
} kind;

typedef struct slot {
  const char *name;
  kind kind;
  size_t offset; /* of the kernel pointer in sg_backend */
  float lo, hi;  /* input range */
} slot;

#define SLOT(name, kind, lo, hi)                                                                   \
  { #name, kind, offsetof(sg_backend, name), lo, hi }
static const slot k_slots[] = {
    SLOT(add, K_BINARY, -1, 1),
    SLOT(mul, K_BINARY, -1, 1),
    SLOT(exp, K_UNARY, -10, 10),
    SLOT(tanh, K_UNARY, -5, 5),
    SLOT(sigmoid, K_UNARY, -8, 8),
    SLOT(relu, K_UNARY, -1, 1),
    SLOT(relu_backward, K_UNARY_BWD_X, -1, 1),
    SLOT(exp_backward, K_UNARY_BWD_Y, 0.1f, 2),
    SLOT(reduce_sum, K_REDUCE_LAST, -1, 1),
    {"reduce_sum_axis0", K_REDUCE_FIRST, offsetof(sg_backend, reduce_sum), -1, 1},
    SLOT(softmax, K_SOFTMAX, -5, 5),
    SLOT(gemm, K_GEMM, -1, 1),
};
#define N_SLOTS (sizeof k_slots / sizeof k_slots[0])

static const int64_t k_sizes[] = {1 << 10, 1 << 14, 1 << 18, 1 << 22};
static const int64_t k_gemm_sizes[] = {64, 128, 256, 512};
#define N_SIZES 4
#define ROW 1024 /* row length of the [rows, 1024] cases */

typedef struct kcase {
  const sg_backend *be;
  const slot *slot;
} kcase;

/* The kernel pointer of this case's slot, copied out as the type the caller expects. */
static void kernel_of(const kcase *c, void *fn, size_t size) {
  memcpy(fn, (const char *)c->be + c->slot->offset, size);
}

static void run_case(bench_state *st, void *arg) {
  const kcase *c = arg;
  const slot *s = c->slot;
  size_t n = (size_t)bench_range(st, 0);
  size_t rows = n >= ROW ? n / ROW : 1, cols = n >= ROW ? ROW : n;
  size_t elems = s->kind == K_GEMM ? n * n : n;
  float *x = bench_floats(elems, s->lo, s->hi, 1);
  float *x2 = bench_floats(elems, s->lo, s->hi, 2);
  float *y = bench_floats(elems, 0, 1, 3);
  double bytes = 0; /* per call */
  char label[64] = "";

  switch (s->kind) {
  case K_UNARY: {
    sg_unary_kernel f;
    kernel_of(c, &f, sizeof f);
    while (bench_keep_running(st)) {
      f(x, y, n);
      bench_clobber_memory();
    }
    bytes = 2.0 * n * sizeof(float);
    break;
  }
  case K_UNARY_BWD_X:
  case K_UNARY_BWD_Y: {
    sg_unary_backward_kernel f;
    kernel_of(c, &f, sizeof f);
    bool saved_x = s->kind == K_UNARY_BWD_X;
    while (bench_keep_running(st)) {
      f(x2, saved_x ? x : NULL, saved_x ? NULL : x, y, n);
      bench_clobber_memory();
    }
    bytes = 3.0 * n * sizeof(float);
    break;
  }
  case K_BINARY: {
    sg_binary_kernel f;
    kernel_of(c, &f, sizeof f);
    while (bench_keep_running(st)) {
      f(x, 1, x2, 1, y, n);
      bench_clobber_memory();
    }
    bytes = 3.0 * n * sizeof(float);
    break;
  }
  case K_REDUCE_LAST:
  case K_REDUCE_FIRST: {
    sg_reduce_kernel f;
    kernel_of(c, &f, sizeof f);
    bool last = s->kind == K_REDUCE_LAST;
    while (bench_keep_running(st)) {
      if (last)
        f(x, rows, cols, 1, y);
      else
        f(x, 1, rows, cols, y);
      bench_clobber_memory();
    }
    bytes = (double)(n + (last ? rows : cols)) * sizeof(float);
    snprintf(label, sizeof label, "[%zu,%zu] over axis %d", rows, cols, last ? 1 : 0);
    break;
  }
  case K_SOFTMAX: {
    sg_softmax_kernel f;
    kernel_of(c, &f, sizeof f);
    while (bench_keep_running(st)) {
      f(x, rows, cols, 1, y);
      bench_clobber_memory();
    }
    bytes = 2.0 * n * sizeof(float);
    snprintf(label, sizeof label, "[%zu,%zu] over axis 1", rows, cols);
    break;
  }
  case K_GEMM: {
    void (*f)(size_t, size_t, size_t, const float *, size_t, bool, const float *, size_t, bool,
              float, float *, size_t);
    kernel_of(c, &f, sizeof f);
    while (bench_keep_running(st)) {
      f(n, n, n, x, n, false, x2, n, false, 0.0f, y, n);
      bench_clobber_memory();
    }
    bench_counter(st, "FLOPS", 2.0 * (double)n * n * n * (double)bench_iterations(st), 1);
    snprintf(label, sizeof label, "m=n=k=%zu", n);
    break;
  }
  }
  if (bytes > 0) bench_set_bytes_processed(st, (int64_t)(bytes * (double)bench_iterations(st)));
  if (s->kind != K_GEMM) bench_set_items_processed(st, (int64_t)n * bench_iterations(st));
  if (label[0]) bench_set_label(st, label);
  free(x);
  free(x2);
  free(y);
}

/* Backends to measure: every one this CPU runs, or scalar plus the one SIMDGRAD_BACKEND names. */
static int pick_backends(const sg_backend **out) {
  static const char *const names[] = {"scalar", "avx2", "avx512", "neon"};
  const char *only = getenv("SIMDGRAD_BACKEND");
  int n = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const sg_backend *be = sg_backend_get(names[i]);
    if (!be) continue;
    if (i > 0 && only && *only && strcmp(only, names[i]) != 0) continue;
    out[n++] = be;
  }
  return n;
}

void bench_register_kernels(void) {
  static kcase cases[N_SLOTS * N_SIZES * 4];
  const sg_backend *backends[4];
  int n_backends = pick_backends(backends);
  size_t used = 0;
  for (size_t s = 0; s < N_SLOTS; s++) {
    const int64_t *sizes = k_slots[s].kind == K_GEMM ? k_gemm_sizes : k_sizes;
    for (int z = 0; z < N_SIZES; z++) {
      for (int b = 0; b < n_backends; b++) {
        kcase *c = &cases[used++];
        c->be = backends[b];
        c->slot = &k_slots[s];
        char name[96];
        snprintf(name, sizeof name, "%s/%s", k_slots[s].name, backends[b]->name);
        bench_register_args(name, run_case, c, &sizes[z], 1);
      }
    }
  }
}
