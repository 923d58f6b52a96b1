/* Pooling, batch-norm, moments and dropout tests: hand-computed cases, a double reference on
 * every backend, finite-difference gradients, NaN in max pooling, dropout's mask statistics and
 * determinism, errors and leaks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

static const char *const k_backends[] = {"scalar", "avx2", "avx512", "neon"};
#define N_BACKENDS ((int)(sizeof k_backends / sizeof k_backends[0]))

Test(pool, hand_computed) {
  int64_t live = t_live_tensors();
  float xv[16];
  for (int i = 0; i < 16; i++) xv[i] = (float)((i * 7) % 16); /* 0 7 14 5 / 12 3 10 1 / ... */
  sg_tensor *x = t_f32(xv, 4, (int64_t[]){1, 4, 4, 1});
  const int64_t k2[] = {2, 2};
  sg_tensor *y = sg_max_pool(x, k2, NULL, SG_PADDING_VALID, NULL);
  /* rows: 0 7 14 5 | 12 3 10 1 | 8 15 6 13 | 4 11 2 9 */
  t_expect_f32(y, (float[]){12, 14, 15, 13}, 4, (int64_t[]){1, 2, 2, 1}, 0, 0);
  sg_dispose(y);
  y = sg_avg_pool(x, k2, NULL, SG_PADDING_VALID, NULL);
  t_expect_f32(y, (float[]){5.5f, 7.5f, 9.5f, 7.5f}, 4, (int64_t[]){1, 2, 2, 1}, 0, 0);
  sg_dispose(y);
  /* 3x3, stride 2, SAME on 4x4: out 2x2, total padding 1 (bottom / right): the average counts
     only the taps inside. */
  y = sg_avg_pool(x, (int64_t[]){3, 3}, (int64_t[]){2, 2}, SG_PADDING_SAME, NULL);
  t_expect_f32(y,
               (float[]){(0 + 7 + 14 + 12 + 3 + 10 + 8 + 15 + 6) / 9.0f,
                         (14 + 5 + 10 + 1 + 6 + 13) / 6.0f, (8 + 15 + 6 + 4 + 11 + 2) / 6.0f,
                         (6 + 13 + 2 + 9) / 4.0f},
               4, (int64_t[]){1, 2, 2, 1}, 1e-6, 1e-6);
  sg_dispose(y);
  y = sg_max_pool(x, (int64_t[]){3, 3}, (int64_t[]){2, 2}, SG_PADDING_SAME, NULL);
  t_expect_f32(y, (float[]){15, 14, 15, 13}, 4, (int64_t[]){1, 2, 2, 1}, 0, 0);
  sg_dispose(y);
  /* Max-pool gradient goes to the maximal tap; average spreads it. */
  sg_tensor *g[1];
  cr_assert_eq(sg_tape_begin(), SG_OK);
  y = sg_max_pool(x, k2, NULL, SG_PADDING_VALID, NULL);
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, g), SG_OK, "%s", sg_last_error());
  t_expect_f32(g[0], (float[]){0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}, 4,
               (int64_t[]){1, 4, 4, 1}, 0, 0);
  sg_dispose(y);
  sg_dispose(g[0]);
  /* NaN propagates through max pooling (and its gradient goes to the NaN). */
  sg_tensor *xn = t_f32((float[]){1, NAN, 3, 2}, 4, (int64_t[]){1, 2, 2, 1});
  cr_assert_eq(sg_tape_begin(), SG_OK);
  y = sg_max_pool(xn, k2, NULL, SG_PADDING_VALID, NULL);
  cr_assert_eq(sg_tape_end(y, NULL, &xn, 1, g), SG_OK, "%s", sg_last_error());
  cr_assert(isnan(sg_data_f32(y)[0]));
  t_expect_f32(g[0], (float[]){0, 1, 0, 0}, 4, (int64_t[]){1, 2, 2, 1}, 0, 0);
  sg_dispose(y);
  sg_dispose(g[0]);
  sg_dispose(xn);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live);
}

