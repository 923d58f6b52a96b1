/* Shared test helpers: building tensors, comparing with tolerances, and the finite-difference
 * gradient check every differentiable op goes through. */
#ifndef SIMDGRAD_TEST_SUPPORT_H
#define SIMDGRAD_TEST_SUPPORT_H

#if defined(SIMDGRAD_PLAIN_TESTS) /* the TSan build: tests/plain_test.h */
#include "plain_test.h"
#else
#include <criterion/criterion.h>
#endif
#include <simdgrad/backend.h>
#include <simdgrad/simdgrad.h>

#include "opinfo.h"

/* A tensor from a literal: T(data, dims...) where dims are given as an int64_t array. */
sg_tensor *t_f32(const float *data, int rank, const int64_t *shape);
/* Asserts t is f32 with the given shape and every element within atol + rtol*|want| of want
   (NaN must match NaN, infinities must match exactly). */
void t_expect_f32(const sg_tensor *t, const float *want, int rank, const int64_t *shape,
                  double atol, double rtol);
/* Asserts the call failed: t is NULL, sg_last_status() is st, and the error message contains
   every fragment given (NULL-terminated list). Clears the error. */
void t_expect_error(const sg_tensor *t, sg_status st, ...);

/* A function of n inputs giving one f32 tensor, for the gradient check. */
typedef sg_tensor *(*gc_fn)(sg_tensor *const *xs, void *arg);

/* Checks the tape's gradient of L = sum(w * f(xs)), w random, against the 4-point central
   difference (f(x-2h) - 8f(x-h) + 8f(x+h) - f(x+2h)) / 12h in double, for every element of
   every f32 input. Fails when |analytic - numeric| > tol * max(1, |numeric|). Also asserts
   that no tensor leaks. */
void gc_check(const char *name, gc_fn f, void *arg, sg_tensor *const *xs, int n, double h,
              double tol);

/* The double reference of the row op name (its op-info row's row_ref, opinfo/opinfo_reduce.c);
   asserts the row exists. */
const opinfo_row_ref *t_row_ref(const char *name);

/* sg_memory().num_tensors, for leak assertions. */
int64_t t_live_tensors(void);

#endif
