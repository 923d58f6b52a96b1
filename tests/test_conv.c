/* Convolution tests: sg_conv2d and sg_depthwise_conv2d on hand-computed cases (VALID, SAME,
 * strides, dilation, explicit padding), against a double reference on random data for many
 * geometries on every backend, finite-difference gradients for the input and the filter,
 * thread-count independence, errors and leaks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

static const char *const k_backends[] = {"scalar", "avx2", "avx512", "neon"};
#define N_BACKENDS ((int)(sizeof k_backends / sizeof k_backends[0]))

typedef struct geom {
  int64_t n, h, w, c, kh, kw, o; /* o: out channels (conv) or multiplier (depthwise) */
  int64_t strides[2], dil[2];
  sg_padding pad;
  int64_t pads[4];
} geom;

/* Output size and top/left padding along one axis, by TensorFlow's rules written out again. */
static void axis(int64_t in, int64_t k, int64_t s, int64_t d, sg_padding p, const int64_t *pads,
                 int64_t *out, int64_t *before) {
  int64_t eff = (k - 1) * d + 1;
  if (p == SG_PADDING_SAME) {
    *out = (in + s - 1) / s;
    int64_t total = (*out - 1) * s + eff - in;
    *before = total > 0 ? total / 2 : 0;
  } else if (p == SG_PADDING_VALID) {
    *out = (in - eff) / s + 1;
    *before = 0;
  } else {
    *out = (in + pads[0] + pads[1] - eff) / s + 1;
    *before = pads[0];
  }
}

/* Direct convolution in double; depthwise when dw. y is [n, oh, ow, oc]. */
static void ref_conv(const geom *g, bool dw, const float *x, const float *f, double *y, int64_t *oh,
                     int64_t *ow) {
  int64_t pt, pl, pv[2] = {g->pads[0], g->pads[1]}, ph[2] = {g->pads[2], g->pads[3]};
  axis(g->h, g->kh, g->strides[0], g->dil[0], g->pad, pv, oh, &pt);
  axis(g->w, g->kw, g->strides[1], g->dil[1], g->pad, ph, ow, &pl);
  int64_t oc = dw ? g->c * g->o : g->o;
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t i = 0; i < *oh; i++)
      for (int64_t j = 0; j < *ow; j++)
        for (int64_t q = 0; q < oc; q++) {
          double s = 0;
          for (int64_t a = 0; a < g->kh; a++)
            for (int64_t b = 0; b < g->kw; b++) {
              int64_t ih = i * g->strides[0] - pt + a * g->dil[0];
              int64_t iw = j * g->strides[1] - pl + b * g->dil[1];
              if (ih < 0 || ih >= g->h || iw < 0 || iw >= g->w) continue;
              const float *xp = x + ((n * g->h + ih) * g->w + iw) * g->c;
              if (dw) {
                int64_t c = q / g->o, m = q % g->o;
                s += (double)xp[c] * f[((a * g->kw + b) * g->c + c) * g->o + m];
              } else {
                for (int64_t c = 0; c < g->c; c++)
                  s += (double)xp[c] * f[((a * g->kw + b) * g->c + c) * g->o + q];
              }
            }
          y[((n * *oh + i) * *ow + j) * oc + q] = s;
        }
}

static sg_tensor *run_conv(const geom *g, bool dw, sg_tensor *x, sg_tensor *f) {
  const int64_t *pads = g->pad == SG_PADDING_EXPLICIT ? g->pads : NULL;
  return dw ? sg_depthwise_conv2d(x, f, g->strides, g->pad, pads, g->dil)
            : sg_conv2d(x, f, g->strides, g->pad, pads, g->dil);
}

static float *iota(int64_t n, float scale, float off) {
  float *v = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++) v[i] = (float)i * scale + off;
  return v;
}

