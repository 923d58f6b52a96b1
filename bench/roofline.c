/* The roofline of this machine, measured at start-up (see roofline.h): per ISA and thread
 * count, the FMA peak of a register-only loop and the bandwidth curves, read-only, triad, scale
 * (a copy's mix) and fill, at log-spaced footprints (roof_footprints). One OpenMP thread per core
 * runs its own copy of each loop on its own share of the footprint; a figure is the best of a few
 * samples (the least disturbed by the machine's other work). Figures that break what the hardware
 * guarantees (roof_check) are measured again, and if still inconsistent, marked: never replaced. */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "roofline.h"

#include <math.h>
#include <omp.h>
#include <simdgrad/backend.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "engine/cache_size.h"
#include "roofline_isa.h"

typedef struct isa_roof {
  const char *name;
  const char *backend; /* the backend whose presence says the CPU runs this ISA; NULL: always */
  double (*fma)(int64_t iters, float c, float b, float *sink);
  /* The issue bound's loops (roofline_isa.h): two combined mixes and one per class; NULL for
     the baseline ISA. */
  double (*issue)(int64_t iters, float c, float b, float *sink);
  double (*mix)(int64_t iters, float c, float b, float *sink);
  double (*cls[ROOF_N_CLASSES])(int64_t iters, float c, float b, float *sink);
  /* The shared-pipe term's pair probes and their ratios (roofline_isa.h); NULL for the baseline. */
  double (*pair[ROOF_N_CLASSES])(int64_t iters, float c, float b, float *sink);
  double (*pair_ratio)(int cls);
  /* The kernels' mix probes (roofline_isa.h); NULL for the baseline. */
  const bench_mix_kernel *mix_kernels;
  void (*triad)(float *restrict a, const float *restrict b, const float *restrict c, size_t n,
                float s);
  void (*triad_nt)(float *restrict a, const float *restrict b, const float *restrict c, size_t n,
                   float s);
  void (*scale)(float *restrict a, const float *restrict b, size_t n, float s);
  void (*scale_nt)(float *restrict a, const float *restrict b, size_t n, float s);
  void (*fill)(float *restrict a, size_t n, float s);
  void (*fill_nt)(float *restrict a, size_t n, float s);
  float (*read)(const float *a, size_t n);
  float (*read1)(const float *a, size_t n);
  bool present;
  roof_figures fig[2];                    /* per entry of g_threads */
  bool rechecked[2][ROOF_MAX_POINTS + 1]; /* measured again after a row beat it; last: the peak */
} isa_roof;

#define ISA_(isa, be, suffix)                                                                      \
  {                                                                                                \
    .name = isa, .backend = be, .fma = bench_fma_loop__##suffix, .triad = bench_triad__##suffix,   \
    .triad_nt = bench_triad_nt__##suffix, .scale = bench_scale__##suffix,                          \
    .scale_nt = bench_scale_nt__##suffix, .fill = bench_fill__##suffix,                            \
    .fill_nt = bench_fill_nt__##suffix, .read = bench_read__##suffix,                              \
    .read1 = bench_read1__##suffix                                                                 \
  }
/* An ISA with the issue bound's loops too (roofline_isa.h). */
#define ISA_CLASS_AVX2_(c) bench_issue_##c##__avx2,
#define ISA_CLASS_AVX512_(c) bench_issue_##c##__avx512,
#define ISA_PAIR_AVX2_(c) bench_pair_##c##__avx2,
#define ISA_PAIR_AVX512_(c) bench_pair_##c##__avx512,
#define ISA_ISSUE_(isa, be, suffix, CLASS, PAIR)                                                   \
  {                                                                                                \
    .name = isa, .backend = be, .fma = bench_fma_loop__##suffix,                                   \
    .issue = bench_issue_loop__##suffix, .mix = bench_issue_mix__##suffix,                         \
    .cls = {ROOF_ISSUE_CLASSES(CLASS)}, .pair = {ROOF_ISSUE_CLASSES(PAIR)},                        \
    .pair_ratio = bench_pair_ratio__##suffix, .mix_kernels = bench_mix_kernels__##suffix,          \
    .triad = bench_triad__##suffix, .triad_nt = bench_triad_nt__##suffix,                          \
    .scale = bench_scale__##suffix, .scale_nt = bench_scale_nt__##suffix,                          \
    .fill = bench_fill__##suffix, .fill_nt = bench_fill_nt__##suffix,                              \
    .read = bench_read__##suffix, .read1 = bench_read1__##suffix                                   \
  }
static isa_roof g_isas[] = {
#if defined(__aarch64__)
    ISA_("neon", NULL, base),
#elif defined(__x86_64__)
    ISA_("sse2", NULL, base),
#else
    ISA_("base", NULL, base),
#endif
#ifdef SIMDGRAD_BENCH_X86_ISAS
    ISA_ISSUE_("avx2", "avx2", avx2, ISA_CLASS_AVX2_, ISA_PAIR_AVX2_),
    ISA_ISSUE_("avx512", "avx512", avx512, ISA_CLASS_AVX512_, ISA_PAIR_AVX512_),
#endif
};
#define N_ISAS ((int)(sizeof g_isas / sizeof g_isas[0]))

