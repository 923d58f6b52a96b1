/* accuracy_report: the measured accuracy of every kernel of every available backend against
 * double precision, printed as the Markdown tables of docs/accuracy.md.
 *
 *   accuracy_report [--points N]      (N sweep points per op, default 2^20)
 *   accuracy_report --every-float OP LO HI   (unary OP on every float of [LO, HI], one row)
 *   accuracy_report --check N   (every backend against the op-info rows' promises, on about N
 *                                floats of each promised range; exits 1 if one is broken)
 *
 * Unary ops are swept over their useful domain: half the points evenly spaced in the float
 * encoding between lo and hi (so every binade gets its share: values near 0, denormals and
 * large magnitudes), half evenly spaced on the real line. Forward results are compared with
 * libm in double; backward kernels with dy times the analytic derivative in double at the same
 * x ("end to end": a kernel that reads the saved y gets the backend's own float y, as the
 * engine gives it), and for kernels that read y also with the derivative computed in double
 * from that float y ("from y": the kernel's own arithmetic). Binary ops use a 2-D grid of the
 * same sweeps; reductions, the softmax family and gemm use random rows, with the errors of
 * sums of mixed signs given relative to the sum of magnitudes (ULPs of a result that cancels
 * say nothing about the kernel).
 *
 * An error is |got - ref| / ulp(ref), ulp(ref) being the spacing of floats at ref's binade
 * (2^-149 in the denormals and at 0). A result that should be NaN or +-inf and is not (or the
 * reverse) counts as infinite error, and the table shows where. The unary and binary ops'
 * double references and swept domains are their op-info rows' (opinfo/), and so are the row
 * ops' (opinfo_row_ref: reductions, argmax / argmin, the softmax family, cross-entropy). The
 * tables only measure: tests/test_conformance_*.c and the per-family tests hold the kernels to
 * the scalar backend, and --check (a ctest entry) to the bounds docs/accuracy.md promises. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simdgrad/backend.h>
#include <simdgrad/simdgrad.h>

#include "opinfo.h"
#include "slot_lists.h"

static size_t g_points = (size_t)1 << 20;

/* ---- Error measurement ------------------------------------------------------------------- */

/* |got - ref| in ulps of ref; infinite when got's class (NaN, +-inf, finite) differs from the
   class ref rounds to. */
static double ulp_err(float got, double ref) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got) ? 0 : INFINITY;
  /* ref rounds to +-inf in float at or past FLT_MAX + half an ulp. */
  double top = (double)FLT_MAX + ldexp(1.0, 127 - 24);
  if (fabs(ref) >= top) return isinf(got) && (got > 0) == (ref > 0) ? 0 : INFINITY;
  if (isinf(got)) return INFINITY;
  int e = ref == 0 ? -126 : ilogb(ref);
  if (e < -126) e = -126;
  return fabs((double)got - ref) / ldexp(1.0, e - 23);
}

typedef struct worst {
  double err;
  double at, at2; /* the input(s) where it happened */
} worst;

static void note(worst *w, double err, double at, double at2) {
  if (err > w->err || (isinf(err) && !isinf(w->err))) {
    w->err = err;
    w->at = at;
    w->at2 = at2;
  }
}

static void fmt_err(char *out, size_t cap, const worst *w) {
  if (isinf(w->err))
    snprintf(out, cap, "**inf** (x=%.4g)", w->at);
  else if (w->err >= 1e4)
    snprintf(out, cap, "%.2g (x=%.4g)", w->err, w->at);
  else if (w->err >= 4)
    snprintf(out, cap, "%.1f (x=%.4g)", w->err, w->at);
  else
    snprintf(out, cap, "%.2f", w->err);
}

/* ---- Sweeps -------------------------------------------------------------------------------- */

