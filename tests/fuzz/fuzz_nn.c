/* Differential fuzzer of the training kernels that are not window ops: batch_norm and
 * batch_norm_backward (dx, in place too, or none; the per-channel sums added to old values),
 * dropout (offsets whose element counters cross 2^32, thresholds 0 and 2^32, any seed and scale,
 * in place), the sgd, momentum (plain and Nesterov) and Adam updates, and softmax_cross_entropy
 * with its backward (log_probs over the logits, either gradient NULL). Fuzzed lengths, rows and
 * channels around the vector widths, pointer offsets, parameters and values (NaN, infinities,
 * denormals, huge values); every backend of this CPU against the scalar backend under the slot's
 * conformance contract (opinfo/), inputs unchanged, nothing written outside an output. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define MAX_NUMEL 8192
#define MAX_N 4100

/* One kind of edge value per case keeps most rows free of NaN (which would hide the rest). */
static unsigned read_kinds(fz *f) {
  static const unsigned kinds_of[] = {FZ_DOMAIN, FZ_SPECIAL, FZ_HUGE, FZ_WIDE, FZ_ANY};
  return kinds_of[fz_range(f, 0, FZ_COUNT(kinds_of) - 1)];
}

/* rows x channels, at most MAX_NUMEL. */
static void read_matrix(fz *f, size_t *rows, size_t *cols, size_t max_rows, size_t max_cols) {
  *rows = fz_size(f, max_rows);
  *cols = fz_size(f, max_cols);
  while (*rows * *cols > MAX_NUMEL) {
    if (*cols >= *rows)
      *cols /= 2;
    else
      *rows /= 2;
  }
}

/* ==== batch norm ============================================================================= */

static void batch_norm_case(fz *f) {
  size_t rows, c;
  read_matrix(f, &rows, &c, 64, 300);
  size_t n = rows * c, off[4];
  for (int i = 0; i < 4; i++) off[i] = fz_range(f, 0, 15);
  bool inplace = fz_bool(f);
  snprintf(fz_case, sizeof fz_case, "batch_norm rows=%zu channels=%zu off=(%zu,%zu,%zu,%zu)%s",
           rows, c, off[0], off[1], off[2], off[3], inplace ? " in place" : "");
  opinfo_bound b = fz_bound("batch_norm");
  opinfo_range dom = fz_domain("batch_norm", false);
  unsigned kinds = read_kinds(f);
  float *x = fz_malloc(n * 4), *a = fz_malloc(c * 4), *bb = fz_malloc(c * 4),
        *want = fz_malloc(n * 4);
  fz_floats(f, x, n, dom.lo, dom.hi, kinds);
  fz_floats(f, a, c, dom.lo, dom.hi, kinds);
  fz_floats(f, bb, c, dom.lo, dom.hi, kinds);
  fz_scalar()->batch_norm(x, rows, c, a, bb, want);
  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    fz_buf gx = fz_buf_make(x, n, 4, off[0]), ga = fz_buf_make(a, c, 4, off[1]);
    fz_buf gb = fz_buf_make(bb, c, 4, off[2]), gy = fz_buf_make(NULL, n, 4, off[3]);
    float *y = inplace ? fz_f(&gx) : fz_f(&gy);
    be->batch_norm(fz_f(&gx), rows, c, fz_f(&ga), fz_f(&gb), y);
    if (!inplace) fz_buf_unchanged(&gx, x, "x");
    fz_buf_unchanged(&ga, a, "a");
    fz_buf_unchanged(&gb, bb, "b");
    fz_check_f32(be, "batch_norm", &b, y, want, n, 1, NULL, NULL, NULL);
    fz_buf_free(&gx, "x");
    fz_buf_free(&ga, "a");
    fz_buf_free(&gb, "b");
    fz_buf_free(&gy, "y");
  }
  free(x);
  free(a);
  free(bb);
  free(want);
}

