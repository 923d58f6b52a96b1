/* Conformance of transpose, scatter_add, the conversions of sg_cast and the depthwise
 * convolution kernels of every available backend against the scalar backend, with the harness
 * of support_conformance.h. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support_conformance.h"

/* ==== transpose and scatter_add ============================================================= */

static void transpose_case(int rank, const int64_t *shape, const int *perm, size_t off) {
  const sg_backend *ref = ref_backend();
  size_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= (size_t)shape[i];
  /* Any 32-bit pattern, signalling NaNs included: the copy must be bit for bit. */
  float *x = fnew(numel), *want = fnew(numel);
  for (size_t i = 0; i < numel; i++) x[i] = from_bits((uint32_t)next_u64());
  if (numel) x[0] = from_bits(0x7f800001u);
  ref->transpose(x, shape, perm, rank, want);
  FOR_EACH_BACKEND(be) {
    cctx c;
    char sh[64] = "", pm[64] = "";
    for (int i = 0; i < rank; i++) {
      snprintf(sh + strlen(sh), sizeof sh - strlen(sh), "%lld,", (long long)shape[i]);
      snprintf(pm + strlen(pm), sizeof pm - strlen(pm), "%d,", perm[i]);
    }
    ctx_init(&c, be, "transpose", NULL, "shape=[%s] perm=[%s] off=%zu", sh, pm, off);
    /* y at the same offset as x: at offset 0 its rows can be aligned, which the streamed path
       needs (off_of(0, 1) is 5). */
    gbuf gx = gb_floats(x, numel, off_of(off, 0)), gy = gb_floats(NULL, numel, off_of(off, 0));
    be->transpose(gf(&gx), shape, perm, rank, gf(&gy));
    check_unchanged(&c, &gx, x, "x");
    check_guards(&c, &gy, "y");
    check_bytes(&c, gy.p, want, numel * sizeof(float), sizeof(float));
    gb_free(&gx);
    gb_free(&gy);
  }
  free(x);
  free(want);
}

static void transpose_family(void) {
  static const struct {
    int rank;
    int64_t shape[8];
    int perm[8];
  } cases[] = {
      {0, {0}, {0}},
      {1, {0}, {0}},
      {1, {1}, {0}},
      {1, {1000}, {0}},
      {2, {1, 1}, {1, 0}},
      {2, {7, 33}, {1, 0}},
      {2, {33, 7}, {1, 0}},
      {2, {64, 64}, {1, 0}},
      {2, {65, 31}, {1, 0}},
      {2, {65, 31}, {0, 1}},
      {2, {0, 5}, {1, 0}},
      {3, {3, 17, 33}, {0, 2, 1}},
      {3, {3, 17, 33}, {1, 0, 2}},
      {3, {3, 17, 33}, {1, 2, 0}},
      {3, {3, 17, 33}, {2, 0, 1}},
      {3, {3, 17, 33}, {2, 1, 0}},
      {3, {2, 0, 5}, {2, 1, 0}},
      {4, {2, 3, 5, 7}, {3, 2, 1, 0}},
      {4, {2, 3, 5, 7}, {0, 2, 1, 3}},
      {4, {2, 3, 5, 7}, {1, 0, 3, 2}},
      {4, {2, 3, 5, 7}, {0, 1, 3, 2}},
      {8, {1, 2, 1, 3, 1, 2, 1, 2}, {7, 6, 5, 4, 3, 2, 1, 0}},
      /* From 2^21 floats y is written with non-temporal stores where its rows are aligned
         (offset 0 here), with plain ones where they are not (the other offsets, and 2049);
         streamed through buffered strips of 32 rows and steps of 32 columns, with 2048 x 1040
         leaving 16 columns and 2064 x 1036 16 rows and 12 columns to the tiles. */
      {2, {2048, 1040}, {1, 0}},
      {2, {2049, 1024}, {1, 0}},
      {2, {2064, 1036}, {1, 0}},
      {3, {2, 1040, 1024}, {0, 2, 1}},
  };
  seed(case_seed("transpose", 0, 0, 0));
  for (size_t i = 0; i < COUNT(cases); i++)
    for (size_t off = 0; off < 16; off += 5)
      transpose_case(cases[i].rank, cases[i].shape, cases[i].perm, off);
  /* Every size of the list against a few others, so the register tiles of every width meet
     full and partial edges in both directions: 2-D, batched (the leading axis stays), and a
     3-D permutation whose x-contiguous axis is not next to y's last one. */
  static const int64_t partner[] = {1, 7, 16, 17, 33};
  static const int p2[] = {1, 0}, p_batch[] = {0, 2, 1}, p_far[] = {2, 0, 1};
  for (size_t si = 0; si < COUNT(k_sizes); si++) {
    int64_t s = (int64_t)k_sizes[si];
    bool big = k_sizes[si] >= BIG;
    for (size_t pi = 0; pi < COUNT(partner); pi++) {
      int64_t t = partner[pi];
      if (big && t > 7) continue;
      for (size_t k = 0; k < n_offsets(k_sizes[si] * (size_t)t) && k < 4; k++) {
        size_t off = offset_at(k_sizes[si] * (size_t)t, k) * 5 % 16;
        transpose_case(2, (const int64_t[]){s, t}, p2, off);
        transpose_case(2, (const int64_t[]){t, s}, p2, off);
        transpose_case(3, (const int64_t[]){3, s, t}, p_batch, off);
        transpose_case(3, (const int64_t[]){t, 5, s}, p_far, off);
      }
    }
    if (!big)
      for (size_t off = 0; off < 16; off += 3) transpose_case(2, (const int64_t[]){s, s}, p2, off);
  }
  /* Large: many whole cache blocks and ragged edges on both axes. */
  transpose_case(2, (const int64_t[]){1000, 1000}, p2, 0);
  transpose_case(2, (const int64_t[]){1031, 517}, p2, 7);
  transpose_case(3, (const int64_t[]){4, 257, 263}, p_batch, 13);
}

