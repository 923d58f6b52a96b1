/* Bit-identical results for 1 and 2 threads, for the op families whose own test files do not
 * check it: every unary op of backend.h's lists, pooling, transpose, gather (and its backward,
 * scatter_add), tile and softmax, each forward and backward through the tape on inputs large
 * enough for the parallel-for to split. Chunk boundaries depend on the sizes only, and partial
 * results combine in chunk order, so nothing may change with the thread count. */
#include <string.h>

#include "support.h"

typedef sg_tensor *(*one_input_op)(sg_tensor *x);

/* y = op(x) and dx for dy = ones, kept past the caller's scope. */
static void run(one_input_op op, sg_tensor *x, sg_tensor **y, sg_tensor **dx) {
  sg_scope_begin("run");
  cr_assert_eq(sg_tape_begin(), SG_OK);
  *y = op(x);
  cr_assert_not_null(*y, "%s", sg_last_error());
  cr_assert_eq(sg_tape_end(*y, NULL, &x, 1, dx), SG_OK, "%s", sg_last_error());
  sg_keep(*y);
  sg_keep(*dx);
  sg_scope_end(NULL, 0);
}

static bool same_bits(const sg_tensor *a, const sg_tensor *b) {
  return sg_numel(a) == sg_numel(b) &&
         memcmp(sg_data_f32(a), sg_data_f32(b), (size_t)sg_numel(a) * sizeof(float)) == 0;
}

static void check(const char *name, one_input_op op, sg_tensor *x) {
  int saved = sg_threads();
  sg_tensor *y[2], *dx[2];
  for (int t = 0; t < 2; t++) {
    sg_set_threads(t + 1);
    run(op, x, &y[t], &dx[t]);
  }
  sg_set_threads(saved);
  cr_assert(same_bits(y[0], y[1]), "%s: the output differs between 1 and 2 threads", name);
  cr_assert(same_bits(dx[0], dx[1]), "%s: the gradient differs between 1 and 2 threads", name);
  for (int t = 0; t < 2; t++) {
    sg_dispose(y[t]);
    sg_dispose(dx[t]);
  }
}

/* 2^18 + 7 elements in (0.1, 2): inside every unary op's domain, several chunks, a tail. */
static sg_tensor *vector_input(void) {
  const int64_t n = (1 << 18) + 7;
  return sg_random_uniform(&n, 1, 0.1f, 2.0f, 17);
}

#define UNARY_CASE_(name, saved, doc)                                                              \
  static sg_tensor *call_##name(sg_tensor *x) { return sg_##name(x); }
SG_FOR_EACH_UNARY_OP(UNARY_CASE_)

Test(threads, every_unary_op_is_bit_identical) {
  int64_t live = t_live_tensors();
  sg_tensor *x = vector_input();
#define UNARY_CHECK_(name, saved, doc) check(#name, call_##name, x);
  SG_FOR_EACH_UNARY_OP(UNARY_CHECK_)
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live);
}

static sg_tensor *max_pool3(sg_tensor *x) {
  static const int64_t k[2] = {3, 3}, s[2] = {2, 2};
  return sg_max_pool(x, k, s, SG_PADDING_SAME, NULL);
}
static sg_tensor *avg_pool3(sg_tensor *x) {
  static const int64_t k[2] = {3, 3}, s[2] = {2, 2};
  return sg_avg_pool(x, k, s, SG_PADDING_SAME, NULL);
}
static sg_tensor *transpose_021(sg_tensor *x) {
  static const int perm[3] = {0, 2, 1};
  return sg_transpose(x, perm);
}
static sg_tensor *tile_2x(sg_tensor *x) {
  static const int64_t reps[3] = {2, 1, 3};
  return sg_tile(x, reps);
}
static sg_tensor *softmax_last(sg_tensor *x) { return sg_softmax(x, 2); }
static sg_tensor *softmax_middle(sg_tensor *x) { return sg_softmax(x, 1); }
/* Rows picked with repeats, so that the backward's scatter_add sums into the same rows. */
static sg_tensor *gather_rows(sg_tensor *x) {
  enum { PICKS = 3000 };
  static int32_t idx[PICKS];
  for (int i = 0; i < PICKS; i++) idx[i] = (int32_t)((i * 7919) % sg_shape(x)[0]);
  const int64_t n = PICKS;
  sg_tensor *indices = sg_tensor_i32(idx, &n, 1);
  sg_tensor *y = sg_gather(x, indices, 0);
  sg_dispose(indices);
  return y;
}

Test(threads, window_and_shape_ops_are_bit_identical) {
  int64_t live = t_live_tensors();
  const int64_t img[4] = {8, 40, 40, 17}, cube[3] = {37, 129, 131};
  sg_tensor *xi = sg_random_uniform(img, 4, -1, 1, 3), *xc = sg_random_uniform(cube, 3, -3, 3, 4);
  check("max_pool", max_pool3, xi);
  check("avg_pool", avg_pool3, xi);
  check("transpose", transpose_021, xc);
  check("tile", tile_2x, xc);
  check("softmax over the last axis", softmax_last, xc);
  check("softmax over a middle axis", softmax_middle, xc);
  check("gather", gather_rows, xc);
  sg_dispose(xi);
  sg_dispose(xc);
  cr_assert_eq(t_live_tensors(), live);
}