static void batch_norm_backward_case(fz *f) {
  size_t rows, c;
  read_matrix(f, &rows, &c, 64, 300);
  size_t n = rows * c, off[7];
  for (int i = 0; i < 7; i++) off[i] = fz_range(f, 0, 15);
  int dx_form = (int)fz_range(f, 0, 2); /* 0: its own buffer, 1: over dy, 2: NULL */
  snprintf(fz_case, sizeof fz_case, "batch_norm_backward rows=%zu channels=%zu dx=%s off=(%zu,...)",
           rows, c,
           dx_form == 0   ? "own"
           : dx_form == 1 ? "over dy"
                          : "NULL",
           off[0]);
  opinfo_bound bdx = fz_bound("batch_norm_backward"), bs = fz_bound("batch_norm_backward:sums");
  opinfo_range dom = fz_domain("batch_norm", false);
  unsigned kinds = read_kinds(f);
  float *dy = fz_malloc(n * 4), *x = fz_malloc(n * 4), *a = fz_malloc(c * 4),
        *mean = fz_malloc(c * 4);
  float *s0 = fz_malloc(c * 4), *s1 = fz_malloc(c * 4), *wdx = fz_malloc(n * 4);
  float *ws0 = fz_malloc(c * 4), *ws1 = fz_malloc(c * 4);
  fz_floats(f, dy, n, dom.lo, dom.hi, kinds);
  fz_floats(f, x, n, dom.lo, dom.hi, kinds);
  fz_floats(f, a, c, dom.lo, dom.hi, kinds);
  fz_floats(f, mean, c, dom.lo, dom.hi, kinds);
  fz_floats(f, s0, c, dom.lo, dom.hi, kinds);
  fz_floats(f, s1, c, dom.lo, dom.hi, kinds);
  memcpy(ws0, s0, c * 4);
  memcpy(ws1, s1, c * 4);
  fz_scalar()->batch_norm_backward(dy, x, rows, c, a, mean, dx_form == 2 ? NULL : wdx, ws0, ws1);
  /* The sums' magnitudes: |old value| + sum of |terms|, each term as the kernels round it. A
     channel whose magnitude overflows may sum to inf or not, depending on the order: outside
     the contract (as for reduce_sum). */
  double *sc0 = fz_malloc(c * sizeof *sc0), *sc1 = fz_malloc(c * sizeof *sc1);
  bool *skip0 = fz_malloc(c), *skip1 = fz_malloc(c);
  for (size_t k = 0; k < c; k++) {
    double m0 = isfinite(s0[k]) ? fabs(s0[k]) : 0, m1 = isfinite(s1[k]) ? fabs(s1[k]) : 0;
    for (size_t r = 0; r < rows; r++) {
      float d = dy[r * c + k], t = d * (x[r * c + k] - mean[k]);
      if (isfinite(d)) m0 += fabs(d);
      if (isfinite(t)) m1 += fabs(t);
    }
    sc0[k] = m0, sc1[k] = m1;
    skip0[k] = m0 > FLT_MAX / 2, skip1[k] = m1 > FLT_MAX / 2;
  }
  bs.abs = 2.0 * ((double)rows + 1 + 2);
  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    fz_buf gdy = fz_buf_make(dy, n, 4, off[0]), gx = fz_buf_make(x, n, 4, off[1]);
    fz_buf ga = fz_buf_make(a, c, 4, off[2]), gm = fz_buf_make(mean, c, 4, off[3]);
    fz_buf gs0 = fz_buf_make(s0, c, 4, off[4]), gs1 = fz_buf_make(s1, c, 4, off[5]);
    fz_buf gdx = fz_buf_make(NULL, n, 4, off[6]);
    float *dx = dx_form == 0 ? fz_f(&gdx) : dx_form == 1 ? fz_f(&gdy) : NULL;
    be->batch_norm_backward(fz_f(&gdy), fz_f(&gx), rows, c, fz_f(&ga), fz_f(&gm), dx, fz_f(&gs0),
                            fz_f(&gs1));
    if (dx_form != 1) fz_buf_unchanged(&gdy, dy, "dy");
    fz_buf_unchanged(&gx, x, "x");
    fz_buf_unchanged(&ga, a, "a");
    fz_buf_unchanged(&gm, mean, "mean");
    if (dx) fz_check_f32(be, "batch_norm_backward", &bdx, dx, wdx, n, 1, NULL, NULL, NULL);
    fz_check_f32(be, "batch_norm_backward:sums", &bs, fz_f(&gs0), ws0, c, (double)rows + 1, sc0,
                 NULL, skip0);
    fz_check_f32(be, "batch_norm_backward:sums", &bs, fz_f(&gs1), ws1, c, (double)rows + 1, sc1,
                 NULL, skip1);
    fz_buf_free(&gdy, "dy");
    fz_buf_free(&gx, "x");
    fz_buf_free(&ga, "a");
    fz_buf_free(&gm, "mean");
    fz_buf_free(&gs0, "sum_dy");
    fz_buf_free(&gs1, "sum_dy_xc");
    fz_buf_free(&gdx, "dx");
  }
  float *all[] = {dy, x, a, mean, s0, s1, wdx, ws0, ws1};
  for (size_t i = 0; i < FZ_COUNT(all); i++) free(all[i]);
  free(sc0);
  free(sc1);
  free(skip0);
  free(skip1);
}

