/* simdgrad as a kernel library: nothing but <simdgrad/backend.h>, plain float arrays, no
 * tensors. Runs forward and backward kernels of the current backend (and of every other one
 * this CPU runs), checks them against plain loops and exits non-zero on a mismatch.
 *
 *   cc backend_only.c $(pkg-config --cflags --libs simdgrad) -lm && ./a.out
 */
#include <math.h>
#include <simdgrad/backend.h>
#include <stdio.h>
#include <stdlib.h>

/* Odd sizes, so vector bodies and scalar tails both run. */
#define N 1003
#define OUTER 3
#define R 37
#define INNER 5
#define M 7
#define K 13
#define NC 9

static int failures;

static void expect(const char *backend, const char *what, size_t i, double got, double want,
                   double tol) {
  if (fabs(got - want) <= tol * (1 + fabs(want))) return;
  if (failures++ < 10)
    fprintf(stderr, "%s: %s[%zu] = %.9g, expected %.9g\n", backend, what, i, got, want);
}

static float uniform(unsigned *state, float lo, float hi) {
  *state = *state * 1664525u + 1013904223u;
  return lo + (hi - lo) * (float)(*state >> 8) / 16777216.0f;
}

static void check_backend(const sg_backend *be) {
  static float x[N], y[N], dy[N], dx[N], b[1];
  unsigned seed = 42;
  for (size_t i = 0; i < N; i++) {
    x[i] = uniform(&seed, -8, 8);
    dy[i] = uniform(&seed, -1, 1);
  }
  x[0] = 0.0f; /* relu's kink: its gradient is 0 there */

  /* exp, then its backward from the saved output: dx = dy * y. */
  be->exp(x, y, N);
  for (size_t i = 0; i < N; i++) expect(be->name, "exp", i, y[i], exp((double)x[i]), 1e-6);
  be->exp_backward(dy, NULL, y, dx, N);
  for (size_t i = 0; i < N; i++)
    expect(be->name, "exp_backward", i, dx[i], (double)dy[i] * y[i], 1e-6);

  /* add with a broadcast scalar: y[i] = x[i] + b[0] (a_step 1, b_step 0). */
  b[0] = 0.5f;
  be->add(x, 1, b, 0, y, N);
  for (size_t i = 0; i < N; i++) expect(be->name, "add", i, y[i], x[i] + 0.5f, 0);

  /* relu's backward from the saved input: dx = x > 0 ? dy : 0. */
  be->relu_backward(dy, x, NULL, dx, N);
  for (size_t i = 0; i < N; i++)
    expect(be->name, "relu_backward", i, dx[i], x[i] > 0 ? dy[i] : 0.0f, 0);

  /* reduce_sum over the middle axis of [OUTER, R, INNER]. */
  static float sums[OUTER * INNER];
  be->reduce_sum(x, OUTER, R, INNER, sums);
  for (size_t o = 0; o < OUTER; o++)
    for (size_t in = 0; in < INNER; in++) {
      double want = 0;
      for (size_t r = 0; r < R; r++) want += x[(o * R + r) * INNER + in];
      expect(be->name, "reduce_sum", o * INNER + in, sums[o * INNER + in], want, 1e-5);
    }

  /* gemm: C = A B with A [M, K], B [K, NC]; beta 0 must ignore C's NaN contents. */
  static float c[M * NC];
  for (size_t i = 0; i < M * NC; i++) c[i] = NAN;
  be->gemm(M, NC, K, x, K, false, dy, NC, false, 0.0f, c, NC);
  for (size_t i = 0; i < M; i++)
    for (size_t j = 0; j < NC; j++) {
      double want = 0;
      for (size_t k = 0; k < K; k++) want += (double)x[i * K + k] * dy[k * NC + j];
      expect(be->name, "gemm", i * NC + j, c[i * NC + j], want, 1e-5);
    }
}

int main(void) {
  const sg_backend *current = sg_backend_current();
  printf("current backend: %s\n", current->name);
  check_backend(current);
  static const char *const names[] = {"scalar", "avx2", "avx512", "neon"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const sg_backend *be = sg_backend_get(names[i]);
    if (!be || be == current) continue;
    printf("also checked: %s\n", be->name);
    check_backend(be);
  }
  if (failures) {
    printf("%d mismatches\n", failures);
    return EXIT_FAILURE;
  }
  printf("all kernels match the reference loops\n");
  return EXIT_SUCCESS;
}
