/* The roofline's model (roof_model.h): no clock, no measuring, no global state. */
#include "roof_model.h"

#include <math.h>
#include <stdlib.h>

roof_caches roof_choose_caches(const size_t sysfs[3], const size_t cpuid[3]) {
  roof_caches c;
  for (int l = 0; l < 3; l++) {
    if (sysfs && sysfs[l]) {
      c.size[l] = sysfs[l], c.source[l] = ROOF_SRC_SYSFS;
    } else if (cpuid && cpuid[l]) {
      c.size[l] = cpuid[l], c.source[l] = ROOF_SRC_CPUID;
    } else {
      c.size[l] = l == 0 ? (size_t)32 << 10 : l == 1 ? (size_t)1 << 20 : 4 * c.size[1];
      c.source[l] = ROOF_SRC_DEFAULT;
    }
  }
  return c;
}

const char *roof_source_name(roof_source s) {
  return s == ROOF_SRC_SYSFS ? "sysfs" : s == ROOF_SRC_CPUID ? "CPUID" : "default";
}

roof_level roof_level_of(const roof_caches *c, double footprint, int threads) {
  double per_thread = footprint / (threads > 0 ? threads : 1);
  if (per_thread <= (double)c->size[0]) return ROOF_L1;
  if (per_thread <= (double)c->size[1]) return ROOF_L2;
  if (footprint <= (double)c->size[2]) return ROOF_LLC;
  return ROOF_DRAM;
}

const char *roof_level_name(roof_level l) {
  static const char *const names[] = {"L1", "L2", "LLC", "DRAM"};
  return l < ROOF_LEVELS ? names[l] : "?";
}

int roof_footprints(const roof_caches *c, int threads, bool quick, double max, double *out) {
  if (threads < 1) threads = 1;
  /* One grid for every thread count (L1 / 2 times powers of step), from its first point past
     half an L1 per thread: the curves of 1 and N threads share their footprints. */
  double step = quick ? 4 : 2, lo = (double)c->size[0] / 2;
  while (lo < (double)c->size[0] / 2 * threads * 0.999) lo *= step;
  double hi = 4.0 * (double)c->size[2];
  if (hi < 4.0 * (double)c->size[1] * threads) hi = 4.0 * (double)c->size[1] * threads;
  if (max > 0 && hi > max) hi = max;
  int n = 0;
  for (double f = lo; n < ROOF_MAX_POINTS; f *= step) {
    if (f >= hi / sqrt(step)) { /* the last point is hi itself */
      out[n++] = hi;
      break;
    }
    out[n++] = f;
  }
  return n;
}

void roof_take_curves(roof_figures *f, const roof_figures *g) {
  for (int i = 0; i < f->n && i < g->n; i++) {
    if (g->footprint[i] != f->footprint[i]) continue;
    f->read[i] = fmax(f->read[i], g->read[i]);
    f->triad[i] = fmax(f->triad[i], g->triad[i]);
    f->scale[i] = fmax(f->scale[i], g->scale[i]);
    f->fill[i] = fmax(f->fill[i], g->fill[i]);
  }
}

double roof_interp(int n, const double *xs, const double *ys, double x, int *lo, int *hi) {
  int a = 0, b = 0;
  double y = n > 0 ? ys[0] : 0;
  if (n > 0 && x >= xs[n - 1]) {
    a = b = n - 1;
    y = ys[n - 1];
  } else if (n > 0 && x > xs[0]) {
    for (b = 1; b < n && xs[b] < x; b++) {
    }
    a = b - 1;
    double t = log(x / xs[a]) / log(xs[b] / xs[a]);
    y = ys[a] + t * (ys[b] - ys[a]);
  }
  if (lo) *lo = a;
  if (hi) *hi = b;
  return y;
}

static bool below(double v, double bound) { return v < bound * (1.0 - ROOF_TOLERANCE); }
static bool below_curve(double v, double bound) { return v < bound * (1.0 - ROOF_TOLERANCE_CURVE); }