Test(conv, hand_computed) {
  int64_t live = t_live_tensors();
  float *xv = iota(16, 1, 1); /* 1..16 */
  sg_tensor *x3 = t_f32(xv, 4, (int64_t[]){1, 3, 3, 1});
  /* [[1, 0], [0, 1]]: x[i][j] + x[i+1][j+1]. */
  sg_tensor *diag = t_f32((float[]){1, 0, 0, 1}, 4, (int64_t[]){2, 2, 1, 1});
  sg_tensor *y = sg_conv2d(x3, diag, NULL, SG_PADDING_VALID, NULL, NULL);
  t_expect_f32(y, (float[]){6, 8, 12, 14}, 4, (int64_t[]){1, 2, 2, 1}, 0, 0);
  sg_dispose(y);
  /* SAME, stride 1: total padding 1, all of it at the bottom / right. */
  y = sg_conv2d(x3, diag, NULL, SG_PADDING_SAME, NULL, NULL);
  t_expect_f32(y, (float[]){6, 8, 3, 12, 14, 6, 7, 8, 9}, 4, (int64_t[]){1, 3, 3, 1}, 0, 0);
  sg_dispose(y);
  /* SAME, stride 2, 3x3 ones: out 2x2, padding 1 on each side. */
  sg_tensor *ones = sg_ones((int64_t[]){3, 3, 1, 1}, 4);
  y = sg_conv2d(x3, ones, (int64_t[]){2, 2}, SG_PADDING_SAME, NULL, NULL);
  t_expect_f32(y, (float[]){12, 16, 24, 28}, 4, (int64_t[]){1, 2, 2, 1}, 0, 0);
  sg_dispose(y);
  /* Explicit padding {1, 0, 0, 1} with the 2x2 diagonal: a row of zeros on top, a column on the
     right. */
  y = sg_conv2d(x3, diag, NULL, SG_PADDING_EXPLICIT, (int64_t[]){1, 0, 0, 1}, NULL);
  t_expect_f32(y, (float[]){2, 3, 0, 6, 8, 3, 12, 14, 6}, 4, (int64_t[]){1, 3, 3, 1}, 0, 0);
  sg_dispose(y);
  /* Dilation 2 on 4x4 (0..15) with 2x2 ones: taps two apart. */
  float *x16 = iota(16, 1, 0);
  sg_tensor *x4 = t_f32(x16, 4, (int64_t[]){1, 4, 4, 1});
  sg_tensor *ones2 = sg_ones((int64_t[]){2, 2, 1, 1}, 4);
  y = sg_conv2d(x4, ones2, NULL, SG_PADDING_VALID, NULL, (int64_t[]){2, 2});
  t_expect_f32(y, (float[]){20, 24, 36, 40}, 4, (int64_t[]){1, 2, 2, 1}, 0, 0);
  sg_dispose(y);
  /* Two input channels, two filters: a 1x1 conv is a per-pixel matrix product. */
  sg_tensor *xc = t_f32((float[]){1, 2, 3, 4}, 4, (int64_t[]){1, 1, 2, 2});
  sg_tensor *fc = t_f32((float[]){1, 10, 100, 1000}, 4, (int64_t[]){1, 1, 2, 2});
  y = sg_conv2d(xc, fc, NULL, SG_PADDING_SAME, NULL, NULL);
  t_expect_f32(y, (float[]){201, 2010, 403, 4030}, 4, (int64_t[]){1, 1, 2, 2}, 0, 0);
  sg_dispose(y);
  /* Depthwise, multiplier 2: channel c*2+m uses filter[.., c, m]. */
  sg_tensor *fd = t_f32((float[]){1, -1, 2, 0.5f}, 4, (int64_t[]){1, 1, 2, 2});
  y = sg_depthwise_conv2d(xc, fd, NULL, SG_PADDING_VALID, NULL, NULL);
  t_expect_f32(y, (float[]){1, -1, 4, 1, 3, -3, 8, 2}, 4, (int64_t[]){1, 1, 2, 4}, 0, 0);
  sg_dispose(y);
  sg_tensor *objs[] = {x3, diag, ones, x4, ones2, xc, fc, fd};
  for (int i = 0; i < 8; i++) sg_dispose(objs[i]);
  free(xv);
  free(x16);
  cr_assert_eq(t_live_tensors(), live);
}