static int g_threads[2], g_n_threads;
static size_t g_sysfs[3], g_cpuid[3];
static roof_caches g_caches;
static bool g_have_caches, g_measured, g_quick;
static double g_seconds, g_traffic;
static int g_raised; /* figures raised after a row beat them (roofline_recheck) */
static int g_remeasured, g_inconsistent; /* points (and peaks) measured again; still bad */
/* Read at run time, so the compiler cannot fold the loops: a = 0.5 a + 0.5 stays near 1. */
static volatile float g_c = 0.5f, g_b = 0.5f, g_sink;

/* The FMA peak: many short samples (about 0.15 ms on a 3.5 GHz core), each thread timing its
   own loop after a barrier, a sample being its slowest thread's; the best sample counts. On a
   machine busy with other work a short sample is more often left whole by the scheduler, and
   with more threads all of them must run at once for the sample to count. */
static double loop_rate(double (*loop)(int64_t, float, float, float *), int threads, bool quick) {
  int64_t iters = 1 << 16;
  int trials = quick ? 6 : 12;
  double *t = calloc((size_t)threads * (size_t)trials, sizeof *t), flops = 0;
  if (!t) abort();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
  {
    int tid = omp_get_thread_num();
    for (int trial = 0; trial < trials; trial++) {
#pragma omp barrier
      float sink;
      double t0 = bench_now();
      double f = loop(iters, g_c, g_b, &sink);
      t[(size_t)tid * (size_t)trials + (size_t)trial] = bench_now() - t0;
      if (sink == 0.0f) g_sink = sink; /* never true: keeps the result live */
      if (trial == 0) flops += f;      /* per sample, all threads */
    }
  }
  double best = 0;
  for (int trial = 0; trial < trials; trial++) {
    double slowest = 0;
    for (int k = 0; k < threads; k++)
      if (t[(size_t)k * (size_t)trials + (size_t)trial] > slowest)
        slowest = t[(size_t)k * (size_t)trials + (size_t)trial];
    if (slowest > 0 && flops / slowest > best) best = flops / slowest;
  }
  free(t);
  return best;
}

static double fma_peak(const isa_roof *isa, int threads, bool quick) {
  return loop_rate(isa->fma, threads, quick);
}

/* The issue bound's rates into f, each the better of what f holds and a new measurement;
   returns whether one rose. The combined rate is the best of every loop, the classes' own
   included: no mix of instructions issues faster than the fastest loop measured (on Zen 4 the
   integer logic alone reaches 4 AVX2 instructions per cycle, the FMA and addition mix ~3.1). */
static bool issue_rates(const isa_roof *isa, roof_figures *f, int threads, bool quick) {
  if (!isa->issue) return false;
  bool raised = false;
  double r[ROOF_N_CLASSES + 2];
  r[0] = loop_rate(isa->issue, threads, quick), r[1] = loop_rate(isa->mix, threads, quick);
  for (int k = 0; k < ROOF_N_CLASSES; k++) r[k + 2] = loop_rate(isa->cls[k], threads, quick);
  for (int k = 0; k < ROOF_N_CLASSES + 2; k++) {
    if (r[k] > f->issue) f->issue = r[k], raised = true;
    if (k >= 2 && r[k] > f->cls[k - 2]) f->cls[k - 2] = r[k], raised = true;
  }
  /* The pairs (docs/bench.md, "Shared pipes"), the best of each kept as the rates are: a faster
     pair is a smaller cost, so noise only lowers the bound. */
  for (int k = 0; k < ROOF_N_CLASSES; k++) {
    f->pair_ratio[k] = isa->pair_ratio(k);
    if (f->pair_ratio[k] <= 0) continue;
    double p = loop_rate(isa->pair[k], threads, quick);
    if (p > f->pair[k]) f->pair[k] = p, raised = true;
  }
  return raised;
}

/* The bandwidth at `footprint` bytes (all threads together). triad: a[i] = b[i] + s c[i] with
   each thread's three arrays PAD floats apart modulo 4 KiB, as STREAM offsets its arrays (a load
   at the low 12 address bits of an earlier store waits for it: 4K aliasing); scale: a[i] = s b[i],
   the same a and b; fill: a[i] = s; else the sum of each thread's share. buf holds the largest
   footprint plus 2 PAD, zeroed. Each thread times its own work after a barrier (the fork of the
   region is not in it), the threads sampling in step, and the figure is the sum of each thread's
   best rate. A share that fits the thread's L2 is timed whole, `reps` passes of about `traffic`
   bytes, best of `trials` samples. A larger share is timed in chunks of 1 MiB, and each chunk's
   best time over the trials counts: a sample of a DRAM-sized share lasts milliseconds, which a busy
   machine's scheduler seldom leaves alone, but most chunks of some trial run undisturbed. Past the
   LLC a share of many chunks is split into `trials` windows, one a trial, and each position in
   the window keeps its best time over the windows (bandwidth_windows): as many samples from one
   pass over the share as from `trials` passes, which at the largest footprint had taken a third
   of the start-up (4 passes of 8 loops over 1 GiB: 2.5 s of 22 per ISA on an Intel Xeon VM).
   Summing the threads' best rates is exact for a private level; on a shared one (the LLC, DRAM) the
   threads may have reached them at different moments, so it can read high, and the roof then errs
   towards lower percentages. (Taking a sample as its slowest thread's instead made the 2-thread
   curve dip by 20-30% at 1 MiB per thread against the chunked figures past it, on a busy VM.) */
