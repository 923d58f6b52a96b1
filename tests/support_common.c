/* Implementation of tests/support.h. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

sg_tensor *t_f32(const float *data, int rank, const int64_t *shape) {
  sg_tensor *t = sg_tensor_f32(data, shape, rank);
  cr_assert_not_null(t, "t_f32: %s", sg_last_error());
  return t;
}

int64_t t_live_tensors(void) { return sg_memory().num_tensors; }

const opinfo_row_ref *t_row_ref(const char *name) {
  const opinfo_kernel *k = opinfo_kernel_find(name);
  cr_assert_not_null(k, "no op-info row for %s (opinfo/opinfo_reduce.c)", name);
  return &k->row_ref;
}

void t_expect_f32(const sg_tensor *t, const float *want, int rank, const int64_t *shape,
                  double atol, double rtol) {
  cr_assert_not_null(t, "expected a tensor, got NULL: %s", sg_last_error());
  cr_assert_eq(sg_dtype_of(t), SG_F32);
  cr_assert_eq(sg_rank(t), rank, "rank %d, want %d", sg_rank(t), rank);
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    cr_assert_eq(sg_shape(t)[i], shape[i], "dim %d is %lld, want %lld", i,
                 (long long)sg_shape(t)[i], (long long)shape[i]);
    n *= shape[i];
  }
  const float *got = sg_data_f32(t);
  for (int64_t i = 0; i < n; i++) {
    float g = got[i], w = want[i];
    if (isnan(w)) {
      cr_assert(isnan(g), "element %lld: got %.9g, want NaN", (long long)i, g);
    } else if (isinf(w)) {
      cr_assert(g == w, "element %lld: got %.9g, want %.9g", (long long)i, g, w);
    } else {
      cr_assert(fabs((double)g - w) <= atol + rtol * fabs(w), "element %lld: got %.9g, want %.9g",
                (long long)i, g, w);
    }
  }
}

void t_expect_error(const sg_tensor *t, sg_status st, ...) {
  cr_assert_null(t, "expected an error, got a tensor");
  cr_assert_eq(sg_last_status(), st, "status %d, want %d (%s)", sg_last_status(), st,
               sg_last_error());
  va_list ap;
  va_start(ap, st);
  for (const char *frag = va_arg(ap, const char *); frag; frag = va_arg(ap, const char *))
    cr_assert(strstr(sg_last_error(), frag), "error \"%s\" lacks \"%s\"", sg_last_error(), frag);
  va_end(ap);
  sg_clear_error();
}

/* L = sum(w * f(xs)) in double. */
static double loss(gc_fn f, void *arg, sg_tensor *const *xs, const float *w) {
  sg_tensor *y = f(xs, arg);
  cr_assert_not_null(y, "forward failed: %s", sg_last_error());
  const float *p = sg_data_f32(y);
  double s = 0;
  for (int64_t i = 0; i < sg_numel(y); i++) s += (double)w[i] * p[i];
  sg_dispose(y);
  return s;
}

void gc_check(const char *name, gc_fn f, void *arg, sg_tensor *const *xs, int n, double h,
              double tol) {
  int64_t live0 = t_live_tensors();
  sg_scope_begin("gradcheck");
  sg_tensor *y0 = f(xs, arg);
  cr_assert_not_null(y0, "%s: forward failed: %s", name, sg_last_error());
  int64_t ny = sg_numel(y0);
  sg_tensor *w = sg_random_uniform(sg_shape(y0), sg_rank(y0), 0.5f, 1.5f, 1234);
  sg_dispose(y0);

  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = f(xs, arg);
  sg_tensor *grads[8] = {0};
  cr_assert(n <= 8);
  sg_status st = sg_tape_end(y, w, xs, n, grads);
  cr_assert_eq(st, SG_OK, "%s: tape_end failed: %s", name, sg_last_error());
  (void)ny;

  const float *wd = sg_data_f32(w);
  for (int k = 0; k < n; k++) {
    if (sg_dtype_of(xs[k]) != SG_F32) continue;
    cr_assert_eq(sg_numel(grads[k]), sg_numel(xs[k]), "%s: grad %d has the wrong size", name, k);
    float *x = (float *)sg_data_f32(xs[k]); /* perturbed in place, then restored */
    const float *g = sg_data_f32(grads[k]);
    for (int64_t i = 0; i < sg_numel(xs[k]); i++) {
      float x0 = x[i];
      double step = h * fmax(1.0, fabs(x0));
      double lp[4];
      const double offs[4] = {-2, -1, 1, 2};
      for (int s = 0; s < 4; s++) {
        x[i] = (float)(x0 + offs[s] * step);
        lp[s] = loss(f, arg, xs, wd);
      }
      x[i] = x0;
      double real_step = step; /* float rounding of x0 + step is small next to tol */
      double num = (lp[0] - 8 * lp[1] + 8 * lp[2] - lp[3]) / (12 * real_step);
      double err = fabs(g[i] - num);
      cr_assert(err <= tol * fmax(1.0, fabs(num)),
                "%s: d/dx%d[%lld] analytic %.7g vs numeric %.7g (x = %.7g)", name, k, (long long)i,
                g[i], num, x0);
    }
  }
  sg_scope_end(NULL, 0);
  cr_assert_eq(t_live_tensors(), live0, "%s: %lld tensors leaked", name,
               (long long)(t_live_tensors() - live0));
}
