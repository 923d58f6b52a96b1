/* sg_backend_checked: one test per precondition (the call reports it through sg_last_error()
 * and leaves its outputs untouched), and valid calls giving the real kernels' results, bit for
 * bit, on every available backend. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

static const char *const k_backends[] = {"scalar", "avx2", "avx512", "neon"};

#define CANARY 12345.0f

/* The checked twin of the current backend, with no error pending. */
static const sg_backend *checked(void) {
  sg_clear_error();
  const sg_backend *c = sg_backend_checked(NULL);
  cr_assert_not_null(c);
  return c;
}

/* The last call failed with st, and its message names the slot and holds the fragment. */
static void expect_rejected(sg_status st, const char *slot, const char *fragment) {
  char want[96];
  snprintf(want, sizeof want, "checked kernel %s: ", slot);
  cr_expect_eq(sg_last_status(), st, "status %d, want %d (%s)", sg_last_status(), st,
               sg_last_error());
  cr_expect(strstr(sg_last_error(), want) != NULL, "message \"%s\" lacks \"%s\"", sg_last_error(),
            want);
  cr_expect(strstr(sg_last_error(), fragment) != NULL, "message \"%s\" lacks \"%s\"",
            sg_last_error(), fragment);
  sg_clear_error();
}

static void expect_untouched(const float *y, size_t n) {
  for (size_t i = 0; i < n; i++) cr_expect_eq(y[i], CANARY, "output [%zu] was written", i);
}

static void expect_accepted(void) {
  cr_expect_eq(sg_last_status(), SG_OK, "a valid call was rejected: %s", sg_last_error());
  sg_clear_error();
}

Test(checked, tables) {
  for (int i = 0; i < 4; i++) {
    const sg_backend *real = sg_backend_get(k_backends[i]);
    const sg_backend *c = sg_backend_checked(k_backends[i]);
    if (!real) {
      cr_expect_null(c, "%s is not available, neither is its checked twin", k_backends[i]);
      continue;
    }
    cr_assert_not_null(c);
    char name[32];
    snprintf(name, sizeof name, "checked:%s", k_backends[i]);
    cr_expect_str_eq(c->name, name);
    cr_expect_eq(c->size, sizeof(sg_backend));
    cr_expect_eq(c->abi_version, SG_BACKEND_ABI_VERSION);
    cr_expect(c->exp != real->exp && c->gemm != real->gemm && c->adam_update != real->adam_update);
    cr_expect_eq(sg_backend_checked(k_backends[i]), c, "one table per backend");
  }
  cr_expect_null(sg_backend_checked("sse2"));
  cr_expect_str_eq(sg_backend_checked(NULL)->name + strlen("checked:"), sg_backend_name());
}

Test(checked, null_with_elements) {
  const sg_backend *c = checked();
  float y[4] = {CANARY, CANARY, CANARY, CANARY}, x[4] = {1, 2, 3, 4};
  c->exp(NULL, y, 4);
  expect_rejected(SG_ERR_ARG, "exp", "x is NULL with 4 elements");
  expect_untouched(y, 4);
  c->add(x, 1, NULL, 0, y, 4);
  expect_rejected(SG_ERR_ARG, "add", "b is NULL with 1 elements");
  c->mul_backward(x, x, 1, x, 1, NULL, NULL, y, 4); /* da NULL is allowed, y unread for mul */
  expect_accepted();
  c->pow_backward(x, x, 1, x, 1, NULL, NULL, y, 4); /* pow reads y */
  expect_rejected(SG_ERR_ARG, "pow_backward", "y is NULL");
  c->exp_backward(x, NULL, x, y, 4); /* exp saves y: x may be NULL */
  expect_accepted();
  c->log_backward(x, NULL, x, y, 4); /* log saves x */
  expect_rejected(SG_ERR_ARG, "log_backward", "x is NULL");
  c->gemm(2, 2, 2, x, 2, false, NULL, 2, false, 0.0f, y, 2);
  expect_rejected(SG_ERR_ARG, "gemm", "b is NULL");
  c->fill(NULL, 3, 1.0f);
  expect_rejected(SG_ERR_ARG, "fill", "y is NULL");
  c->cast_f32_i32(x, NULL, 4);
  expect_rejected(SG_ERR_ARG, "cast_f32_i32", "y is NULL with 4 elements");
  for (int i = 0; i < 4; i++) y[i] = CANARY;
  c->cast_i32_f32(NULL, y, 4);
  expect_rejected(SG_ERR_ARG, "cast_i32_f32", "x is NULL with 4 elements");
  expect_untouched(y, 4);
  /* n == 0 touches nothing: NULL is fine. */
  c->exp(NULL, NULL, 0);
  c->gemm(0, 0, 5, NULL, 5, false, NULL, 0, false, 0.0f, NULL, 0);
  c->adam_update(NULL, NULL, NULL, NULL, 0, 1, 0.9f, 0.999f, 1, 1e-8f);
  expect_accepted();
}

