/* Conformance of the reductions (SG_FOR_EACH_REDUCE_OP forward and backward, argmax,
 * argmin) and the softmax family (softmax, log_softmax, softmax_cross_entropy, forward and
 * backward) of every available backend against the scalar backend, over [outer, r, inner]
 * shapes, with the harness of support_conformance.h. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support_conformance.h"

static const bslot k_reduce[] = {SG_FOR_EACH_REDUCE_OP(R_ENTRY_)};

/* ==== Reductions, arg reductions, softmax family ============================================ */

typedef struct shape3 {
  size_t outer, r, inner;
} shape3;

/* [outer, r, inner] shapes: rows (inner 1), rows with a short inner, columns, and columns of
   17 (full vectors and a one-lane tail, on every ISA) over r of every size, each over the size
   list; plus empty outer and inner. */
static size_t make_shapes(shape3 *out, bool need_r) {
  size_t k = 0;
  for (size_t si = 0; si < COUNT(k_sizes); si++) {
    size_t s = k_sizes[si];
    if (need_r && s == 0) continue;
    out[k++] = (shape3){s >= 100000 ? 1 : 2, s, 1};
    if (s < 100000) out[k++] = (shape3){1, s, 5};
    if (s < 100000 && (s > 0 || !need_r)) out[k++] = (shape3){2, s, 17};
    if (s > 0 || !need_r) out[k++] = (shape3){s >= 100000 ? 1 : 2, need_r || s ? 3 : 0, s};
  }
  out[k++] = (shape3){0, 5, 3};
  out[k++] = (shape3){2, 5, 0};
  return k;
}
#define MAX_SHAPES (4 * COUNT(k_sizes) + 2)

/* Reduction input classes: one kind of edge value at a time (mixing them turns every row into
   NaN), whole rows of zeros or -inf, ties, and everything at once. */
typedef enum {
  R_CLEAN,
  R_NAN,
  R_PINF,
  R_NINF,
  R_DENORM,
  R_HUGE,
  R_ZEROS,
  R_NEGZERO,
  R_ALL_NINF,
  R_TIES,
  R_MIXED,
  R_COUNT
} rpass;
static const char *const k_rpass_names[] = {"clean",    "nan",  "+inf",  "-inf",
                                            "denormal", "huge", "zeros", "-zeros",
                                            "all -inf", "ties", "mixed"};

/* Fills x; grid: the clean values are multiples of 1/8 (sums of them are exact in float). */
static void rgen(float *x, size_t n, const tol *t, int pass, bool grid, size_t rot) {
  for (size_t i = 0; i < n; i++) {
    float v = uniform(t->lo, t->hi);
    x[i] = grid ? roundf(v * 8) / 8 : v;
  }
  if (n == 0) return;
  size_t at[3] = {0, n / 2, n - 1};
  switch (pass) {
  case R_NAN:
  case R_PINF:
  case R_NINF:
  case R_DENORM:
  case R_HUGE: {
    static const float one[] = {0, NAN, INFINITY, -INFINITY, 1e-40f, 1e38f};
    for (int k = 0; k < 3; k++) x[at[k]] = pass == R_HUGE && k == 1 ? -1e38f : one[pass];
    if (pass == R_DENORM) x[at[1]] = -FLT_TRUE_MIN;
    break;
  }
  case R_ZEROS:
    for (size_t i = 0; i < n; i++) x[i] = next_u64() & 1 ? -0.0f : 0.0f;
    break;
  case R_NEGZERO:
    for (size_t i = 0; i < n; i++) x[i] = -0.0f;
    break;
  case R_ALL_NINF:
    for (size_t i = 0; i < n; i++) x[i] = -INFINITY;
    break;
  case R_TIES:
    for (size_t i = 0; i < n; i++) x[i] = (float)(next_u64() % 4) - 1.0f;
    break;
  case R_MIXED:
    inject(x, n, rot);
    break;
  default:
    break;
  }
}

/* Few offsets: the reductions' loops see misalignment through inner and r already. */
static const size_t k_roffsets[] = {0, 1, 7, 13};
static size_t n_roffsets(size_t numel) { return numel < BIG ? 4 : 2; }

/* Per output (o, i) of an [outer, r, inner] reduction: the row's sum of |x| and max |x|. */
static void row_stats(const float *x, shape3 s, double *sum_abs, double *max_v) {
  for (size_t o = 0; o < s.outer; o++)
    for (size_t i = 0; i < s.inner; i++) {
      double sa = 0, mv = 0;
      for (size_t j = 0; j < s.r; j++) {
        double v = x[(o * s.r + j) * s.inner + i];
        if (isfinite(v)) {
          sa += fabs(v);
          if (fabs(v) > mv) mv = fabs(v);
        }
      }
      sum_abs[o * s.inner + i] = sa;
      max_v[o * s.inner + i] = mv;
    }
}