/* Marks the points of f that fall below a later point of their own curve, and that later
   point: one of the two was measured low, or the other high. */
static bool check_curve(const roof_figures *f, bool *suspect) {
  bool any = false;
  for (int i = 0; i < f->n; i++)
    for (int j = i + 1; j < f->n; j++)
      for (int k = 0; k < ROOF_CURVES; k++)
        if (below_curve(roof_curve(f, k)[i], roof_curve(f, k)[j]))
          suspect[i] = suspect[j] = any = true;
  return any;
}

bool roof_check(const roof_figures *one, const roof_figures *more, bool *suspect_one,
                bool *suspect_more, bool *peak_suspect) {
  for (int i = 0; i < ROOF_MAX_POINTS; i++) suspect_one[i] = suspect_more[i] = false;
  *peak_suspect = false;
  bool any = check_curve(one, suspect_one);
  if (!more) return any;
  any |= check_curve(more, suspect_more);
  if (below(more->peak, one->peak)) *peak_suspect = any = true;
  for (int i = 0; i < more->n; i++) {
    double x = more->footprint[i];
    if (x < one->footprint[0] || x > one->footprint[one->n - 1]) continue;
    for (int k = 0; k < ROOF_CURVES; k++)
      if (below(roof_curve(more, k)[i],
                roof_interp(one->n, one->footprint, roof_curve(one, k), x, NULL, NULL)))
        suspect_more[i] = any = true;
  }
  return any;
}

const char *roof_class_name(int cls) {
  static const char *const names[] = {
#define ROOF_CLASS_NAME_(c) #c,
      ROOF_ISSUE_CLASSES(ROOF_CLASS_NAME_)
#undef ROOF_CLASS_NAME_
          "all",
      "fma pipes", "mix"};
  return cls >= 0 && cls <= ROOF_MIX ? names[cls] : "?";
}

double roof_pipe_cost(double fma_rate, double pair_rate, double ratio, double cls_rate) {
  if (fma_rate <= 0 || pair_rate <= 0 || ratio <= 0) return 0;
  if (cls_rate > 0 && pair_rate / ratio > ROOF_PAIR_SATURATED * cls_rate) return 0;
  double cost = ratio * (fma_rate / pair_rate - 1.0);
  return cost > ROOF_PAIR_NOISE ? cost : 0;
}