/* One scatter_add case. Dyadic values keep every order of summation exact; indices repeat and
   stray out of range on both sides. */
static void scatter_case(size_t outer, size_t nidx, size_t inner, size_t ad, size_t off) {
  const sg_backend *ref = ref_backend();
  const tol *t = tol_for("scatter_add");
  size_t ndy = outer * nidx * inner, ndx = outer * ad * inner;
  seed(case_seed("scatter_add", inner, off, nidx));
  float *dy = fnew(ndy), *dx0 = fnew(ndx), *want = fnew(ndx);
  int32_t *idx = calloc(nidx ? nidx : 1, sizeof *idx);
  for (size_t i = 0; i < ndy; i++) dy[i] = roundf(uniform(t->lo, t->hi) * 8) / 8;
  for (size_t i = 0; i < ndx; i++) dx0[i] = roundf(uniform(t->lo, t->hi) * 8) / 8;
  for (size_t j = 0; j < nidx; j++) idx[j] = (int32_t)(next_u64() % (ad + 4)) - 2;
  memcpy(want, dx0, ndx * sizeof *want);
  ref->scatter_add(dy, idx, outer, nidx, inner, ad, want);
  FOR_EACH_BACKEND(be) {
    cctx c;
    ctx_init(&c, be, "scatter_add", NULL, "outer=%zu n_idx=%zu inner=%zu axis=%zu off=%zu", outer,
             nidx, inner, ad, off);
    gbuf gdy = gb_floats(dy, ndy, off_of(off, 0)), gdx = gb_floats(dx0, ndx, off_of(off, 1));
    gbuf gi = gb_make(nidx * sizeof(int32_t), off_of(off, 2) * sizeof(int32_t));
    if (nidx) memcpy(gi.p, idx, nidx * sizeof(int32_t));
    be->scatter_add(gf(&gdy), (const int32_t *)(const void *)gi.p, outer, nidx, inner, ad,
                    gf(&gdx));
    check_unchanged(&c, &gdy, dy, "dy");
    check_unchanged(&c, &gi, idx, "idx");
    check_guards(&c, &gdx, "dx");
    check_f32(&c, t, gf(&gdx), want, ndx, 1, NULL);
    gb_free(&gdy);
    gb_free(&gdx);
    gb_free(&gi);
  }
  free(dy);
  free(dx0);
  free(want);
  free(idx);
}

static void scatter_family(void) {
  /* outer, n_idx, inner, axis_dim */
  static const size_t cases[][4] = {{1, 0, 3, 4},    {1, 1, 1, 1},     {2, 7, 5, 3},
                                    {3, 33, 17, 10}, {1, 1000, 7, 50}, {2, 65, 1, 8},
                                    {1, 16, 16, 2},  {0, 3, 3, 3}};
  for (size_t h = 0; h < COUNT(cases); h++)
    for (size_t off = 0; off < 16; off += 5)
      scatter_case(cases[h][0], cases[h][1], cases[h][2], cases[h][3], off);
}