#define PAD 64
#define CHUNK_BYTES ((double)(1 << 20))
typedef enum bw_kind {
  BW_READ,
  BW_READ1,
  BW_TRIAD,
  BW_TRIAD_NT,
  BW_SCALE,
  BW_SCALE_NT,
  BW_FILL,
  BW_FILL_NT
} bw_kind;
/* One pass of `kind` over len elements of a (and b, c); a read's sum, else 0. */
static float bw_pass(const isa_roof *isa, bw_kind kind, float *a, const float *b, const float *c,
                     size_t len) {
  switch (kind) {
  case BW_TRIAD:
    isa->triad(a, b, c, len, g_c);
    return 0;
  case BW_TRIAD_NT:
    isa->triad_nt(a, b, c, len, g_c);
    return 0;
  case BW_SCALE:
    isa->scale(a, b, len, g_c);
    return 0;
  case BW_SCALE_NT:
    isa->scale_nt(a, b, len, g_c);
    return 0;
  case BW_FILL:
    isa->fill(a, len, g_c);
    return 0;
  case BW_FILL_NT:
    isa->fill_nt(a, len, g_c);
    return 0;
  case BW_READ1:
    return isa->read1(a, len);
  default:
    return isa->read(a, len);
  }
}
/* Windows for a share of `full` whole chunks sampled `trials` times at `footprint` bytes (all
   threads): one per trial where the footprint outgrows the LLC, which then keeps nothing from one
   pass to the next, and each window holds at least 4 chunks (its best times come from several
   chunks, and those past the smallest window, fewer than trials whole ones and the partial one,
   pass uncounted); else 1, the whole share every trial. Not below the LLC: there each window,
   following a single pass, read up to 20% below the trials' repeated passes at the footprints near
   the LLC's real size, where a kernel's repeated passes are what the row times. */
static size_t bandwidth_windows(double footprint, size_t full, int trials) {
  bool past_llc = footprint > (double)g_caches.size[2];
  return past_llc && trials > 1 && full >= 4 * (size_t)trials ? (size_t)trials : 1;
}
static double bandwidth(const isa_roof *isa, float *buf, int threads, double footprint,
                        bw_kind kind, int trials, double traffic) {
  double esize = kind == BW_TRIAD || kind == BW_TRIAD_NT   ? 12.0
                 : kind == BW_SCALE || kind == BW_SCALE_NT ? 8.0
                                                           : 4.0; /* a read's or a fill's */
  size_t n = (size_t)(footprint / esize / threads) / 128 * 128;
  if (n == 0) n = 128;
  size_t total = n * (size_t)threads;
  bool chunked = n * esize > (double)g_caches.size[1];
  size_t chunk = chunked ? (size_t)(CHUNK_BYTES / esize) / 128 * 128 : n;
  size_t chunks = (n + chunk - 1) / chunk;
  int reps = chunked ? 1 : (int)(traffic / (esize * (double)total));
  if (reps < 1) reps = 1;
  size_t windows = bandwidth_windows(footprint, chunked ? n / chunk : 0, trials);
  /* Chunks a window times: all of them (the last one partial) where each trial passes the whole
     share; else the full ones of the smallest window (the last window's extra ones pass, not
     counted). */
  size_t slots = windows == 1 ? chunks : n / chunk / windows;
  size_t stride = chunks > (size_t)trials ? chunks : (size_t)trials;
  double *best = malloc((size_t)threads * stride * sizeof *best); /* per thread and chunk/trial */
  if (!best) abort();
  for (size_t i = 0; i < (size_t)threads * stride; i++) best[i] = 1e30;
  float sum = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sum)
  {
    int tid = omp_get_thread_num();
    size_t off = (size_t)tid * n;
    /* b and c only where the kind reads them (a stands in): the buffer holds footprint / 4
       floats, so a fill's or a scale's c would lie past its end. */
    float *a = buf + off, *b = esize >= 8.0 ? buf + total + PAD + off : a,
          *c = esize >= 12.0 ? buf + 2 * (total + PAD) + off : a;
    for (int trial = 0; trial < trials; trial++) {
#pragma omp barrier
      if (!chunked) {
        double t0 = bench_now();
        for (int r = 0; r < reps; r++) sum += bw_pass(isa, kind, a, b, c, n);
        best[(size_t)tid * stride + (size_t)trial] = bench_now() - t0;
        continue;
      }
      size_t w = (size_t)trial % windows, first = w * slots;
      size_t last = w + 1 == windows ? chunks : first + slots; /* the last window takes the rest */
      for (size_t k = first; k < last; k++) {
        size_t lo = k * chunk, len = lo + chunk < n ? chunk : n - lo;
        double t0 = bench_now();
        sum += bw_pass(isa, kind, a + lo, b + lo, c + lo, len);
        double t = bench_now() - t0;
        size_t slot = k - first;
        if (slot < slots && t < best[(size_t)tid * stride + slot])
          best[(size_t)tid * stride + slot] = t;
      }
    }
  }
  if (sum == 1.0f) g_sink = sum; /* buf holds 0 or g_c (fills): never 1, keeps the sums live */
  double bw = 0;
  if (chunked) {
    double timed = windows == 1 ? (double)n : (double)(slots * chunk); /* elements a window times */
    for (int t = 0; t < threads; t++) {
      double time = 0;
      for (size_t k = 0; k < slots; k++) time += best[(size_t)t * stride + k];
      bw += esize * timed / time;
    }
  } else {
    for (int t = 0; t < threads; t++) {
      double fastest = 1e30;
      for (int trial = 0; trial < trials; trial++)
        if (best[(size_t)t * stride + (size_t)trial] < fastest)
          fastest = best[(size_t)t * stride + (size_t)trial];
      bw += esize * (double)n * reps / fastest;
    }
  }
  free(best);
  return bw;
}