static void reduce_family(const bslot *s) {
  const sg_backend *ref = ref_backend();
  char bslot_name[96];
  snprintf(bslot_name, sizeof bslot_name, "%s_backward", s->name);
  const tol *t = tol_for(s->name), *tb = tol_for(bslot_name);
  bool is_sum = strcmp(s->name, "reduce_sum") == 0;
  bool is_lse = strcmp(s->name, "reduce_logsumexp") == 0;
  shape3 shapes[MAX_SHAPES];
  size_t ns = make_shapes(shapes, false);
  for (size_t h = 0; h < ns; h++) {
    shape3 sh = shapes[h];
    size_t numel = sh.outer * sh.r * sh.inner, nout = sh.outer * sh.inner;
    for (size_t k = 0; k < n_roffsets(numel); k++) {
      size_t off = k_roffsets[k];
      for (int p = 0; p < R_COUNT; p++) {
        if (numel >= 100000 && p != R_CLEAN && p != R_NAN && p != R_MIXED) continue;
        seed(case_seed(s->name, h, k, (size_t)p));
        float *x = fnew(numel), *want = fnew(nout), *dy = fnew(nout), *dxw = fnew(numel);
        double *sa = calloc(nout ? nout : 1, sizeof *sa), *mx = calloc(nout ? nout : 1, sizeof *mx);
        double *scale = calloc(nout ? nout : 1, sizeof *scale);
        double *bscale = calloc(numel ? numel : 1, sizeof *bscale);
        rgen(x, numel, t, p, true, k + (size_t)p);
        gen(dy, nout, -8, 8, P_CLEAN, 0);
        for (size_t i = 0; i < nout; i++) dy[i] = roundf(dy[i] * 8) / 8;
        SLOT(ref, sg_reduce_kernel, s->fwd)(x, sh.outer, sh.r, sh.inner, want);
        SLOT(ref, sg_reduce_backward_kernel, s->bwd)(dy, x, want, sh.outer, sh.r, sh.inner, dxw);
        row_stats(x, sh, sa, mx);
        /* A sum is exact on the grid; with denormals, huge values or everything mixed it is
           held to twice the worst case of recursive summation, 2 (r + 2) eps sum|x|. */
        tol ts = *t;
        bool inexact_sum = is_sum && (p == R_DENORM || p == R_HUGE || p == R_MIXED);
        if (inexact_sum) ts.abs = 2.0 * ((double)sh.r + 2);
        for (size_t i = 0; i < nout; i++) scale[i] = is_sum ? sa[i] : is_lse ? 1 + mx[i] : 1;
        for (size_t o = 0; o < sh.outer; o++)
          for (size_t j = 0; j < sh.r; j++)
            for (size_t i = 0; i < sh.inner; i++)
              bscale[(o * sh.r + j) * sh.inner + i] = fabs(dy[o * sh.inner + i]);
        FOR_EACH_BACKEND(be) {
          cctx c;
          ctx_init(&c, be, s->name, k_rpass_names[p], "[%zu, %zu, %zu] off=%zu", sh.outer, sh.r,
                   sh.inner, off);
          gbuf gx = gb_floats(x, numel, off_of(off, 0)), gy = gb_floats(NULL, nout, off_of(off, 1));
          SLOT(be, sg_reduce_kernel, s->fwd)(gf(&gx), sh.outer, sh.r, sh.inner, gf(&gy));
          check_unchanged(&c, &gx, x, "x");
          check_guards(&c, &gy, "y");
          check_f32(&c, &ts, gf(&gy), want, nout, (double)sh.r, scale);
          gb_free(&gy);
          /* Backward from the scalar forward's y. */
          ctx_init(&c, be, bslot_name, k_rpass_names[p], "[%zu, %zu, %zu] off=%zu", sh.outer, sh.r,
                   sh.inner, off);
          gbuf gdy = gb_floats(dy, nout, off_of(off, 2)),
               gw = gb_floats(want, nout, off_of(off, 3));
          gbuf gdx = gb_floats(NULL, numel, off_of(off, 4));
          SLOT(be, sg_reduce_backward_kernel, s->bwd)
          (gf(&gdy), gf(&gx), gf(&gw), sh.outer, sh.r, sh.inner, gf(&gdx));
          check_unchanged(&c, &gdy, dy, "dy");
          check_unchanged(&c, &gx, x, "x");
          check_unchanged(&c, &gw, want, "y");
          check_guards(&c, &gdx, "dx");
          check_f32(&c, tb, gf(&gdx), dxw, numel, 1, bscale);
          gb_free(&gx);
          gb_free(&gdy);
          gb_free(&gw);
          gb_free(&gdx);
        }
        free(x);
        free(want);
        free(dy);
        free(dxw);
        free(sa);
        free(mx);
        free(scale);
        free(bscale);
      }
    }
  }
}