/* ==== dropout ================================================================================ */

static uint64_t fz_u64(fz *f) {
  uint64_t hi = fz_u32(f); /* two statements: the order of the reads is fixed */
  return hi << 32 | fz_u32(f);
}

static void dropout_case(fz *f) {
  size_t n = fz_size(f, MAX_N), off[2] = {fz_range(f, 0, 15), fz_range(f, 0, 15)};
  /* The element counter: small, just below a multiple of 2^32 (the hash's high word changes
     inside a vector), or anywhere. */
  uint8_t k = fz_u8(f);
  uint64_t offset = k < 100   ? fz_range(f, 0, 100)
                    : k < 180 ? ((uint64_t)fz_range(f, 1, 5) << 32) - fz_range(f, 0, 40)
                              : fz_u64(f);
  uint64_t seed = fz_u64(f);
  k = fz_u8(f);
  uint64_t threshold = k < 20   ? 0
                       : k < 40 ? (uint64_t)1 << 32
                       : k < 60 ? fz_u64(f) /* past 2^32: drops everything */
                                : fz_u32(f);
  float scale =
      threshold < (uint64_t)1 << 32 ? (float)(4294967296.0 / (4294967296.0 - threshold)) : 1.0f;
  if (fz_u8(f) < 40) scale = fz_float(f, -4, 4, FZ_ANY);
  bool inplace = fz_bool(f);
  snprintf(fz_case, sizeof fz_case,
           "dropout n=%zu offset=%llu seed=%llu threshold=%llu scale=%g off=(%zu,%zu)%s", n,
           (unsigned long long)offset, (unsigned long long)seed, (unsigned long long)threshold,
           scale, off[0], off[1], inplace ? " in place" : "");
  opinfo_bound b = fz_bound("dropout");
  opinfo_range dom = fz_domain("dropout", false);
  float *x = fz_malloc(n * 4), *want = fz_malloc(n * 4);
  fz_floats(f, x, n, dom.lo, dom.hi, read_kinds(f));
  fz_scalar()->dropout(x, want, n, offset, seed, threshold, scale);
  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    fz_buf gx = fz_buf_make(x, n, 4, off[0]), gy = fz_buf_make(NULL, n, 4, off[1]);
    float *y = inplace ? fz_f(&gx) : fz_f(&gy);
    be->dropout(fz_f(&gx), y, n, offset, seed, threshold, scale);
    if (!inplace) fz_buf_unchanged(&gx, x, "x");
    fz_check_f32(be, "dropout", &b, y, want, n, 1, NULL, NULL, NULL);
    fz_buf_free(&gx, "x");
    fz_buf_free(&gy, "y");
  }
  free(x);
  free(want);
}

/* ==== optimizer updates ====================================================================== */

enum { U_SGD, U_MOMENTUM, U_ADAM };

