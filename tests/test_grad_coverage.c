/* Every op of the public API either back-propagates through the tape or is listed here as
 * having no gradient, as TensorFlow.js treats it. A new op that records no gradient and is not
 * in the non-differentiable list fails this test. (Numerical correctness of each gradient is
 * checked by gc_check in the per-family tests.) */
#include <string.h>

#include "support.h"

typedef sg_tensor *(*op_fn)(sg_tensor *a, sg_tensor *b);

#define UNARY(name)                                                                                \
  static sg_tensor *call_##name(sg_tensor *a, sg_tensor *b) {                                      \
    (void)b;                                                                                       \
    return sg_##name(a);                                                                           \
  }
#define BINARY(name)                                                                               \
  static sg_tensor *call_##name(sg_tensor *a, sg_tensor *b) { return sg_##name(a, b); }
#define REDUCE(name)                                                                               \
  static sg_tensor *call_##name(sg_tensor *a, sg_tensor *b) {                                      \
    (void)b;                                                                                       \
    int axis = 1;                                                                                  \
    return sg_##name(a, &axis, 1, false);                                                          \
  }

#define OP_STEP_UNARY(name, doc) UNARY(name)
#define OP_UNARY(name, saved, doc) UNARY(name)
#define OP_BINARY(name, doc) BINARY(name)
#define OP_COMPARE(name, doc) BINARY(name)
#define OP_REDUCE(name, doc) REDUCE(name)
SG_FOR_EACH_UNARY_OP(OP_UNARY)
SG_FOR_EACH_STEP_OP(OP_STEP_UNARY)
SG_FOR_EACH_BINARY_OP(OP_BINARY)
SG_FOR_EACH_COMPARE_OP(OP_COMPARE)
REDUCE(mean)
SG_FOR_EACH_REDUCE_OP(OP_REDUCE)

static sg_tensor *call_leaky_relu(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return sg_leaky_relu(a, 0.1f);
}
static sg_tensor *call_clip(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return sg_clip(a, 0.2f, 0.8f);
}
static sg_tensor *call_where(sg_tensor *a, sg_tensor *b) {
  sg_tensor *c = sg_greater(a, b);
  sg_tensor *y = sg_where(c, a, b);
  sg_dispose(c);
  return y;
}
static sg_tensor *call_matmul(sg_tensor *a, sg_tensor *b) { return sg_matmul(a, b, false, true); }
static sg_tensor *call_argmax(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return sg_argmax(a, 1);
}
static sg_tensor *call_argmin(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return sg_argmin(a, 1);
}
static sg_tensor *call_softmax(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return sg_softmax(a, -1);
}
static sg_tensor *call_log_softmax(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return sg_log_softmax(a, -1);
}
static sg_tensor *call_softmax_cross_entropy(sg_tensor *a, sg_tensor *b) {
  sg_tensor *labels = sg_softmax(b, -1);
  sg_tensor *y = sg_softmax_cross_entropy(labels, a);
  sg_dispose(labels);
  return y;
}
static sg_tensor *call_reshape(sg_tensor *a, sg_tensor *b) {
  (void)b;
  int64_t s[] = {6};
  return sg_reshape(a, s, 1);
}
static sg_tensor *call_transpose(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return sg_transpose(a, NULL);
}
static sg_tensor *call_slice(sg_tensor *a, sg_tensor *b) {
  (void)b;
  int64_t begin[] = {0, 1}, size[] = {-1, 2};
  return sg_slice(a, begin, size);
}
static sg_tensor *call_concat(sg_tensor *a, sg_tensor *b) {
  sg_tensor *xs[] = {a, b};
  return sg_concat(xs, 2, 0);
}
static sg_tensor *call_pad(sg_tensor *a, sg_tensor *b) {
  (void)b;
  int64_t p[] = {1, 0, 0, 2};
  return sg_pad(a, p, 0.5f);
}
static sg_tensor *call_tile(sg_tensor *a, sg_tensor *b) {
  (void)b;
  int64_t r[] = {2, 1};
  return sg_tile(a, r);
}
static sg_tensor *call_gather(sg_tensor *a, sg_tensor *b) {
  (void)b;
  int32_t iv[] = {2, 0, 2};
  int64_t s[] = {3};
  sg_tensor *idx = sg_tensor_i32(iv, s, 1);
  sg_tensor *y = sg_gather(a, idx, 1);
  sg_dispose(idx);
  return y;
}
static sg_tensor *call_cast(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return sg_cast(a, SG_F32);
}
static sg_tensor *call_cast_i32(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return sg_cast(a, SG_I32);
}

