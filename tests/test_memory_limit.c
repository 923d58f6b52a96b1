/* The memory budget: sg_set_memory_limit and SIMDGRAD_MEMORY_LIMIT. A request that would take
 * the bytes of live tensors above the limit fails with SG_ERR_OOM naming the op, the shape and
 * the limit, leaves sg_memory() as it was, and the next call that fits succeeds. Each test is
 * a process of its own (Criterion), so the environment variable is read afresh in each. */
#define _DEFAULT_SOURCE /* setenv, unsetenv */
#include <stdlib.h>
#include <string.h>

#include "support.h"
/* After support.h: parameterized.h needs criterion.h before it. */
#include <criterion/parameterized.h>

#define MIB (1ll << 20)

static void fresh_engine(void) {
  unsetenv("SIMDGRAD_MEMORY_LIMIT");
  cr_assert_eq(sg_init(), SG_OK, "%s", sg_last_error());
}

Test(memory_limit, none_by_default_and_set_and_read_back) {
  fresh_engine();
  cr_assert_eq(sg_memory_limit(), 0);
  sg_set_memory_limit(3 * MIB);
  cr_assert_eq(sg_memory_limit(), 3 * MIB);
  sg_set_memory_limit(-5);
  cr_assert_eq(sg_last_status(), SG_ERR_ARG);
  cr_assert(strstr(sg_last_error(), "negative"), "%s", sg_last_error());
  cr_assert_eq(sg_memory_limit(), 3 * MIB, "a refused value leaves the limit as it was");
  sg_clear_error();
  sg_set_memory_limit(0);
  cr_assert_eq(sg_memory_limit(), 0);
}

/* The case: a dimension of 2^31 is a valid shape that no machine here can hold. */
Test(memory_limit, a_huge_request_fails_with_the_op_shape_and_limit) {
  fresh_engine();
  sg_set_memory_limit(64 * MIB);
  sg_memory_info before = sg_memory();
  sg_tensor *t = sg_zeros((int64_t[]){(int64_t)1 << 31, 4}, 2);
  t_expect_error(t, SG_ERR_OOM, "zeros", "[2147483648,4]", "34359738368 bytes", "67108864",
                 "memory limit", NULL);
  sg_memory_info after = sg_memory();
  cr_assert_eq(after.num_tensors, before.num_tensors);
  cr_assert_eq(after.num_bytes, before.num_bytes);
  sg_tensor *small = sg_zeros((int64_t[]){16}, 1);
  cr_assert_not_null(small, "%s", sg_last_error());
  sg_dispose(small);
}

Test(memory_limit, an_op_whose_output_would_cross_it_fails_and_the_next_that_fits_runs) {
  fresh_engine();
  const int64_t shape[2] = {1024, 1024}; /* 4 MiB of f32 */
  sg_tensor *x = sg_ones(shape, 2);
  cr_assert_not_null(x);
  sg_set_memory_limit(sg_memory().num_bytes + 6 * MIB);
  sg_tensor *y = sg_exp(x);
  cr_assert_not_null(y, "%s", sg_last_error());
  int64_t tensors = sg_memory().num_tensors, bytes = sg_memory().num_bytes;
  t_expect_error(sg_exp(x), SG_ERR_OOM, "exp", "[1024,1024]", "memory limit", NULL);
  cr_assert_eq(sg_memory().num_tensors, tensors);
  cr_assert_eq(sg_memory().num_bytes, bytes);
  sg_dispose(y);
  y = sg_exp(x);
  cr_assert_not_null(y, "%s", sg_last_error());
  cr_assert_float_eq(sg_data_f32(y)[12345], 2.7182817f, 1e-6f);
  sg_dispose(y);
  sg_dispose(x);
}

/* The forward pass fits and the backward pass does not: tape_end fails, naming the op whose
   gradient ran out, and leaves nothing behind. */