/* y(x) on the line through (x0, y0) and (x1, y1). */
static double line_at(double x, double x0, double y0, double x1, double y1) {
  return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

double roof_per_byte(double rho, int n, const double *xs, const double *ys) {
  int i = 0;
  while (i + 1 < n && xs[i + 1] <= rho) i++;
  if (rho == xs[i] || i + 1 == n) return ys[i];
  /* Monotone: the row moves at least s times mix k's traffic, each of its reads and writes. */
  double mono = 0;
  for (int k = 0; k < n; k++) {
    double s = xs[k] > 0 ? rho / xs[k] : HUGE_VAL;
    if (xs[k] < 1 && (1 - rho) / (1 - xs[k]) < s) s = (1 - rho) / (1 - xs[k]);
    if (s * ys[k] > mono) mono = s * ys[k];
  }
  /* Convex: the neighbouring segments' lines, extended, never above this segment's chord. */
  double t = line_at(rho, xs[i], ys[i], xs[i + 1], ys[i + 1]), below = -HUGE_VAL;
  if (i >= 1) below = line_at(rho, xs[i - 1], ys[i - 1], xs[i], ys[i]);
  if (i + 2 < n) below = fmax(below, line_at(rho, xs[i + 1], ys[i + 1], xs[i + 2], ys[i + 2]));
  if (below > -HUGE_VAL && below < t) t = below;
  return t > mono ? t : mono;
}

double roof_curve_footprint(const roof_figures *f, const roof_caches *c, int threads,
                            double footprint, int *lo, int *hi) {
  int a, b;
  roof_interp(f->n, f->footprint, f->read, footprint, &a, &b);
  if (lo) *lo = a;
  if (hi) *hi = b;
  if (a == b) return footprint;
  if (threads < 1) threads = 1;
  /* L1 (per thread) and the LLC; not L2: an Intel Xeon's keeps much of a repeated stream somewhat
     larger than it, where its L1 keeps almost none (docs/bench.md, "Past a cache's capacity";
     unmeasured on AMD). */
  const double capacity[2] = {(double)c->size[0] * threads, (double)c->size[2]};
  for (int l = 0; l < 2; l++)
    if (capacity[l] > 0 && f->footprint[a] <= capacity[l] && capacity[l] < footprint) {
      if (lo) *lo = b;
      return f->footprint[b];
    }
  return footprint;
}

roof_verdict roof_judge(const roof_figures *f, const roof_caches *c, int threads,
                        const roof_work *w) {
  roof_verdict v = {0};
  double footprint = w->footprint > 0 ? w->footprint : w->read + w->written;
  v.level = roof_level_of(c, footprint, threads);
  if (!f || f->peak <= 0) return v;
  bool compute_bad = false, memory_bad = false;
  if (w->flops > 0) {
    v.compute_s = w->flops / f->peak;
    compute_bad = f->peak_bad;
  }
  v.compute_s += w->kernel_s;
  v.issue_class = ROOF_N_CLASSES;
  if (w->insns > 0 && f->issue > 0) v.issue_s = w->insns / f->issue;
  for (int k = 0; k < ROOF_N_CLASSES; k++)
    if (w->cls[k] > 0 && f->cls[k] > 0 && w->cls[k] / f->cls[k] > v.issue_s)
      v.issue_s = w->cls[k] / f->cls[k], v.issue_class = k;
  /* The FMA pipes: the FMAs' slots and those the other classes take of them (a class on other
     pipes costs 0). Only where some pair was measured: otherwise the fma class's term says it. */
  double fma_rate = f->cls[ROOF_CLASS_fma], slots = w->cls[ROOF_CLASS_fma];
  bool paired = false;
  for (int k = 0; k < ROOF_N_CLASSES; k++)
    if (k != ROOF_CLASS_fma && f->pair[k] > 0 && w->cls[k] > 0) {
      slots += roof_pipe_cost(fma_rate, f->pair[k], f->pair_ratio[k], f->cls[k]) * w->cls[k];
      paired = true;
    }
  if (paired && fma_rate > 0 && slots > 0) v.pipes_s = slots / fma_rate;
  /* The kernel's own mix, measured, is what the pairs estimate: it replaces their term, which
     reads high where a class's cost beside FMAs depends on the mix (vpternlogd: 1.5 FMA slots
     beside 4 FMAs, none beside tanh's division on Zen 5). */
  if (w->mix_s > 0) {
    if (w->mix_s > v.issue_s) v.issue_s = w->mix_s, v.issue_class = ROOF_MIX;
  } else if (v.pipes_s > v.issue_s) {
    v.issue_s = v.pipes_s, v.issue_class = ROOF_FMA_PIPES;
  }
  /* Writes in place are not timed past L2: an update that reads w and writes it back moved 16 +
     12 bytes an element (Adam) at up to 1.08x the read-and-triad rule's bound on this VM, whose
     single core's loads, not DRAM, set the rate. In L1 and L2 they count half: a normal store's
     line moves twice there (read for ownership, written back), a line stored over after its load
     only once, the load being counted already. Left out, the optimizer updates over 2^14 floats,
     which moved every byte at the L2 triad's rate, read 46-60% of their bound; counted whole,
     106-122% (docs/bench.md, "Writes in place within L2"). */
  double in_place = v.level >= ROOF_LLC ? w->written_in_place : w->written_in_place / 2;
  double written = w->written - (in_place < w->written ? in_place : w->written);
  double bytes = w->read + written;
  if (bytes > 0 && f->n > 0) {
    int lo, hi; /* the points the figures come from: one where past a cache */
    double at = roof_curve_footprint(f, c, threads, footprint, &lo, &hi);
    double rd = roof_interp(f->n, f->footprint, f->read, at, NULL, NULL);
    double tr = roof_interp(f->n, f->footprint, f->triad, at, NULL, NULL);
    /* The scale and the fill count where the points they come from were measured. */
    bool have_sc = f->scale[lo] > 0 && f->scale[hi] > 0,
         have_fl = f->fill[lo] > 0 && f->fill[hi] > 0;
    double sc = have_sc ? roof_interp(f->n, f->footprint, f->scale, at, NULL, NULL) : 0;
    double fl = have_fl ? roof_interp(f->n, f->footprint, f->fill, at, NULL, NULL) : 0;
    if (rd > 0 && tr > 0) {
      /* Seconds per byte at the row's share of reads rho, from the mixes measured: the fill's
         rho = 0, the scale's 1/2, the triad's 2/3 and the read's 1 (roof_per_byte). Each mix is
         timed by its own loop: a cache level can take stores far slower than loads (an Intel
         Xeon VM's L2, a third of the rate), and the faster of read and triad, which counted for
         every mix with more writes than a triad before, put the bound of a unary kernel at 2^14
         floats there up to 1.8x too short. Below the lowest mix measured (figures made by hand
         without the scale or the fill), the fastest curve counts, so the bound stays a bound. */
      double rho = w->read / bytes, fastest = fmax(fmax(rd, tr), fmax(sc, fl));
      double xs[4], ys[4];
      int n = 0;
      if (have_fl) xs[n] = 0, ys[n++] = 1.0 / fl;
      if (have_sc) xs[n] = 0.5, ys[n++] = 1.0 / sc;
      xs[n] = 2.0 / 3.0, ys[n++] = 1.0 / tr;
      xs[n] = 1.0, ys[n++] = 1.0 / rd;
      double per_byte = rho < xs[0] ? 1.0 / fastest : roof_per_byte(rho, n, xs, ys);
      v.memory_s = bytes * per_byte;
      v.bandwidth = (w->read + w->written) / v.memory_s; /* every byte moved, as the row counts */
      memory_bad = f->bad[lo] || f->bad[hi];
    }
  }
  /* Only the figure that bounds the row matters for its flag (the issue rates have no check). */
  v.seconds = v.compute_s >= v.memory_s ? v.compute_s : v.memory_s;
  if (v.issue_s > v.seconds) v.seconds = v.issue_s;
  if (v.compute_s >= v.memory_s ? compute_bad : memory_bad) v.flags |= ROOF_FLAG_INCONSISTENT;
  return v;
}

roof_work roof_tape_work(const roof_work *fwd, const roof_work *bwd, double seed,
                         bool grad_is_view) {
  roof_work w = *fwd;
  w.footprint = (fwd->footprint > 0 ? fwd->footprint : fwd->read + fwd->written) + seed;
  w.written += seed;
  if (bwd && !grad_is_view) {
    w.flops += bwd->flops;
    w.insns += bwd->insns;
    for (int k = 0; k < ROOF_N_CLASSES; k++) w.cls[k] += bwd->cls[k];
    w.read += bwd->read;
    w.written += bwd->written;
    w.written_in_place += bwd->written_in_place;
    w.footprint += bwd->written;
  }
  return w;
}

double roof_pct(const roof_verdict *v, double measured_s, unsigned *flags) {
  *flags = v->flags;
  if (v->seconds <= 0 || measured_s <= 0) return 0;
  double pct = 100.0 * v->seconds / measured_s;
  if (pct > ROOF_MODEL_ERROR_PCT) *flags |= ROOF_FLAG_MODEL_ERROR;
  return pct;
}