/* A hyper-parameter: mostly a usual value, sometimes any float (kernels take what they get). */
static float param(fz *f, float lo, float hi) {
  return fz_u8(f) < 230 ? fz_float(f, lo, hi, FZ_DOMAIN) : fz_float(f, lo, hi, FZ_ANY);
}

static void update_case(fz *f) {
  int kind = (int)fz_range(f, 0, 2);
  static const char *const slots[] = {"sgd_update", "momentum_update", "adam_update"};
  const char *slot = slots[kind];
  size_t n = fz_size(f, MAX_N), off[4];
  for (int i = 0; i < 4; i++) off[i] = fz_range(f, 0, 15);
  float lr = param(f, 0, 1), mu = param(f, 0, 1), b1 = param(f, 0, 1), b2 = param(f, 0, 1);
  float c2 = param(f, 1, 30), eps = param(f, 0, 1e-3f);
  bool nesterov = fz_bool(f);
  snprintf(fz_case, sizeof fz_case,
           "%s n=%zu lr=%g momentum=%g nesterov=%d beta=(%g,%g) c2=%g eps=%g off=(%zu,%zu,%zu,%zu)",
           slot, n, lr, mu, nesterov, b1, b2, c2, eps, off[0], off[1], off[2], off[3]);
  opinfo_bound b = fz_bound(slot);
  opinfo_range dom = fz_domain(slot, false);
  unsigned kinds = read_kinds(f);
  /* w, the state (velocity; Adam's m and v) and g. */
  float *in[4], *want[3];
  for (int i = 0; i < 4; i++) {
    in[i] = fz_malloc(n * 4);
    fz_floats(f, in[i], n, dom.lo, dom.hi, kinds);
  }
  /* Adam's v is a mean of squares: mostly >= 0. */
  if (kind == U_ADAM && fz_u8(f) < 200)
    for (size_t i = 0; i < n; i++) in[2][i] = fabsf(in[2][i]);
  for (int i = 0; i < 3; i++) {
    want[i] = fz_malloc(n * 4);
    memcpy(want[i], in[i], n * 4);
  }
  const sg_backend *ref = fz_scalar();
  if (kind == U_SGD)
    ref->sgd_update(want[0], in[3], n, lr);
  else if (kind == U_MOMENTUM)
    ref->momentum_update(want[0], want[1], in[3], n, lr, mu, nesterov);
  else
    ref->adam_update(want[0], want[1], want[2], in[3], n, lr, b1, b2, c2, eps);
  int n_out = kind == U_SGD ? 1 : kind == U_MOMENTUM ? 2 : 3;
  static const char *const names[] = {"w", "v or m", "v", "g"};
  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    fz_buf gb[4];
    for (int i = 0; i < 4; i++) gb[i] = fz_buf_make(in[i], n, 4, off[i]);
    float *w = fz_f(&gb[0]), *s0 = fz_f(&gb[1]), *s1 = fz_f(&gb[2]);
    const float *g = fz_f(&gb[3]);
    if (kind == U_SGD)
      be->sgd_update(w, g, n, lr);
    else if (kind == U_MOMENTUM)
      be->momentum_update(w, s0, g, n, lr, mu, nesterov);
    else
      be->adam_update(w, s0, s1, g, n, lr, b1, b2, c2, eps);
    fz_buf_unchanged(&gb[3], in[3], "g");
    for (int i = n_out; i < 3; i++) fz_buf_unchanged(&gb[i], in[i], "unused state");
    for (int i = 0; i < n_out; i++)
      fz_check_f32(be, slot, &b, fz_f(&gb[i]), want[i], n, 1, NULL, NULL, NULL);
    for (int i = 0; i < 4; i++) fz_buf_free(&gb[i], names[i]);
  }
  for (int i = 0; i < 4; i++) free(in[i]);
  for (int i = 0; i < 3; i++) free(want[i]);
}

/* ==== softmax cross-entropy ================================================================== */

/* Where must[i], got[i] has to be inf or NaN (which one, and its sign, rest on roundings the
   backends need not share): fails otherwise, naming what made it so. */