static const geom k_geoms[] = {
    {2, 7, 6, 3, 3, 3, 5, {1, 1}, {1, 1}, SG_PADDING_SAME, {0}},
    {1, 8, 9, 4, 3, 2, 3, {2, 1}, {1, 1}, SG_PADDING_SAME, {0}},
    {2, 9, 9, 2, 3, 3, 4, {2, 2}, {1, 1}, SG_PADDING_VALID, {0}},
    {1, 10, 8, 3, 3, 3, 2, {1, 2}, {2, 1}, SG_PADDING_SAME, {0}},
    {1, 6, 7, 2, 2, 3, 3, {1, 1}, {1, 1}, SG_PADDING_EXPLICIT, {2, 1, 0, 3}},
    {3, 5, 5, 17, 1, 1, 19, {1, 1}, {1, 1}, SG_PADDING_SAME, {0}}, /* pointwise */
    {1, 12, 12, 20, 5, 5, 33, {1, 1}, {1, 1}, SG_PADDING_SAME, {0}},
    {1, 4, 4, 1, 5, 5, 1, {3, 3}, {1, 1}, SG_PADDING_SAME, {0}}, /* window larger than x */
    /* 16 channels and more in and out: the shifted-gemm form (engine/conv_shifted.c) */
    {2, 9, 11, 16, 3, 3, 24, {2, 1}, {1, 1}, SG_PADDING_SAME, {0}},
    {1, 10, 9, 17, 3, 3, 16, {1, 2}, {2, 1}, SG_PADDING_SAME, {0}},
    {2, 7, 8, 16, 3, 2, 17, {1, 1}, {1, 1}, SG_PADDING_EXPLICIT, {2, 1, 0, 3}},
    {1, 9, 9, 20, 3, 3, 16, {2, 3}, {1, 1}, SG_PADDING_VALID, {0}},
    {1, 5, 6, 300, 3, 3, 290, {1, 1}, {1, 1}, SG_PADDING_SAME, {0}}, /* k past KC, n ragged */
    /* 81 taps: summed in two groups (MAX_TAPS), stride 2 makes two column classes of dx */
    {1, 12, 13, 16, 9, 9, 18, {1, 2}, {1, 1}, SG_PADDING_SAME, {0}},
};

static void check_against_reference(bool dw) {
  for (size_t gi = 0; gi < sizeof k_geoms / sizeof *k_geoms; gi++) {
    const geom *g = &k_geoms[gi];
    int64_t fo = g->o;
    sg_tensor *x = sg_random_uniform((int64_t[]){g->n, g->h, g->w, g->c}, 4, -1, 1, 7 + gi);
    sg_tensor *f = sg_random_uniform((int64_t[]){g->kh, g->kw, g->c, fo}, 4, -1, 1, 99 + gi);
    int64_t oh, ow, oc = dw ? g->c * g->o : g->o;
    double *want = malloc(sizeof(double) * (size_t)(g->n * 64 * 64 * oc));
    ref_conv(g, dw, sg_data_f32(x), sg_data_f32(f), want, &oh, &ow);
    for (int b = 0; b < N_BACKENDS; b++) {
      if (!sg_backend_available(k_backends[b])) continue;
      cr_assert_eq(sg_use_backend(k_backends[b]), SG_OK);
      sg_tensor *y = run_conv(g, dw, x, f);
      cr_assert_not_null(y, "geometry %zu: %s", gi, sg_last_error());
      cr_assert_eq(sg_shape(y)[1], oh, "geometry %zu on %s: height", gi, k_backends[b]);
      cr_assert_eq(sg_shape(y)[2], ow, "geometry %zu on %s: width", gi, k_backends[b]);
      cr_assert_eq(sg_shape(y)[3], oc);
      const float *yv = sg_data_f32(y);
      double tol = 1e-5 * (double)(g->kh * g->kw * (dw ? 1 : g->c));
      for (int64_t i = 0; i < sg_numel(y); i++)
        cr_assert(fabs(yv[i] - want[i]) <= tol, "%s geometry %zu on %s: y[%lld] = %.7g, want %.7g",
                  dw ? "depthwise" : "conv", gi, k_backends[b], (long long)i, yv[i], want[i]);
      sg_dispose(y);
    }
    free(want);
    sg_dispose(x);
    sg_dispose(f);
  }
}