Test(checked, sizes_that_overflow) {
  const sg_backend *c = checked();
  float x[4] = {1, 2, 3, 4}, y[4] = {CANARY, CANARY, CANARY, CANARY};
  c->relu(x, y, SIZE_MAX / 2);
  expect_rejected(SG_ERR_SHAPE, "relu", "more than memory holds");
  c->reduce_sum(x, SIZE_MAX / 4, 8, 2, y);
  expect_rejected(SG_ERR_SHAPE, "reduce_sum", "overflows");
  c->softmax(x, (size_t)1 << 40, (size_t)1 << 40, 1, y);
  expect_rejected(SG_ERR_SHAPE, "softmax", "overflows");
  c->gemm(SIZE_MAX / 8, 1, 1, x, SIZE_MAX / 8, false, x, 1, false, 0.0f, y, 1);
  expect_rejected(SG_ERR_SHAPE, "gemm", "overflow");
  expect_untouched(y, 4);
}

Test(checked, leading_dimensions) {
  const sg_backend *c = checked();
  float a[12] = {0}, b[12] = {0}, y[12];
  for (int i = 0; i < 12; i++) y[i] = CANARY;
  /* m = 2, n = 2, k = 3: A is 2 x 3 (lda >= 3), or 3 x 2 transposed (lda >= 2). */
  c->gemm(2, 2, 3, a, 2, false, b, 2, false, 0.0f, y, 2);
  expect_rejected(SG_ERR_ARG, "gemm", "lda is 2, less than the 3 columns of a");
  c->gemm(2, 2, 3, a, 1, true, b, 2, false, 0.0f, y, 2);
  expect_rejected(SG_ERR_ARG, "gemm", "lda is 1, less than the 2 columns of a");
  c->gemm(2, 2, 3, a, 3, false, b, 1, false, 0.0f, y, 2);
  expect_rejected(SG_ERR_ARG, "gemm", "ldb is 1");
  c->gemm(2, 2, 3, a, 3, false, b, 2, true, 0.0f, y, 2);
  expect_rejected(SG_ERR_ARG, "gemm", "ldb is 2, less than the 3 columns of b");
  c->gemm(2, 2, 3, a, 3, false, b, 2, false, 0.0f, y, 1);
  expect_rejected(SG_ERR_ARG, "gemm", "ldc is 1");
  expect_untouched(y, 12);
  const float *ap[1] = {a}, *bp[1] = {b};
  c->gemm_taps(2, 2, 3, 1, ap, 2, false, bp, 2, 0.0f, y, 2);
  expect_rejected(SG_ERR_ARG, "gemm_taps", "lda is 2");
  c->gemm(2, 2, 3, a, 3, false, b, 2, false, 0.0f, y, 2);
  expect_accepted();
}

Test(checked, steps) {
  const sg_backend *c = checked();
  float x[4] = {1, 2, 3, 4}, y[4] = {CANARY, CANARY, CANARY, CANARY};
  uint8_t m[4];
  c->sub(x, 2, x, 1, y, 2);
  expect_rejected(SG_ERR_ARG, "sub", "a_step is 2");
  c->less(x, 1, x, 3, m, 2);
  expect_rejected(SG_ERR_ARG, "less", "b_step is 3");
  c->where(m, 5, x, 1, x, 1, y, 2);
  expect_rejected(SG_ERR_ARG, "where", "c_step is 5");
  expect_untouched(y, 4);
}

