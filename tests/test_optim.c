/* Variables and optimizers: sg_variable / sg_assign semantics, SGD, momentum (plain and
 * Nesterov) and Adam against hand-computed steps, every backend's fused update kernels against
 * a double reference on sizes with vector tails, a small convergence run, and errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

static const char *const k_backends[] = {"scalar", "avx2", "avx512", "neon"};
#define N_BACKENDS ((int)(sizeof k_backends / sizeof k_backends[0]))

/* A variable from a temporary initial value. */
static sg_tensor *var_of(sg_tensor *init) {
  sg_tensor *v = sg_variable(init);
  sg_dispose(init);
  return v;
}

Test(variable, keep_assign_and_errors) {
  int64_t live = t_live_tensors();
  sg_scope_begin("outer");
  sg_tensor *init = t_f32((float[]){1, 2, 3}, 1, (int64_t[]){3});
  sg_tensor *v = sg_variable(init);
  sg_scope_end(NULL, 0); /* init is gone, the variable stays */
  cr_assert_eq(t_live_tensors(), live + 1);
  t_expect_f32(v, (float[]){1, 2, 3}, 1, (int64_t[]){3}, 0, 0);
  sg_tensor *val = t_f32((float[]){4, 5, 6}, 1, (int64_t[]){3});
  cr_assert_eq(sg_assign(v, val), SG_OK);
  t_expect_f32(v, (float[]){4, 5, 6}, 1, (int64_t[]){3}, 0, 0);
  /* A view sees the update. */
  sg_tensor *view = sg_reshape(v, (int64_t[]){3, 1}, 2);
  sg_tensor *val2 = t_f32((float[]){7, 8, 9}, 1, (int64_t[]){3});
  cr_assert_eq(sg_assign(v, val2), SG_OK);
  t_expect_f32(view, (float[]){7, 8, 9}, 2, (int64_t[]){3, 1}, 0, 0);
  cr_assert_eq(sg_assign(v, view), SG_ERR_SHAPE);
  cr_assert(strstr(sg_last_error(), "[3,1]"), "%s", sg_last_error());
  sg_clear_error();
  cr_assert_eq(sg_tape_begin(), SG_OK);
  cr_assert_eq(sg_assign(v, val), SG_ERR_STATE);
  sg_clear_error();
  sg_tape_end(NULL, NULL, NULL, 0, NULL);
  sg_clear_error();
  cr_assert_null(sg_variable(NULL));
  sg_clear_error();
  sg_tensor *objs[] = {v, val, view, val2};
  for (int i = 0; i < 4; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}

/* Runs `steps` steps of opt on w (3 values) with the fixed gradients g[step]. */
static void run_steps(sg_optimizer *opt, float *w0, const float (*g)[3], int steps, float *out) {
  sg_tensor *w = var_of(t_f32(w0, 1, (int64_t[]){3}));
  for (int s = 0; s < steps; s++) {
    sg_tensor *gs = t_f32(g[s], 1, (int64_t[]){3});
    cr_assert_eq(sg_optimizer_step(opt, &w, &gs, 1), SG_OK, "%s", sg_last_error());
    sg_dispose(gs);
  }
  memcpy(out, sg_data_f32(w), sizeof(float) * 3);
  sg_dispose(w);
}

Test(optimizer, hand_computed_steps) {
  int64_t live0 = t_live_tensors();
  sg_scope_begin("t");
  float w0[3] = {1, -2, 0.5f}, out[3];
  const float g[2][3] = {{0.5f, -1, 2}, {1, 1, -1}};
  /* SGD lr 0.1: w - 0.1 g0 - 0.1 g1. */
  sg_optimizer *o = sg_sgd(0.1f);
  run_steps(o, w0, g, 2, out);
  for (int i = 0; i < 3; i++) cr_assert_float_eq(out[i], w0[i] - 0.1f * (g[0][i] + g[1][i]), 1e-6);
  sg_optimizer_free(o);
  /* Momentum 0.9: v1 = g0, w1 = w0 - lr v1; v2 = 0.9 g0 + g1, w2 = w1 - lr v2. Nesterov steps by
     g + 0.9 v instead. */
  for (int nest = 0; nest < 2; nest++) {
    o = sg_momentum(0.1f, 0.9f, nest);
    run_steps(o, w0, g, 2, out);
    for (int i = 0; i < 3; i++) {
      double v1 = g[0][i], v2 = 0.9 * v1 + g[1][i];
      double s1 = nest ? g[0][i] + 0.9 * v1 : v1, s2 = nest ? g[1][i] + 0.9 * v2 : v2;
      cr_assert_float_eq(out[i], w0[i] - 0.1 * (s1 + s2), 1e-6, "nesterov %d, w[%d]", nest, i);
    }
    sg_optimizer_free(o);
  }
  /* Adam: the first step is lr * sign(g) (up to epsilon); the second by the formula in double. */
  o = sg_adam(0.01f, 0.9f, 0.999f, 1e-7f);
  run_steps(o, w0, g, 2, out);
  for (int i = 0; i < 3; i++) {
    double m = 0, v = 0, w = w0[i];
    for (int t = 1; t <= 2; t++) {
      m = 0.9 * m + 0.1 * g[t - 1][i];
      v = 0.999 * v + 0.001 * g[t - 1][i] * g[t - 1][i];
      w -= 0.01 * (m / (1 - pow(0.9, t))) / (sqrt(v / (1 - pow(0.999, t))) + 1e-7);
    }
    cr_assert_float_eq(out[i], w, 1e-6, "adam w[%d] = %.8g, want %.8g", i, out[i], w);
  }
  sg_optimizer_free(o);
  sg_scope_end(NULL, 0);
  cr_assert_eq(t_live_tensors(), live0);
}

/* Every backend's fused kernels against double on sizes around the vector widths. */
Test(optimizer, kernels_match_reference_on_every_backend) {
  const size_t sizes[] = {0, 1, 7, 8, 15, 16, 17, 33, 100, 1000};
  for (int b = 0; b < N_BACKENDS; b++) {
    const sg_backend *be = sg_backend_get(k_backends[b]);
    if (!be) continue;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
      size_t n = sizes[si];
      float *w = malloc(4 * (n + 1)), *m = malloc(4 * (n + 1)), *v = malloc(4 * (n + 1)),
            *g = malloc(4 * (n + 1));
      double *rw = malloc(8 * (n + 1)), *rm = malloc(8 * (n + 1)), *rv = malloc(8 * (n + 1));
      for (int kind = 0; kind < 4; kind++) {
        for (size_t i = 0; i < n; i++) {
          w[i] = (float)sin((double)i) * 2, m[i] = (float)cos((double)i) * 0.1f;
          v[i] = (float)(i % 5) * 0.01f, g[i] = (float)sin(i * 0.7 + 1);
          rw[i] = w[i], rm[i] = m[i], rv[i] = v[i];
        }
        w[n] = 12345; /* past the end: must not change */
        for (size_t i = 0; i < n; i++) {
          double gi = g[i];
          if (kind == 0) {
            rw[i] -= 0.05 * gi;
          } else if (kind <= 2) {
            rm[i] = 0.9 * rm[i] + gi;
            rw[i] -= 0.05 * (kind == 2 ? gi + 0.9 * rm[i] : rm[i]);
          } else {
            rm[i] = 0.9 * rm[i] + 0.1 * gi;
            rv[i] = 0.99 * rv[i] + 0.01 * gi * gi;
            rw[i] -= 0.02 * rm[i] / (sqrt(rv[i]) * 1.5 + 1e-3);
          }
        }
        if (kind == 0) be->sgd_update(w, g, n, 0.05f);
        if (kind == 1 || kind == 2) be->momentum_update(w, m, g, n, 0.05f, 0.9f, kind == 2);
        if (kind == 3) be->adam_update(w, m, v, g, n, 0.02f, 0.9f, 0.99f, 1.5f, 1e-3f);
        for (size_t i = 0; i < n; i++) {
          cr_assert(fabs(w[i] - rw[i]) <= 1e-6 * (1 + fabs(rw[i])),
                    "%s kind %d n %zu: w[%zu] = %.8g, want %.8g", k_backends[b], kind, n, i, w[i],
                    rw[i]);
          if (kind > 0)
            cr_assert(fabs(m[i] - rm[i]) <= 1e-6 * (1 + fabs(rm[i])), "%s kind %d: m[%zu]",
                      k_backends[b], kind, i);
          if (kind == 3)
            cr_assert(fabs(v[i] - rv[i]) <= 1e-6 * (1 + fabs(rv[i])), "%s: v[%zu]", k_backends[b],
                      i);
        }
        cr_assert_eq(w[n], 12345.0f, "%s kind %d n %zu wrote past the end", k_backends[b], kind, n);
      }
      free(w), free(m), free(v), free(g), free(rw), free(rm), free(rv);
    }
  }
}