Test(conv, conv2d_matches_reference_on_every_backend) {
  const char *best = sg_backend_name();
  check_against_reference(false);
  sg_use_backend(best);
}

Test(conv, depthwise_matches_reference_on_every_backend) {
  const char *best = sg_backend_name();
  check_against_reference(true);
  sg_use_backend(best);
}

typedef struct conv_arg {
  const geom *g;
  bool dw;
} conv_arg;

static sg_tensor *conv_fn(sg_tensor *const *xs, void *arg) {
  const conv_arg *a = arg;
  return run_conv(a->g, a->dw, xs[0], xs[1]);
}

Test(conv, gradients_match_finite_differences) {
  static const geom gs[] = {
      {2, 5, 4, 2, 3, 3, 3, {1, 1}, {1, 1}, SG_PADDING_SAME, {0}},
      {1, 6, 5, 2, 3, 2, 2, {2, 2}, {1, 1}, SG_PADDING_SAME, {0}},
      {1, 6, 6, 1, 2, 2, 2, {1, 1}, {2, 2}, SG_PADDING_VALID, {0}},
      {1, 4, 5, 2, 2, 2, 2, {1, 2}, {1, 1}, SG_PADDING_EXPLICIT, {1, 2, 0, 1}},
      {2, 3, 3, 3, 1, 1, 2, {1, 1}, {1, 1}, SG_PADDING_VALID, {0}},
  };
  const char *best = sg_backend_name();
  for (int b = 0; b < N_BACKENDS; b++)
    for (int dw = 0; dw < 2; dw++)
      for (size_t i = 0; i < sizeof gs / sizeof *gs; i++) {
        if (!sg_backend_available(k_backends[b])) continue;
        sg_use_backend(k_backends[b]);
        const geom *g = &gs[i];
        sg_tensor *x = sg_random_uniform((int64_t[]){g->n, g->h, g->w, g->c}, 4, -1, 1, 3 + i);
        sg_tensor *f = sg_random_uniform((int64_t[]){g->kh, g->kw, g->c, g->o}, 4, -1, 1, 5 + i);
        conv_arg a = {g, dw != 0};
        sg_tensor *xs[2] = {x, f};
        gc_check(dw ? "depthwise_conv2d" : "conv2d", conv_fn, &a, xs, 2, 1e-2, 2e-3);
        sg_dispose(x);
        sg_dispose(f);
      }
  sg_use_backend(best);
}

static double dot(const sg_tensor *a, const sg_tensor *b) {
  double s = 0;
  for (int64_t i = 0; i < sg_numel(a); i++) s += (double)sg_data_f32(a)[i] * sg_data_f32(b)[i];
  return s;
}

/* conv2d is linear in x and in the filter, so its gradients are adjoints: for any dy, v and u,
   <dx, v> = <dy, conv(v, f)> and <df, u> = <dy, conv(x, u)>. Checked on every geometry of the
   reference test and every backend: the wide ones take the shifted-gemm path for dx, too big
   for finite differences. */