static void arg_family(const char *name, size_t slot_off) {
  const sg_backend *ref = ref_backend();
  const tol *t = tol_for(name);
  shape3 shapes[MAX_SHAPES];
  size_t ns = make_shapes(shapes, true);
  for (size_t h = 0; h < ns; h++) {
    shape3 sh = shapes[h];
    if (sh.r == 0) continue; /* the ABI needs r >= 1 */
    size_t numel = sh.outer * sh.r * sh.inner, nout = sh.outer * sh.inner;
    for (size_t k = 0; k < n_roffsets(numel); k++) {
      size_t off = k_roffsets[k];
      for (int p = 0; p < R_COUNT; p++) {
        if (numel >= 100000 && p != R_CLEAN && p != R_NAN && p != R_TIES) continue;
        seed(case_seed(name, h, k, (size_t)p));
        float *x = fnew(numel);
        int32_t *want = calloc(nout ? nout : 1, sizeof *want);
        rgen(x, numel, t, p, true, k + (size_t)p);
        SLOT(ref, sg_arg_reduce_kernel, slot_off)(x, sh.outer, sh.r, sh.inner, want);
        FOR_EACH_BACKEND(be) {
          cctx c;
          ctx_init(&c, be, name, k_rpass_names[p], "[%zu, %zu, %zu] off=%zu", sh.outer, sh.r,
                   sh.inner, off);
          gbuf gx = gb_floats(x, numel, off_of(off, 0));
          gbuf gy = gb_make(nout * sizeof(int32_t), off_of(off, 1) * sizeof(int32_t));
          SLOT(be, sg_arg_reduce_kernel, slot_off)
          (gf(&gx), sh.outer, sh.r, sh.inner, (int32_t *)(void *)gy.p);
          check_unchanged(&c, &gx, x, "x");
          check_guards(&c, &gy, "y");
          check_bytes(&c, gy.p, want, nout * sizeof(int32_t), sizeof(int32_t));
          gb_free(&gx);
          gb_free(&gy);
        }
        free(x);
        free(want);
      }
    }
  }
}