/* Minimises sum((w - target)^2) through the tape with each optimizer. */
Test(optimizer, converges) {
  int64_t live = t_live_tensors();
  sg_optimizer *opts[] = {sg_sgd(0.1f), sg_momentum(0.05f, 0.9f, false),
                          sg_momentum(0.05f, 0.9f, true), sg_adam(0.1f, 0.9f, 0.999f, 1e-7f)};
  for (int k = 0; k < 4; k++) {
    sg_tensor *target = sg_random_uniform((int64_t[]){5, 7}, 2, -1, 1, 5);
    sg_tensor *w = var_of(sg_zeros((int64_t[]){5, 7}, 2));
    sg_scope_begin("train");
    for (int step = 0; step < 300; step++) {
      sg_scope_begin("step");
      sg_tensor *g;
      sg_tape_begin();
      sg_tensor *loss = sg_sum(sg_squared_difference(w, target), NULL, 0, false);
      cr_assert_eq(sg_tape_end(loss, NULL, &w, 1, &g), SG_OK, "%s", sg_last_error());
      cr_assert_eq(sg_optimizer_step(opts[k], &w, &g, 1), SG_OK, "%s", sg_last_error());
      sg_scope_end(NULL, 0);
    }
    sg_scope_end(NULL, 0);
    t_expect_f32(w, sg_data_f32(target), 2, (int64_t[]){5, 7}, 2e-3, 0);
    sg_dispose(w);
    sg_dispose(target);
    sg_optimizer_free(opts[k]);
  }
  cr_assert_eq(t_live_tensors(), live);
}