/* The better of two kinds' bandwidths at point i (b == a: that kind alone), kept in *fig if above
   what it holds (a second pass keeps the better of the two passes). */
static void measure_better(const isa_roof *isa, const roof_figures *f, int i, float *buf,
                           int threads, int trials, double traffic, bw_kind a, bw_kind b,
                           double *fig) {
  double x = bandwidth(isa, buf, threads, f->footprint[i], a, trials, traffic);
  if (b != a) {
    double y = bandwidth(isa, buf, threads, f->footprint[i], b, trials, traffic);
    if (y > x) x = y;
  }
  if (x > *fig) *fig = x;
}

/* Whether the roof counts non-temporal stores at a footprint of this many bytes: not up to half
   the last-level cache the engine streams by (sg__llc_bytes), where the library's kernels store
   normally so that the next op finds their output in the cache (sg__flat_streams,
   engine/engine.h). Just past L2 the streamed triad outran normal stores, its output leaving L2
   to its inputs: a speed no kernel takes there, and one the next op would pay for (docs/bench.md,
   "Normal stores within the last-level cache"). Half, not all of it: near the cache's edge a
   normal store's line goes to memory too, and a point there below the next one, past the edge and
   streamed, would read as inconsistent (roof_check). An unknown size: both, as before. */
static bool stores_may_stream(double footprint) {
  size_t llc = sg__llc_bytes();
  return llc == 0 || footprint > (double)llc / 2;
}

static void measure_point(const isa_roof *isa, roof_figures *f, int i, float *buf, int threads,
                          int trials, double traffic) {
  /* Reads over two streams or one; the triad, the scale and the fill with normal stores, and
     where the library streams (above) with non-temporal ones too, the better counting. */
  bool nt = stores_may_stream(f->footprint[i]);
  measure_better(isa, f, i, buf, threads, trials, traffic, BW_READ, BW_READ1, &f->read[i]);
  measure_better(isa, f, i, buf, threads, trials, traffic, BW_TRIAD, nt ? BW_TRIAD_NT : BW_TRIAD,
                 &f->triad[i]);
  measure_better(isa, f, i, buf, threads, trials, traffic, BW_SCALE, nt ? BW_SCALE_NT : BW_SCALE,
                 &f->scale[i]);
  measure_better(isa, f, i, buf, threads, trials, traffic, BW_FILL, nt ? BW_FILL_NT : BW_FILL,
                 &f->fill[i]);
}

/* Each ISA's bandwidth curves become the better of its own loops' figures and those of the ISAs
   it includes (the ones before it in g_isas, on the same grid): its kernels may move their bytes
   with the narrower instructions too. On an Intel Xeon VM AVX2's triad moved 123 GB/s at L2
   where AVX-512's moved 112, in every header of a session, and AVX-512's cheap backward kernels,
   moving what AVX2's did, read 96-98% of the lower figure. */
static void inherit_curves(void) {
  for (int k = 1; k < N_ISAS; k++)
    for (int j = 0; j < k; j++) {
      if (!g_isas[k].present || !g_isas[j].present) continue;
      for (int t = 0; t < g_n_threads; t++) roof_take_curves(&g_isas[k].fig[t], &g_isas[j].fig[t]);
    }
}

/* Samples per figure: many short ones where a share fits a thread's L2 (about 50 us each; best
   of 3 read 10% below the rows of a default run at L2 on the Zen 4 VM), passes of 1 MiB chunks
   past it. */
static int trials_at(double footprint, int threads, bool quick) {
  bool cached = footprint / threads <= (double)g_caches.size[1];
  if (quick) return cached ? 3 : 2;
  return cached ? 9 : 4;
}

void roofline_measure(const int *threads, int n, bool quick) {
  double t0 = bench_now();
  g_quick = quick;
  g_n_threads = n > 2 ? 2 : n;
  for (int i = 0; i < g_n_threads; i++) g_threads[i] = threads[i];
  for (int l = 0; l < 3; l++)
    g_sysfs[l] = sg__cache_sysfs(l + 1), g_cpuid[l] = sg__cache_cpuid(l + 1);
  g_caches = roof_choose_caches(g_sysfs, g_cpuid);
  g_have_caches = true;
  int max_threads = g_threads[g_n_threads - 1];

  /* The largest footprint: within 1 GiB and an eighth of the memory. */
  double max = (double)((size_t)1 << 30);
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && max > (double)pages * (double)page / 8)
    max = (double)pages * (double)page / 8;
  double largest = 0;
  for (int k = 0; k < N_ISAS; k++) {
    isa_roof *isa = &g_isas[k];
    isa->present = !isa->backend || sg_backend_get(isa->backend) != NULL;
    for (int t = 0; t < g_n_threads; t++) {
      roof_figures *f = &isa->fig[t];
      memset(f, 0, sizeof *f);
      f->n = roof_footprints(&g_caches, g_threads[t], quick, max, f->footprint);
      if (f->footprint[f->n - 1] > largest) largest = f->footprint[f->n - 1];
    }
  }
  /* One buffer for every footprint, first touched (zeroed) once, by all the threads. */
  size_t floats = (size_t)(largest / sizeof(float)) + 128 * (size_t)max_threads * 3;
  float *buf = bench_alloc((floats + 2 * PAD) * sizeof(float));