/* The window ops see a as one [1, 2, 3, 1] image (a reshape, which passes the gradient on);
   the convolutions take b as a [2, 3, 1, 1] filter. */
static sg_tensor *as_image(sg_tensor *a) { return sg_reshape(a, (const int64_t[]){1, 2, 3, 1}, 4); }
typedef sg_tensor *(*conv_op)(sg_tensor *, sg_tensor *, const int64_t *, sg_padding,
                              const int64_t *, const int64_t *);
static sg_tensor *call_conv(conv_op op, sg_tensor *a, sg_tensor *b) {
  sg_tensor *x = as_image(a), *f = sg_reshape(b, (const int64_t[]){2, 3, 1, 1}, 4);
  sg_tensor *y = op(x, f, NULL, SG_PADDING_SAME, NULL, NULL);
  sg_dispose(x);
  sg_dispose(f);
  return y;
}
static sg_tensor *call_conv2d(sg_tensor *a, sg_tensor *b) { return call_conv(sg_conv2d, a, b); }
static sg_tensor *call_depthwise_conv2d(sg_tensor *a, sg_tensor *b) {
  return call_conv(sg_depthwise_conv2d, a, b);
}
static sg_tensor *call_max_pool(sg_tensor *a, sg_tensor *b) {
  (void)b;
  sg_tensor *x = as_image(a);
  sg_tensor *y =
      sg_max_pool(x, (const int64_t[]){1, 2}, (const int64_t[]){1, 1}, SG_PADDING_SAME, NULL);
  sg_dispose(x);
  return y;
}
static sg_tensor *call_avg_pool(sg_tensor *a, sg_tensor *b) {
  (void)b;
  sg_tensor *x = as_image(a);
  sg_tensor *y = sg_avg_pool(x, (const int64_t[]){2, 2}, NULL, SG_PADDING_SAME, NULL);
  sg_dispose(x);
  return y;
}
/* Per channel (a's 3 columns): statistics and affine terms from b's rows. */
static sg_tensor *call_batch_norm(sg_tensor *a, sg_tensor *b) {
  sg_tensor *lo = sg_slice(b, (const int64_t[]){0, 0}, (const int64_t[]){1, -1}),
            *hi = sg_slice(b, (const int64_t[]){1, 0}, (const int64_t[]){1, -1});
  sg_tensor *y = sg_batch_norm(a, lo, hi, lo, hi, 1e-3f);
  sg_dispose(lo);
  sg_dispose(hi);
  return y;
}
/* sg_moments has two outputs: one case each, so both must back-propagate. */
static sg_tensor *moments_part(sg_tensor *a, bool variance) {
  sg_tensor *m = NULL, *v = NULL;
  if (sg_moments(a, (const int[]){1}, 1, false, &m, &v) != SG_OK) return NULL;
  sg_dispose(variance ? m : v);
  return variance ? v : m;
}
static sg_tensor *call_moments_mean(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return moments_part(a, false);
}
static sg_tensor *call_moments_variance(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return moments_part(a, true);
}
static sg_tensor *call_dropout(sg_tensor *a, sg_tensor *b) {
  (void)b;
  return sg_dropout(a, 0.25f, 7); /* keeps some of the 6 elements with this seed */
}
/* A float result of integer indices made from a: no gradient reaches a. */
static sg_tensor *call_one_hot(sg_tensor *a, sg_tensor *b) {
  (void)b;
  sg_tensor *scaled = sg_mul(a, a), *idx = sg_cast(scaled, SG_I32);
  sg_tensor *y = sg_one_hot(idx, 4);
  sg_dispose(scaled);
  sg_dispose(idx);
  return y;
}

typedef struct op_case {
  const char *name;
  op_fn fn;
  bool differentiable;
} op_case;