/* The SIMD kernels vectorise along the row: every row length of the size list, each at every
   offset, with 7 indices into 3 rows so that rows repeat. */
static void scatter_rows_family(void) {
  for (size_t si = 0; si < COUNT(k_sizes); si++) {
    size_t inner = k_sizes[si];
    for (size_t k = 0; k < n_offsets(inner); k++)
      scatter_case(2, inner >= 100000 ? 3 : 7, inner, 3, offset_at(inner, k));
  }
}

/* ==== Depthwise convolution ================================================================== */

/* A geometry with symmetric padding and out_c = in_c * m. */
static sg_window2d dw_geometry(size_t in_h, size_t in_w, size_t k, size_t stride, size_t dil,
                               size_t pad, size_t c, size_t m) {
  sg_window2d g = {.batch = 1,
                   .in_h = in_h,
                   .in_w = in_w,
                   .in_c = c,
                   .k_h = k,
                   .k_w = k - 1,
                   .stride_h = stride,
                   .stride_w = stride,
                   .dilation_h = dil,
                   .dilation_w = dil,
                   .pad_top = pad,
                   .pad_left = pad,
                   .multiplier = m,
                   .out_c = c * m};
  g.out_h = (in_h + 2 * pad - dil * (g.k_h - 1) - 1) / stride + 1;
  g.out_w = (in_w + 2 * pad - dil * (g.k_w - 1) - 1) / stride + 1;
  return g;
}

/* The three depthwise kernels of every backend against scalar on one geometry; each output
   starts as random values (the forward must overwrite rows [oh0, oh1) and only those, the
   backward ones add). */
static void depthwise_case(const sg_window2d *g, size_t off) {
  const sg_backend *ref = ref_backend();
  size_t nx = g->in_h * g->in_w * g->in_c, ny = g->out_h * g->out_w * g->out_c,
         nf = g->k_h * g->k_w * g->out_c;
  size_t oh0 = g->out_h > 2 ? 1 : 0, oh1 = g->out_h; /* a forward range not starting at row 0 */
  seed(case_seed("depthwise_conv2d", g->in_c, g->multiplier, off));
  float *x = fnew(nx), *f = fnew(nf), *dy = fnew(ny), *y0 = fnew(ny), *dx0 = fnew(nx),
        *df0 = fnew(nf), *y = fnew(ny), *dx = fnew(nx), *df = fnew(nf);
  gen(x, nx, -4, 4, P_CLEAN, 0);
  gen(f, nf, -4, 4, P_CLEAN, 0);
  gen(dy, ny, -4, 4, P_CLEAN, 0);
  gen(y0, ny, -4, 4, P_CLEAN, 0);
  gen(dx0, nx, -4, 4, P_CLEAN, 0);
  gen(df0, nf, -4, 4, P_CLEAN, 0);
  memcpy(y, y0, ny * sizeof *y);
  memcpy(dx, dx0, nx * sizeof *dx);
  memcpy(df, df0, nf * sizeof *df);
  ref->depthwise_conv2d(g, x, f, oh0, oh1, y);
  ref->depthwise_conv2d_backward_input(g, dy, f, dx);
  ref->depthwise_conv2d_backward_filter(g, dy, x, df);
  FOR_EACH_BACKEND(be) {
    gbuf gx = gb_floats(x, nx, off_of(off, 0)), gfl = gb_floats(f, nf, off_of(off, 1)),
         gdy = gb_floats(dy, ny, off_of(off, 2)), gy = gb_floats(y0, ny, off_of(off, 3)),
         gdx = gb_floats(dx0, nx, off_of(off, 4)), gdf = gb_floats(df0, nf, off_of(off, 5));
    be->depthwise_conv2d(g, gf(&gx), gf(&gfl), oh0, oh1, gf(&gy));
    be->depthwise_conv2d_backward_input(g, gf(&gdy), gf(&gfl), gf(&gdx));
    be->depthwise_conv2d_backward_filter(g, gf(&gdy), gf(&gx), gf(&gdf));
    static const char *const slots[] = {"depthwise_conv2d", "depthwise_conv2d_backward_input",
                                        "depthwise_conv2d_backward_filter"};
    const gbuf *outs[] = {&gy, &gdx, &gdf};
    const float *wants[] = {y, dx, df};
    const size_t ns[] = {ny, nx, nf};
    static const char *const out_names[] = {"y", "dx", "df"};
    for (int k = 0; k < 3; k++) {
      cctx c;
      ctx_init(&c, be, slots[k], NULL,
               "in=%zux%zux%zu k=%zux%zu stride=%zu dil=%zu pad=%zu m=%zu off=%zu", g->in_h,
               g->in_w, g->in_c, g->k_h, g->k_w, g->stride_h, g->dilation_h, g->pad_top,
               g->multiplier, off);
      check_unchanged(&c, &gx, x, "x");
      check_unchanged(&c, &gfl, f, "f");
      check_unchanged(&c, &gdy, dy, "dy");
      check_guards(&c, outs[k], out_names[k]);
      check_f32(&c, tol_for(slots[k]), gf(outs[k]), wants[k], ns[k], 1, NULL);
    }
    gb_free(&gx);
    gb_free(&gfl);
    gb_free(&gdy);
    gb_free(&gy);
    gb_free(&gdx);
    gb_free(&gdf);
  }
  float *all[] = {x, f, dy, y0, dx0, df0, y, dx, df};
  for (size_t i = 0; i < COUNT(all); i++) free(all[i]);
}