#pragma omp parallel for num_threads(max_threads) schedule(static)
  for (size_t i = 0; i < floats + 2 * PAD; i++) buf[i] = 0;

  /* Short samples: on a busy machine some of them run undisturbed. */
  double traffic = quick ? 2e6 : 8e6;
  g_traffic = traffic;
  for (int k = 0; k < N_ISAS; k++) {
    isa_roof *isa = &g_isas[k];
    if (!isa->present) continue;
    for (int t = 0; t < g_n_threads; t++) {
      roof_figures *f = &isa->fig[t];
      f->peak = fma_peak(isa, g_threads[t], quick);
      issue_rates(isa, f, g_threads[t], quick);
      for (int i = 0; i < f->n; i++)
        measure_point(isa, f, i, buf, g_threads[t], trials_at(f->footprint[i], g_threads[t], quick),
                      traffic);
    }
  }
  inherit_curves();
  /* The FMA peak again, a second later: a burst from a neighbour rarely covers both. Then what
     breaks a guarantee is measured once more, and marked if it still does. */
  for (int k = 0; k < N_ISAS; k++) {
    isa_roof *isa = &g_isas[k];
    for (int t = 0; t < g_n_threads && isa->present; t++) {
      double again = fma_peak(isa, g_threads[t], quick);
      if (again > isa->fig[t].peak) isa->fig[t].peak = again;
      issue_rates(isa, &isa->fig[t], g_threads[t], quick);
    }
  }
  for (int pass = 0; pass < 2; pass++) {
    for (int k = 0; k < N_ISAS; k++) {
      isa_roof *isa = &g_isas[k];
      if (!isa->present) continue;
      bool s1[ROOF_MAX_POINTS], s2[ROOF_MAX_POINTS], peak_bad;
      roof_figures *one = &isa->fig[0], *more = g_n_threads > 1 ? &isa->fig[1] : NULL;
      if (!roof_check(one, more, s1, s2, &peak_bad)) continue;
      for (int t = 0; t < g_n_threads; t++) {
        roof_figures *f = &isa->fig[t];
        const bool *s = t == 0 ? s1 : s2;
        for (int i = 0; i < f->n; i++) {
          if (!s[i]) continue;
          if (pass == 0) {
            g_remeasured++;
            measure_point(isa, f, i, buf, g_threads[t],
                          2 * trials_at(f->footprint[i], g_threads[t], quick), traffic);
          } else {
            f->bad[i] = true;
            g_inconsistent++;
          }
        }
      }
      if (peak_bad && pass == 0) {
        g_remeasured++;
        double again = fma_peak(isa, g_threads[1], quick);
        if (again > more->peak) more->peak = again;
      } else if (peak_bad) {
        more->peak_bad = true;
        g_inconsistent++;
      }
    }
    inherit_curves();
  }
  free(buf);
  g_measured = true;
  g_seconds = bench_now() - t0;
  fprintf(stderr,
          "simdgrad_bench: measured the roofline in %.1f s (bandwidth at %d footprints up to %.0f "
          "MiB; %d figures measured again, %d marked inconsistent)\n",
          g_seconds, g_isas[0].fig[0].n, largest / (1 << 20), g_remeasured, g_inconsistent);
}

bool roofline_recheck(const char *isa, int threads, double footprint, bool compute) {
  if (!g_measured || !isa) return false;
  int t = 0;
  for (int i = 0; i < g_n_threads; i++)
    if (g_threads[i] <= threads) t = i;
  int ri = -1;
  for (int k = 0; k < N_ISAS; k++)
    if (g_isas[k].present && strcmp(g_isas[k].name, isa) == 0) ri = k;
  if (ri < 0) return false;
  isa_roof *r = &g_isas[ri];
  roof_figures *f = &r->fig[t];
  bool raised = false;
  if (compute) {
    if (r->rechecked[t][ROOF_MAX_POINTS]) return false;
    r->rechecked[t][ROOF_MAX_POINTS] = true;
    double again = fma_peak(r, g_threads[t], g_quick);
    if (again > f->peak) f->peak = again, raised = true;
    if (issue_rates(r, f, g_threads[t], g_quick)) raised = true;
  } else {
    int lo, hi; /* the points the row's bound came from (roof_judge) */
    roof_curve_footprint(f, &g_caches, threads, footprint, &lo, &hi);
    int pts[2] = {lo, hi};
    float *buf = NULL;
    for (int p = 0; p < 2; p++) {
      int i = pts[p];
      if (p == 1 && hi == lo) continue;
      double before[ROOF_CURVES];
      for (int k = 0; k < ROOF_CURVES; k++) before[k] = roof_curve(f, k)[i];
      /* The ISA's own loops, and those of each ISA it includes that supplied a figure there
         (inherit_curves copies it exactly), each point once per run. */
      for (int q = 0; q <= ri; q++) {
        isa_roof *from = &g_isas[q];
        roof_figures *g = &from->fig[t];
        if (!from->present || from->rechecked[t][i] || i >= g->n) continue;
        bool supplied = q == ri;
        for (int k = 0; k < ROOF_CURVES && !supplied; k++)
          supplied = roof_curve(g, k)[i] == roof_curve(f, k)[i];
        if (!supplied) continue;
        from->rechecked[t][i] = true;
        if (!buf) { /* a measuring buffer for the larger of the two points */
          size_t floats =
              (size_t)(f->footprint[hi] / sizeof(float)) + 128 * 3 * (size_t)g_threads[t];
          size_t bytes = (floats + 2 * PAD) * sizeof(float);
          buf = bench_alloc(bytes);
          memset(buf, 0, bytes);
        }
        measure_point(from, g, i, buf, g_threads[t],
                      2 * trials_at(g->footprint[i], g_threads[t], g_quick), g_traffic);
      }
      inherit_curves();
      for (int k = 0; k < ROOF_CURVES; k++)
        if (roof_curve(f, k)[i] > before[k]) raised = true;
    }
    free(buf);
  }
  g_raised += raised;
  return raised;
}