#define CASE_UNARY(name, saved, doc) {#name, call_##name, true},
#define CASE_STEP(name, doc) {#name, call_##name, false},
#define CASE_BINARY(name, doc) {#name, call_##name, true},
#define CASE_COMPARE(name, doc) {#name, call_##name, false},
#define CASE_REDUCE(name, doc) {#name, call_##name, true},

static const op_case k_cases[] = {
    SG_FOR_EACH_UNARY_OP(CASE_UNARY) SG_FOR_EACH_STEP_OP(CASE_STEP)
        SG_FOR_EACH_BINARY_OP(CASE_BINARY) SG_FOR_EACH_COMPARE_OP(CASE_COMPARE)
            SG_FOR_EACH_REDUCE_OP(CASE_REDUCE){"mean", call_mean, true},
    {"leaky_relu", call_leaky_relu, true},
    {"clip", call_clip, true},
    {"where", call_where, true},
    {"matmul", call_matmul, true},
    {"argmax", call_argmax, false},
    {"argmin", call_argmin, false},
    {"softmax", call_softmax, true},
    {"log_softmax", call_log_softmax, true},
    {"softmax_cross_entropy", call_softmax_cross_entropy, true},
    {"reshape", call_reshape, true},
    {"transpose", call_transpose, true},
    {"slice", call_slice, true},
    {"concat", call_concat, true},
    {"pad", call_pad, true},
    {"tile", call_tile, true},
    {"gather", call_gather, true},
    {"cast", call_cast, true},
    {"cast_to_i32", call_cast_i32, false},
    {"conv2d", call_conv2d, true},
    {"depthwise_conv2d", call_depthwise_conv2d, true},
    {"max_pool", call_max_pool, true},
    {"avg_pool", call_avg_pool, true},
    {"batch_norm", call_batch_norm, true},
    {"moments(mean)", call_moments_mean, true},
    {"moments(variance)", call_moments_variance, true},
    {"dropout", call_dropout, true},
    {"one_hot", call_one_hot, false},
};

Test(coverage, every_op_has_a_gradient_or_is_marked) {
  int64_t live = t_live_tensors();
  const float av[] = {0.3f, 0.6f, 0.2f, 0.9f, 0.4f, 0.7f},
              bv[] = {0.5f, 0.1f, 0.8f, 0.35f, 0.45f, 0.25f};
  const int64_t s[] = {2, 3};
  for (size_t i = 0; i < sizeof k_cases / sizeof k_cases[0]; i++) {
    const op_case *c = &k_cases[i];
    sg_scope_begin(c->name);
    sg_tensor *a = sg_tensor_f32(av, s, 2), *b = sg_tensor_f32(bv, s, 2);
    cr_assert_eq(sg_tape_begin(), SG_OK);
    sg_tensor *y = c->fn(a, b);
    cr_assert_not_null(y, "%s: forward failed: %s", c->name, sg_last_error());
    if (sg_dtype_of(y) != SG_F32) {
      cr_assert_not(c->differentiable, "%s returns a non-float tensor but is marked differentiable",
                    c->name);
      sg_tensor *g[2];
      sg_tape_end(NULL, NULL, NULL, 0, g); /* just close the tape */
      sg_clear_error();
      sg_scope_end(NULL, 0);
      continue;
    }
    sg_tensor *xs[] = {a, b}, *g[2];
    sg_status st = sg_tape_end(y, NULL, xs, 2, g);
    cr_assert_eq(st, SG_OK, "%s: back-propagation failed: %s", c->name, sg_last_error());
    /* The gradient of sum(y) w.r.t. a is non-zero for every differentiable op at these
       inputs; a zero gradient means the op recorded nothing. */
    bool any = false;
    for (int64_t k = 0; k < 6; k++) any |= sg_data_f32(g[0])[k] != 0.0f;
    cr_assert_eq(any, c->differentiable, "%s: gradient is %s but the op is marked %s", c->name,
                 any ? "non-zero" : "zero",
                 c->differentiable ? "differentiable" : "non-differentiable");
    sg_scope_end(NULL, 0);
  }
  cr_assert_eq(t_live_tensors(), live);
}