Test(checked, empty_axis_of_argmax) {
  const sg_backend *c = checked();
  float x[4] = {1, 2, 3, 4};
  int32_t y[2] = {-7, -7};
  c->argmax(x, 2, 0, 1, y);
  expect_rejected(SG_ERR_SHAPE, "argmax", "r is 0");
  c->argmin(x, 1, 0, 2, y);
  expect_rejected(SG_ERR_SHAPE, "argmin", "r is 0");
  cr_expect(y[0] == -7 && y[1] == -7, "nothing written");
  c->argmax(x, 2, 2, 1, y);
  expect_accepted();
  cr_expect(y[0] == 1 && y[1] == 1);
}

Test(checked, transpose_rank_and_perm) {
  const sg_backend *c = checked();
  float x[8] = {0}, y[8] = {CANARY, CANARY, CANARY, CANARY, CANARY, CANARY, CANARY, CANARY};
  const int64_t shape9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  const int perm9[9] = {8, 7, 6, 5, 4, 3, 2, 1, 0};
  c->transpose(x, shape9, perm9, 9, y);
  expect_rejected(SG_ERR_SHAPE, "transpose", "rank is 9, outside [0, 8]");
  c->transpose(x, shape9, perm9, -1, y);
  expect_rejected(SG_ERR_SHAPE, "transpose", "rank is -1");
  const int64_t shape[2] = {2, 4};
  const int twice[2] = {0, 0}, out_of_range[2] = {1, 2};
  c->transpose(x, shape, twice, 2, y);
  expect_rejected(SG_ERR_ARG, "transpose", "not a permutation");
  c->transpose(x, shape, out_of_range, 2, y);
  expect_rejected(SG_ERR_ARG, "transpose", "not a permutation");
  const int64_t negative[2] = {2, -4};
  const int perm[2] = {1, 0};
  c->transpose(x, negative, perm, 2, y);
  expect_rejected(SG_ERR_SHAPE, "transpose", "shape[1] is -4");
  expect_untouched(y, 8);
}

Test(checked, partial_overlap) {
  const sg_backend *c = checked();
  float buf[16];
  for (int i = 0; i < 16; i++) buf[i] = (float)i + 1;
  c->exp(buf, buf + 1, 8);
  expect_rejected(SG_ERR_ARG, "exp", "output y partially overlaps input x");
  c->add(buf, 1, buf + 8, 0, buf + 8, 4); /* y runs over the broadcast b */
  expect_rejected(SG_ERR_ARG, "add", "partially overlaps input b");
  c->mul_backward(buf, buf, 1, buf, 1, NULL, buf + 4, buf + 6, 4);
  expect_rejected(SG_ERR_ARG, "mul_backward", "overlap");
  c->gemm(2, 2, 2, buf, 2, false, buf + 4, 2, false, 0.0f, buf, 2); /* c == a: not in place */
  expect_rejected(SG_ERR_ARG, "gemm", "output c overlaps input a");
  const int64_t shape[2] = {2, 2};
  const int perm[2] = {1, 0};
  c->transpose(buf, shape, perm, 2, buf);
  expect_rejected(SG_ERR_ARG, "transpose", "does not work in place");
  c->adam_update(buf, buf + 4, buf + 4, buf + 12, 4, 0.1f, 0.9f, 0.999f, 1, 1e-8f);
  expect_rejected(SG_ERR_ARG, "adam_update", "overlap");
  c->softmax_cross_entropy(buf, buf + 4, 1, 4, buf + 12, buf); /* log_probs over labels */
  expect_rejected(SG_ERR_ARG, "softmax_cross_entropy", "log_probs overlaps input labels");
  c->cast_f32_i32(buf, (int32_t *)(void *)(buf + 2), 8);
  expect_rejected(SG_ERR_ARG, "cast_f32_i32", "output y partially overlaps input x");
  for (int i = 0; i < 16; i++) cr_expect_eq(buf[i], (float)i + 1, "buf[%d] was written", i);

  /* The in-place form: the same start and length. */
  float want[8];
  sg_backend_current()->exp(buf, want, 8);
  c->exp(buf, buf, 8);
  expect_accepted();
  cr_expect_arr_eq(buf, want, sizeof want);
  int32_t want_i[8];
  sg_backend_current()->cast_f32_i32(buf, want_i, 8);
  c->cast_f32_i32(buf, (int32_t *)(void *)buf, 8);
  expect_accepted();
  cr_expect_arr_eq(buf, want_i, sizeof want_i);
}