Test(conv, gradients_are_adjoints_of_the_forward) {
  const char *best = sg_backend_name();
  int64_t live = t_live_tensors();
  for (size_t gi = 0; gi < sizeof k_geoms / sizeof *k_geoms; gi++)
    for (int b = 0; b < N_BACKENDS; b++) {
      if (!sg_backend_available(k_backends[b])) continue;
      sg_use_backend(k_backends[b]);
      const geom *g = &k_geoms[gi];
      const int64_t xshape[4] = {g->n, g->h, g->w, g->c}, fshape[4] = {g->kh, g->kw, g->c, g->o};
      sg_scope_begin("adjoint");
      sg_tensor *x = sg_random_uniform(xshape, 4, -1, 1, 21 + gi);
      sg_tensor *f = sg_random_uniform(fshape, 4, -1, 1, 41 + gi);
      sg_tensor *v = sg_random_uniform(xshape, 4, -1, 1, 61 + gi);
      sg_tensor *u = sg_random_uniform(fshape, 4, -1, 1, 81 + gi);
      cr_assert_eq(sg_tape_begin(), SG_OK);
      sg_tensor *y = run_conv(g, false, x, f);
      sg_tensor *dy = sg_random_uniform(sg_shape(y), 4, -1, 1, 101 + gi);
      sg_tensor *xs[2] = {x, f}, *grads[2];
      cr_assert_eq(sg_tape_end(y, dy, xs, 2, grads), SG_OK, "%s", sg_last_error());
      double want_x = dot(dy, run_conv(g, false, v, f)), got_x = dot(grads[0], v);
      double want_f = dot(dy, run_conv(g, false, x, u)), got_f = dot(grads[1], u);
      /* float sums of K products per element: a few eps of sqrt(K) per term, relative to the
         sum of the magnitudes */
      double scale = 0;
      for (int64_t i = 0; i < sg_numel(y); i++) scale += fabs((double)sg_data_f32(dy)[i]);
      double tol = 1e-6 * scale * sqrt((double)(g->kh * g->kw * g->c));
      cr_assert(fabs(got_x - want_x) <= tol,
                "geometry %zu on %s: <dx, v> = %.9g, <dy, conv(v, f)> = %.9g", gi, k_backends[b],
                got_x, want_x);
      cr_assert(fabs(got_f - want_f) <= tol,
                "geometry %zu on %s: <df, u> = %.9g, <dy, conv(x, u)> = %.9g", gi, k_backends[b],
                got_f, want_f);
      sg_dispose(grads[0]);
      sg_dispose(grads[1]);
      sg_scope_end(NULL, 0);
    }
  sg_use_backend(best);
  cr_assert_eq(t_live_tensors(), live);
}

/* Large enough to split across threads: the results must not depend on the thread count. */
Test(conv, one_and_two_threads_are_bit_identical) {
  int saved = sg_threads();
  const geom g = {8, 20, 20, 16, 3, 3, 16, {1, 1}, {1, 1}, SG_PADDING_SAME, {0}};
  sg_tensor *x = sg_random_uniform((int64_t[]){g.n, g.h, g.w, g.c}, 4, -1, 1, 11);
  sg_tensor *f = sg_random_uniform((int64_t[]){3, 3, 16, 16}, 4, -1, 1, 12);
  sg_tensor *fd = sg_random_uniform((int64_t[]){3, 3, 16, 2}, 4, -1, 1, 13);
  sg_tensor *out[2][6];
  for (int t = 0; t < 2; t++) {
    sg_set_threads(t + 1);
    sg_scope_begin("threads"); /* frees the intermediates (square, sum) */
    sg_tensor *xs[2] = {x, f}, *g2[2], *xd[2] = {x, fd}, *gd[2];
    cr_assert_eq(sg_tape_begin(), SG_OK);
    sg_tensor *y = sg_conv2d(x, f, NULL, SG_PADDING_SAME, NULL, NULL);
    sg_tensor *l = sg_sum(sg_square(y), NULL, 0, false);
    cr_assert_eq(sg_tape_end(l, NULL, xs, 2, g2), SG_OK, "%s", sg_last_error());
    cr_assert_eq(sg_tape_begin(), SG_OK);
    sg_tensor *yd = sg_depthwise_conv2d(x, fd, NULL, SG_PADDING_SAME, NULL, NULL);
    sg_tensor *ld = sg_sum(sg_square(yd), NULL, 0, false);
    cr_assert_eq(sg_tape_end(ld, NULL, xd, 2, gd), SG_OK, "%s", sg_last_error());
    sg_tensor *o[6] = {y, g2[0], g2[1], yd, gd[0], gd[1]};
    for (int k = 0; k < 6; k++) sg_keep(o[k]);
    memcpy(out[t], o, sizeof o);
    sg_scope_end(NULL, 0);
  }
  for (int k = 0; k < 6; k++) {
    cr_assert_eq(memcmp(sg_data_f32(out[0][k]), sg_data_f32(out[1][k]),
                        (size_t)sg_numel(out[0][k]) * sizeof(float)),
                 0, "output %d differs between 1 and 2 threads", k);
    sg_dispose(out[0][k]);
    sg_dispose(out[1][k]);
  }
  sg_dispose(x);
  sg_dispose(f);
  sg_dispose(fd);
  sg_set_threads(saved);
}