/* Pooling in double over the taps inside the image. */
static void ref_pool(const float *x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t kh,
                     int64_t kw, int64_t sh, int64_t sw, bool same, bool is_max, double *y,
                     int64_t *oh, int64_t *ow) {
  int64_t pt = 0, pl = 0;
  if (same) {
    *oh = (h + sh - 1) / sh, *ow = (w + sw - 1) / sw;
    int64_t th = (*oh - 1) * sh + kh - h, tw = (*ow - 1) * sw + kw - w;
    pt = th > 0 ? th / 2 : 0, pl = tw > 0 ? tw / 2 : 0;
  } else {
    *oh = (h - kh) / sh + 1, *ow = (w - kw) / sw + 1;
  }
  for (int64_t b = 0; b < n; b++)
    for (int64_t i = 0; i < *oh; i++)
      for (int64_t j = 0; j < *ow; j++)
        for (int64_t q = 0; q < c; q++) {
          double acc = is_max ? -INFINITY : 0;
          int cnt = 0;
          for (int64_t a = 0; a < kh; a++)
            for (int64_t e = 0; e < kw; e++) {
              int64_t ih = i * sh - pt + a, iw = j * sw - pl + e;
              if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
              double v = x[((b * h + ih) * w + iw) * c + q];
              acc = is_max ? fmax(acc, v) : acc + v;
              cnt++;
            }
          y[((b * *oh + i) * *ow + j) * c + q] = is_max ? acc : acc / cnt;
        }
}

Test(pool, matches_reference_on_every_backend) {
  const char *best = sg_backend_name();
  static const int64_t cfg[][8] = {
      /* n h w c kh kw sh sw */
      {2, 8, 8, 3, 2, 2, 2, 2},  {1, 9, 7, 17, 3, 3, 2, 2}, {2, 6, 6, 33, 3, 2, 1, 2},
      {1, 5, 5, 16, 5, 5, 1, 1}, {1, 7, 9, 8, 2, 3, 3, 1},
  };
  for (size_t ci = 0; ci < sizeof cfg / sizeof *cfg; ci++)
    for (int same = 0; same < 2; same++)
      for (int is_max = 0; is_max < 2; is_max++) {
        const int64_t *p = cfg[ci];
        sg_tensor *x = sg_random_uniform(p, 4, -2, 2, 100 + ci);
        double *want = malloc(sizeof(double) * (size_t)(p[0] * p[1] * p[2] * p[3]));
        int64_t oh, ow;
        ref_pool(sg_data_f32(x), p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], same, is_max, want,
                 &oh, &ow);
        for (int b = 0; b < N_BACKENDS; b++) {
          if (!sg_backend_available(k_backends[b])) continue;
          sg_use_backend(k_backends[b]);
          sg_padding pad = same ? SG_PADDING_SAME : SG_PADDING_VALID;
          sg_tensor *y = is_max ? sg_max_pool(x, p + 4, p + 6, pad, NULL)
                                : sg_avg_pool(x, p + 4, p + 6, pad, NULL);
          cr_assert_not_null(y, "%s", sg_last_error());
          cr_assert_eq(sg_shape(y)[1], oh);
          cr_assert_eq(sg_shape(y)[2], ow);
          for (int64_t i = 0; i < sg_numel(y); i++)
            cr_assert(fabs(sg_data_f32(y)[i] - want[i]) <= 1e-6 * (1 + fabs(want[i])),
                      "config %zu same %d max %d on %s: y[%lld] = %.8g, want %.8g", ci, same,
                      is_max, k_backends[b], (long long)i, sg_data_f32(y)[i], want[i]);
          sg_dispose(y);
        }
        free(want);
        sg_dispose(x);
      }
  sg_use_backend(best);
}

/* Among taps equal to the max (+0 and -0), the first one's bits come out, on every backend as in
   scalar (x86's max returns its second operand and NEON's orders -0 below +0, so a plain vector
   max would differ). 19 channels: vector bodies and tails. */
Test(pool, max_keeps_the_first_of_equal_taps_on_every_backend) {
  const char *best = sg_backend_name();
  const int64_t shape[] = {1, 2, 2, 19}, k[] = {2, 2}, st[] = {2, 2};
  float x[4 * 19];
  for (int t = 0; t < 4; t++)
    for (int c = 0; c < 19; c++) x[t * 19 + c] = ((c >> t) & 1) ? -0.0f : 0.0f;
  sg_tensor *xt = sg_tensor_f32(x, shape, 4);
  for (int b = 0; b < N_BACKENDS; b++) {
    if (!sg_backend_available(k_backends[b])) continue;
    sg_use_backend(k_backends[b]);
    sg_tensor *y = sg_max_pool(xt, k, st, SG_PADDING_VALID, NULL);
    cr_assert_not_null(y, "%s", sg_last_error());
    for (int c = 0; c < 19; c++)
      cr_assert_eq(signbit(sg_data_f32(y)[c]) != 0, (c & 1) != 0,
                   "%s: channel %d gives %g, the first tap is %g", k_backends[b], c,
                   sg_data_f32(y)[c], x[c]);
    sg_dispose(y);
  }
  sg_dispose(xt);
  sg_use_backend(best);
}