/* Channel counts around the vector widths (the SIMD kernels vectorise along channels, or along
   the multiplier's run when m > 1), at every offset, on geometries with padding, stride and
   dilation; m = 9 and 17 make runs longer than a vector. */
static void depthwise_family(void) {
  static const size_t geo[][7] = {
      /* in_h, in_w, k (k_w = k - 1), stride, dilation, pad, m */
      {5, 6, 3, 1, 1, 1, 1}, {5, 6, 3, 1, 1, 1, 2}, {4, 5, 3, 2, 1, 1, 3},
      {6, 5, 3, 1, 2, 2, 1}, {3, 4, 2, 1, 1, 0, 9}, {3, 3, 3, 2, 1, 1, 17},
  };
  static const size_t chans[] = {1, 7, 15, 16, 17, 31, 33, 63, 65, 1000};
  for (size_t gi = 0; gi < COUNT(geo); gi++)
    for (size_t ci = 0; ci < COUNT(chans); ci++) {
      size_t c = chans[ci];
      if (geo[gi][6] > 3 && c > 65) continue; /* m = 9, 17: the small counts are enough */
      sg_window2d g = dw_geometry(geo[gi][0], geo[gi][1], geo[gi][2], geo[gi][3], geo[gi][4],
                                  geo[gi][5], c, geo[gi][6]);
      for (size_t k = 0; k < n_offsets(c); k++) depthwise_case(&g, offset_at(c, k));
    }
}

/* ==== cast_f32_i32 and cast_i32_f32 ======================================================== */

/* Past the conversions' streaming threshold (SG_STREAM_MIN, 8 MiB), with a head before y's
   alignment. */
#define CAST_STREAM_N (((size_t)2 << 20) + 13)

/* Floats at the edges of truncation: int32_t's range ends (-2^31 is in it, 2^31 is not, nor is
   the float below -2^31), the float below 2^31, values that truncate to 0 from both sides,
   signed zeros, NaN, infinities, denormals, and a float above 2^24 (every float there is whole). */
static const float k_cast_edges[] = {
    -2147483648.0f, 2147483648.0f, -2147483904.0f, 2147483520.0f, 0.5f,       -0.5f, 0.99999994f,
    -0.99999994f,   -1.5f,         0.0f,           -0.0f,         NAN,        -NAN,  INFINITY,
    -INFINITY,      1e-40f,        -1e-40f,        16777218.0f,   -123456.7f, 3e9f};
/* Integers at float's rounding: int32_t's ends, 2^24 + 1 (the first not exact), ties that round
   to even either way (2^25 + 2 down, 2^25 + 6 up), and their negatives. */
static const int32_t k_cast_int_edges[] = {INT32_MIN, INT32_MAX,  16777217,   -16777217,  33554434,
                                           33554438,  -33554434,  -33554438,  0,          -1,
                                           1,         2147483584, 2147483583, -2147483583};

/* One size and offset: x's floats (or integers as their bits) to_i32 or back, out of place and
   in place, every backend against scalar bit for bit; the guards catch a write outside [0, n)
   and x must come back unchanged. */