/* y, and the gradients of sum(y^2) for x and f, through conv2d or depthwise_conv2d with SAME
   padding and the given strides: out[0..2], kept past the caller's scope. */
static void conv_and_grads(bool dw, sg_tensor *x, sg_tensor *f, const int64_t *strides,
                           sg_tensor *out[3]) {
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = dw ? sg_depthwise_conv2d(x, f, strides, SG_PADDING_SAME, NULL, NULL)
                    : sg_conv2d(x, f, strides, SG_PADDING_SAME, NULL, NULL);
  cr_assert_not_null(y, "%s", sg_last_error());
  sg_tensor *xs[] = {x, f};
  cr_assert_eq(sg_tape_end(sg_sum(sg_square(y), NULL, 0, false), NULL, xs, 2, out + 1), SG_OK, "%s",
               sg_last_error());
  out[0] = y;
  for (int k = 0; k < 3; k++) sg_keep(out[k]);
}

/* A stride past the input gives one output row or column, as a stride of the input's size
   does, padded alike: the same results bit for bit, forward and backward. SAME's output size was
   once in + stride - 1 over the stride, and the shifted form's first tap column first + stride -
   1 over it, both overflowing (a fuzzer found the first). conv2d's filter has 16 channels in and
   out, so it takes the shifted form (engine/conv_shifted.c); along the strided axis the 7 x 7
   window pads by 1 row or 2 columns before the input. */
Test(conv, strides_past_the_input) {
  int64_t live = t_live_tensors();
  struct {
    bool dw;
    int64_t x[4], f[4], near[2], far[2];
  } cases[] = {
      {false, {1, 4, 2, 16}, {7, 7, 16, 16}, {1, 2}, {1, INT64_MAX}},
      {false, {1, 4, 2, 16}, {7, 7, 16, 16}, {4, 1}, {INT64_MAX, 1}},
      {true, {1, 4, 4, 3}, {7, 7, 3, 2}, {4, 1}, {INT64_MAX, 1}},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    sg_scope_begin("strides_past_the_input");
    sg_tensor *x = sg_random_uniform(cases[c].x, 4, -1, 1, 7 + c);
    sg_tensor *f = sg_random_uniform(cases[c].f, 4, -1, 1, 8 + c);
    sg_tensor *near[3], *far[3];
    conv_and_grads(cases[c].dw, x, f, cases[c].near, near);
    conv_and_grads(cases[c].dw, x, f, cases[c].far, far);
    sg_scope_end(NULL, 0);
    for (int k = 0; k < 3; k++) {
      cr_assert_eq(sg_numel(far[k]), sg_numel(near[k]), "case %zu output %d", c, k);
      cr_assert_eq(memcmp(sg_data_f32(far[k]), sg_data_f32(near[k]),
                          (size_t)sg_numel(far[k]) * sizeof(float)),
                   0, "case %zu output %d differs", c, k);
      sg_dispose(far[k]);
      sg_dispose(near[k]);
    }
  }
  cr_assert_eq(t_live_tensors(), live);
}