/* A step over no variables changes nothing: the next real step is still the first (Adam's bias
   correction included) and makes the state. */
Test(optimizer, an_empty_step_is_a_no_op) {
  sg_tensor *a = var_of(sg_zeros((int64_t[]){5}, 1)), *b = var_of(sg_zeros((int64_t[]){5}, 1));
  sg_tensor *g = sg_random_uniform((int64_t[]){5}, 1, -1, 1, 9);
  sg_optimizer *first = sg_adam(0.1f, 0.9f, 0.999f, 1e-7f),
               *fresh = sg_adam(0.1f, 0.9f, 0.999f, 1e-7f);
  cr_assert_eq(sg_optimizer_step(first, NULL, NULL, 0), SG_OK, "%s", sg_last_error());
  cr_assert_eq(sg_optimizer_step(first, &a, &g, 1), SG_OK, "%s", sg_last_error());
  cr_assert_eq(sg_optimizer_step(fresh, &b, &g, 1), SG_OK, "%s", sg_last_error());
  cr_assert_eq(memcmp(sg_data_f32(a), sg_data_f32(b), 5 * sizeof(float)), 0);
  sg_optimizer_free(first);
  sg_optimizer_free(fresh);
  sg_dispose(a);
  sg_dispose(b);
  sg_dispose(g);
}

Test(optimizer, errors) {
  int64_t live = t_live_tensors();
  sg_tensor *w = var_of(sg_zeros((int64_t[]){2, 3}, 2));
  sg_tensor *w2 = var_of(sg_zeros((int64_t[]){4}, 1));
  sg_tensor *g = sg_ones((int64_t[]){2, 3}, 2), *gb = sg_ones((int64_t[]){3, 2}, 2);
  sg_optimizer *o = sg_adam(0.1f, 0.9f, 0.999f, 1e-7f);
  cr_assert_eq(sg_optimizer_step(o, &w, &gb, 1), SG_ERR_SHAPE);
  cr_assert(strstr(sg_last_error(), "[3,2]"), "%s", sg_last_error());
  sg_clear_error();
  cr_assert_eq(sg_optimizer_step(o, &w, &g, 1), SG_OK);
  /* The state belongs to one variable now. */
  sg_tensor *two[2] = {w, w}, *gg[2] = {g, g};
  cr_assert_eq(sg_optimizer_step(o, two, gg, 2), SG_ERR_ARG);
  sg_clear_error();
  sg_tensor *g2 = sg_ones((int64_t[]){4}, 1);
  cr_assert_eq(sg_optimizer_step(o, &w2, &g2, 1), SG_ERR_SHAPE);
  sg_clear_error();
  cr_assert_eq(sg_tape_begin(), SG_OK);
  cr_assert_eq(sg_optimizer_step(o, &w, &g, 1), SG_ERR_STATE);
  sg_clear_error();
  sg_tape_end(NULL, NULL, NULL, 0, NULL);
  sg_clear_error();
  /* A gradient that is the variable itself, or a view of it, is refused and changes nothing. */
  sg_tensor *flat = sg_reshape(w, (int64_t[]){6}, 1),
            *w_view = sg_reshape(flat, (int64_t[]){2, 3}, 2);
  float before[6];
  memcpy(before, sg_data_f32(w), sizeof before);
  cr_assert_eq(sg_optimizer_step(o, &w, &w, 1), SG_ERR_ARG);
  cr_assert(strstr(sg_last_error(), "grads[0] shares memory with vars[0]"), "%s", sg_last_error());
  cr_assert_eq(sg_optimizer_step(o, &w, &w_view, 1), SG_ERR_ARG);
  cr_assert_eq(memcmp(before, sg_data_f32(w), sizeof before), 0);
  sg_clear_error();
  sg_dispose(flat);
  sg_dispose(w_view);
  sg_tensor *none = NULL;
  cr_assert_neq(sg_optimizer_step(o, &w, &none, 1), SG_OK);
  sg_clear_error();
  cr_assert_null(sg_adam(0.1f, 1.0f, 0.999f, 1e-7f));
  sg_clear_error();
  sg_optimizer_free(o);
  sg_optimizer_free(NULL);
  sg_tensor *objs[] = {w, w2, g, gb, g2};
  for (int i = 0; i < 5; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}
