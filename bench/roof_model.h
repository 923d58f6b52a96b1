/* The roofline's model, apart from the measuring (roofline.c) and with no clock in it, so that a
 * test can run it on made-up figures (bench/test_roof_model.c): which cache sizes to believe,
 * the curve of bandwidth against footprint and its interpolation, the consistency checks on the
 * measured figures, the bound a row is judged against and the flags on a verdict.
 *
 * Bytes are counted alike for the roof and the rows: what a kernel reads plus what it writes,
 * each buffer once per pass, without the write-allocate read of a store's line (a triad moves
 * 12 bytes per element, not 16; a row's store is 4). The footprint is the distinct bytes one call
 * touches, all threads together: the curve is measured with each thread on its share, so a
 * per-thread (private) cache level shows in the curve where footprint / threads outgrows it.
 */
#ifndef SIMDGRAD_BENCH_ROOF_MODEL_H
#define SIMDGRAD_BENCH_ROOF_MODEL_H

#include <stdbool.h>
#include <stddef.h>

/* ---- Cache sizes ---- */

typedef enum roof_source { ROOF_SRC_DEFAULT, ROOF_SRC_SYSFS, ROOF_SRC_CPUID } roof_source;

typedef struct roof_caches {
  size_t size[3]; /* bytes: L1d and L2 per core, the LLC in all */
  roof_source source[3];
} roof_caches;

/* Each level from sysfs where it has one (the OS's view, as Google Benchmark reads it), else
   from CPUID (glibc's sysconf), else a default (32 KiB, 1 MiB, 4 x L2). A 0 means "not known".
   A VM's CPUID can describe the host (320 MiB of L3 where 32 MiB are the VM's). */
roof_caches roof_choose_caches(const size_t sysfs[3], const size_t cpuid[3]);
const char *roof_source_name(roof_source s);

typedef enum roof_level { ROOF_L1, ROOF_L2, ROOF_LLC, ROOF_DRAM, ROOF_LEVELS } roof_level;
/* Where `footprint` bytes, shared evenly by `threads` threads, live: L1 and L2 per thread, the
   LLC for all of them. */
roof_level roof_level_of(const roof_caches *c, double footprint, int threads);
const char *roof_level_name(roof_level l);

/* ---- The bandwidth curve ---- */

#define ROOF_MAX_POINTS 24

/* Footprints to measure with `threads` threads: from half an L1 per thread to 4 x the LLC (at
   least 4 L2s per thread), log spaced by a factor 2 (4 when quick) on one grid for every thread
   count; at most `max` bytes. Returns how many (at most ROOF_MAX_POINTS). */
int roof_footprints(const roof_caches *c, int threads, bool quick, double max, double *out);

/* The issue bound's instruction classes (docs/bench.md, "The issue bound"): the order of the
   columns of bench/kernel_issued.inc and of docs/kernel_loops.py's CLASSES, and the probes of
   bench/roofline_isa.h (bench_issue_<class>__<isa>). */
/* clang-format off */
#define ROOF_ISSUE_CLASSES(X) \
  X(fma) X(fadd) X(minmax) X(fcmp) X(blend) X(shuffle) X(shift) X(logic) X(cvt) X(round) \
  X(scalef) X(div) X(sqrt) X(ternlog)
/* clang-format on */
enum {
#define ROOF_CLASS_ENUM_(c) ROOF_CLASS_##c,
  ROOF_ISSUE_CLASSES(ROOF_CLASS_ENUM_)
#undef ROOF_CLASS_ENUM_
      ROOF_N_CLASSES
};
/* The issue bound's shared-pipe term (roof_verdict.issue_class): the FMA pipes' work, the FMAs
   and what the other classes take of those pipes (roof_judge). */
#define ROOF_FMA_PIPES (ROOF_N_CLASSES + 1)
/* The term of the kernel's own mix measured (roof_work.mix_s), which takes the FMA pipes' place. */
#define ROOF_MIX (ROOF_N_CLASSES + 2)
/* "fma", "fadd", ...; "all" for ROOF_N_CLASSES (the total over the combined rate), "fma pipes"
   for ROOF_FMA_PIPES, "mix" for ROOF_MIX. */
const char *roof_class_name(int cls);

/* The FMA-pipe cost of one instruction of a class, in FMA slots (docs/bench.md, "Shared pipes"):
   a pair probe issues `ratio` FMAs per instruction of the class, each independent, at
   `pair_rate` FMAs per second; FMAs alone issue at `fma_rate`. Each round then takes
   fma_rate / pair_rate times the FMAs' own time, and the excess, spread over the class's
   instructions, is what each takes of the FMA pipes: ratio x (fma_rate / pair_rate - 1), 0 if
   negative (noise; a class on other pipes) or if either rate is unknown. Also 0 where the pair
   issued the class at more than ROOF_PAIR_SATURATED of its own rate `cls_rate` (0: unknown):
   then the class's own pipes, not the FMA pipes, may have set the pace, and its cost is not
   seen. */
#define ROOF_PAIR_SATURATED 0.75
/* A cost below this many slots is the pair's noise (a class on other pipes measures 0.000-0.003
   on the Zen 4 VM, one that shares them 0.1 and up): 0. */