Test(conv, errors_and_leaks) {
  int64_t live = t_live_tensors();
  sg_tensor *x = sg_zeros((int64_t[]){1, 4, 4, 3}, 4);
  sg_tensor *f = sg_zeros((int64_t[]){3, 3, 2, 4}, 4);
  t_expect_error(sg_conv2d(x, f, NULL, SG_PADDING_SAME, NULL, NULL), SG_ERR_SHAPE, "conv2d",
                 "[1,4,4,3]", "[3,3,2,4]", NULL);
  sg_tensor *f3 = sg_zeros((int64_t[]){5, 5, 3, 1}, 4);
  t_expect_error(sg_conv2d(x, f3, NULL, SG_PADDING_VALID, NULL, NULL), SG_ERR_SHAPE, "does not fit",
                 NULL);
  t_expect_error(sg_conv2d(x, f3, (int64_t[]){0, 1}, SG_PADDING_SAME, NULL, NULL), SG_ERR_ARG,
                 "strides", NULL);
  t_expect_error(sg_conv2d(x, f3, NULL, SG_PADDING_EXPLICIT, NULL, NULL), SG_ERR_ARG, "pads", NULL);
  /* Geometry past 64 bits: a clear error, not a wrapped size. */
  t_expect_error(sg_conv2d(x, f3, NULL, SG_PADDING_SAME, NULL, (int64_t[]){1, INT64_MAX / 2}),
                 SG_ERR_ARG, "conv2d", "overflows", NULL);
  t_expect_error(sg_conv2d(x, f3, NULL, SG_PADDING_EXPLICIT, (int64_t[]){INT64_MAX, 1, 0, 0}, NULL),
                 SG_ERR_ARG, "conv2d", "overflows", NULL);
  /* Explicit pads that ask for more output rows than a tensor can have. */
  sg_tensor *f1 = sg_zeros((int64_t[]){1, 1, 3, 1}, 4);
  t_expect_error(
      sg_conv2d(x, f1, NULL, SG_PADDING_EXPLICIT, (int64_t[]){INT64_MAX - 4, 0, 0, 0}, NULL),
      SG_ERR_SHAPE, "conv2d", "more elements than fit", NULL);
  sg_dispose(f1);
  t_expect_error(sg_depthwise_conv2d(x, f, NULL, SG_PADDING_SAME, NULL, NULL), SG_ERR_SHAPE,
                 "depthwise_conv2d", NULL);
  sg_tensor *x3 = sg_zeros((int64_t[]){4, 4, 3}, 3);
  t_expect_error(sg_conv2d(x3, f3, NULL, SG_PADDING_SAME, NULL, NULL), SG_ERR_SHAPE, "[4,4,3]",
                 NULL);
  /* A NULL input keeps the first error. */
  sg_tensor *bad = sg_matmul(x3, f3, false, false);
  cr_assert_null(bad);
  t_expect_error(sg_conv2d(bad, f3, NULL, SG_PADDING_SAME, NULL, NULL), SG_ERR_SHAPE, "matmul",
                 NULL);
  /* Empty batch: an empty result. */
  sg_tensor *e = sg_zeros((int64_t[]){0, 4, 4, 3}, 4);
  sg_tensor *ye = sg_conv2d(e, f3, NULL, SG_PADDING_SAME, NULL, NULL);
  cr_assert_not_null(ye, "%s", sg_last_error());
  cr_assert_eq(sg_numel(ye), 0);
  sg_tensor *objs[] = {x, f, f3, x3, e, ye};
  for (int i = 0; i < 6; i++) sg_dispose(objs[i]);
  cr_assert_eq(t_live_tensors(), live);
}