static int64_t ordered(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u & 0x80000000u ? -(int64_t)(u & 0x7fffffffu) : (int64_t)u;
}
static float from_ordered(int64_t k) {
  uint32_t u = k < 0 ? (uint32_t)(-k) | 0x80000000u : (uint32_t)k;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* n points over [lo, hi]: half evenly in the float encoding, half evenly on the line. */
static void sweep(float *x, size_t n, float lo, float hi) {
  size_t h = n / 2;
  int64_t a = ordered(lo), b = ordered(hi);
  for (size_t i = 0; i < h; i++)
    x[i] = from_ordered(a + (int64_t)((double)(b - a) * (double)i / (double)(h > 1 ? h - 1 : 1)));
  for (size_t i = h; i < n; i++)
    x[i] = (float)(lo + ((double)hi - lo) * (double)(i - h) / (double)(n - h > 1 ? n - h - 1 : 1));
}

static uint64_t g_rng = 0x2545f4914f6cdd1du;
static double unif(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return (double)(g_rng >> 11) / 9007199254740992.0;
}

static float *fmalloc(size_t n) {
  float *p = malloc((n ? n : 1) * sizeof *p);
  if (!p) {
    fprintf(stderr, "accuracy_report: out of memory\n");
    exit(1);
  }
  return p;
}

/* ---- Backends ---------------------------------------------------------------------------- */

static const char *const k_names[] = {"scalar", "avx2", "avx512", "neon"};
static const sg_backend *g_be[4];
static int g_nbe;

/* ---- Unary ops ------------------------------------------------------------------------ */

/* What one accuracy row sweeps: an op-info row (its references) over its .sweep, or over its
   .sweep2 under sweep2_label. */
typedef struct usweep {
  const opinfo_unary *info;
  const char *label; /* NULL: the op's own row */
  opinfo_range range;
} usweep;

static const uslot k_unary[] = {SG_FOR_EACH_UNARY_OP(U_ENTRY_) SG_FOR_EACH_STEP_OP(S_ENTRY_)};

/* The worst errors of one unary op on each backend: forward, backward end to end, backward from
   y; measure_unary adds a chunk of inputs to them. */
typedef struct uworst {
  worst f[4], b[4], y[4];
} uworst;

/* x and dy in, y and dx scratch, all n long. */
static void measure_unary(const uslot *u, const opinfo_unary *r, const float *x, const float *dy,
                          float *y, float *dx, size_t n, uworst *w) {
  for (int b = 0; b < g_nbe; b++) {
    const sg_backend *be = g_be[b];
    SLOT(be, sg_unary_kernel, u->fwd)(x, y, n);
    for (size_t i = 0; i < n; i++) note(&w->f[b], ulp_err(y[i], r->ref(x[i])), x[i], 0);
    if (!r->dref) continue;
    const float *xs = u->saved == SV_X ? x : NULL, *ys = u->saved == SV_Y ? y : NULL;
    SLOT(be, sg_unary_backward_kernel, u->bwd)(dy, xs, ys, dx, n);
    for (size_t i = 0; i < n; i++) {
      /* Where a saved y overflowed, the gradient through it is lost whatever the kernel does. */
      if (u->saved == SV_Y && fabs(r->ref(x[i])) > FLT_MAX) continue;
      note(&w->b[b], ulp_err(dx[i], (double)dy[i] * r->dref(x[i])), x[i], y[i]);
      if (r->dref_y && u->saved == SV_Y && isfinite(y[i]))
        note(&w->y[b], ulp_err(dx[i], (double)dy[i] * r->dref_y(y[i])), x[i], y[i]);
    }
  }
}

/* dy for input i: magnitudes in [0.5, 2), alternating signs. */
static float unary_dy(size_t i) { return (float)((0.5 + 1.5 * unif()) * (i % 2 ? -1 : 1)); }

static void print_unary_row(const char *label, opinfo_range range, const uslot *u,
                            const opinfo_unary *r, const uworst *w) {
  char cell[64];
  printf("| %s | [%.3g, %.3g] |", label, range.lo, range.hi);
  for (int b = 0; b < g_nbe; b++) fmt_err(cell, sizeof cell, &w->f[b]), printf(" %s |", cell);
  for (int b = 0; b < g_nbe; b++) {
    if (r->dref)
      fmt_err(cell, sizeof cell, &w->b[b]);
    else
      snprintf(cell, sizeof cell, "-");
    printf(" %s |", cell);
  }
  for (int b = 0; b < g_nbe; b++) {
    if (r->dref_y && u->saved == SV_Y)
      fmt_err(cell, sizeof cell, &w->y[b]);
    else
      snprintf(cell, sizeof cell, "-");
    printf(" %s |", cell);
  }
  printf("\n");
}

/* One unary op on every backend over g_points of a sweep. */
static void report_unary(const uslot *u, const usweep *sw) {
  const opinfo_unary *r = sw->info;
  size_t n = g_points;
  float *x = fmalloc(n), *y = fmalloc(n), *dy = fmalloc(n), *dx = fmalloc(n);
  sweep(x, n, sw->range.lo, sw->range.hi);
  for (size_t i = 0; i < n; i++) dy[i] = unary_dy(i);
  uworst w = {0};
  measure_unary(u, r, x, dy, y, dx, n, &w);
  print_unary_row(sw->label ? sw->label : u->name, sw->range, u, r, &w);
  free(x);
  free(y);
  free(dy);
  free(dx);
}

static const uslot *unary_slot(const char *name) {
  for (size_t i = 0; i < sizeof k_unary / sizeof k_unary[0]; i++)
    if (strcmp(k_unary[i].name, name) == 0) return &k_unary[i];
  return NULL;
}

/* Adds every stride-th float of [lo, hi], from lo, to w, in chunks, with dy = 1,
   so that the backward columns measure the derivative itself, the figure docs/accuracy.md
   promises. */
static void measure_unary_floats(const uslot *u, const opinfo_unary *r, float lo, float hi,
                                 int64_t stride, uworst *w) {
  enum { CHUNK = 1 << 22 };
  float *x = fmalloc(CHUNK), *y = fmalloc(CHUNK), *dy = fmalloc(CHUNK), *dx = fmalloc(CHUNK);
  int64_t k = ordered(lo), last = ordered(hi);
  while (k <= last) {
    size_t n = 0;
    for (; n < CHUNK && k <= last; n++, k += stride) x[n] = from_ordered(k), dy[n] = 1.0f;
    measure_unary(u, r, x, dy, y, dx, n, w);
  }
  free(x);
  free(y);
  free(dy);
  free(dx);
}

/* One unary op on every backend over every float of [lo, hi] (--every-float): the sweeps above
   take 2^20 points, which can miss an op's worst input. */
static int report_unary_every_float(const char *name, float lo, float hi) {
  const uslot *u = unary_slot(name);
  const opinfo_unary *r = u ? opinfo_unary_find(name) : NULL;
  if (!r || !(lo <= hi)) {
    fprintf(stderr, "accuracy_report: --every-float needs a unary op and lo <= hi\n");
    return 2;
  }
  uworst w = {0};
  measure_unary_floats(u, r, lo, hi, 1, &w);
  print_unary_row(name, (opinfo_range){lo, hi}, u, r, &w);
  return 0;
}

/* One promise on backend b: prints its line, returns whether it holds. */
static bool check_one(const char *what, opinfo_range range, double promise, const worst *w, int b) {
  bool ok = w->err <= promise;
  printf("%-6s %-8s on [%g, %g], %-6s %.2f ulp, promised %.2f", ok ? "ok" : "BROKEN", what,
         range.lo, range.hi, g_be[b]->name, w->err, promise);
  if (!ok) printf(", at x = %.9g", w->at);
  printf("\n");
  return ok;
}

/* --check: every backend against each op-info row's promise (opinfo_promise), on about
   `points` floats of each promised range spread evenly over its encoding (every binade gets its
   share). Returns 1 if any promise is broken. */
static int check_promises(size_t points) {
  int broken = 0, checked = 0;
  for (size_t i = 0; i < sizeof k_unary / sizeof k_unary[0]; i++) {
    const opinfo_unary *r = opinfo_unary_find(k_unary[i].name);
    if (!r || !(r->promise.fwd > 0 || r->promise.bwd > 0)) continue;
    const opinfo_promise *p = &r->promise;
    char what[40];
    for (int dir = 0; dir < 2; dir++) {
      double bound = dir ? p->bwd : p->fwd;
      opinfo_range range = dir ? p->bwd_range : p->fwd_range;
      if (!(bound > 0)) continue;
      int64_t count = ordered(range.hi) - ordered(range.lo) + 1;
      int64_t stride = count / (int64_t)points;
      /* Odd, so that the sample is not one residue class of the low bits. */
      stride = stride > 1 ? stride | 1 : 1;
      uworst w = {0};
      measure_unary_floats(&k_unary[i], r, range.lo, range.hi, stride, &w);
      snprintf(what, sizeof what, "%s%s", r->name, dir ? "'" : "");
      for (int b = 0; b < g_nbe; b++, checked++)
        broken += !check_one(what, range, bound, dir ? &w.b[b] : &w.f[b], b);
    }
  }
  printf("%d of %d promises kept\n", checked - broken, checked);
  return broken || !checked;
}

/* leaky_relu and clip (at their op-info rows' parameters): exact ops, measured the same way. */
static void report_param(void) {
  static const char *const names[2] = {"leaky_relu", "clip"};
  size_t n = g_points;
  float *x = fmalloc(n), *y = fmalloc(n), *dy = fmalloc(n), *dx = fmalloc(n);
  for (size_t i = 0; i < n; i++) dy[i] = (float)(0.5 + unif());
  for (int op = 0; op < 2; op++) {
    const opinfo_unary *r = opinfo_unary_find(names[op]);
    if (!r) { /* tests/test_opinfo.c fails on it too */
      fprintf(stderr, "accuracy_report: no op-info row for %s\n", names[op]);
      exit(1);
    }
    sweep(x, n, r->sweep.lo, r->sweep.hi);
    worst wf[4] = {{0}}, wb[4] = {{0}};
    for (int b = 0; b < g_nbe; b++) {
      const sg_backend *be = g_be[b];
      if (op == 0) {
        be->leaky_relu(x, y, n, OPINFO_LEAKY_ALPHA);
        be->leaky_relu_backward(dy, x, dx, n, OPINFO_LEAKY_ALPHA);
      } else {
        be->clip(x, y, n, OPINFO_CLIP_LO, OPINFO_CLIP_HI);
        be->clip_backward(dy, x, dx, n, OPINFO_CLIP_LO, OPINFO_CLIP_HI);
      }
      for (size_t i = 0; i < n; i++) {
        note(&wf[b], ulp_err(y[i], r->ref(x[i])), x[i], 0);
        note(&wb[b], ulp_err(dx[i], dy[i] * r->dref(x[i])), x[i], 0);
      }
    }
    char cell[64];
    printf("| %s | [%.3g, %.3g] |", op == 0 ? "leaky_relu (alpha 0.1)" : "clip [-1, 2]",
           r->sweep.lo, r->sweep.hi);
    for (int b = 0; b < g_nbe; b++) fmt_err(cell, sizeof cell, &wf[b]), printf(" %s |", cell);
    for (int b = 0; b < g_nbe; b++) fmt_err(cell, sizeof cell, &wb[b]), printf(" %s |", cell);
    for (int b = 0; b < g_nbe; b++) printf(" - |");
    printf("\n");
  }
  free(x);
  free(y);
  free(dy);
  free(dx);
}

/* ---- Binary ops -------------------------------------------------------------------------- */

static const bslot k_binary[] = {SG_FOR_EACH_BINARY_OP(B_ENTRY_)};

static void report_binary(const bslot *s) {
  const opinfo_binary *r = opinfo_binary_find(s->name);
  if (!r) { /* tests/test_opinfo.c fails on it too */
    fprintf(stderr, "accuracy_report: no op-info row for %s\n", s->name);
    exit(1);
  }
  /* A side x side grid of the two sweeps. */
  size_t side = (size_t)sqrt((double)g_points), n = side * side;
  float *sa = fmalloc(side), *sb = fmalloc(side), *a = fmalloc(n), *b = fmalloc(n);
  float *y = fmalloc(n), *dy = fmalloc(n), *da = fmalloc(n), *db = fmalloc(n);
  sweep(sa, side, r->sweep.lo, r->sweep.hi);
  sweep(sb, side, r->sweep_b.lo, r->sweep_b.hi);
  for (size_t i = 0; i < n; i++) {
    a[i] = sa[i / side];
    b[i] = sb[i % side];
    dy[i] = (float)(0.5 + unif());
  }
  worst wf[4] = {{0}}, wa[4] = {{0}}, wb[4] = {{0}};
  for (int k = 0; k < g_nbe; k++) {
    const sg_backend *be = g_be[k];
    SLOT(be, sg_binary_kernel, s->fwd)(a, 1, b, 1, y, n);
    bool needs_y = strcmp(s->name, "pow") == 0;
    SLOT(be, sg_binary_backward_kernel, s->bwd)(dy, a, 1, b, 1, needs_y ? y : NULL, da, db, n);
    for (size_t i = 0; i < n; i++) {
      double fy = r->ref(a[i], b[i]);
      note(&wf[k], ulp_err(y[i], fy), a[i], b[i]);
      note(&wa[k], ulp_err(da[i], dy[i] * r->da(a[i], b[i], fy)), a[i], b[i]);
      note(&wb[k], ulp_err(db[i], dy[i] * r->db(a[i], b[i], fy)), a[i], b[i]);
    }
  }
  char cell[80];
  printf("| %s | a [%.3g, %.3g], b [%.3g, %.3g] |", s->name, r->sweep.lo, r->sweep.hi,
         r->sweep_b.lo, r->sweep_b.hi);
  worst *ws[3] = {wf, wa, wb};
  for (int c = 0; c < 3; c++)
    for (int k = 0; k < g_nbe; k++) {
      if (isinf(ws[c][k].err) || ws[c][k].err >= 4)
        snprintf(cell, sizeof cell, "%s%.3g (a=%.3g, b=%.3g)", isinf(ws[c][k].err) ? "**" : "",
                 ws[c][k].err, ws[c][k].at, ws[c][k].at2);
      else
        snprintf(cell, sizeof cell, "%.2f", ws[c][k].err);
      if (isinf(ws[c][k].err)) strcat(cell, "**");
      printf(" %s |", cell);
    }
  printf("\n");
  free(sa);
  free(sb);
  free(a);
  free(b);
  free(y);
  free(dy);
  free(da);
  free(db);
}

/* ---- Reductions, softmax family, cross-entropy, gemm ---------------------------------------- */

/* Rows of r values: [outer, r, 1] ("rows") and [1, r, inner] ("columns"). */
typedef struct layout {
  size_t outer, r, inner;
  const char *name;
} layout;
static const layout k_layouts[] = {{1024, 1024, 1, "rows of 1024"},
                                   {1, 1024, 1024, "columns of 1024"},
                                   {8, 100003, 1, "rows of 100003"}};
#define N_LAYOUTS 3

static double at3(const float *x, layout l, size_t o, size_t j, size_t i) {
  return x[(o * l.r + j) * l.inner + i];
}
/* The row (o, i) of a layout: its first element (the row's stride is l.inner). */
static size_t row0(layout l, size_t o, size_t i) { return o * l.r * l.inner + i; }

/* The row op's double reference: its op-info row's (opinfo/opinfo_reduce.c). */
static const opinfo_row_ref *row_ref(const char *name) {
  const opinfo_kernel *k = opinfo_kernel_find(name);
  if (!k) { /* tests/test_opinfo.c fails on it too */
    fprintf(stderr, "accuracy_report: no op-info row for %s\n", name);
    exit(1);
  }
  return &k->row_ref;
}

/* One line per layout: sum (positive data: ULP), sum (mixed signs: eps sum|x|), logsumexp. */
static void report_reductions(void) {
  for (int li = 0; li < N_LAYOUTS; li++) {
    layout l = k_layouts[li];
    size_t n = l.outer * l.r * l.inner, m = l.outer * l.inner;
    float *xp = fmalloc(n), *xm = fmalloc(n), *y = fmalloc(m), *dy = fmalloc(m), *dx = fmalloc(n);
    for (size_t i = 0; i < n; i++) {
      xp[i] = (float)unif();
      xm[i] = (float)(20 * unif() - 10);
    }
    for (size_t i = 0; i < m; i++) dy[i] = (float)(0.5 + unif());
    worst ws[4] = {{0}}, wm[4] = {{0}}, wl[4] = {{0}}, wlb[4] = {{0}};
    const opinfo_row_ref *sum = row_ref("reduce_sum"), *lse = row_ref("reduce_logsumexp");
    for (int k = 0; k < g_nbe; k++) {
      const sg_backend *be = g_be[k];
      be->reduce_sum(xp, l.outer, l.r, l.inner, y);
      for (size_t o = 0; o < l.outer; o++)
        for (size_t i = 0; i < l.inner; i++) {
          double s = sum->reduce(xp + row0(l, o, i), l.r, l.inner);
          note(&ws[k], ulp_err(y[o * l.inner + i], s), (double)o, (double)i);
        }
      be->reduce_sum(xm, l.outer, l.r, l.inner, y);
      for (size_t o = 0; o < l.outer; o++)
        for (size_t i = 0; i < l.inner; i++) {
          double s = sum->reduce(xm + row0(l, o, i), l.r, l.inner), sa = 0;
          for (size_t j = 0; j < l.r; j++) sa += fabs(at3(xm, l, o, j, i));
          note(&wm[k], fabs(y[o * l.inner + i] - s) / (FLT_EPSILON * sa), (double)o, (double)i);
        }
      be->reduce_logsumexp(xm, l.outer, l.r, l.inner, y);
      be->reduce_logsumexp_backward(dy, xm, y, l.outer, l.r, l.inner, dx);
      for (size_t o = 0; o < l.outer; o++)
        for (size_t i = 0; i < l.inner; i++) {
          double want = lse->reduce(xm + row0(l, o, i), l.r, l.inner);
          note(&wl[k], ulp_err(y[o * l.inner + i], want), (double)o, (double)i);
          for (size_t j = 0; j < l.r; j++)
            note(&wlb[k],
                 ulp_err(dx[(o * l.r + j) * l.inner + i],
                         lse->dx(dy[o * l.inner + i], at3(xm, l, o, j, i), want)),
                 (double)o, (double)j);
        }
    }
    /* max / min (ulp) and argmax / argmin (indices that differ from the double search). */
    worst wx[4] = {{0}}, wa[4] = {{0}};
    int32_t *idx = malloc((m ? m : 1) * sizeof *idx);
    if (!idx) exit(1);
    for (int k = 0; k < g_nbe; k++)
      for (int want_max = 0; want_max < 2; want_max++) {
        const sg_backend *be = g_be[k];
        const opinfo_row_ref *ext = row_ref(want_max ? "reduce_max" : "reduce_min");
        const opinfo_row_ref *arg = row_ref(want_max ? "argmax" : "argmin");
        (want_max ? be->reduce_max : be->reduce_min)(xm, l.outer, l.r, l.inner, y);
        (want_max ? be->argmax : be->argmin)(xm, l.outer, l.r, l.inner, idx);
        for (size_t o = 0; o < l.outer; o++)
          for (size_t i = 0; i < l.inner; i++) {
            const float *row = xm + row0(l, o, i);
            note(&wx[k], ulp_err(y[o * l.inner + i], ext->reduce(row, l.r, l.inner)), (double)o, 0);
            if ((size_t)idx[o * l.inner + i] != arg->arg(row, l.r, l.inner)) wa[k].err += 1;
          }
      }
    free(idx);
    printf("| reduce_max and reduce_min (ulp) | %s |", l.name);
    for (int k = 0; k < g_nbe; k++) printf(" %.2f |", wx[k].err);
    printf("\n| argmax and argmin (indices that differ) | %s |", l.name);
    for (int k = 0; k < g_nbe; k++) printf(" %.0f |", wa[k].err);
    printf("\n");
    worst *all[4] = {ws, wm, wl, wlb};
    static const char *const what[4] = {
        "reduce_sum, x in [0, 1) (ulp)", "reduce_sum, x in [-10, 10) (units of eps sum\\|x\\|)",
        "reduce_logsumexp, x in [-10, 10) (ulp)", "reduce_logsumexp_backward (ulp)"};
    for (int w = 0; w < 4; w++) {
      printf("| %s | %s |", what[w], l.name);
      for (int k = 0; k < g_nbe; k++) printf(" %.2f |", all[w][k].err);
      printf("\n");
    }
    free(xp);
    free(xm);
    free(y);
    free(dy);
    free(dx);
  }
}

static void report_softmax(void) {
  for (int li = 0; li < N_LAYOUTS; li++) {
    layout l = k_layouts[li];
    size_t n = l.outer * l.r * l.inner;
    float *x = fmalloc(n), *y = fmalloc(n), *dy = fmalloc(n), *dx = fmalloc(n);
    double *ref = malloc(n * sizeof *ref), *lref = malloc(n * sizeof *lref);
    double *want = malloc(n * sizeof *want);
    if (!ref || !lref || !want) exit(1);
    for (size_t i = 0; i < n; i++) {
      x[i] = (float)(20 * unif() - 10);
      dy[i] = (float)(2 * unif() - 1);
    }
    const opinfo_row_ref *op[2] = {row_ref("softmax"), row_ref("log_softmax")};
    for (size_t o = 0; o < l.outer; o++)
      for (size_t i = 0; i < l.inner; i++) {
        op[0]->map(x + row0(l, o, i), l.r, l.inner, ref + row0(l, o, i));
        op[1]->map(x + row0(l, o, i), l.r, l.inner, lref + row0(l, o, i));
      }
    worst w[4][4] = {{{0}}};
    for (int k = 0; k < g_nbe; k++) {
      const sg_backend *be = g_be[k];
      for (int lg = 0; lg < 2; lg++) {
        (lg ? be->log_softmax : be->softmax)(x, l.outer, l.r, l.inner, y);
        const double *rf = lg ? lref : ref;
        for (size_t i = 0; i < n; i++) note(&w[lg][k], ulp_err(y[i], rf[i]), x[i], 0);
        /* Backward from the backend's own y; the error relative to the terms of
           y (dy - sum dy y) or dy - e^y sum dy, which cancel. */
        (lg ? be->log_softmax_backward : be->softmax_backward)(dy, y, l.outer, l.r, l.inner, dx);
        for (size_t o = 0; o < l.outer; o++)
          for (size_t i = 0; i < l.inner; i++) {
            op[lg]->map_backward(dy + row0(l, o, i), ref + row0(l, o, i), l.r, l.inner,
                                 want + row0(l, o, i));
            double sa = 0;
            for (size_t j = 0; j < l.r; j++) {
              size_t at = (o * l.r + j) * l.inner + i;
              sa += lg ? fabs(dy[at]) : fabs(dy[at] * ref[at]);
            }
            for (size_t j = 0; j < l.r; j++) {
              size_t at = (o * l.r + j) * l.inner + i;
              double mag = lg ? fabs(dy[at]) + ref[at] * sa : ref[at] * (fabs(dy[at]) + sa);
              note(&w[2 + lg][k], fabs(dx[at] - want[at]) / (FLT_EPSILON * mag), x[at], 0);
            }
          }
      }
    }
    static const char *const what[4] = {"softmax (ulp)", "log_softmax (ulp)",
                                        "softmax_backward (units of eps \\|terms\\|)",
                                        "log_softmax_backward (units of eps \\|terms\\|)"};
    for (int q = 0; q < 4; q++) {
      printf("| %s | %s, x in [-10, 10) |", what[q], l.name);
      for (int k = 0; k < g_nbe; k++) printf(" %.2f |", w[q][k].err);
      printf("\n");
    }
    free(x);
    free(y);
    free(dy);
    free(dx);
    free(ref);
    free(lref);
    free(want);
  }
}

static void report_sce(void) {
  size_t rows = 1024, classes = 1000, n = rows * classes;
  float *lab = fmalloc(n), *x = fmalloc(n), *lp = fmalloc(n), *loss = fmalloc(rows);
  float *dl = fmalloc(rows), *dlab = fmalloc(n), *dlog = fmalloc(n);
  double *lref = malloc(n * sizeof *lref);
  if (!lref) exit(1);
  const opinfo_row_ref *lps = row_ref("softmax_cross_entropy:log_probs");
  const opinfo_row_ref *ce = row_ref("softmax_cross_entropy");
  const opinfo_row_ref *dlabels = row_ref("softmax_cross_entropy_backward:dlabels");
  for (size_t r = 0; r < rows; r++) {
    double tot = 0;
    for (size_t c = 0; c < classes; c++) {
      lab[r * classes + c] = (float)unif();
      tot += lab[r * classes + c];
      x[r * classes + c] = (float)(20 * unif() - 10);
    }
    for (size_t c = 0; c < classes; c++) lab[r * classes + c] = (float)(lab[r * classes + c] / tot);
    lps->map(x + r * classes, classes, 1, lref + r * classes);
    dl[r] = (float)(0.5 + unif());
  }
  worst w[4][4] = {{{0}}};
  for (int k = 0; k < g_nbe; k++) {
    const sg_backend *be = g_be[k];
    be->softmax_cross_entropy(lab, x, rows, classes, loss, lp);
    be->softmax_cross_entropy_backward(dl, lab, lp, rows, classes, dlab, dlog);
    for (size_t r = 0; r < rows; r++) {
      double l = ce->loss(lab + r * classes, lref + r * classes, classes, 1);
      note(&w[0][k], ulp_err(loss[r], l), (double)r, 0);
      for (size_t c = 0; c < classes; c++) {
        size_t at = r * classes + c;
        double p = exp(lref[at]); /* for the bound */
        note(&w[1][k], ulp_err(lp[at], lref[at]), x[at], 0);
        note(&w[2][k], ulp_err(dlab[at], dlabels->dx(dl[r], lab[at], lref[at])), x[at], 0);
        note(&w[3][k],
             fabs(dlog[at] - ce->dx(dl[r], lab[at], lref[at])) /
                 (FLT_EPSILON * dl[r] * (p + lab[at])),
             x[at], 0);
      }
    }
  }
  static const char *const what[4] = {"softmax_cross_entropy: loss (ulp)",
                                      "softmax_cross_entropy: log_probs (ulp)",
                                      "softmax_cross_entropy_backward: dlabels (ulp)",
                                      ("softmax_cross_entropy_backward: dlogits (units of eps "
                                       "\\|terms\\|)")};
  for (int q = 0; q < 4; q++) {
    printf("| %s | 1024 rows of 1000 classes, logits in [-10, 10) |", what[q]);
    for (int k = 0; k < g_nbe; k++) printf(" %.2f |", w[q][k].err);
    printf("\n");
  }
  free(lab);
  free(x);
  free(lp);
  free(loss);
  free(dl);
  free(dlab);
  free(dlog);
  free(lref);
}

/* gemm: max |C - C_ref| / (eps sum_p |a_ip b_pj|) over all four transposes. */
static void report_gemm(void) {
  static const size_t shapes[][3] = {{128, 128, 128}, {96, 200, 1000}, {300, 70, 33}};
  for (size_t s = 0; s < 3; s++) {
    size_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
    float *a = fmalloc(m * k), *b = fmalloc(k * n), *c = fmalloc(m * n);
    for (size_t i = 0; i < m * k; i++) a[i] = (float)(2 * unif() - 1);
    for (size_t i = 0; i < k * n; i++) b[i] = (float)(2 * unif() - 1);
    double *ref = malloc(4 * m * n * sizeof *ref), *mag = malloc(4 * m * n * sizeof *mag);
    if (!ref || !mag) exit(1);
    /* The same A and B read through the transposes: A stored k x m when ta. */
    for (int tr = 0; tr < 4; tr++)
      opinfo_ref_gemm(m, n, k, a, tr & 1 ? m : k, tr & 1, b, tr >> 1 ? k : n, tr >> 1,
                      ref + tr * m * n, mag + tr * m * n, n);
    worst w[4] = {{0}};
    for (int q = 0; q < g_nbe; q++)
      for (int tr = 0; tr < 4; tr++) {
        bool ta = tr & 1, tb = tr >> 1;
        g_be[q]->gemm(m, n, k, a, ta ? m : k, ta, b, tb ? k : n, tb, 0.0f, c, n);
        const double *rf = ref + tr * m * n, *mg = mag + tr * m * n;
        for (size_t i = 0; i < m; i++)
          for (size_t j = 0; j < n; j++)
            note(&w[q], fabs(c[i * n + j] - rf[i * n + j]) / (FLT_EPSILON * mg[i * n + j]),
                 (double)i, (double)j);
      }
    printf("| gemm %zu x %zu x %zu, all transposes (units of eps sum\\|a b\\|) | a, b in [-1, 1) |",
           m, n, k);
    for (int q = 0; q < g_nbe; q++) printf(" %.3f |", w[q].err);
    printf("\n");
    free(a);
    free(b);
    free(c);
    free(ref);
    free(mag);
  }
}

/* ---- Main ------------------------------------------------------------------------------------ */

static void header(const char *first, const char *second, int groups, const char *const *gname) {
  printf("| %s | %s |", first, second);
  for (int g = 0; g < groups; g++)
    for (int b = 0; b < g_nbe; b++)
      printf(" %s%s%s |", gname[g], *gname[g] ? " " : "", g_be[b]->name);
  printf("\n|---|---|");
  for (int i = 0; i < groups * g_nbe; i++) printf("---|");
  printf("\n");
}

int main(int argc, char **argv) {
  const char *every = NULL;
  float every_lo = 0, every_hi = 0;
  size_t check_points = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--points") == 0 && i + 1 < argc)
      g_points = (size_t)strtoull(argv[++i], NULL, 0);
    else if (strcmp(argv[i], "--every-float") == 0 && i + 3 < argc) {
      every = argv[++i];
      every_lo = strtof(argv[++i], NULL);
      every_hi = strtof(argv[++i], NULL);
    } else if (strcmp(argv[i], "--check") == 0 && i + 1 < argc) {
      check_points = (size_t)strtoull(argv[++i], NULL, 0);
      if (!check_points) {
        fprintf(stderr, "accuracy_report: --check needs a number of points\n");
        return 2;
      }
    } else {
      fprintf(stderr, "usage: %s [--points N] [--every-float OP LO HI] [--check N]\n", argv[0]);
      return 2;
    }
  }
  if (sg_init() != SG_OK) return 1;
  for (int i = 0; i < 4; i++)
    if ((g_be[g_nbe] = sg_backend_get(k_names[i]))) g_nbe++;
  if (check_points) return check_promises(check_points);
  if (every) {
    static const char *const eg[3] = {"fwd", "bwd (dy = 1)", "bwd from y (dy = 1)"};
    header("op", "every float of", 3, eg);
    return report_unary_every_float(every, every_lo, every_hi);
  }

  printf("Measured with %zu points per unary op (%zu x %zu grid per binary op) on backends:",
         g_points, (size_t)sqrt((double)g_points), (size_t)sqrt((double)g_points));
  for (int b = 0; b < g_nbe; b++) printf(" %s", g_be[b]->name);
  printf(".\n\n### Unary ops (max error in ulp)\n\n");
  static const char *const ug[3] = {"fwd", "bwd", "bwd from y"};
  header("op", "domain swept", 3, ug);
  for (size_t i = 0; i < sizeof k_unary / sizeof k_unary[0]; i++) {
    const opinfo_unary *r = opinfo_unary_find(k_unary[i].name);
    if (!r) { /* tests/test_opinfo.c fails on it too */
      fprintf(stderr, "accuracy_report: no op-info row for %s\n", k_unary[i].name);
      return 1;
    }
    report_unary(&k_unary[i], &(usweep){r, NULL, r->sweep});
    if (r->sweep2_label) report_unary(&k_unary[i], &(usweep){r, r->sweep2_label, r->sweep2});
  }
  report_param();

  printf("\n### Binary ops (max error in ulp; forward, then da, then db)\n\n");
  static const char *const bg[3] = {"fwd", "da", "db"};
  header("op", "grid", 3, bg);
  for (size_t i = 0; i < sizeof k_binary / sizeof k_binary[0]; i++) report_binary(&k_binary[i]);

  printf("\n### Reductions, softmax family, cross-entropy, gemm\n\n");
  static const char *const rg[1] = {""};
  header("kernel (unit)", "data", 1, rg);
  report_reductions();
  report_softmax();
  report_sce();
  report_gemm();
  return 0;
}