int roofline_raised(void) { return g_raised; }

static double rise(double now, double then) { return then > 0 && now > then ? now / then - 1 : 0; }

static double mixes_drift(void);

double roofline_compute_drift(void) {
  if (!g_measured) return 0;
  double most = mixes_drift();
  for (int k = 0; k < N_ISAS; k++) {
    isa_roof *isa = &g_isas[k];
    for (int t = 0; t < g_n_threads && isa->present; t++) {
      const roof_figures *f = &isa->fig[t];
      roof_figures now = *f; /* issue_rates keeps the better of each: compare after */
      most = fmax(most, rise(fma_peak(isa, g_threads[t], g_quick), f->peak));
      issue_rates(isa, &now, g_threads[t], g_quick);
      most = fmax(most, rise(now.issue, f->issue));
      for (int c = 0; c < ROOF_N_CLASSES; c++) most = fmax(most, rise(now.cls[c], f->cls[c]));
    }
  }
  return most;
}

const char *roofline_isa_of(const char *backend) {
  if (strcmp(backend, "scalar") == 0) return g_isas[0].name;
  for (int k = 0; k < N_ISAS; k++)
    if (strcmp(g_isas[k].name, backend) == 0) return backend;
  const char *best = g_isas[0].name; /* OpenBLAS and any other peer: the best ISA present */
  for (int k = 0; k < N_ISAS; k++)
    if (g_isas[k].present) best = g_isas[k].name;
  return best;
}

const char *roofline_narrower_isa(const char *isa) {
  for (int k = 1; k < N_ISAS; k++)
    if (strcmp(g_isas[k].name, isa) == 0 && g_isas[k - 1].issue && g_isas[k - 1].present)
      return g_isas[k - 1].name;
  return NULL;
}

/* The entry of g_threads whose figures serve `threads` threads: the largest count not above it. */
static int figures_index(int threads) {
  int t = 0;
  for (int i = 0; i < g_n_threads; i++)
    if (g_threads[i] <= threads) t = i;
  return t;
}

/* The measured ISA of that name; NULL if none. */
static const isa_roof *isa_named(const char *isa) {
  if (!g_measured || !isa) return NULL;
  for (int k = 0; k < N_ISAS; k++)
    if (g_isas[k].present && strcmp(g_isas[k].name, isa) == 0) return &g_isas[k];
  return NULL;
}

/* The figures of isa at `threads` threads: those measured at the largest count not above it. */
static const roof_figures *figures_of(const char *isa, int threads) {
  const isa_roof *r = isa_named(isa);
  return r ? &r->fig[figures_index(threads)] : NULL;
}

bool bench_mix_grouped;

/* The kernels' mix rates (roofline_kernel_mix), elements per second with all threads, measured
   the first time a row asks: one per kernel, ISA and entry of g_threads; `rechecked` once
   measured again (roofline_recheck_mix). */
#define MIX_CACHE 512
static struct {
  const bench_mix_kernel *kernel;
  int t;
  double rate;
  bool rechecked;
} g_mix[MIX_CACHE];
static int g_n_mix;

/* The better of the two orders' rates (roofline_isa.h) for kernel k at thread entry t. */
static double mix_rate(const bench_mix_kernel *k, int t) {
  double rate = 0;
  for (int grouped = 0; grouped < 2; grouped++) {
    bench_mix_grouped = grouped;
    rate = fmax(rate, loop_rate(k->probe, g_threads[t], g_quick));
  }
  bench_mix_grouped = false;
  return rate;
}

/* The cache entry of slot's kernel on isa at `threads` threads, measured if new; -1 where the
   table has no such kernel or the roofline was not measured. */