/* softmax or log_softmax, forward (in place too) and backward (in place too). */
static void softmax_family(bool log_form) {
  const sg_backend *ref = ref_backend();
  const char *name = log_form ? "log_softmax" : "softmax";
  char bname[64];
  snprintf(bname, sizeof bname, "%s_backward", name);
  const tol *t = tol_for(name), *tb = tol_for(bname);
  sg_softmax_kernel rf = log_form ? ref->log_softmax : ref->softmax;
  sg_softmax_backward_kernel rb = log_form ? ref->log_softmax_backward : ref->softmax_backward;
  shape3 shapes[MAX_SHAPES + 2];
  size_t ns = make_shapes(shapes, false);
  /* A backward call of 2^21 floats and more streams dx (SG_STREAM_MIN): rows of 1033 floats put
     each row's head at another offset from the vector alignment, rows of 3 are shorter than
     most heads. The mixed pass only: this size costs 20x under qemu. */
  shapes[ns++] = (shape3){2031, 1033, 1};
  shapes[ns++] = (shape3){699051, 3, 1};
  for (size_t h = 0; h < ns; h++) {
    shape3 sh = shapes[h];
    size_t numel = sh.outer * sh.r * sh.inner;
    for (size_t k = 0; k < n_roffsets(numel); k++) {
      size_t off = k_roffsets[k];
      for (int p = 0; p < R_COUNT; p++) {
        if (numel >= 100000 && p != R_CLEAN && p != R_NAN && p != R_MIXED) continue;
        if (numel >= ((size_t)2 << 20) && p != R_MIXED) continue;
        seed(case_seed(name, h, k, (size_t)p));
        float *x = fnew(numel), *y = fnew(numel), *dy = fnew(numel), *dxw = fnew(numel);
        double *scale = calloc(numel ? numel : 1, sizeof *scale);
        double *bscale = calloc(numel ? numel : 1, sizeof *bscale);
        rgen(x, numel, t, p, false, k + (size_t)p);
        gen(dy, numel, -1, 1, p == R_MIXED ? P_SPECIAL : P_CLEAN, k + 5u);
        rf(x, sh.outer, sh.r, sh.inner, y);
        rb(dy, y, sh.outer, sh.r, sh.inner, dxw);
        /* Magnitudes of the abs bounds: 1 + |y| (log_softmax); softmax backward |y| (|dy| +
           sum|dy y|); log_softmax backward |dy| + e^y sum|dy|. */
        for (size_t o = 0; o < sh.outer; o++)
          for (size_t i = 0; i < sh.inner; i++) {
            double s = 0;
            for (size_t j = 0; j < sh.r; j++) {
              size_t at = (o * sh.r + j) * sh.inner + i;
              s += log_form ? fabs(dy[at]) : fabs((double)dy[at] * y[at]);
            }
            for (size_t j = 0; j < sh.r; j++) {
              size_t at = (o * sh.r + j) * sh.inner + i;
              scale[at] = 1 + fabs(y[at]);
              bscale[at] =
                  log_form ? fabs(dy[at]) + exp(y[at]) * s : fabs(y[at]) * (fabs(dy[at]) + s);
            }
          }
        FOR_EACH_BACKEND(be) {
          sg_softmax_kernel f = log_form ? be->log_softmax : be->softmax;
          sg_softmax_backward_kernel fb =
              log_form ? be->log_softmax_backward : be->softmax_backward;
          for (int inplace = 0; inplace < 2; inplace++) {
            cctx c;
            ctx_init(&c, be, name, k_rpass_names[p], "[%zu, %zu, %zu] off=%zu%s", sh.outer, sh.r,
                     sh.inner, off, inplace ? " in place" : "");
            gbuf gx = gb_floats(x, numel, off_of(off, 0)),
                 gy = gb_floats(NULL, numel, off_of(off, 1));
            float *out = inplace ? gf(&gx) : gf(&gy);
            f(gf(&gx), sh.outer, sh.r, sh.inner, out);
            if (!inplace) check_unchanged(&c, &gx, x, "x");
            check_guards(&c, &gx, "x");
            check_guards(&c, &gy, "y");
            check_f32(&c, t, out, y, numel, (double)sh.r, scale);
            gb_free(&gx);
            gb_free(&gy);

            ctx_init(&c, be, bname, k_rpass_names[p], "[%zu, %zu, %zu] off=%zu%s", sh.outer, sh.r,
                     sh.inner, off, inplace ? " in place" : "");
            gbuf gdy = gb_floats(dy, numel, off_of(off, 2)),
                 gyy = gb_floats(y, numel, off_of(off, 3));
            gbuf gdx = gb_floats(NULL, numel, off_of(off, 4));
            float *dx = inplace ? gf(&gdy) : gf(&gdx);
            fb(gf(&gdy), gf(&gyy), sh.outer, sh.r, sh.inner, dx);
            if (!inplace) check_unchanged(&c, &gdy, dy, "dy");
            check_unchanged(&c, &gyy, y, "y");
            check_guards(&c, &gdy, "dy");
            check_guards(&c, &gdx, "dx");
            check_f32(&c, tb, dx, dxw, numel, (double)sh.r, bscale);
            gb_free(&gdy);
            gb_free(&gyy);
            gb_free(&gdx);
          }
        }
        free(x);
        free(y);
        free(dy);
        free(dxw);
        free(scale);
        free(bscale);
      }
    }
  }
}

/* ==== Softmax cross-entropy ================================================================= */

/* Rows per piece of a call cut below SG_STREAM_MIN (2^21 floats), whose pieces store normally. */
static size_t sce_piece_rows(size_t classes) {
  size_t per = ((size_t)1 << 20) / classes;
  return per ? per : 1;
}

/* The forward over the rows in unstreamed pieces: the same bits as the whole call's loss and
   log_probs, which streamed. */
static void sce_pieces_agree(const cctx *c, const sg_backend *be, const float *lab,
                             const float *logit, size_t rows, size_t classes, const float *loss,
                             const float *lp) {
  float *l2 = fnew(rows), *p2 = fnew(rows * classes);
  for (size_t r0 = 0, per = sce_piece_rows(classes); r0 < rows; r0 += per) {
    size_t cnt = rows - r0 < per ? rows - r0 : per, at = r0 * classes;
    be->softmax_cross_entropy(lab + at, logit + at, cnt, classes, l2 + r0, p2 + at);
  }
  check_bytes(c, l2, loss, rows * sizeof(float), sizeof(float));
  check_bytes(c, p2, lp, rows * classes * sizeof(float), sizeof(float));
  free(l2);
  free(p2);
}