static void cast_case(bool to_i32, size_t n, size_t off) {
  const sg_backend *ref = ref_backend();
  const char *slot = to_i32 ? "cast_f32_i32" : "cast_i32_f32";
  seed(case_seed(slot, n, off, 0));
  float *x = fnew(n), *want = fnew(n);
  for (size_t i = 0; i < n; i++) {
    uint64_t r = next_u64();
    if (to_i32) /* a third any bits at all, the rest across int32_t's range and past it */
      x[i] =
          r % 3 == 0 ? from_bits((uint32_t)(r >> 32)) : uniform(-3e9f, 3e9f) / (float)(1 + r % 7);
    else
      x[i] = from_bits((uint32_t)(r >> 32) >> (r % 3 == 0 ? 0 : r % 31));
  }
  size_t n_edges = to_i32 ? COUNT(k_cast_edges) : COUNT(k_cast_int_edges);
  for (size_t k = 0; k < n_edges && n > 0; k++) {
    size_t at = k * 7919 % n; /* the edges in the body and, on small sizes, the tail */
    if (to_i32)
      x[at] = k_cast_edges[k];
    else
      memcpy(&x[at], &k_cast_int_edges[k], sizeof(float));
  }
  if (to_i32)
    ref->cast_f32_i32(x, (int32_t *)(void *)want, n);
  else
    ref->cast_i32_f32((const int32_t *)(const void *)x, want, n);
  FOR_EACH_BACKEND(be) {
    for (int in_place = 0; in_place < 2; in_place++) {
      cctx c;
      ctx_init(&c, be, slot, NULL, "n=%zu off=%zu%s", n, off, in_place ? " in place" : "");
      gbuf gx = gb_floats(x, n, off_of(off, 0)), gy = gb_floats(NULL, n, off_of(off, 1));
      float *out = in_place ? gf(&gx) : gf(&gy);
      if (to_i32)
        be->cast_f32_i32(gf(&gx), (int32_t *)(void *)out, n);
      else
        be->cast_i32_f32((const int32_t *)(const void *)gf(&gx), out, n);
      check_bytes(&c, out, want, n * sizeof(float), sizeof(float));
      if (in_place)
        check_guards(&c, &gx, "x");
      else {
        check_unchanged(&c, &gx, x, "x");
        check_guards(&c, &gy, "y");
      }
      gb_free(&gx);
      gb_free(&gy);
    }
  }
  free(x);
  free(want);
}

/* The scalar reference itself, on the edges whose results the contract names (backend.h). */
static void cast_reference_edges(void) {
  const sg_backend *ref = ref_backend();
  static const float f[] = {
      -2147483648.0f, 2147483648.0f, -2147483904.0f, 2147483520.0f, -0.99999994f,
      -1.5f,          NAN,           -INFINITY};
  static const int32_t want[] = {INT32_MIN, INT32_MIN, INT32_MIN, 2147483520,
                                 0,         -1,        INT32_MIN, INT32_MIN};
  int32_t got[COUNT(f)];
  ref->cast_f32_i32(f, got, COUNT(f));
  for (size_t i = 0; i < COUNT(f); i++)
    cr_expect_eq(got[i], want[i], "scalar cast_f32_i32(%g) = %d, not %d", f[i], got[i], want[i]);
  static const int32_t xi[] = {16777217, 33554434, 33554438, INT32_MAX, INT32_MIN};
  static const float wf[] = {16777216.0f, 33554432.0f, 33554440.0f, 2147483648.0f, -2147483648.0f};
  float gf_[COUNT(xi)];
  ref->cast_i32_f32(xi, gf_, COUNT(xi));
  for (size_t i = 0; i < COUNT(xi); i++)
    cr_expect_eq(bits_of(gf_[i]), bits_of(wf[i]), "scalar cast_i32_f32(%d) = %.9g, not %.9g", xi[i],
                 gf_[i], wf[i]);
}

static void cast_family(void) {
  cast_reference_edges();
  for (int to_i32 = 0; to_i32 < 2; to_i32++) {
    for (size_t si = 0; si < COUNT(k_sizes); si++)
      for (size_t k = 0; k < n_offsets(k_sizes[si]); k++)
        cast_case(to_i32, k_sizes[si], offset_at(k_sizes[si], k));
    cast_case(to_i32, CAST_STREAM_N, 3);
  }
}

Test(conformance, cast) {
  cast_family();
  finish("cast");
}

Test(conformance, transpose_and_scatter_add) {
  transpose_family();
  scatter_family();
  scatter_rows_family();
  finish("transpose / scatter_add");
}

Test(conformance, depthwise_conv2d) {
  depthwise_family();
  finish("depthwise_conv2d");
}