static int mix_entry(const char *slot, const char *isa, int threads) {
  const isa_roof *r = isa_named(isa);
  if (!r || !r->mix_kernels || !slot) return -1;
  const bench_mix_kernel *k = r->mix_kernels;
  while (k->slot && !(strcmp(k->slot, slot) == 0 && strcmp(k->isa, isa) == 0)) k++;
  if (!k->slot) return -1;
  int t = figures_index(threads); /* measured as the rates were, at that thread count */
  for (int i = 0; i < g_n_mix; i++)
    if (g_mix[i].kernel == k && g_mix[i].t == t) return i;
  if (g_n_mix == MIX_CACHE) return -1;
  g_mix[g_n_mix].kernel = k, g_mix[g_n_mix].t = t, g_mix[g_n_mix].rate = mix_rate(k, t);
  g_mix[g_n_mix].rechecked = false;
  return g_n_mix++;
}

double roofline_kernel_mix(const char *slot, const char *isa, int threads, double n) {
  int i = mix_entry(slot, isa, threads);
  return i >= 0 && g_mix[i].rate > 0 && n > 0 ? n / g_mix[i].rate : 0;
}

/* roofline_compute_drift's part for the mixes: each measured once more, the largest rise. */
static double mixes_drift(void) {
  double most = 0;
  for (int i = 0; i < g_n_mix; i++)
    most = fmax(most, rise(mix_rate(g_mix[i].kernel, g_mix[i].t), g_mix[i].rate));
  return most;
}

bool roofline_recheck_mix(const char *slot, const char *isa, int threads) {
  int i = mix_entry(slot, isa, threads);
  if (i < 0 || g_mix[i].rechecked) return false;
  g_mix[i].rechecked = true;
  double rate = mix_rate(g_mix[i].kernel, g_mix[i].t);
  if (rate <= g_mix[i].rate) return false;
  g_mix[i].rate = rate;
  g_raised++;
  return true;
}

roof_verdict roofline_judge(const char *isa, int threads, const roof_work *w) {
  if (!g_have_caches) { /* not measured: the level still goes in the label */
    for (int l = 0; l < 3; l++)
      g_sysfs[l] = sg__cache_sysfs(l + 1), g_cpuid[l] = sg__cache_cpuid(l + 1);
    g_caches = roof_choose_caches(g_sysfs, g_cpuid);
    g_have_caches = true;
  }
  return roof_judge(figures_of(isa, threads), &g_caches, threads, w);
}

static void add_context_f(const char *key, const char *fmt, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, fmt, v);
  bench_add_context(key, buf);
}

static const char *kib(double bytes, char *buf, size_t size) {
  if (bytes >= 1 << 20)
    snprintf(buf, size, "%.0fM", bytes / (1 << 20));
  else
    snprintf(buf, size, "%.0fK", bytes / 1024);
  return buf;
}

/* A level's representative bandwidth, for the plot and the summary: the triad (or read) curve
   at half the level (per thread for L1 and L2), and at the largest footprint for DRAM. */
static double level_bw(const roof_figures *f, int threads, roof_level l, bool read) {
  double x = l == ROOF_DRAM  ? f->footprint[f->n - 1]
             : l == ROOF_LLC ? (double)g_caches.size[2] / 2
                             : (double)g_caches.size[l] / 2 * threads;
  return roof_interp(f->n, f->footprint, read ? f->read : f->triad, x, NULL, NULL);
}