static void check_non_finite(const sg_backend *be, const char *slot, const float *got,
                             const bool *must, size_t n, const char *because) {
  for (size_t i = 0; i < n; i++)
    if (must[i] && isfinite(got[i]))
      fz_fail("%s %s: [%zu] has %s, finite result %a", be->name, slot, i, because, (double)got[i]);
}

static void sce_case(fz *f) {
  size_t rows, classes;
  read_matrix(f, &rows, &classes, 16, 600);
  size_t n = rows * classes, off[8];
  for (int i = 0; i < 8; i++) off[i] = fz_range(f, 0, 15);
  bool backward = fz_bool(f), inplace = !backward && fz_bool(f);
  int outs = backward ? (int)fz_range(f, 0, 2) : 0; /* 0: both, 1: dlabels only, 2: dlogits */
  int label_form = (int)fz_range(f, 0, 2);          /* probabilities, one-hot, any values */
  snprintf(fz_case, sizeof fz_case,
           "softmax_cross_entropy%s rows=%zu classes=%zu labels=%d outs=%d off=(%zu,...)%s",
           backward ? "_backward" : "", rows, classes, label_form, outs, off[0],
           inplace ? " log_probs over logits" : "");
  opinfo_range dom = fz_domain("softmax_cross_entropy", false);
  float *lab = fz_malloc(n * 4), *logit = fz_malloc(n * 4), *lp = fz_malloc(n * 4);
  float *loss = fz_malloc(rows * 4), *dloss = fz_malloc(rows * 4);
  float *wdlab = fz_malloc(n * 4), *wdlog = fz_malloc(n * 4);
  for (size_t r = 0; r < rows; r++) {
    float *t = lab + r * classes;
    if (label_form == 2) {
      fz_floats(f, t, classes, -1, 2, FZ_ANY);
      continue;
    }
    size_t hot = classes ? fz_range(f, 0, classes - 1) : 0;
    double tot = 0;
    for (size_t c = 0; c < classes; c++)
      tot += t[c] = label_form ? (c == hot) : fz_float(f, 0, 1, FZ_DOMAIN);
    for (size_t c = 0; c < classes && label_form == 0 && tot > 0; c++) t[c] = (float)(t[c] / tot);
  }
  fz_floats(f, logit, n, dom.lo, dom.hi, read_kinds(f));
  fz_floats(f, dloss, rows, -2, 2, FZ_DOMAIN | FZ_SPECIAL);
  const sg_backend *ref = fz_scalar();
  ref->softmax_cross_entropy(lab, logit, rows, classes, loss, lp);
  ref->softmax_cross_entropy_backward(dloss, lab, lp, rows, classes, wdlab, wdlog);
  /* The abs bounds' magnitudes, as the conformance test's: the loss sum |label| (1 + |lp|)
     over the finite lp, log_probs 1 + |lp|, dlogits |dloss| (e^lp + |label|). A loss whose
     terms sum
     past FLT_MAX / 2 (labels far from probabilities) may overflow in the SIMD kernels' float
     sum and not in the scalar double one: outside the contract, as an overflowing reduce_sum
     row is. */
  double *sl = fz_malloc(rows * sizeof *sl), *sp = fz_malloc(n * sizeof *sp);
  double *sb = fz_malloc(n * sizeof *sb);
  bool *skip = fz_malloc(rows), *wild = fz_malloc(rows), *wild_g = fz_malloc(n);
  for (size_t r = 0; r < rows; r++) {
    sl[r] = 0;
    wild[r] = false;
    for (size_t c = 0; c < classes; c++) {
      size_t at = r * classes + c;
      wild[r] |= !isfinite(lab[at]);
      double t = fabs((double)lab[at]) * (1 + fabs(lp[at]));
      if (isfinite(t)) sl[r] += t;
      sp[at] = 1 + fabs(lp[at]);
      sb[at] = fabs(dloss[r]) * (exp(lp[at]) + fabs(lab[at]));
      /* dloss of +-inf or NaN times e^lp - label: inf, or NaN where e^lp rounded to the label
         (1/3 and e^log(1/3) meet in one backend's exp and not another's): non-finite, no more. */
      wild_g[at] = !isfinite(dloss[r]);
    }
    /* A label of +-inf or NaN makes the loss inf or NaN, which of the two resting on whether
       a log-prob rounded to 0 (-inf * 0): such a row must come out non-finite, no more. */
    skip[r] = sl[r] > FLT_MAX / 2 || wild[r];
  }
  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    fz_buf gl = fz_buf_make(lab, n, 4, off[0]);
    if (!backward) {
      opinfo_bound bl = fz_bound("softmax_cross_entropy");
      opinfo_bound bp_ = fz_bound("softmax_cross_entropy:log_probs");
      fz_buf gx = fz_buf_make(logit, n, 4, off[1]), gloss = fz_buf_make(NULL, rows, 4, off[2]);
      fz_buf glp = fz_buf_make(NULL, n, 4, off[3]);
      float *out_lp = inplace ? fz_f(&gx) : fz_f(&glp);
      be->softmax_cross_entropy(fz_f(&gl), fz_f(&gx), rows, classes, fz_f(&gloss), out_lp);
      if (!inplace) fz_buf_unchanged(&gx, logit, "logits");
      fz_check_f32(be, "softmax_cross_entropy", &bl, fz_f(&gloss), loss, rows, (double)classes, sl,
                   NULL, skip);
      check_non_finite(be, "softmax_cross_entropy", fz_f(&gloss), wild, rows, "a non-finite label");
      fz_check_f32(be, "softmax_cross_entropy:log_probs", &bp_, out_lp, lp, n, (double)classes, sp,
                   NULL, NULL);
      fz_buf_free(&gx, "logits");
      fz_buf_free(&gloss, "loss");
      fz_buf_free(&glp, "log_probs");
    } else {
      opinfo_bound bb = fz_bound("softmax_cross_entropy_backward");
      opinfo_bound bdl = fz_bound("softmax_cross_entropy_backward:dlabels");
      fz_buf gdl = fz_buf_make(dloss, rows, 4, off[4]), gp = fz_buf_make(lp, n, 4, off[5]);
      fz_buf gdlab = fz_buf_make(NULL, n, 4, off[6]), gdlog = fz_buf_make(NULL, n, 4, off[7]);
      float *dlab = outs == 2 ? NULL : fz_f(&gdlab), *dlog = outs == 1 ? NULL : fz_f(&gdlog);
      be->softmax_cross_entropy_backward(fz_f(&gdl), fz_f(&gl), fz_f(&gp), rows, classes, dlab,
                                         dlog);
      fz_buf_unchanged(&gdl, dloss, "dloss");
      fz_buf_unchanged(&gp, lp, "log_probs");
      if (dlog) {
        fz_check_f32(be, "softmax_cross_entropy_backward", &bb, dlog, wdlog, n, 1, sb, NULL,
                     wild_g);
        check_non_finite(be, "softmax_cross_entropy_backward", dlog, wild_g, n,
                         "a non-finite dloss");
      }
      if (dlab)
        fz_check_f32(be, "softmax_cross_entropy_backward:dlabels", &bdl, dlab, wdlab, n, 1, NULL,
                     NULL, NULL);
      fz_buf_free(&gdl, "dloss");
      fz_buf_free(&gp, "log_probs");
      fz_buf_free(&gdlab, "dlabels");
      fz_buf_free(&gdlog, "dlogits");
    }
    fz_buf_unchanged(&gl, lab, "labels");
    fz_buf_free(&gl, "labels");
  }
  float *all[] = {lab, logit, lp, loss, dloss, wdlab, wdlog};
  for (size_t i = 0; i < FZ_COUNT(all); i++) free(all[i]);
  free(sl);
  free(sp);
  free(sb);
  free(skip);
  free(wild);
  free(wild_g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz f = fz_make(data, size);
  switch (fz_range(&f, 0, 4)) {
  case 0:
    batch_norm_case(&f);
    break;
  case 1:
    batch_norm_backward_case(&f);
    break;
  case 2:
    dropout_case(&f);
    break;
  case 3:
    update_case(&f);
    break;
  default:
    sce_case(&f);
    break;
  }
  return 0;
}