typedef struct pool_arg {
  bool is_max;
  int64_t k[2], s[2];
  sg_padding pad;
} pool_arg;

static sg_tensor *pool_fn(sg_tensor *const *xs, void *arg) {
  const pool_arg *a = arg;
  return a->is_max ? sg_max_pool(xs[0], a->k, a->s, a->pad, NULL)
                   : sg_avg_pool(xs[0], a->k, a->s, a->pad, NULL);
}

Test(pool, gradients_match_finite_differences) {
  /* Distinct values far apart, so no tie moves under the finite-difference step. */
  const int64_t shape[] = {2, 5, 5, 3};
  float xv[150];
  for (int i = 0; i < 150; i++) xv[i] = (float)((i * 37) % 150) * 0.1f - 7.0f;
  sg_tensor *x = t_f32(xv, 4, shape);
  const pool_arg args[] = {
      {true, {2, 2}, {2, 2}, SG_PADDING_VALID}, {true, {3, 3}, {2, 2}, SG_PADDING_SAME},
      {true, {3, 3}, {1, 1}, SG_PADDING_SAME},  {false, {2, 2}, {2, 2}, SG_PADDING_VALID},
      {false, {3, 3}, {2, 2}, SG_PADDING_SAME}, {false, {3, 2}, {1, 1}, SG_PADDING_SAME},
  };
  const char *best = sg_backend_name();
  for (int b = 0; b < N_BACKENDS; b++) {
    if (!sg_backend_available(k_backends[b])) continue;
    sg_use_backend(k_backends[b]);
    for (size_t i = 0; i < sizeof args / sizeof *args; i++)
      gc_check(args[i].is_max ? "max_pool" : "avg_pool", pool_fn, (void *)&args[i], &x, 1, 1e-3,
               2e-3);
  }
  sg_use_backend(best);
  sg_dispose(x);
}

Test(pool, errors) {
  int64_t live = t_live_tensors();
  sg_tensor *x = sg_zeros((int64_t[]){1, 3, 3, 2}, 4);
  t_expect_error(sg_max_pool(x, (int64_t[]){4, 4}, NULL, SG_PADDING_VALID, NULL), SG_ERR_SHAPE,
                 "max_pool", "does not fit", NULL);
  t_expect_error(sg_avg_pool(x, (int64_t[]){0, 2}, NULL, SG_PADDING_SAME, NULL), SG_ERR_ARG,
                 "avg_pool", NULL);
  t_expect_error(sg_avg_pool(x, NULL, NULL, SG_PADDING_SAME, NULL), SG_ERR_ARG, "ksize", NULL);
  /* SAME padding that overflows 64 bits ((out - 1) stride + window): an error, not a wrapped
     size. */
  t_expect_error(
      sg_max_pool(x, (int64_t[]){INT64_MAX, 2}, (int64_t[]){1, 1}, SG_PADDING_SAME, NULL),
      SG_ERR_ARG, "max_pool", "overflows", NULL);
  /* A window as high as INT64_MAX, stepped by itself: one output row, the max over every row
     (SAME pads by about 2^62 above, which the taps skip), as a window of the input's height. */
  sg_tensor *xr = sg_random_uniform((int64_t[]){1, 3, 3, 2}, 4, -1, 1, 5);
  sg_tensor *tall = sg_max_pool(xr, (int64_t[]){INT64_MAX, 2}, NULL, SG_PADDING_SAME, NULL);
  sg_tensor *all = sg_max_pool(xr, (int64_t[]){3, 2}, NULL, SG_PADDING_SAME, NULL);
  cr_assert(tall && all, "%s", sg_last_error());
  cr_assert_eq(sg_numel(tall), sg_numel(all));
  cr_assert_eq(memcmp(sg_data_f32(tall), sg_data_f32(all), (size_t)sg_numel(all) * sizeof(float)),
               0);
  sg_dispose(xr);
  sg_dispose(tall);
  sg_dispose(all);
  sg_tensor *v = sg_zeros((int64_t[]){3, 3}, 2);
  t_expect_error(sg_max_pool(v, (int64_t[]){2, 2}, NULL, SG_PADDING_SAME, NULL), SG_ERR_SHAPE,
                 "[3,3]", NULL);
  sg_dispose(x);
  sg_dispose(v);
  cr_assert_eq(t_live_tensors(), live);
}