void roofline_publish(void) {
  static const char *const keys[] = {"l1", "l2", "llc", "dram"};
  static const char *const level_keys[] = {"l1d", "l2", "llc"};
  char key[96], val[64], header[8192], tmp[32];
  int len = 0;
  for (int l = 0; l < 3 && g_measured; l++) {
    snprintf(key, sizeof key, "cache_%s_bytes", level_keys[l]);
    add_context_f(key, "%.0f", (double)g_caches.size[l]);
    snprintf(key, sizeof key, "cache_%s_source", level_keys[l]);
    bench_add_context(key, roof_source_name(g_caches.source[l]));
    snprintf(key, sizeof key, "cache_%s_bytes_cpuid", level_keys[l]);
    add_context_f(key, "%.0f", (double)g_cpuid[l]);
    snprintf(key, sizeof key, "cache_%s_bytes_sysfs", level_keys[l]);
    add_context_f(key, "%.0f", (double)g_sysfs[l]);
  }
  if (!g_measured) {
    bench_set_table_header("roofline not measured (--roofline=off): no %roof\n");
    return;
  }
  add_context_f("roofline_seconds", "%.2f", g_seconds);
  bench_add_context("roofline_mode", g_quick ? "quick" : "full");
  len += snprintf(header + len, sizeof header - (size_t)len,
                  "roofline measured at start-up in %.1f s%s: caches L1d %zu KiB (%s), L2 %zu "
                  "KiB (%s) per core, LLC %zu MiB (%s",
                  g_seconds, g_quick ? " (quick)" : "", g_caches.size[0] >> 10,
                  roof_source_name(g_caches.source[0]), g_caches.size[1] >> 10,
                  roof_source_name(g_caches.source[1]), g_caches.size[2] >> 20,
                  roof_source_name(g_caches.source[2]));
  if (g_caches.source[2] == ROOF_SRC_SYSFS && g_cpuid[2] && g_cpuid[2] != g_caches.size[2])
    len += snprintf(header + len, sizeof header - (size_t)len, "; CPUID says %zu MiB",
                    g_cpuid[2] >> 20);
  len += snprintf(
      header + len, sizeof header - (size_t)len,
      ")\n  bandwidth in GB/s at each footprint (all threads together), read-only "
      "(r), triad (t), scale (s: a copy's mix) and fill (f: stores alone), each ISA's the best "
      "of its loops and those of the ISAs it includes (the lines above it)%s\n  %-7s %3s %8s   ",
      g_inconsistent ? "; ! = measured inconsistently twice, rows judged on it are "
                       "marked ?"
                     : "",
      "isa", "thr", "GFLOP/s");
  const roof_figures *grid = &g_isas[0].fig[0];
  for (int i = 0; i < grid->n; i++)
    len += snprintf(header + len, sizeof header - (size_t)len, " %5s",
                    kib(grid->footprint[i], tmp, sizeof tmp));
  len += snprintf(header + len, sizeof header - (size_t)len, "\n");
  for (int k = 0; k < N_ISAS; k++) {
    const isa_roof *r = &g_isas[k];
    if (!r->present) continue;
    for (int t = 0; t < g_n_threads; t++) {
      const roof_figures *f = &r->fig[t];
      snprintf(key, sizeof key, "peak_gflops_%s_t%d", r->name, g_threads[t]);
      add_context_f(key, "%.1f", f->peak / 1e9);
      if (f->peak_bad) {
        snprintf(key, sizeof key, "peak_gflops_%s_t%d_inconsistent", r->name, g_threads[t]);
        bench_add_context(key, "true");
      }
      if (f->issue > 0) { /* the issue bound's rates, in 10^9 instructions per s */
        snprintf(key, sizeof key, "issue_ginsns_%s_t%d", r->name, g_threads[t]);
        add_context_f(key, "%.2f", f->issue / 1e9);
        for (int cls = 0; cls < ROOF_N_CLASSES; cls++) {
          if (f->cls[cls] <= 0) continue;
          snprintf(key, sizeof key, "issue_ginsns_%s_%s_t%d", roof_class_name(cls), r->name,
                   g_threads[t]);
          add_context_f(key, "%.2f", f->cls[cls] / 1e9);
        }
        /* the FMA-pipe cost of each class, in FMA slots (the fma class's own: the check, ~1) */
        for (int cls = 0; cls < ROOF_N_CLASSES; cls++) {
          if (f->pair[cls] <= 0) continue;
          snprintf(key, sizeof key, "issue_fma_cost_%s_%s_t%d", roof_class_name(cls), r->name,
                   g_threads[t]);
          add_context_f(key, "%.3f",
                        roof_pipe_cost(f->cls[ROOF_CLASS_fma], f->pair[cls], f->pair_ratio[cls],
                                       f->cls[cls]));
        }
      }
      for (int l = 0; l < ROOF_LEVELS; l++) {
        snprintf(key, sizeof key, "bw_gbs_%s_%s_t%d", keys[l], r->name, g_threads[t]);
        add_context_f(key, "%.1f", level_bw(f, g_threads[t], (roof_level)l, false) / 1e9);
        snprintf(key, sizeof key, "bw_read_gbs_%s_%s_t%d", keys[l], r->name, g_threads[t]);
        add_context_f(key, "%.1f", level_bw(f, g_threads[t], (roof_level)l, true) / 1e9);
      }
      /* The curve: "footprint_bytes:read_GBs:triad_GBs:scale_GBs:fill_GBs[:bad]" per point,
         space separated. */
      char curve[2048];
      int cl = 0;
      for (int i = 0; i < f->n && cl < (int)sizeof curve; i++)
        cl += snprintf(curve + cl, sizeof curve - (size_t)cl, "%s%.0f:%.2f:%.2f:%.2f:%.2f%s",
                       i ? " " : "", f->footprint[i], f->read[i] / 1e9, f->triad[i] / 1e9,
                       f->scale[i] / 1e9, f->fill[i] / 1e9, f->bad[i] ? ":bad" : "");
      snprintf(key, sizeof key, "roof_curve_%s_t%d", r->name, g_threads[t]);
      bench_add_context(key, curve);
      snprintf(val, sizeof val, "%d", g_threads[t]);
      snprintf(tmp, sizeof tmp, "%.1f%s", f->peak / 1e9, f->peak_bad ? "!" : "");
      for (int pass = 0; pass < ROOF_CURVES; pass++) { /* a line per curve */
        static const char *const line[ROOF_CURVES] = {"r", "t", "s", "f"};
        const double *bw = roof_curve(f, pass);
        len += snprintf(header + len, sizeof header - (size_t)len, "  %-7s %3s %8s %s ",
                        pass ? "" : r->name, pass ? "" : val, pass ? "" : tmp, line[pass]);
        for (int i = 0, j = 0; i < grid->n && len < (int)sizeof header; i++) {
          while (j < f->n && f->footprint[j] < grid->footprint[i] * 0.99) j++;
          if (j < f->n && f->footprint[j] <= grid->footprint[i] * 1.01)
            len += snprintf(header + len, sizeof header - (size_t)len, " %4.0f%s", bw[j] / 1e9,
                            f->bad[j] ? "!" : " ");
          else
            len += snprintf(header + len, sizeof header - (size_t)len, " %5s", "-");
        }
        len += snprintf(header + len, sizeof header - (size_t)len, "\n");
      }
    }
  }
  bench_set_table_header(header);
}