#define ROOF_PAIR_NOISE 0.02
double roof_pipe_cost(double fma_rate, double pair_rate, double ratio, double cls_rate);

/* One ISA on one thread count: the FMA peak and, at each footprint, the read-only bandwidth, the
   triad's (2 reads, 1 write), the scale's (1 read, 1 write: a copy's mix) and the fill's (writes
   alone); the last two 0 where not measured. bad[i]: point i measured inconsistently twice. */
typedef struct roof_figures {
  double peak; /* FLOP/s */
  bool peak_bad;
  /* The issue bound's rates (docs/bench.md, "The issue bound"), instructions per second, all
     threads: `issue` of any vector instructions (the best mix of classes measured), cls[c] of
     class c's alone; 0 where not measured (the baseline ISA, a class the ISA lacks). */
  double issue, cls[ROOF_N_CLASSES];
  /* The shared-pipe term's pair probes (docs/bench.md, "Shared pipes"): pair[c], FMAs per second
     with class c's instructions beside them in the ratio pair_ratio[c] FMAs to one; 0 where not
     measured (the FMA class itself, a class the ISA lacks, the baseline ISA). */
  double pair[ROOF_N_CLASSES], pair_ratio[ROOF_N_CLASSES];
  int n;
  double footprint[ROOF_MAX_POINTS]; /* bytes, increasing */
  double read[ROOF_MAX_POINTS];      /* bytes/s */
  double triad[ROOF_MAX_POINTS];     /* bytes/s */
  double scale[ROOF_MAX_POINTS];     /* bytes/s */
  double fill[ROOF_MAX_POINTS];      /* bytes/s */
  bool bad[ROOF_MAX_POINTS];
} roof_figures;

/* The four curves by number, in the header's order (read, triad, scale, fill), for the code
   that treats them alike (the checks, the recheck, the header). */
#define ROOF_CURVES 4
static inline const double *roof_curve(const roof_figures *f, int k) {
  return k == 0 ? f->read : k == 1 ? f->triad : k == 2 ? f->scale : f->fill;
}

/* f's four curves, point by point, the better of its own figure and g's where both were measured
   at the same footprint (an ISA's curves and those of an ISA it includes, on one grid); the
   peak, the issue rates and the flags stay f's. */
void roof_take_curves(roof_figures *f, const roof_figures *g);

/* y at x on the polyline (xs[i], ys[i]), xs increasing, interpolated linearly in log x; the
   end values beyond the ends. *lo and *hi (either may be NULL) get the two points used. */
double roof_interp(int n, const double *xs, const double *ys, double x, int *lo, int *hi);

/* Where the curves of f are read for a row of `footprint` bytes on `threads` threads: the
   footprint itself, or, where it is past a cache's capacity (L1d per thread, the LLC for all)
   that the grid point below it fits, the grid point above it. Such a row streams from the next
   level, and a blend of the two points put a 64 KiB fill past a 48 KiB L1 at 1.5-2.5x the rate
   its stores run at (an Intel Xeon VM, docs/bench.md). Not past L2: the same VM's L2 kept much
   of a share of 2.25 MiB (the comparison rows over 2^18 floats read 100-136% of the 3 MiB point's
   figures; unmeasured on AMD), so there the blend counts. *lo and *hi (either may be NULL) get the
   points the figures then come from: both the one above where past a cache. Not mirrored: a row
   inside a cache but above its last point still takes the blend with the next level's (a real cache
   slows before it is full). */
double roof_curve_footprint(const roof_figures *f, const roof_caches *c, int threads,
                            double footprint, int *lo, int *hi);

/* ---- Consistency ---- */

/* How far a figure may fall short of what the hardware guarantees before it counts as
   inconsistent. More threads against one: 10% (noise on an idle machine is a few percent). Along
   a curve: 25%, since real curves have bumps of 10-15% near a cache's capacity (a 1 MiB share
   with a 1 MiB L2 streams slower than a 4 MiB one from the LLC on a Zen 4 VM) and a timing
   method changes past L2 (roofline.c's chunks). */
#define ROOF_TOLERANCE 0.10
#define ROOF_TOLERANCE_CURVE 0.25

/* Checks the figures of one thread (`one`) and of more threads (`more`, or NULL) against what
   the hardware guarantees, beyond the tolerances above, and marks the points that break it
   (suspect_one[i], suspect_more[i], all set by the call):
   - bandwidth does not grow with the footprint (a far level is not faster than a near one): a
     point below a later one of its curve is suspect, and so is the later one (one of the two
     was measured low, or the other high);
   - more threads are not slower than one (the other cores only add): a point of `more` below
     `one`'s curve at the same footprint is suspect, and so is more's peak below one's.
   Returns whether anything is suspect. */
bool roof_check(const roof_figures *one, const roof_figures *more, bool *suspect_one,
                bool *suspect_more, bool *peak_suspect);

/* ---- Judging a row ---- */