Test(memory_limit, a_backward_pass_over_it_fails_naming_the_op) {
  fresh_engine();
  sg_memory_info base = sg_memory();
  sg_scope_begin("step");
  sg_tensor *x = sg_ones((int64_t[]){512, 512}, 2); /* 1 MiB */
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *l = sg_sum(sg_mul(x, x), NULL, 0, false);
  cr_assert_not_null(l, "%s", sg_last_error());
  sg_set_memory_limit(sg_memory().num_bytes + MIB + MIB / 2);
  sg_tensor *grad = NULL;
  cr_assert_eq(sg_tape_end(l, NULL, &x, 1, &grad), SG_ERR_OOM);
  cr_assert_null(grad);
  cr_assert(strstr(sg_last_error(), "mul backward") && strstr(sg_last_error(), "[512,512]") &&
                strstr(sg_last_error(), "memory limit"),
            "%s", sg_last_error());
  sg_clear_error();
  sg_scope_end(NULL, 0);
  cr_assert_eq(sg_memory().num_tensors, base.num_tensors);
  cr_assert_eq(sg_memory().num_bytes, base.num_bytes);
  sg_set_memory_limit(0);
  sg_scope_begin("again");
  x = sg_ones((int64_t[]){512, 512}, 2);
  cr_assert_eq(sg_tape_begin(), SG_OK);
  l = sg_sum(sg_mul(x, x), NULL, 0, false);
  cr_assert_eq(sg_tape_end(l, NULL, &x, 1, &grad), SG_OK, "%s", sg_last_error());
  cr_assert_float_eq(sg_data_f32(grad)[7], 2.0f, 0.0f);
  sg_scope_end(NULL, 0);
}

/* A 4 MiB block kept in the cache and a 5 MiB request under a 6 MiB limit: the cache goes
   back to the system first, and the request is met. */
Test(memory_limit, the_cache_is_released_before_a_request_is_refused) {
  fresh_engine();
  sg_tensor *a = sg_zeros((int64_t[]){MIB}, 1);
  cr_assert_not_null(a);
  sg_dispose(a);
  sg_set_memory_limit(6 * MIB);
  sg_tensor *b = sg_zeros((int64_t[]){5 * MIB / 4}, 1);
  cr_assert_not_null(b, "%s", sg_last_error());
  sg_memory_info m = sg_memory();
  cr_assert_leq(m.num_bytes + m.num_bytes_cached, 6 * MIB);
  cr_assert_eq(m.num_bytes_cached, 0);
  sg_dispose(b);
}

Test(memory_limit, a_byte_count_that_overflows_is_refused_as_before) {
  fresh_engine();
  sg_set_memory_limit(64 * MIB);
  t_expect_error(sg_zeros((int64_t[]){INT64_MAX / 4, 8}, 2), SG_ERR_SHAPE,
                 "more elements than fit in memory", NULL);
}

/* ---- SIMDGRAD_MEMORY_LIMIT --------------------------------------------------------------- */

typedef struct env_case {
  char value[32];
  int64_t want; /* -1: refused */
} env_case;

ParameterizedTestParameters(memory_limit, environment) {
  static env_case cases[] = {
      {"0", 0},
      {"123", 123},
      {"4k", 4096},
      {"512M", 512 * MIB},
      {"2G", 2048 * MIB},
      {"1T", 1024 * 1024 * MIB},
      {"garbage", -1},
      {"-1", -1},
      {"+5", -1},
      {" 5", -1},
      {"5 ", -1},
      {"12Q", -1},
      {"1.5G", -1},
      {"512MB", -1},
      {"99999999999999999999", -1}, /* past 2^64 */
      {"9223372036854775808", -1},  /* 2^63 */
      {"9000000000G", -1},          /* fits in 64 bits, not once multiplied */
      {"9223372036854775807", INT64_MAX},
  };
  return cr_make_param_array(env_case, cases, sizeof cases / sizeof cases[0]);
}

ParameterizedTest(env_case *c, memory_limit, environment) {
  setenv("SIMDGRAD_MEMORY_LIMIT", c->value, 1);
  sg_status st = sg_init();
  if (c->want >= 0) {
    cr_assert_eq(st, SG_OK, "%s: %s", c->value, sg_last_error());
    cr_assert_eq(sg_memory_limit(), c->want, "%s", c->value);
    return;
  }
  cr_assert_eq(st, SG_ERR_ARG, "%s was accepted", c->value);
  cr_assert(strstr(sg_last_error(), "SIMDGRAD_MEMORY_LIMIT") && strstr(sg_last_error(), c->value) &&
                strstr(sg_last_error(), "no limit"),
            "%s", sg_last_error());
  cr_assert_eq(sg_memory_limit(), 0);
}
