/* Shape op tests: known values for reshape, transpose, slice, concat, pad, tile, gather,
 * one_hot and cast on f32, i32 and bool; an error for each bad input; finite-difference
 * gradients; the transpose and scatter_add kernels of every backend against scalar. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* ---- Helpers ---------------------------------------------------------------------------- */

static void expect_shape(const sg_tensor *t, int rank, const int64_t *shape) {
  cr_assert_not_null(t, "expected a tensor, got NULL: %s", sg_last_error());
  cr_assert_eq(sg_rank(t), rank, "rank %d, want %d", sg_rank(t), rank);
  for (int i = 0; i < rank; i++)
    cr_assert_eq(sg_shape(t)[i], shape[i], "dim %d is %lld, want %lld", i,
                 (long long)sg_shape(t)[i], (long long)shape[i]);
}

static void expect_i32(const sg_tensor *t, const int32_t *want, int rank, const int64_t *shape) {
  expect_shape(t, rank, shape);
  cr_assert_eq(sg_dtype_of(t), SG_I32);
  const int32_t *got = sg_data_i32(t);
  for (int64_t i = 0; i < sg_numel(t); i++)
    cr_assert_eq(got[i], want[i], "element %lld: got %d, want %d", (long long)i, got[i], want[i]);
}

static void expect_bool(const sg_tensor *t, const uint8_t *want, int rank, const int64_t *shape) {
  expect_shape(t, rank, shape);
  cr_assert_eq(sg_dtype_of(t), SG_BOOL);
  const uint8_t *got = sg_data_bool(t);
  for (int64_t i = 0; i < sg_numel(t); i++)
    cr_assert_eq(got[i], want[i], "element %lld: got %d, want %d", (long long)i, got[i], want[i]);
}

static const float k_f6[] = {1, 2, 3, 4, 5, 6};
static const int32_t k_i6[] = {1, 2, 3, 4, 5, 6};
static const uint8_t k_b6[] = {1, 0, 0, 1, 1, 0};

/* Tensors made inside a test are disposed by this scope. */
#define BEGIN_CASE()                                                                               \
  int64_t live_ = t_live_tensors();                                                                \
  sg_scope_begin("case")
#define END_CASE()                                                                                 \
  do {                                                                                             \
    sg_scope_end(NULL, 0);                                                                         \
    cr_assert_eq(t_live_tensors(), live_, "tensors leaked");                                       \
  } while (0)

/* ---- reshape ---------------------------------------------------------------------------- */

Test(shape, reshape_values) {
  BEGIN_CASE();
  int64_t s23[] = {2, 3}, s3m[] = {3, -1}, s32[] = {3, 2}, s6[] = {6}, sm[] = {-1};
  sg_tensor *x = sg_tensor_f32(k_f6, s23, 2);
  sg_tensor *y = sg_reshape(x, s3m, 2);
  t_expect_f32(y, k_f6, 2, s32, 0, 0);
  cr_assert_eq(sg_data_f32(y), sg_data_f32(x), "reshape shares storage");
  expect_i32(sg_reshape(sg_tensor_i32(k_i6, s23, 2), sm, 1), k_i6, 1, s6);
  expect_bool(sg_reshape(sg_tensor_bool(k_b6, s23, 2), s32, 2), k_b6, 2, s32);
  int64_t s1[] = {1, 1};
  t_expect_f32(sg_reshape(sg_scalar(4), s1, 2), (float[]){4}, 2, s1, 0, 0);
  t_expect_f32(sg_reshape(sg_tensor_f32((float[]){4}, s1, 2), NULL, 0), (float[]){4}, 0, NULL, 0,
               0);
  int64_t s03[] = {0, 3}, s30[] = {3, 0};
  expect_shape(sg_reshape(sg_zeros(s03, 2), s30, 2), 2, s30);
  END_CASE();
}

Test(shape, reshape_errors) {
  BEGIN_CASE();
  int64_t s23[] = {2, 3}, s42[] = {4, 2}, smm[] = {-1, -1}, sneg[] = {-2, -3}, s4m[] = {4, -1};
  sg_tensor *x = sg_tensor_f32(k_f6, s23, 2);
  t_expect_error(sg_reshape(x, s42, 2), SG_ERR_SHAPE, "reshape", "[2,3]", "6 elements", "[4,2]",
                 NULL);
  t_expect_error(sg_reshape(x, s4m, 2), SG_ERR_SHAPE, "reshape", "[4,-1]", NULL);
  t_expect_error(sg_reshape(x, smm, 2), SG_ERR_ARG, "reshape", "-1", NULL);
  t_expect_error(sg_reshape(x, sneg, 2), SG_ERR_SHAPE, "reshape", "negative", NULL);
  t_expect_error(sg_reshape(x, NULL, 2), SG_ERR_ARG, "reshape", NULL);
  t_expect_error(sg_reshape(x, s23, 9), SG_ERR_SHAPE, "reshape", NULL);
  int64_t s03[] = {0, 3}, s0m[] = {-1, 0};
  t_expect_error(sg_reshape(sg_zeros(s03, 2), s0m, 2), SG_ERR_SHAPE, "reshape", NULL);
  t_expect_error(sg_reshape(NULL, s23, 2), SG_ERR_ARG, "reshape", "'x'", NULL);
  END_CASE();
}

/* ---- transpose -------------------------------------------------------------------------- */