/* The backward to both over the rows in unstreamed pieces, against the whole call's. */
static void sce_backward_pieces_agree(const cctx *c, const sg_backend *be, const float *dloss,
                                      const float *lab, const float *lp, size_t rows,
                                      size_t classes, const float *dlab, const float *dlog) {
  size_t n = rows * classes;
  float *a2 = fnew(n), *g2 = fnew(n);
  for (size_t r0 = 0, per = sce_piece_rows(classes); r0 < rows; r0 += per) {
    size_t cnt = rows - r0 < per ? rows - r0 : per, at = r0 * classes;
    be->softmax_cross_entropy_backward(dloss + r0, lab + at, lp + at, cnt, classes, a2 + at,
                                       g2 + at);
  }
  check_bytes(c, a2, dlab, n * sizeof(float), sizeof(float));
  check_bytes(c, g2, dlog, n * sizeof(float), sizeof(float));
  free(a2);
  free(g2);
}

static void sce_family(void) {
  const sg_backend *ref = ref_backend();
  const tol *tl = tol_for("softmax_cross_entropy"),
            *tp = tol_for("softmax_cross_entropy:log_probs");
  const tol *tb = tol_for("softmax_cross_entropy_backward");
  const tol *tdl = tol_for("softmax_cross_entropy_backward:dlabels");
  /* Calls of 2^21 floats and more stream log_probs and the gradients (SG_STREAM_MIN): rows of
     1033 put each row's head at another offset, rows of 3 are shorter than most heads. The
     mixed pass only at those sizes, as for softmax. */
  const size_t streamed[][2] = {{2031, 1033}, {699051, 3}};
  for (size_t si = 0; si < COUNT(k_sizes) + COUNT(streamed); si++) {
    bool big = si >= COUNT(k_sizes);
    size_t classes = big ? streamed[si - COUNT(k_sizes)][1] : k_sizes[si];
    size_t rows = big ? streamed[si - COUNT(k_sizes)][0] : classes >= 100000 ? 1 : 3;
    size_t n = rows * classes;
    for (size_t k = 0; k < n_roffsets(n); k++) {
      size_t off = k_roffsets[k];
      for (int p = 0; p < R_COUNT; p++) {
        if (n >= 100000 && p != R_CLEAN && p != R_NAN && p != R_MIXED) continue;
        if (big && p != R_MIXED) continue;
        seed(case_seed("sce", classes, k, (size_t)p));
        float *lab = fnew(n), *logit = fnew(n), *lp = fnew(n), *loss = fnew(rows);
        float *dloss = fnew(rows), *wdlab = fnew(n), *wdlog = fnew(n);
        double *sl = calloc(rows, sizeof *sl), *sp = calloc(n ? n : 1, sizeof *sp);
        double *sb = calloc(n ? n : 1, sizeof *sb);
        /* Labels: a probability row (even rows) or one-hot (odd rows). */
        for (size_t r = 0; r < rows; r++) {
          double tot = 0;
          for (size_t c = 0; c < classes; c++) tot += lab[r * classes + c] = uniform(0, 1);
          for (size_t c = 0; c < classes; c++)
            lab[r * classes + c] =
                r % 2 ? (c == classes / 2 ? 1.0f : 0.0f) : (float)(lab[r * classes + c] / tot);
          dloss[r] = uniform(-2, 2);
        }
        rgen(logit, n, tl, p, false, k + (size_t)p);
        ref->softmax_cross_entropy(lab, logit, rows, classes, loss, lp);
        ref->softmax_cross_entropy_backward(dloss, lab, lp, rows, classes, wdlab, wdlog);
        for (size_t r = 0; r < rows; r++)
          for (size_t c = 0; c < classes; c++) {
            size_t at = r * classes + c;
            if (isfinite(lp[at])) sl[r] += fabs((double)lab[at]) * (1 + fabs(lp[at]));
            sp[at] = 1 + fabs(lp[at]);
            sb[at] = fabs(dloss[r]) * (exp(lp[at]) + fabs(lab[at]));
          }
        FOR_EACH_BACKEND(be) {
          cctx c;
          gbuf gl = gb_floats(lab, n, off_of(off, 0));
          float *apart_loss = fnew(rows);
          /* Apart, then in place: log_probs over the logits (the loss must not read them
             back: the same bits as apart). A streamed call agrees with its pieces. */
          for (int inplace = 0; inplace < 2; inplace++) {
            ctx_init(&c, be, "softmax_cross_entropy", k_rpass_names[p],
                     "rows=%zu classes=%zu off=%zu%s", rows, classes, off,
                     inplace ? " in place" : "");
            gbuf gx = gb_floats(logit, n, off_of(off, 1)),
                 gloss = gb_floats(NULL, rows, off_of(off, 2)),
                 glp = gb_floats(NULL, n, off_of(off, 3));
            float *out = inplace ? gf(&gx) : gf(&glp);
            be->softmax_cross_entropy(gf(&gl), gf(&gx), rows, classes, gf(&gloss), out);
            check_unchanged(&c, &gl, lab, "labels");
            if (!inplace)
              check_unchanged(&c, &gx, logit, "logits");
            else
              check_guards(&c, &gx, "logits");
            check_guards(&c, &gloss, "loss");
            check_guards(&c, &glp, "log_probs");
            check_f32(&c, tl, gf(&gloss), loss, rows, (double)classes, sl);
            if (inplace)
              check_bytes(&c, gf(&gloss), apart_loss, rows * sizeof(float), sizeof(float));
            memcpy(apart_loss, gf(&gloss), rows * sizeof(float));
            if (big && !inplace)
              sce_pieces_agree(&c, be, lab, logit, rows, classes, apart_loss, out);
            c.slot = "softmax_cross_entropy:log_probs";
            check_f32(&c, tp, out, lp, n, (double)classes, sp);
            gb_free(&gx);
            gb_free(&gloss);
            gb_free(&glp);
          }
          free(apart_loss);
          /* Backward from the scalar log_probs: both outputs, each alone, and both at the same
             offset (a streamed call streams two outputs only where they sit alike). */
          for (int v = 0; v < 4; v++) {
            ctx_init(&c, be, "softmax_cross_entropy_backward", k_rpass_names[p],
                     "rows=%zu classes=%zu off=%zu v=%d", rows, classes, off, v);
            gbuf gdl = gb_floats(dloss, rows, off_of(off, 4)),
                 gp = gb_floats(lp, n, off_of(off, 5));
            gbuf gdlab = gb_floats(NULL, n, off_of(off, 6)),
                 gdlog = gb_floats(NULL, n, off_of(off, v == 3 ? 6 : 7));
            float *dlab = v == 2 ? NULL : gf(&gdlab), *dlog = v == 1 ? NULL : gf(&gdlog);
            be->softmax_cross_entropy_backward(gf(&gdl), gf(&gl), gf(&gp), rows, classes, dlab,
                                               dlog);
            check_unchanged(&c, &gdl, dloss, "dloss");
            check_unchanged(&c, &gl, lab, "labels");
            check_unchanged(&c, &gp, lp, "log_probs");
            check_guards(&c, &gdlab, "dlabels");
            check_guards(&c, &gdlog, "dlogits");
            if (big && dlab && dlog)
              sce_backward_pieces_agree(&c, be, dloss, lab, lp, rows, classes, dlab, dlog);
            if (dlog) check_f32(&c, tb, dlog, wdlog, n, 1, sb);
            c.slot = "softmax_cross_entropy_backward:dlabels";
            if (dlab) check_f32(&c, tdl, dlab, wdlab, n, 1, NULL);
            gb_free(&gdl);
            gb_free(&gp);
            gb_free(&gdlab);
            gb_free(&gdlog);
          }
          gb_free(&gl);
        }
        free(lab);
        free(logit);
        free(lp);
        free(loss);
        free(dloss);
        free(wdlab);
        free(wdlog);
        free(sl);
        free(sp);
        free(sb);
      }
    }
  }
}

Test(conformance, reductions) {
  for (size_t i = 0; i < COUNT(k_reduce); i++) reduce_family(&k_reduce[i]);
  finish("reductions");
}

Test(conformance, argmax_argmin) {
  arg_family("argmax", offsetof(sg_backend, argmax));
  arg_family("argmin", offsetof(sg_backend, argmin));
  finish("argmax / argmin");
}

Test(conformance, softmax) {
  softmax_family(false);
  softmax_family(true);
  finish("softmax / log_softmax");
}

Test(conformance, softmax_cross_entropy) {
  sce_family();
  finish("softmax_cross_entropy");
}