Test(checked, window_geometry) {
  const sg_backend *c = checked();
  float x[16] = {0}, y[16], f[16] = {0};
  for (int i = 0; i < 16; i++) y[i] = CANARY;
  sg_window2d g = {.batch = 1,
                   .in_h = 2,
                   .in_w = 2,
                   .in_c = 1,
                   .out_h = 2,
                   .out_w = 2,
                   .out_c = 1,
                   .k_h = 2,
                   .k_w = 2,
                   .stride_h = 1,
                   .stride_w = 1,
                   .dilation_h = 1,
                   .dilation_w = 1,
                   .multiplier = 1};
  sg_window2d bad = g;
  bad.stride_w = 0;
  c->max_pool(&bad, x, 0, 2, y);
  expect_rejected(SG_ERR_ARG, "max_pool", "stride 1x0");
  c->max_pool(&g, x, 1, 3, y);
  expect_rejected(SG_ERR_ARG, "max_pool", "[oh0, oh1) = [1, 3) is not inside [0, 2)");
  c->im2col(&g, x, 0, 5, y);
  expect_rejected(SG_ERR_ARG, "im2col", "[p0, p1) = [0, 5)");
  bad = g;
  bad.out_c = 3; /* depthwise: in_c 1 x multiplier 1 */
  c->depthwise_conv2d(&bad, x, f, 0, 2, y);
  expect_rejected(SG_ERR_SHAPE, "depthwise_conv2d", "out_c 3 is not in_c 1 x multiplier 1");
  c->avg_pool(NULL, x, 0, 2, y);
  expect_rejected(SG_ERR_ARG, "avg_pool", "g is NULL");
  expect_untouched(y, 16);
  c->max_pool(&g, x, 0, 2, y);
  expect_accepted();
}

/* ---- Valid calls: the checked kernels give the real ones' results ---------------------------- */

#define N 37 /* several vectors and a tail on every ISA */

static void inputs(float *a, float *b, float *dy) {
  for (int i = 0; i < N; i++) {
    a[i] = 0.25f + 0.05f * (float)i; /* in every unary op's domain */
    b[i] = (i % 3 == 0) ? a[i] : 1.5f - 0.02f * (float)i;
    dy[i] = 0.5f - 0.03f * (float)i;
  }
}

#define SAME(what, x, y) cr_expect_arr_eq(x, y, sizeof(x), "%s: %s differs", be, what)