/* y[...] by index arithmetic, for any element size. */
static void ref_transpose(const void *x, const int64_t *shape, const int *perm, int rank, size_t es,
                          void *y) {
  int64_t n = 1, xstr[8];
  for (int d = rank - 1; d >= 0; d--) xstr[d] = n, n *= shape[d];
  for (int64_t e = 0; e < n; e++) {
    int64_t rest = e, off = 0;
    for (int d = rank - 1; d >= 0; d--) {
      int64_t dim = shape[perm[d]];
      off += (rest % dim) * xstr[perm[d]];
      rest /= dim;
    }
    memcpy((char *)y + (size_t)e * es, (const char *)x + (size_t)off * es, es);
  }
}

static void check_transpose(const int64_t *shape, int rank, const int *perm, uint32_t seed) {
  int64_t n = 1;
  for (int d = 0; d < rank; d++) n *= shape[d];
  int32_t *xi = malloc((size_t)(n ? n : 1) * 4), *want = malloc((size_t)(n ? n : 1) * 4);
  uint8_t *xb = malloc((size_t)(n ? n : 1)), *wantb = malloc((size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    xi[i] = (int32_t)seed;
    xb[i] = seed >> 31;
  }
  ref_transpose(xi, shape, perm, rank, 4, want);
  ref_transpose(xb, shape, perm, rank, 1, wantb);
  int64_t ys[8];
  for (int d = 0; d < rank; d++) ys[d] = shape[perm[d]];
  sg_scope_begin("t");
  sg_tensor *ti = sg_transpose(sg_tensor_i32(xi, shape, rank), perm);
  expect_i32(ti, want, rank, ys);
  sg_tensor *tf = sg_transpose(sg_tensor_f32((const float *)xi, shape, rank), perm);
  expect_shape(tf, rank, ys);
  cr_assert(memcmp(sg_data_f32(tf), want, (size_t)n * 4) == 0, "f32 bits moved unchanged");
  expect_bool(sg_transpose(sg_tensor_bool(xb, shape, rank), perm), wantb, rank, ys);
  sg_scope_end(NULL, 0);
  free(xi);
  free(want);
  free(xb);
  free(wantb);
}

Test(shape, transpose_values) {
  BEGIN_CASE();
  int64_t s23[] = {2, 3}, s32[] = {3, 2};
  t_expect_f32(sg_transpose(sg_tensor_f32(k_f6, s23, 2), NULL), (float[]){1, 4, 2, 5, 3, 6}, 2, s32,
               0, 0);
  expect_i32(sg_transpose(sg_tensor_i32(k_i6, s23, 2), (int[]){1, 0}),
             (int32_t[]){1, 4, 2, 5, 3, 6}, 2, s32);
  expect_bool(sg_transpose(sg_tensor_bool(k_b6, s23, 2), NULL), (uint8_t[]){1, 1, 0, 1, 0, 0}, 2,
              s32);
  t_expect_f32(sg_transpose(sg_scalar(3), NULL), (float[]){3}, 0, NULL, 0, 0);
  END_CASE();

  const struct {
    int rank;
    int64_t shape[6];
    int perm[6];
  } cases[] = {
      {1, {5}, {0}},
      {2, {33, 70}, {1, 0}},
      {3, {2, 3, 4}, {2, 1, 0}},
      {3, {2, 3, 4}, {1, 0, 2}},
      {3, {2, 3, 4}, {0, 2, 1}},
      {3, {4, 5, 6}, {2, 0, 1}},
      {3, {4, 5, 6}, {1, 2, 0}},
      {4, {1, 3, 1, 2}, {3, 2, 1, 0}},
      {4, {2, 3, 4, 5}, {0, 3, 1, 2}},
      {5, {2, 1, 3, 2, 3}, {4, 0, 3, 2, 1}},
      {6, {2, 3, 2, 1, 2, 3}, {5, 1, 3, 0, 4, 2}},
      {3, {0, 3, 4}, {2, 1, 0}},
      {3, {5, 300, 270}, {0, 2, 1}}, /* big slices: the batch split runs across threads */
      {2, {300, 400}, {1, 0}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    check_transpose(cases[c].shape, cases[c].rank, cases[c].perm, (uint32_t)c + 1);
}

Test(shape, transpose_errors) {
  BEGIN_CASE();
  int64_t s23[] = {2, 3};
  sg_tensor *x = sg_tensor_f32(k_f6, s23, 2);
  t_expect_error(sg_transpose(x, (int[]){0, 0}), SG_ERR_ARG, "transpose", "[0,0]", "[2,3]", NULL);
  t_expect_error(sg_transpose(x, (int[]){0, 2}), SG_ERR_ARG, "transpose", "[0,2]", NULL);
  t_expect_error(sg_transpose(x, (int[]){-1, 0}), SG_ERR_ARG, "transpose", NULL);
  t_expect_error(sg_transpose(NULL, NULL), SG_ERR_ARG, "transpose", "'x'", NULL);
  END_CASE();
}

/* ---- slice ------------------------------------------------------------------------------ */

Test(shape, slice_values) {
  BEGIN_CASE();
  float v[12];
  for (int i = 0; i < 12; i++) v[i] = (float)i;
  int64_t s34[] = {3, 4}, b[] = {1, 1}, sz[] = {2, -1}, s23[] = {2, 3};
  sg_tensor *x = sg_tensor_f32(v, s34, 2);
  t_expect_f32(sg_slice(x, b, sz), (float[]){5, 6, 7, 9, 10, 11}, 2, s23, 0, 0);
  int64_t b0[] = {0, 2}, sz0[] = {3, 1}, s31[] = {3, 1};
  t_expect_f32(sg_slice(x, b0, sz0), (float[]){2, 6, 10}, 2, s31, 0, 0);
  int64_t be[] = {3, 4}, sze[] = {0, 0}, s00[] = {0, 0};
  expect_shape(sg_slice(x, be, sze), 2, s00);
  int64_t s23b[] = {2, 3}, bb[] = {1, 0}, szb[] = {1, 2}, s12[] = {1, 2};
  expect_i32(sg_slice(sg_tensor_i32(k_i6, s23b, 2), bb, szb), (int32_t[]){4, 5}, 2, s12);
  expect_bool(sg_slice(sg_tensor_bool(k_b6, s23b, 2), bb, szb), (uint8_t[]){1, 1}, 2, s12);
  t_expect_f32(sg_slice(sg_scalar(7), NULL, NULL), (float[]){7}, 0, NULL, 0, 0);
  END_CASE();
}

Test(shape, slice_errors) {
  BEGIN_CASE();
  int64_t s34[] = {3, 4};
  sg_tensor *x = sg_zeros(s34, 2);
  t_expect_error(sg_slice(x, (int64_t[]){-1, 0}, (int64_t[]){1, 1}), SG_ERR_ARG, "slice", "axis 0",
                 "[3,4]", NULL);
  t_expect_error(sg_slice(x, (int64_t[]){0, 5}, (int64_t[]){1, -1}), SG_ERR_ARG, "slice", "axis 1",
                 NULL);
  t_expect_error(sg_slice(x, (int64_t[]){2, 0}, (int64_t[]){2, 1}), SG_ERR_ARG, "slice",
                 "begin 2 and size 2", NULL);
  t_expect_error(sg_slice(x, (int64_t[]){0, 0}, (int64_t[]){1, -2}), SG_ERR_ARG, "slice", NULL);
  t_expect_error(sg_slice(x, NULL, (int64_t[]){1, 1}), SG_ERR_ARG, "slice", NULL);
  t_expect_error(sg_slice(NULL, NULL, NULL), SG_ERR_ARG, "slice", "'x'", NULL);
  END_CASE();
}

/* ---- concat ----------------------------------------------------------------------------- */

Test(shape, concat_values) {
  BEGIN_CASE();
  int64_t s22[] = {2, 2}, s23[] = {2, 3}, s25[] = {2, 5};
  sg_tensor *a = sg_tensor_f32((float[]){1, 2, 3, 4}, s22, 2);
  sg_tensor *b = sg_tensor_f32((float[]){5, 6, 7, 8, 9, 10}, s23, 2);
  t_expect_f32(sg_concat((sg_tensor *[]){a, b}, 2, -1), (float[]){1, 2, 5, 6, 7, 3, 4, 8, 9, 10}, 2,
               s25, 0, 0);
  int64_t s62[] = {6, 2};
  t_expect_f32(sg_concat((sg_tensor *[]){a, a, a}, 3, 0),
               (float[]){1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4}, 2, s62, 0, 0);
  t_expect_f32(sg_concat((sg_tensor *[]){a}, 1, 1), (float[]){1, 2, 3, 4}, 2, s22, 0, 0);
  int64_t s2[] = {2}, s1[] = {1}, s3[] = {3}, s0[] = {0};
  expect_i32(
      sg_concat((sg_tensor *[]){sg_tensor_i32((int32_t[]){1, 2}, s2, 1), sg_tensor_i32(NULL, s0, 1),
                                sg_tensor_i32((int32_t[]){3}, s1, 1)},
                3, 0),
      (int32_t[]){1, 2, 3}, 1, s3);
  expect_bool(sg_concat((sg_tensor *[]){sg_tensor_bool((uint8_t[]){1, 0}, s2, 1),
                                        sg_tensor_bool((uint8_t[]){1}, s1, 1)},
                        2, 0),
              (uint8_t[]){1, 0, 1}, 1, s3);
  END_CASE();
}

Test(shape, concat_errors) {
  BEGIN_CASE();
  int64_t s22[] = {2, 2}, s32[] = {3, 2}, s2[] = {2};
  sg_tensor *a = sg_zeros(s22, 2), *b = sg_zeros(s32, 2), *v = sg_zeros(s2, 1);
  sg_tensor *i = sg_tensor_i32(NULL, s22, 2);
  t_expect_error(sg_concat((sg_tensor *[]){a, b}, 2, 1), SG_ERR_SHAPE, "concat", "[2,2]", "[3,2]",
                 NULL);
  t_expect_error(sg_concat((sg_tensor *[]){a, v}, 2, 0), SG_ERR_SHAPE, "concat", "[2]", NULL);
  t_expect_error(sg_concat((sg_tensor *[]){a, i}, 2, 0), SG_ERR_DTYPE, "concat", "i32", NULL);
  t_expect_error(sg_concat((sg_tensor *[]){a, a}, 2, 2), SG_ERR_ARG, "concat", "axis 2", NULL);
  t_expect_error(sg_concat((sg_tensor *[]){a}, 0, 0), SG_ERR_ARG, "concat", NULL);
  t_expect_error(sg_concat(NULL, 1, 0), SG_ERR_ARG, "concat", NULL);
  t_expect_error(sg_concat((sg_tensor *[]){a, NULL}, 2, 0), SG_ERR_ARG, "concat", "xs[1]", NULL);
  sg_tensor *s = sg_scalar(1);
  t_expect_error(sg_concat((sg_tensor *[]){s, s}, 2, 0), SG_ERR_ARG, "concat", NULL);
  END_CASE();
}

/* ---- pad -------------------------------------------------------------------------------- */

Test(shape, pad_values) {
  BEGIN_CASE();
  int64_t s22[] = {2, 2}, s34[] = {3, 4}, p[] = {1, 0, 0, 2};
  t_expect_f32(sg_pad(sg_tensor_f32((float[]){1, 2, 3, 4}, s22, 2), p, 9),
               (float[]){9, 9, 9, 9, 1, 2, 9, 9, 3, 4, 9, 9}, 2, s34, 0, 0);
  int64_t s2[] = {2}, s5[] = {5}, p1[] = {2, 1};
  expect_i32(sg_pad(sg_tensor_i32((int32_t[]){7, 8}, s2, 1), p1, -2.7f),
             (int32_t[]){-2, -2, 7, 8, -2}, 1, s5);
  expect_bool(sg_pad(sg_tensor_bool((uint8_t[]){0, 1}, s2, 1), p1, 0.5f),
              (uint8_t[]){1, 1, 0, 1, 1}, 1, s5);
  t_expect_f32(sg_pad(sg_tensor_f32((float[]){1, 2}, s2, 1), (int64_t[]){0, 0}, NAN),
               (float[]){1, 2}, 1, s2, 0, 0);
  t_expect_f32(sg_pad(sg_tensor_f32(NULL, (int64_t[]){0}, 1), (int64_t[]){1, 1}, -INFINITY),
               (float[]){-INFINITY, -INFINITY}, 1, s2, 0, 0);
  t_expect_f32(sg_pad(sg_scalar(5), NULL, 0), (float[]){5}, 0, NULL, 0, 0);
  END_CASE();
}

/* The element of an n-d box test at flat index k of `shape`, and whether it lies in [lo, lo +
   box) on every axis (its flat index in the box then goes to *in_box). */
static bool in_box(int64_t k, const int64_t *shape, const int64_t *lo, const int64_t *box, int rank,
                   int64_t *in_flat) {
  int64_t idx[SG_MAX_RANK], flat = 0;
  for (int d = rank - 1; d >= 0; d--) {
    idx[d] = k % shape[d];
    k /= shape[d];
  }
  for (int d = 0; d < rank; d++) {
    if (idx[d] < lo[d] || idx[d] >= lo[d] + box[d]) return false;
    flat = flat * box[d] + idx[d] - lo[d];
  }
  *in_flat = flat;
  return true;
}

/* pad writes its border, and slice's gradient its zeros, only around the copied box: checked
   element by element against that definition, on ranks 1-4 with padding on any axis (none, one
   side, both), empty boxes, and sizes that split across threads. */
Test(shape, pad_and_slice_grad_fill_exactly_around_the_box) {
  BEGIN_CASE();
  uint64_t seed = 12345;
  for (int trial = 0; trial < 60; trial++) {
    int rank = 1 + trial % 4;
    int64_t xs[SG_MAX_RANK], ys[SG_MAX_RANK], pads[2 * SG_MAX_RANK], lo[SG_MAX_RANK];
    for (int d = 0; d < rank; d++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      xs[d] = (int64_t)(seed >> 33) % 6;                   /* 0 (an empty box) to 5 */
      if (trial % 10 == 9 && d == rank - 1) xs[d] = 70000; /* rows over the parallel grain */
      pads[2 * d] = (int64_t)(seed >> 40) % 3;
      pads[2 * d + 1] = (int64_t)(seed >> 50) % 3;
      ys[d] = xs[d] + pads[2 * d] + pads[2 * d + 1];
      lo[d] = pads[2 * d];
    }
    sg_tensor *x = sg_random_uniform(xs, rank, -1, 1, (uint64_t)trial);
    sg_tensor *y = sg_pad(x, pads, -7.0f);
    cr_assert_not_null(y, "%s", sg_last_error());
    const float *xv = sg_data_f32(x), *yv = sg_data_f32(y);
    for (int64_t k = 0, f; k < sg_numel(y); k++)
      cr_assert_eq(yv[k], in_box(k, ys, lo, xs, rank, &f) ? xv[f] : -7.0f, "trial %d k %lld", trial,
                   (long long)k);
    /* slice's gradient: slicing y back to x's box, dy lands in the box and zeros around it */
    sg_tensor *yv2 = sg_random_uniform(ys, rank, 1, 2, (uint64_t)trial + 100);
    sg_tensor *dy = sg_random_uniform(xs, rank, 1, 2, (uint64_t)trial + 200);
    sg_tape_begin();
    sg_tensor *s = sg_slice(yv2, lo, xs);
    sg_tensor *dx = NULL;
    cr_assert_eq(sg_tape_end(s, dy, &yv2, 1, &dx), SG_OK, "%s", sg_last_error());
    const float *dyv = sg_data_f32(dy), *dxv = sg_data_f32(dx);
    for (int64_t k = 0, f; k < sg_numel(dx); k++)
      cr_assert_eq(dxv[k], in_box(k, ys, lo, xs, rank, &f) ? dyv[f] : 0.0f, "trial %d k %lld",
                   trial, (long long)k);
    sg_dispose(dx);
    sg_dispose(s);
  }
  /* i32 and bool borders */
  int64_t s23[] = {2, 3}, p[] = {1, 1, 0, 2}, s45[] = {4, 5};
  expect_i32(sg_pad(sg_tensor_i32((int32_t[]){1, 2, 3, 4, 5, 6}, s23, 2), p, 3.9f),
             (int32_t[]){3, 3, 3, 3, 3, 1, 2, 3, 3, 3, 4, 5, 6, 3, 3, 3, 3, 3, 3, 3}, 2, s45);
  expect_bool(sg_pad(sg_tensor_bool((uint8_t[]){0, 0, 0, 0, 0, 0}, s23, 2), p, -1.0f),
              (uint8_t[]){1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1}, 2, s45);
  END_CASE();
}

Test(shape, pad_errors) {
  BEGIN_CASE();
  int64_t s22[] = {2, 2};
  sg_tensor *x = sg_zeros(s22, 2);
  t_expect_error(sg_pad(x, (int64_t[]){0, -1, 0, 0}, 0), SG_ERR_ARG, "pad", "axis 0", "[2,2]",
                 NULL);
  t_expect_error(sg_pad(x, NULL, 0), SG_ERR_ARG, "pad", NULL);
  t_expect_error(sg_pad(x, (int64_t[]){0, 0, INT64_MAX / 8, INT64_MAX / 8}, 0), SG_ERR_SHAPE, "pad",
                 NULL);
  t_expect_error(sg_pad(NULL, NULL, 0), SG_ERR_ARG, "pad", "'x'", NULL);
  END_CASE();
}

/* ---- tile ------------------------------------------------------------------------------- */

Test(shape, tile_values) {
  BEGIN_CASE();
  int64_t s23[] = {2, 3}, s43[] = {4, 3}, r21[] = {2, 1};
  t_expect_f32(sg_tile(sg_tensor_f32(k_f6, s23, 2), r21),
               (float[]){1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, 2, s43, 0, 0);
  int64_t s12[] = {1, 2}, r32[] = {3, 2}, s34[] = {3, 4};
  expect_i32(sg_tile(sg_tensor_i32((int32_t[]){1, 2}, s12, 2), r32),
             (int32_t[]){1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}, 2, s34);
  int64_t s2[] = {2}, r2[] = {2}, s4[] = {4};
  expect_bool(sg_tile(sg_tensor_bool((uint8_t[]){1, 0}, s2, 1), r2), (uint8_t[]){1, 0, 1, 0}, 1,
              s4);
  int64_t r0[] = {0, 2}, s06[] = {0, 6};
  expect_shape(sg_tile(sg_tensor_f32(k_f6, s23, 2), r0), 2, s06);
  t_expect_f32(sg_tile(sg_scalar(2), NULL), (float[]){2}, 0, NULL, 0, 0);
  END_CASE();
}

Test(shape, tile_errors) {
  BEGIN_CASE();
  int64_t s23[] = {2, 3};
  sg_tensor *x = sg_zeros(s23, 2);
  t_expect_error(sg_tile(x, (int64_t[]){1, -1}), SG_ERR_ARG, "tile", "axis 1", "[2,3]", NULL);
  t_expect_error(sg_tile(x, NULL), SG_ERR_ARG, "tile", NULL);
  t_expect_error(sg_tile(x, (int64_t[]){INT64_MAX / 4, 1}), SG_ERR_SHAPE, "tile", NULL);
  t_expect_error(sg_tile(NULL, NULL), SG_ERR_ARG, "tile", "'x'", NULL);
  END_CASE();
}

/* ---- gather, one_hot -------------------------------------------------------------------- */

Test(shape, gather_values) {
  BEGIN_CASE();
  int64_t s32[] = {3, 2}, s2[] = {2}, s22[] = {2, 2};
  sg_tensor *x = sg_tensor_f32(k_f6, s32, 2);
  sg_tensor *idx = sg_tensor_i32((int32_t[]){2, 0}, s2, 1);
  t_expect_f32(sg_gather(x, idx, 0), (float[]){5, 6, 1, 2}, 2, s22, 0, 0);
  int64_t s3[] = {3}, s33[] = {3, 3};
  sg_tensor *idx3 = sg_tensor_i32((int32_t[]){1, 1, 0}, s3, 1);
  t_expect_f32(sg_gather(x, idx3, -1), (float[]){2, 2, 1, 4, 4, 3, 6, 6, 5}, 2, s33, 0, 0);
  /* Rank-2 indices: output x.shape[:axis] + indices.shape + x.shape[axis+1:]. */
  int64_t s21[] = {2, 1}, s212[] = {2, 1, 2}, s321[] = {3, 2, 1};
  sg_tensor *idx2 = sg_tensor_i32((int32_t[]){1, 2}, s21, 2);
  t_expect_f32(sg_gather(x, idx2, 0), (float[]){3, 4, 5, 6}, 3, s212, 0, 0);
  sg_tensor *idx2b = sg_tensor_i32((int32_t[]){1, 0}, s21, 2);
  t_expect_f32(sg_gather(x, idx2b, 1), (float[]){2, 1, 4, 3, 6, 5}, 3, s321, 0, 0);
  expect_i32(sg_gather(sg_tensor_i32(k_i6, s32, 2), idx, 0), (int32_t[]){5, 6, 1, 2}, 2, s22);
  expect_bool(sg_gather(sg_tensor_bool(k_b6, s32, 2), idx, 0), (uint8_t[]){1, 0, 1, 0}, 2, s22);
  int64_t s0[] = {0}, s02[] = {0, 2};
  expect_shape(sg_gather(x, sg_tensor_i32(NULL, s0, 1), 0), 2, s02);
  /* A scalar index drops the axis. */
  int64_t s2b[] = {2};
  t_expect_f32(sg_gather(x, sg_tensor_i32((int32_t[]){1}, NULL, 0), 0), (float[]){3, 4}, 1, s2b, 0,
               0);
  END_CASE();
}

Test(shape, gather_errors) {
  BEGIN_CASE();
  int64_t s32[] = {3, 2}, s3[] = {3};
  sg_tensor *x = sg_zeros(s32, 2);
  t_expect_error(sg_gather(x, sg_tensor_i32((int32_t[]){0, 3, 1}, s3, 1), 0), SG_ERR_ARG, "gather",
                 "index 3", "element 1", "[3,2]", NULL);
  t_expect_error(sg_gather(x, sg_tensor_i32((int32_t[]){0, 1, -1}, s3, 1), 1), SG_ERR_ARG, "gather",
                 "index -1", NULL);
  t_expect_error(sg_gather(x, sg_zeros(s3, 1), 0), SG_ERR_DTYPE, "gather", "indices", NULL);
  t_expect_error(sg_gather(x, sg_tensor_i32(NULL, s3, 1), 2), SG_ERR_ARG, "gather", "axis 2", NULL);
  t_expect_error(sg_gather(sg_scalar(1), sg_tensor_i32(NULL, s3, 1), 0), SG_ERR_ARG, "gather",
                 NULL);
  int64_t big[] = {1, 1, 1, 1, 1, 1, 1, 1};
  t_expect_error(sg_gather(sg_zeros(big, 8), sg_tensor_i32(NULL, s32, 2), 0), SG_ERR_SHAPE,
                 "gather", NULL);
  t_expect_error(sg_gather(NULL, NULL, 0), SG_ERR_ARG, "gather", "'x'", NULL);
  t_expect_error(sg_gather(x, NULL, 0), SG_ERR_ARG, "gather", "'indices'", NULL);
  END_CASE();
}

Test(shape, one_hot_values_and_errors) {
  BEGIN_CASE();
  int64_t s4[] = {4}, s43[] = {4, 3};
  sg_tensor *idx = sg_tensor_i32((int32_t[]){0, 2, -1, 3}, s4, 1);
  t_expect_f32(sg_one_hot(idx, 3), (float[]){1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, 2, s43, 0, 0);
  int64_t s22[] = {2, 2}, s222[] = {2, 2, 2};
  t_expect_f32(sg_one_hot(sg_tensor_i32((int32_t[]){1, 0, 0, 1}, s22, 2), 2),
               (float[]){0, 1, 1, 0, 1, 0, 0, 1}, 3, s222, 0, 0);
  int64_t s40[] = {4, 0};
  expect_shape(sg_one_hot(idx, 0), 2, s40);
  t_expect_error(sg_one_hot(idx, -1), SG_ERR_ARG, "one_hot", "-1", NULL);
  t_expect_error(sg_one_hot(sg_zeros(s4, 1), 3), SG_ERR_DTYPE, "one_hot", "indices", NULL);
  int64_t big[] = {1, 1, 1, 1, 1, 1, 1, 1};
  t_expect_error(sg_one_hot(sg_tensor_i32(NULL, big, 8), 2), SG_ERR_SHAPE, "one_hot", NULL);
  t_expect_error(sg_one_hot(NULL, 2), SG_ERR_ARG, "one_hot", NULL);
  END_CASE();
}

/* ---- cast ------------------------------------------------------------------------------- */

Test(shape, cast_values) {
  BEGIN_CASE();
  float fv[] = {1.9f, -1.9f, 0.5f,           -0.0f,         NAN,
                3e9f, -3e9f, -2147483648.0f, 2147483520.0f, INFINITY};
  int64_t s10[] = {10};
  sg_tensor *f = sg_tensor_f32(fv, s10, 1);
  expect_i32(
      sg_cast(f, SG_I32),
      (int32_t[]){1, -1, 0, 0, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, 2147483520, INT32_MIN},
      1, s10);
  expect_bool(sg_cast(f, SG_BOOL), (uint8_t[]){1, 1, 1, 0, 1, 1, 1, 1, 1, 1}, 1, s10);
  sg_tensor *ff = sg_cast(f, SG_F32);
  t_expect_f32(ff, fv, 1, s10, 0, 0);
  cr_assert_neq(sg_data_f32(ff), sg_data_f32(f), "a same-dtype cast is a copy");
  int64_t s4[] = {4};
  sg_tensor *i = sg_tensor_i32((int32_t[]){16777217, -3, 0, INT32_MIN}, s4, 1);
  t_expect_f32(sg_cast(i, SG_F32), (float[]){16777216.0f, -3, 0, -2147483648.0f}, 1, s4, 0, 0);
  expect_bool(sg_cast(i, SG_BOOL), (uint8_t[]){1, 1, 0, 1}, 1, s4);
  expect_i32(sg_cast(i, SG_I32), (int32_t[]){16777217, -3, 0, INT32_MIN}, 1, s4);
  sg_tensor *b = sg_tensor_bool((uint8_t[]){1, 0, 1, 1}, s4, 1);
  t_expect_f32(sg_cast(b, SG_F32), (float[]){1, 0, 1, 1}, 1, s4, 0, 0);
  expect_i32(sg_cast(b, SG_I32), (int32_t[]){1, 0, 1, 1}, 1, s4);
  expect_bool(sg_cast(b, SG_BOOL), (uint8_t[]){1, 0, 1, 1}, 1, s4);
  t_expect_error(sg_cast(f, (sg_dtype)7), SG_ERR_DTYPE, "cast", NULL);
  t_expect_error(sg_cast(NULL, SG_F32), SG_ERR_ARG, "cast", "'x'", NULL);
  /* Big enough to split across threads. */
  int64_t sbig[] = {300000};
  sg_tensor *r = sg_random_uniform(sbig, 1, -100, 100, 9);
  sg_tensor *ri = sg_cast(r, SG_I32);
  for (int64_t k = 0; k < sbig[0]; k++)
    cr_assert_eq(sg_data_i32(ri)[k], (int32_t)sg_data_f32(r)[k], "element %lld", (long long)k);
  END_CASE();
}

/* ---- Gradients -------------------------------------------------------------------------- */

/* Every op here only moves elements, so the finite difference is exact up to rounding of the
   loss: h = 1e-2 with tol 1e-3 is ample. */
#define GC_H 1e-2
#define GC_TOL 1e-3

static sg_tensor *gc_reshape(sg_tensor *const *xs, void *arg) {
  (void)arg;
  return sg_reshape(xs[0], (int64_t[]){4, -1}, 2);
}
static sg_tensor *gc_transpose(sg_tensor *const *xs, void *arg) { return sg_transpose(xs[0], arg); }
static sg_tensor *gc_slice(sg_tensor *const *xs, void *arg) {
  (void)arg;
  return sg_slice(xs[0], (int64_t[]){1, 0, 2}, (int64_t[]){2, -1, 2});
}
static sg_tensor *gc_concat(sg_tensor *const *xs, void *arg) {
  (void)arg;
  return sg_concat(xs, 2, 1);
}
static sg_tensor *gc_pad(sg_tensor *const *xs, void *arg) {
  (void)arg;
  return sg_pad(xs[0], (int64_t[]){1, 2, 0, 1, 2, 0}, 3.0f);
}
static sg_tensor *gc_tile(sg_tensor *const *xs, void *arg) {
  (void)arg;
  return sg_tile(xs[0], (int64_t[]){2, 1, 3});
}
typedef struct gather_arg {
  sg_tensor *indices; /* not an input of the check: the tape takes f32 xs only */
  int axis;
} gather_arg;
static sg_tensor *gc_gather(sg_tensor *const *xs, void *arg) {
  const gather_arg *g = arg;
  return sg_gather(xs[0], g->indices, g->axis);
}
static sg_tensor *gc_cast(sg_tensor *const *xs, void *arg) {
  (void)arg;
  return sg_cast(xs[0], SG_F32);
}

Test(shape, gradients) {
  int64_t live = t_live_tensors();
  int64_t s234[] = {2, 3, 4}, s324[] = {3, 2, 4}, s354[] = {3, 5, 4};
  sg_tensor *x = sg_random_uniform(s234, 3, -1, 1, 11);
  sg_tensor *x2 = sg_random_uniform(s354, 3, -1, 1, 12);
  sg_tensor *x3 = sg_random_uniform(s324, 3, -1, 1, 13);
  gc_check("reshape", gc_reshape, NULL, &x, 1, GC_H, GC_TOL);
  int perms[][3] = {{2, 0, 1}, {0, 2, 1}, {1, 0, 2}};
  for (int p = 0; p < 3; p++) gc_check("transpose", gc_transpose, perms[p], &x, 1, GC_H, GC_TOL);
  gc_check("slice", gc_slice, NULL, &x3, 1, GC_H, GC_TOL);
  gc_check("concat", gc_concat, NULL, (sg_tensor *[]){x3, x2}, 2, GC_H, GC_TOL);
  gc_check("pad", gc_pad, NULL, &x, 1, GC_H, GC_TOL);
  gc_check("tile", gc_tile, NULL, &x, 1, GC_H, GC_TOL);
  gc_check("cast", gc_cast, NULL, &x, 1, GC_H, GC_TOL);
  /* Repeated indices: their gradients add up. */
  int64_t s5[] = {5}, s22[] = {2, 2};
  sg_tensor *idx = sg_tensor_i32((int32_t[]){2, 0, 2, 2, 1}, s5, 1);
  sg_tensor *idx2 = sg_tensor_i32((int32_t[]){3, 3, 0, 1}, s22, 2);
  sg_tensor *idx3 = sg_tensor_i32((int32_t[]){1, 1, 0}, (int64_t[]){3}, 1);
  gather_arg ga[] = {{idx, 1}, {idx2, 2}, {idx3, -3}};
  for (int k = 0; k < 3; k++) gc_check("gather", gc_gather, &ga[k], &x, 1, GC_H, GC_TOL);
  sg_tensor *all[] = {x, x2, x3, idx, idx2, idx3};
  for (int k = 0; k < 6; k++) sg_dispose(all[k]);
  cr_assert_eq(t_live_tensors(), live);
}

Test(shape, gradient_hand_values) {
  BEGIN_CASE();
  /* tile [2] by 3: each x element receives the sum of its three copies' weights. */
  int64_t s2[] = {2}, s6[] = {6}, r3[] = {3};
  sg_tensor *x = sg_tensor_f32((float[]){1, 2}, s2, 1), *g;
  sg_tape_begin();
  sg_tensor *y = sg_tile(x, r3);
  sg_tensor *dy = sg_tensor_f32((float[]){1, 2, 3, 4, 5, 6}, s6, 1);
  cr_assert_eq(sg_tape_end(y, dy, &x, 1, &g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g, (float[]){9, 12}, 1, s2, 0, 0);
  /* gather with a repeated index accumulates; the unused row gets 0. */
  int64_t s3[] = {3};
  sg_tensor *v = sg_tensor_f32((float[]){1, 2, 3}, s3, 1);
  sg_tensor *idx = sg_tensor_i32((int32_t[]){2, 2, 0}, s3, 1);
  sg_tape_begin();
  y = sg_gather(v, idx, 0);
  cr_assert_eq(sg_tape_end(y, sg_tensor_f32((float[]){1, 10, 100}, s3, 1), &v, 1, &g), SG_OK);
  t_expect_f32(g, (float[]){100, 0, 11}, 1, s3, 0, 0);
  /* A cast to i32 and back passes no gradient; one_hot of its output neither. */
  sg_tape_begin();
  y = sg_cast(sg_cast(v, SG_I32), SG_F32);
  cr_assert_eq(sg_tape_end(y, NULL, &v, 1, &g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g, (float[]){0, 0, 0}, 1, s3, 0, 0);
  sg_tape_begin();
  y = sg_one_hot(sg_cast(v, SG_I32), 4);
  cr_assert_eq(sg_tape_end(y, NULL, &v, 1, &g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g, (float[]){0, 0, 0}, 1, s3, 0, 0);
  /* The same tensor twice in a concat: both slices add up. */
  sg_tape_begin();
  y = sg_concat((sg_tensor *[]){v, v}, 2, 0);
  cr_assert_eq(sg_tape_end(y, sg_tensor_f32((float[]){1, 2, 3, 4, 5, 6}, s6, 1), &v, 1, &g), SG_OK,
               "%s", sg_last_error());
  t_expect_f32(g, (float[]){5, 7, 9}, 1, s3, 0, 0);
  END_CASE();
}

/* ---- Kernel conformance ----------------------------------------------------------------- */

Test(shape, transpose_and_scatter_kernels_match_scalar) {
  const sg_backend *ref = sg_backend_get("scalar");
  const char *names[] = {"scalar", "avx2", "avx512", "neon"};
  const struct {
    int rank;
    int64_t shape[4];
    int perm[4];
  } cases[] = {
      {2, {1, 1}, {1, 0}},
      {2, {7, 9}, {1, 0}},
      {2, {16, 33}, {1, 0}},
      {2, {65, 31}, {1, 0}},
      {3, {3, 17, 8}, {0, 2, 1}},
      {3, {5, 6, 7}, {2, 0, 1}},
      {3, {9, 4, 11}, {1, 2, 0}},
      {4, {2, 3, 5, 7}, {3, 1, 0, 2}},
      {1, {13}, {0}},
  };
  uint32_t *x = malloc(70 * 70 * 4 + 4), *y1 = malloc(70 * 70 * 4 + 4),
           *y2 = malloc(70 * 70 * 4 + 4);
  uint32_t seed = 3;
  for (int i = 0; i < 70 * 70 + 1; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = seed; /* arbitrary bit patterns, NaNs with payloads included */
  }
  for (int b = 0; b < 4; b++) {
    const sg_backend *be = sg_backend_get(names[b]);
    if (!be) continue;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
      int64_t n = 1;
      for (int d = 0; d < cases[c].rank; d++) n *= cases[c].shape[d];
      /* One element off alignment. */
      ref->transpose((const float *)(x + 1), cases[c].shape, cases[c].perm, cases[c].rank,
                     (float *)(y1 + 1));
      memset(y2, 0xab, 70 * 70 * 4 + 4);
      be->transpose((const float *)(x + 1), cases[c].shape, cases[c].perm, cases[c].rank,
                    (float *)(y2 + 1));
      cr_assert(memcmp(y1 + 1, y2 + 1, (size_t)n * 4) == 0, "%s transpose case %zu", names[b], c);
      cr_assert_eq(y2[n + 1], 0xabababab, "%s transpose wrote past the end", names[b]);
    }
    /* scatter_add: repeated and out-of-range indices, accumulation into existing dx. */
    const int32_t idx[] = {2, -1, 0, 2, 5, 1, 2};
    float dy[3 * 7 * 5], d1[3 * 4 * 5 + 1], d2[3 * 4 * 5 + 1];
    for (int i = 0; i < 3 * 7 * 5; i++) dy[i] = (float)(i % 11) - 5.0f;
    for (int i = 0; i < 3 * 4 * 5 + 1; i++) d1[i] = d2[i] = (float)i;
    ref->scatter_add(dy, idx, 3, 7, 5, 4, d1 + 1);
    be->scatter_add(dy, idx, 3, 7, 5, 4, d2 + 1);
    cr_assert(memcmp(d1, d2, sizeof d1) == 0, "%s scatter_add", names[b]);
    if (b == 0) { /* hand check of one element: dx[0, 2, 0] = 2 + dy[0,0,0]+dy[0,3,0]+dy[0,6,0] */
      cr_assert_eq(d1[1 + 2 * 5], 11.0f + (-5.0f) + (15 % 11 - 5.0f) + (30 % 11 - 5.0f));
      cr_assert_eq(d1[0], 0.0f, "nothing before dx");
    }
  }
  free(x);
  free(y1);
  free(y2);
}