/* ---- batch norm, moments ----------------------------------------------------------------------
 */

Test(norm, batch_norm_hand_computed) {
  int64_t live = t_live_tensors();
  /* Two channels: (x - mean) * scale / sqrt(var + eps) + offset. */
  sg_tensor *x = t_f32((float[]){1, 10, 3, 20, 5, 30}, 2, (int64_t[]){3, 2});
  sg_tensor *mean = t_f32((float[]){3, 20}, 1, (int64_t[]){2});
  sg_tensor *var = t_f32((float[]){3.999f, 99.999f}, 1, (int64_t[]){2});
  sg_tensor *off = t_f32((float[]){1, -1}, 1, (int64_t[]){2});
  sg_tensor *scale = t_f32((float[]){2, 0.5f}, 1, (int64_t[]){2});
  const char *best = sg_backend_name();
  for (int b = 0; b < N_BACKENDS; b++) {
    if (!sg_backend_available(k_backends[b])) continue;
    sg_use_backend(k_backends[b]);
    sg_tensor *yb = sg_batch_norm(x, mean, var, off, scale, 1e-3f);
    t_expect_f32(yb, (float[]){-1, -1.5f, 1, -1, 3, -0.5f}, 2, (int64_t[]){3, 2}, 1e-6, 1e-6);
    sg_dispose(yb);
  }
  sg_use_backend(best);
  sg_tensor *y = sg_batch_norm(x, mean, var, off, scale, 1e-3f);
  /* [1, 1, C] statistics (as sg_moments with keep_dims gives) work the same. */
  sg_tensor *m3 = sg_reshape(mean, (int64_t[]){1, 1, 2}, 3);
  sg_tensor *x3 = sg_reshape(x, (int64_t[]){3, 1, 2}, 3);
  sg_tensor *y3 = sg_batch_norm(x3, m3, var, off, scale, 1e-3f);
  t_expect_f32(y3, (float[]){-1, -1.5f, 1, -1, 3, -0.5f}, 3, (int64_t[]){3, 1, 2}, 1e-6, 1e-6);
  /* Moments over the rows: mean [3, 20], biased variance [8/3, 200/3]. */
  sg_tensor *mm, *vv;
  cr_assert_eq(sg_moments(x, (int[]){0}, 1, false, &mm, &vv), SG_OK, "%s", sg_last_error());
  t_expect_f32(mm, (float[]){3, 20}, 1, (int64_t[]){2}, 1e-6, 1e-6);
  t_expect_f32(vv, (float[]){8.0f / 3, 200.0f / 3}, 1, (int64_t[]){2}, 1e-5, 1e-6);
  sg_tensor *mk, *vk;
  cr_assert_eq(sg_moments(x, NULL, 0, true, &mk, &vk), SG_OK);
  cr_assert_eq(sg_rank(mk), 2);
  cr_assert_eq(sg_rank(vk), 2);
  cr_assert_float_eq(sg_data_f32(mk)[0], 11.5f, 1e-6);
  sg_tensor *objs[] = {x, mean, var, off, scale, y, m3, x3, y3, mm, vv, mk, vk};
  for (int i = 0; i < 13; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}

static sg_tensor *bn_fn(sg_tensor *const *xs, void *arg) {
  (void)arg;
  return sg_batch_norm(xs[0], xs[1], xs[2], xs[3], xs[4], 1e-2f);
}

/* Training-mode batch norm: statistics from sg_moments of the same x. */
static sg_tensor *bn_train_fn(sg_tensor *const *xs, void *arg) {
  (void)arg;
  sg_tensor *m, *v;
  if (sg_moments(xs[0], (int[]){0, 1, 2}, 3, false, &m, &v) != SG_OK) return NULL;
  sg_tensor *y = sg_batch_norm(xs[0], m, v, xs[1], xs[2], 1e-3f);
  sg_dispose(m);
  sg_dispose(v);
  return y;
}

Test(norm, gradients_match_finite_differences) {
  sg_tensor *x = sg_random_uniform((int64_t[]){2, 3, 2, 3}, 4, -2, 2, 21);
  sg_tensor *mean = sg_random_uniform((int64_t[]){3}, 1, -1, 1, 22);
  sg_tensor *var = sg_random_uniform((int64_t[]){3}, 1, 0.5f, 2, 23);
  sg_tensor *off = sg_random_uniform((int64_t[]){3}, 1, -1, 1, 24);
  sg_tensor *scale = sg_random_uniform((int64_t[]){1, 3}, 2, 0.5f, 2, 25);
  sg_tensor *xs[5] = {x, mean, var, off, scale};
  sg_tensor *xt[3] = {x, off, mean};
  const char *best = sg_backend_name();
  for (int b = 0; b < N_BACKENDS; b++) {
    if (!sg_backend_available(k_backends[b])) continue;
    sg_use_backend(k_backends[b]);
    gc_check("batch_norm", bn_fn, NULL, xs, 5, 1e-3, 2e-3);
    gc_check("batch_norm(moments)", bn_train_fn, NULL, xt, 3, 1e-3, 5e-3);
  }
  sg_use_backend(best);
  for (int i = 0; i < 5; i++) sg_dispose(xs[i]);
}

/* A buffer of n floats at `off` floats past a 64-byte boundary, with canaries after it. */
#define BN_PAD 32
#define BN_CANARY 12345.0f
static float *bn_buf(float **mem, size_t n, size_t off) {
  *mem = aligned_alloc(64, (n + off + BN_PAD + 15) / 16 * 64);
  cr_assert_not_null(*mem);
  float *p = *mem + off;
  for (size_t i = 0; i < BN_PAD; i++) p[n + i] = BN_CANARY;
  return p;
}
static void bn_canaries(const float *p, size_t n, const char *be, const char *what) {
  for (size_t i = 0; i < BN_PAD; i++)
    cr_assert_eq(p[n + i], BN_CANARY, "%s %s wrote past its %zu floats", be, what, n);
}
/* Multiples of 1/8 in [-8, 8]: every sum the backward kernel makes is exact in any order. */
static float bn_dyadic(unsigned *st) {
  *st = *st * 1103515245u + 12345u;
  return (float)((int)(*st >> 16) % 129 - 64) / 8.0f;
}

/* The batch-norm kernels of every backend against scalar, with channel counts below, at and
   past the vector widths and the backward's blocks (1, 7, 16, 17, 33, 100, 130, 1030: two buffers
   of 512 and a tail) and every operand 0..15 floats off alignment: the forward y = x*a + b is one
   rounding per product and sum, the backward's sums are exact on dyadic values, so both must match
   scalar bit for bit. The sums start non-zero (the kernel adds to them) and dx is also passed as
   NULL. */
Test(norm, kernels_match_scalar_on_every_backend) {
  static const size_t chans[] = {1, 7, 16, 17, 33, 100, 130, 1030};
  static const size_t rows_list[] = {1, 3, 5, 40};
  const sg_backend *ref = sg_backend_get("scalar");
  unsigned st = 7;
  for (int b = 1; b < N_BACKENDS; b++) {
    const sg_backend *be = sg_backend_get(k_backends[b]);
    if (!be) continue;
    for (size_t ci = 0; ci < sizeof chans / sizeof *chans; ci++)
      for (size_t ri = 0; ri < sizeof rows_list / sizeof *rows_list; ri++)
        for (size_t off = 0; off < 16; off++) {
          size_t c = chans[ci], rows = rows_list[ri], n = rows * c;
          float *mx, *ma, *mb, *mm, *my, *mdy, *mdx, *ms0, *ms1;
          float *x = bn_buf(&mx, n, off), *a = bn_buf(&ma, c, (off + 3) % 16),
                *bb = bn_buf(&mb, c, (off + 6) % 16), *mean = bn_buf(&mm, c, (off + 9) % 16),
                *y = bn_buf(&my, n, (off + 12) % 16), *dy = bn_buf(&mdy, n, (off + 1) % 16),
                *dx = bn_buf(&mdx, n, (off + 4) % 16), *s0 = bn_buf(&ms0, c, (off + 7) % 16),
                *s1 = bn_buf(&ms1, c, (off + 10) % 16);
          float *want_y = malloc(n * sizeof(float)), *want_dx = malloc(n * sizeof(float));
          float *want_s0 = malloc(c * sizeof(float)), *want_s1 = malloc(c * sizeof(float));
          float *init_s = malloc(c * sizeof(float));
          /* The forward on arbitrary floats, the backward on dyadic ones. */
          for (size_t i = 0; i < n; i++) x[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
          for (size_t k = 0; k < c; k++) {
            a[k] = (float)rand() / (float)RAND_MAX + 0.5f;
            bb[k] = (float)rand() / (float)RAND_MAX - 0.5f;
          }
          ref->batch_norm(x, rows, c, a, bb, want_y);
          be->batch_norm(x, rows, c, a, bb, y);
          cr_assert_eq(memcmp(y, want_y, n * sizeof(float)), 0,
                       "%s batch_norm differs from scalar: channels %zu, rows %zu, offset %zu",
                       be->name, c, rows, off);
          bn_canaries(y, n, be->name, "batch_norm y");
          for (size_t i = 0; i < n; i++) x[i] = bn_dyadic(&st), dy[i] = bn_dyadic(&st);
          for (size_t k = 0; k < c; k++)
            a[k] = bn_dyadic(&st), mean[k] = bn_dyadic(&st), init_s[k] = bn_dyadic(&st);
          for (int with_dx = 0; with_dx < 2; with_dx++) {
            memcpy(want_s0, init_s, c * sizeof(float));
            memcpy(want_s1, init_s, c * sizeof(float));
            memcpy(s0, init_s, c * sizeof(float));
            memcpy(s1, init_s, c * sizeof(float));
            ref->batch_norm_backward(dy, x, rows, c, a, mean, with_dx ? want_dx : NULL, want_s0,
                                     want_s1);
            be->batch_norm_backward(dy, x, rows, c, a, mean, with_dx ? dx : NULL, s0, s1);
            if (with_dx)
              cr_assert_eq(memcmp(dx, want_dx, n * sizeof(float)), 0,
                           "%s batch_norm_backward dx differs: channels %zu, rows %zu, "
                           "offset %zu",
                           be->name, c, rows, off);
            cr_assert_eq(memcmp(s0, want_s0, c * sizeof(float)), 0,
                         "%s batch_norm_backward sum_dy differs: channels %zu, rows %zu, "
                         "offset %zu",
                         be->name, c, rows, off);
            cr_assert_eq(memcmp(s1, want_s1, c * sizeof(float)), 0,
                         "%s batch_norm_backward sum_dy_xc differs: channels %zu, rows %zu, "
                         "offset %zu",
                         be->name, c, rows, off);
            bn_canaries(dx, n, be->name, "batch_norm_backward dx");
            bn_canaries(s0, c, be->name, "batch_norm_backward sum_dy");
            bn_canaries(s1, c, be->name, "batch_norm_backward sum_dy_xc");
          }
          float *all[] = {mx,  ma,  mb,     mm,      my,      mdy,     mdx,
                          ms0, ms1, want_y, want_dx, want_s0, want_s1, init_s};
          for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
        }
  }
}

/* Which sg_moments output, over which axes, for the gradient check. */
typedef struct moments_arg {
  bool variance, keep_dims;
  const int *axes;
  int n_axes;
} moments_arg;

static sg_tensor *moments_fn(sg_tensor *const *xs, void *arg) {
  const moments_arg *a = arg;
  sg_tensor *m, *v;
  if (sg_moments(xs[0], a->axes, a->n_axes, a->keep_dims, &m, &v) != SG_OK) return NULL;
  sg_dispose(a->variance ? m : v);
  return a->variance ? v : m;
}

/* sg_moments on its own (batch_norm's check only sees it through the normalisation): the mean
   and the biased variance against finite differences, over one axis, two axes with keep_dims,
   and all axes. */
Test(norm, moments_gradients_match_finite_differences) {
  sg_tensor *x = sg_random_uniform((int64_t[]){3, 4, 5}, 3, -2, 2, 41);
  static const int one[] = {1}, two[] = {0, 2};
  const moments_arg cases[] = {
      {false, false, one, 1}, {true, false, one, 1},   {false, true, two, 2},
      {true, true, two, 2},   {false, false, NULL, 0}, {true, false, NULL, 0},
  };
  const char *best = sg_backend_name();
  for (int b = 0; b < N_BACKENDS; b++) {
    if (!sg_backend_available(k_backends[b])) continue;
    sg_use_backend(k_backends[b]);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
      gc_check(cases[i].variance ? "moments(variance)" : "moments(mean)", moments_fn,
               (void *)&cases[i], &x, 1, 1e-3, 2e-3);
  }
  sg_use_backend(best);
  sg_dispose(x);
}

/* Partial sums per chunk: 1 and 2 threads give identical gradients. */
Test(norm, one_and_two_threads_are_bit_identical) {
  int saved = sg_threads();
  sg_tensor *x = sg_random_uniform((int64_t[]){64, 16, 16, 8}, 4, -2, 2, 31);
  sg_tensor *off = sg_random_uniform((int64_t[]){8}, 1, -1, 1, 32);
  sg_tensor *scale = sg_random_uniform((int64_t[]){8}, 1, 0.5f, 2, 33);
  sg_tensor *out[2][3];
  for (int t = 0; t < 2; t++) {
    sg_set_threads(t + 1);
    sg_scope_begin("threads"); /* frees the intermediates (moments, square, sum) */
    sg_tensor *xs[3] = {x, off, scale};
    cr_assert_eq(sg_tape_begin(), SG_OK);
    sg_tensor *y = bn_train_fn(xs, NULL);
    sg_tensor *l = sg_sum(sg_square(y), NULL, 0, false);
    cr_assert_eq(sg_tape_end(l, NULL, xs, 3, out[t]), SG_OK, "%s", sg_last_error());
    for (int k = 0; k < 3; k++) sg_keep(out[t][k]);
    sg_scope_end(NULL, 0);
  }
  for (int k = 0; k < 3; k++) {
    cr_assert_eq(memcmp(sg_data_f32(out[0][k]), sg_data_f32(out[1][k]),
                        (size_t)sg_numel(out[0][k]) * sizeof(float)),
                 0, "gradient %d differs between 1 and 2 threads", k);
    sg_dispose(out[0][k]);
    sg_dispose(out[1][k]);
  }
  sg_dispose(x);
  sg_dispose(off);
  sg_dispose(scale);
  sg_set_threads(saved);
}

Test(norm, errors) {
  int64_t live = t_live_tensors();
  sg_tensor *x = sg_zeros((int64_t[]){4, 3}, 2), *c3 = sg_ones((int64_t[]){3}, 1),
            *c4 = sg_ones((int64_t[]){4}, 1), *c23 = sg_ones((int64_t[]){2, 3}, 2);
  t_expect_error(sg_batch_norm(x, c4, c3, c3, c3, 1e-3f), SG_ERR_SHAPE, "mean", "[4]", "[4,3]",
                 NULL);
  t_expect_error(sg_batch_norm(x, c3, c23, c3, c3, 1e-3f), SG_ERR_SHAPE, "variance", NULL);
  t_expect_error(sg_batch_norm(x, c3, c3, c3, c3, 0.0f), SG_ERR_ARG, "epsilon", NULL);
  t_expect_error(sg_batch_norm(x, c3, c3, NULL, c3, 1e-3f), SG_ERR_ARG, "offset", NULL);
  sg_tensor *m = (sg_tensor *)1, *v = (sg_tensor *)1;
  cr_assert_eq(sg_moments(x, (int[]){5}, 1, false, &m, &v), SG_ERR_ARG);
  cr_assert_null(m);
  cr_assert_null(v);
  sg_clear_error();
  sg_tensor *objs[] = {x, c3, c4, c23};
  for (int i = 0; i < 4; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}

/* ---- dropout ------------------------------------------------------------------------------------
 */

Test(dropout, mask_statistics_determinism_and_gradient) {
  int64_t live = t_live_tensors();
  const int64_t n = 100003;
  sg_tensor *x = sg_ones(&n, 1);
  const char *best = sg_backend_name();
  sg_tensor *first = NULL;
  for (int b = 0; b < N_BACKENDS; b++) {
    if (!sg_backend_available(k_backends[b])) continue;
    sg_use_backend(k_backends[b]);
    for (int t = 1; t <= 2; t++) {
      sg_set_threads(t);
      sg_tensor *y = sg_dropout(x, 0.3f, 42);
      cr_assert_not_null(y, "%s", sg_last_error());
      if (!first) {
        first = y;
        continue;
      }
      cr_assert_eq(memcmp(sg_data_f32(first), sg_data_f32(y), (size_t)n * sizeof(float)), 0,
                   "dropout differs on %s with %d threads", k_backends[b], t);
      sg_dispose(y);
    }
  }
  sg_use_backend(best);
  sg_set_threads(0);
  /* Kept elements are 1 / 0.7, the rest 0; about 70% kept (5 sigma is ~0.7%). */
  int64_t kept = 0;
  for (int64_t i = 0; i < n; i++) {
    float v = sg_data_f32(first)[i];
    cr_assert(v == 0.0f || fabsf(v - 1.0f / 0.7f) < 1e-6f, "y[%lld] = %g", (long long)i, v);
    kept += v != 0.0f;
  }
  cr_assert(fabs((double)kept / (double)n - 0.7) < 0.007, "kept %lld of %lld", (long long)kept,
            (long long)n);
  /* Another seed gives another mask; rate 0 is the identity. */
  sg_tensor *other = sg_dropout(x, 0.3f, 43);
  cr_assert_neq(memcmp(sg_data_f32(first), sg_data_f32(other), (size_t)n * sizeof(float)), 0);
  sg_tensor *same = sg_dropout(x, 0.0f, 7);
  t_expect_f32(same, sg_data_f32(x), 1, &n, 0, 0);
  /* The gradient is the same mask and scale. */
  sg_tensor *g;
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_dropout(x, 0.3f, 42);
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK);
  cr_assert_eq(memcmp(sg_data_f32(first), sg_data_f32(g), (size_t)n * sizeof(float)), 0);
  t_expect_error(sg_dropout(x, 1.0f, 1), SG_ERR_ARG, "rate", NULL);
  t_expect_error(sg_dropout(x, -0.1f, 1), SG_ERR_ARG, "rate", NULL);
  sg_tensor *objs[] = {x, first, other, same, y, g};
  for (int i = 0; i < 6; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}

/* The dropout kernel of every backend gives the scalar kernel's bits: sizes that hit every
   remainder path, outputs 1..15 floats off alignment, element counters that cross a multiple of
   2^32 inside a vector, rates 0 and 1 (threshold 0 and 2^32) and NaN, inf and -0 inputs. */
Test(dropout, kernel_matches_scalar_on_every_backend) {
  static const size_t sizes[] = {0, 1, 7, 15, 16, 17, 31, 33, 63, 65, 1000, 100003};
  static const struct {
    uint64_t offset, seed, threshold;
  } cases[] = {
      {0, 42, 1288490189u},                                  /* rate 0.3 */
      {(1ull << 32) - 21, 0x123456789ABCDEFull, 1ull << 31}, /* counters cross 2^32 */
      {5, 7, 0},                                             /* rate 0: keep all */
      {9, 7, 1ull << 32},                                    /* rate 1: drop all */
  };
  const size_t most = 100003 + 16;
  float *x = malloc(most * sizeof(float)), *want = malloc(most * sizeof(float));
  float *got = malloc((most + 16) * sizeof(float));
  for (size_t i = 0; i < most; i++) x[i] = (float)(i % 13) - 6.0f;
  x[3] = NAN, x[40] = INFINITY, x[41] = -0.0f, x[99999] = NAN;
  const sg_backend *ref = sg_backend_get("scalar");
  for (int b = 1; b < N_BACKENDS; b++) {
    const sg_backend *be = sg_backend_get(k_backends[b]);
    if (!be) continue;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
      for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t off = 0; off < 16; off += (sizes[s] > 1000 ? 5 : 1)) {
          size_t n = sizes[s];
          ref->dropout(x + off, want, n, cases[c].offset, cases[c].seed, cases[c].threshold, 1.5f);
          got[off + n] = 12345.0f; /* canary after the end */
          be->dropout(x + off, got + off, n, cases[c].offset, cases[c].seed, cases[c].threshold,
                      1.5f);
          cr_assert_eq(memcmp(got + off, want, n * sizeof(float)), 0,
                       "%s dropout differs from scalar: case %zu, n %zu, offset %zu", be->name, c,
                       n, off);
          cr_assert_eq(got[off + n], 12345.0f, "%s dropout wrote past n = %zu", be->name, n);
        }
  }
  free(x);
  free(want);
  free(got);
}