/* What one call of a row does. */
typedef struct roof_work {
  double flops; /* executed arithmetic (FMA-pipe FLOPs for polynomial functions) */
  /* The least compute time of kernels whose arithmetic is not counted (they call a library
     function: SLEEF, libm): their own rate measured on data in cache, times the size; added to
     flops / peak, and flops leaves their part out. 0: none. */
  double kernel_s;
  double read;    /* bytes */
  double written; /* bytes */
  /* Of `written`, the bytes stored back over data the same call read (an optimizer's update in
     place): no write-allocate, and the write-back of a line the core already holds leaves the
     core's loads their full rate, so only the reads and the other writes are timed. */
  double written_in_place;
  double footprint; /* distinct bytes; 0: read + written */
  /* Vector instructions the kernels issue, in all and per class (bench/kernel_issued.inc);
     0: not counted, no issue bound. */
  double insns, cls[ROOF_N_CLASSES];
  /* The least time those instructions take on this machine's vector pipes, measured on the spot
     with each one independent of the others (the mix probe, roofline_kernel_mix; docs/bench.md, "A
     kernel's own mix"); 0: not measured. Where measured it replaces the FMA pipes' term, which
     estimates the same time from pairs of classes. */
  double mix_s;
} roof_work;

enum {
  ROOF_FLAG_INCONSISTENT = 1, /* judged against a figure that measured inconsistently */
  ROOF_FLAG_MODEL_ERROR = 2   /* the row ran faster than the model allows, beyond noise */
};

/* A percentage above this is the model's error, not the row's speed. */
#define ROOF_MODEL_ERROR_PCT 105.0
/* How far the compute figures measured again after the rows may rise above the start-up ones
   before the bench says its compute-bound rows may read high: 5%, as a noisy sample moves. */
#define ROOF_DRIFT_NOTE 0.05

typedef struct roof_verdict {
  double seconds;   /* the least time the model allows; 0 when it cannot say */
  double bandwidth; /* bytes/s at the row's footprint and mix */
  double compute_s; /* flops / peak */
  /* The issue bound: the largest of insns / issue, cls[c] / rate of c over the classes, and the
     work's own mix (roof_work.mix_s) or, where that was not measured, the FMA pipes' time (fma +
     sum over c of cost_c x cls[c]) / rate of fma */
  double issue_s;
  double pipes_s;   /* the FMA pipes' time, reported even where the mix replaces it; 0 where no
                       pair was measured */
  int issue_class;  /* the term that is issue_s: a class, ROOF_N_CLASSES (the total),
                       ROOF_FMA_PIPES or ROOF_MIX */
  double memory_s;  /* read / read bandwidth + written x cost of a written byte (the bytes
                       written in place left out) */
  roof_level level; /* where the footprint lives (for the label) */
  unsigned flags;   /* ROOF_FLAG_INCONSISTENT when the bound used a bad figure */
} roof_verdict;

/* The bound of w with `threads` threads on f: max(flops / peak + kernel_s, issue time, memory
   time), the issue time the largest of w->insns / f->issue, over the classes c w->cls[c] /
   f->cls[c] (each term where both are known), and the FMA pipes' time (w->cls[fma] + sum over c
   of roof_pipe_cost(c) x w->cls[c]) / f->cls[fma], or w->mix_s in its place where measured; the
   memory time from the curves at w's footprint and w's share of reads rho: the read curve at rho =
   1, the triad curve at rho = 2/3, the scale curve at rho = 1/2, the fill curve at rho = 0, and
   roof_per_byte between them; below the lowest mix measured (no fill curve, or neither scale nor
   fill), the fastest curve. */
roof_verdict roof_judge(const roof_figures *f, const roof_caches *c, int threads,
                        const roof_work *w);

/* Seconds per byte at the share of reads rho (xs[0] <= rho <= 1), from n >= 2 mixes measured:
   mix k, rho = xs[k] (increasing, the last 1), takes ys[k] seconds per byte. At a mix, its own
   figure. Between two, a bound that holds whether reads and writes cost apart (the time per byte
   then linear in rho) or overlap (convex): the straight line between them, or, where lower, the
   larger of the neighbouring segments' lines extended (a convex curve lies above those), and never
   below what a row takes that moves at least a multiple of a measured mix's reads and of its
   writes (monotone: moving more bytes takes no less time). */
double roof_per_byte(double rho, int n, const double *xs, const double *ys);

/* What a "tape.<op>" row runs: the forward, the seed of ones sg_tape_end writes (`seed` bytes,
   the size of the output), and the backward unless the gradient is a view of dy (add's: no
   kernel runs). The footprint is the forward's, the seed and what the backward writes (it reads
   dy, the seed, and saved tensors the forward touched). */
roof_work roof_tape_work(const roof_work *fwd, const roof_work *bwd, double seed,
                         bool grad_is_view);

/* 100 x bound / measured seconds, and the flags for it: ROOF_FLAG_MODEL_ERROR above
   ROOF_MODEL_ERROR_PCT, plus the verdict's own. */
double roof_pct(const roof_verdict *v, double measured_s, unsigned *flags);

#endif /* SIMDGRAD_BENCH_ROOF_MODEL_H */