Test(checked, valid_calls_match_the_real_kernels) {
  for (int bi = 0; bi < 4; bi++) {
    const char *be = k_backends[bi];
    const sg_backend *r = sg_backend_get(be), *c = sg_backend_checked(be);
    if (!r) continue;
    sg_clear_error();
    float a[N], b[N], dy[N], y1[N], y2[N], d1[N], d2[N];
    uint8_t m1[N], m2[N];
    inputs(a, b, dy);
#define UNARY_(name, saved, doc)                                                                   \
  r->name(a, y1, N);                                                                               \
  c->name(a, y2, N);                                                                               \
  SAME(#name, y1, y2);                                                                             \
  r->name##_backward(dy, a, y1, d1, N);                                                            \
  c->name##_backward(dy, a, y1, d2, N);                                                            \
  SAME(#name "_backward", d1, d2);
    SG_FOR_EACH_UNARY_OP(UNARY_)
#define STEP_(name, doc)                                                                           \
  r->name(a, y1, N);                                                                               \
  c->name(a, y2, N);                                                                               \
  SAME(#name, y1, y2);
    SG_FOR_EACH_STEP_OP(STEP_)
#define BINARY_(name, doc)                                                                         \
  r->name(a, 1, b, 0, y1, N);                                                                      \
  c->name(a, 1, b, 0, y2, N);                                                                      \
  SAME(#name, y1, y2);                                                                             \
  r->name##_backward(dy, a, 1, b, 1, y1, d1, y1, N);                                               \
  c->name##_backward(dy, a, 1, b, 1, y2, d2, y2, N);                                               \
  SAME(#name "_backward", d1, d2);
    SG_FOR_EACH_BINARY_OP(BINARY_)
#define COMPARE_(name, doc)                                                                        \
  r->name(a, 1, b, 1, m1, N);                                                                      \
  c->name(a, 1, b, 1, m2, N);                                                                      \
  SAME(#name, m1, m2);
    SG_FOR_EACH_COMPARE_OP(COMPARE_)
#define REDUCE_(name, doc)                                                                         \
  memset(y1, 0, sizeof y1);                                                                        \
  memset(y2, 0, sizeof y2);                                                                        \
  r->reduce_##name(a, 1, N, 1, y1);                                                                \
  c->reduce_##name(a, 1, N, 1, y2);                                                                \
  SAME("reduce_" #name, y1, y2);                                                                   \
  r->reduce_##name##_backward(dy, a, y1, 1, N, 1, d1);                                             \
  c->reduce_##name##_backward(dy, a, y1, 1, N, 1, d2);                                             \
  SAME("reduce_" #name "_backward", d1, d2);
    SG_FOR_EACH_REDUCE_OP(REDUCE_)

    int32_t i1[1], i2[1];
    r->argmin(b, 1, N, 1, i1);
    c->argmin(b, 1, N, 1, i2);
    SAME("argmin", i1, i2);
    r->softmax(a, 1, N, 1, y1);
    c->softmax(a, 1, N, 1, y2);
    SAME("softmax", y1, y2);
    r->log_softmax_backward(dy, y1, 1, N, 1, d1);
    c->log_softmax_backward(dy, y1, 1, N, 1, d2);
    SAME("log_softmax_backward", d1, d2);
    r->clip(a, y1, N, 0.5f, 1.5f);
    c->clip(a, y2, N, 0.5f, 1.5f);
    SAME("clip", y1, y2);
    for (int i = 0; i < N; i++) m1[i] = (uint8_t)(i & 1);
    r->where(m1, 1, a, 1, b, 0, y1, N);
    c->where(m1, 1, a, 1, b, 0, y2, N);
    SAME("where", y1, y2);

    float loss1[1], loss2[1];
    r->softmax_cross_entropy(b, a, 1, N, loss1, y1);
    c->softmax_cross_entropy(b, a, 1, N, loss2, y2);
    SAME("softmax_cross_entropy", y1, y2);
    SAME("softmax_cross_entropy loss", loss1, loss2);

    /* gemm 5 x 6 x 7 with strides beyond the rows, transposed B. */
    float A[5 * 8], B[6 * 9], C1[5 * 7], C2[5 * 7];
    for (int i = 0; i < 5 * 8; i++) A[i] = 0.1f * (float)(i % 11) - 0.3f;
    for (int i = 0; i < 6 * 9; i++) B[i] = 0.2f * (float)(i % 7) - 0.5f;
    for (int i = 0; i < 5 * 7; i++) C1[i] = C2[i] = 1.0f;
    r->gemm(5, 6, 7, A, 8, false, B, 9, true, 0.5f, C1, 7);
    c->gemm(5, 6, 7, A, 8, false, B, 9, true, 0.5f, C2, 7);
    SAME("gemm", C1, C2);

    const int64_t shape[3] = {2, 3, 6};
    const int perm[3] = {2, 0, 1};
    float T1[36], T2[36], X[36];
    for (int i = 0; i < 36; i++) X[i] = (float)i;
    r->transpose(X, shape, perm, 3, T1);
    c->transpose(X, shape, perm, 3, T2);
    SAME("transpose", T1, T2);

    float w1[N], w2[N], m1f[N], m2f[N], v1[N], v2[N];
    memcpy(w1, a, sizeof w1);
    memcpy(w2, a, sizeof w2);
    memset(m1f, 0, sizeof m1f);
    memset(m2f, 0, sizeof m2f);
    memset(v1, 0, sizeof v1);
    memset(v2, 0, sizeof v2);
    r->adam_update(w1, m1f, v1, dy, N, 0.01f, 0.9f, 0.999f, 1.0f, 1e-8f);
    c->adam_update(w2, m2f, v2, dy, N, 0.01f, 0.9f, 0.999f, 1.0f, 1e-8f);
    SAME("adam_update w", w1, w2);
    SAME("adam_update v", v1, v2);
    cr_expect_eq(sg_last_status(), SG_OK, "%s: a valid call was rejected: %s", be, sg_last_error());
  }
}
