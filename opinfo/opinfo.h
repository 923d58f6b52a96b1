/* Op-info tables: per-op figures that the tests, the accuracy report and the bench share, one
 * row per op, written with designated initialisers. The op lists of include/simdgrad/backend.h
 * stay the one list of slots; these tables only describe them, and tests/test_opinfo.c fails
 * when a slot of a list has no row (or a row lacks a field a consumer reads). A lookup returns
 * NULL for a name without a row: no consumer falls back to a default.
 *
 * Which consumer reads what:
 *   tests/test_unary.c, test_binary.c   ref, dref, domain, grad_domain, vs_double, edge
 *   tests/test_conformance_*.c          conf (the contract against the scalar backend)
 *   tests/fuzz/fuzz_*.c                 conf (the same contract, on fuzzed inputs)
 *   tests/accuracy_report.c             ref, dref, dref_y, sweep
 *   tests/test_reduce.c, test_nn.c      row_ref (the row ops' references; so does the report)
 *   tests/test_matmul.c                 opinfo_ref_gemm (so does the report)
 *   bench/bench_opinfo.c                bench_range, flops (docs/bench.md's counting rule)
 */
#ifndef SIMDGRAD_OPINFO_H
#define SIMDGRAD_OPINFO_H

#include <stdbool.h>
#include <stddef.h>

/* The parameters the unary tables' leaky_relu and clip rows are measured with. */
#define OPINFO_LEAKY_ALPHA 0.1f
#define OPINFO_CLIP_LO -1.0f
#define OPINFO_CLIP_HI 2.0f

/* FLOPs of a transcendental function (exp, log, tanh, erf, sin, pow, ...): about what a
   vectorised polynomial implementation executes (docs/bench.md). */
#define OPINFO_TRANSC 20.0

typedef struct opinfo_range {
  float lo, hi;
} opinfo_range;

/* One kernel's contract against the scalar backend's kernel for the same slot. A result passes
   when its ULP distance from scalar is <= ulp + grow * sqrt(r), or when |got - want| <= (abs +
   grow * sqrt(r)) * FLT_EPSILON * scale, scale being the magnitude the family's error is
   relative to (|dy| for backward kernels, the row's sum of |x| for sums, ...). All zero is
   bit-exact (the strictest contract, so a bound left out fails loudly rather than passes);
   zero_any accepts either sign for a zero result; tiny also accepts |got - want| <= tiny *
   FLT_TRUE_MIN (times |dy| for backward kernels), for ops whose last rounding happens in the
   denormal range and is then scaled up. r is the length of the reduced row for reductions,
   softmax and gemm (k), 1 elsewhere. */
typedef struct opinfo_bound {
  double ulp, grow, abs;
  bool zero_any;
  double tiny;
  /* Unary backward: the magnitude of f''s terms at x, where f' cancels (NULL: 1). */
  double (*mag)(double x);
} opinfo_bound;

/* The conformance tests' inputs and bounds: domain is the first float input's range in the
   clean pass (x, a, logits), domain_b the second's (b; {0, 0}: as domain). */
typedef struct opinfo_conf {
  opinfo_range domain, domain_b;
  opinfo_bound fwd, bwd;
} opinfo_conf;

/* Nominal FLOPs per element of the op's (largest) input, forward and its "_backward" slot;
   given marks a row that states them (0 FLOPs is a real figure: data movement). */
typedef struct opinfo_flops {
  bool given;
  double fwd, bwd;
  /* What the SIMD kernels of a polynomial function execute on the FMA pipes, per element,
     forward and backward (0: the nominal count above). The FMA peak the roofline measures is 2
     FLOPs per lane per FMA; a polynomial kernel also runs additions, min/max, permutes and
     integer work that some CPUs issue to other pipes (Zen 4: two FADD pipes beside the two FMA
     pipes), so a nominal "exp is 20" read 112% of the peak on exp/avx512. What every x86 and
     Arm core must run on its FMA pipes is the FMAs and the multiplies: each counts 2 per lane
     here and nothing else counts, so FLOPs / peak is a lower bound on the kernel's time. Read
     off the templates (kernels_simd/simd_math.inc, simd_unary.inc, simd_reduce.inc): where the
     backends' forms differ (the capabilities of kernels_simd/vocabulary.md, section 13), the
     fewest any of them runs, so that the bound holds on each; recount when a template changes.
     The scalar backend calls libm and keeps the nominal figures. */
  double simd_fwd, simd_bwd;
} opinfo_flops;
#define OPINFO_FLOPS(f, b)                                                                         \
  { .given = true, .fwd = (f), .bwd = (b) }
#define OPINFO_FLOPS_SIMD(f, b, sf, sb)                                                            \
  { .given = true, .fwd = (f), .bwd = (b), .simd_fwd = (sf), .simd_bwd = (sb) }
/* FMA-pipe FLOPs of vexp per element: 6 FMAs (y, r twice, q's two, t + t q) and 1 multiply
   (r^2), 2 FLOPs each: the 16-entry form (AVX-512, NEON); AVX2's 8-entry form runs one FMA
   more. */
#define OPINFO_SIMD_EXP 14.0
/* FMA-pipe FLOPs of vexpm1 per element: 9 FMAs (y, r twice, 5 in the polynomial, the one that
   adds 2^(k-1) - 1/2) and 1 multiply (r^2), 2 FLOPs each. */
#define OPINFO_SIMD_EXPM1 20.0

/* Accuracy against the double reference through the engine: |got - want| <= atol + rtol *
   |want| (forward), the b-prefixed pair for the backward kernel against dy * dref(x). */
typedef struct opinfo_vs_double {
  double rtol, atol, brtol, batol;
} opinfo_vs_double;

/* What docs/accuracy.md promises of a kernel on every backend, in ulp against the double
   reference: the forward over fwd_range, the backward's derivative (dy = 1) over bwd_range; 0 is
   no promise. `accuracy_report --check` holds every backend to it on a stride of the floats of
   each range (a ctest entry), so a kernel change that loosens a promise fails the tests. */
typedef struct opinfo_promise {
  double fwd;
  opinfo_range fwd_range;
  double bwd;
  opinfo_range bwd_range;
} opinfo_promise;

/* ---- Unary ops: SG_FOR_EACH_UNARY_OP, SG_FOR_EACH_STEP_OP, leaky_relu and clip ---- */

typedef struct opinfo_unary {
  const char *name;
  double (*ref)(double x);    /* the op in double */
  double (*dref)(double x);   /* its derivative; NULL for step ops */
  double (*dref_y)(double y); /* the derivative from the saved y (ops that save y), else NULL */
  opinfo_range domain;        /* sample domain of the value tests */
  opinfo_range grad_domain;   /* finite-difference domain, whose sample points avoid kinks */
  opinfo_vs_double vs_double;
  float edge[5];    /* f(NaN), f(+inf), f(-inf), f(+0), f(-0) */
  bool zero_signed; /* the sign of a zero result in edge[] is part of the contract */
  opinfo_conf conf;
  opinfo_range sweep; /* the accuracy report's swept domain */
  /* An extra accuracy row over another domain, shown with this label (NULL: none). */
  const char *sweep2_label;
  opinfo_range sweep2;
  opinfo_range bench_range;
  opinfo_flops flops;
  opinfo_promise promise;
} opinfo_unary;

/* ---- Binary ops: SG_FOR_EACH_BINARY_OP, SG_FOR_EACH_COMPARE_OP and where ---- */

typedef struct opinfo_binary {
  const char *name;
  double (*ref)(double a, double b); /* comparisons: 1 or 0 */
  /* The gradients' factors: da = dy * da(a, b, y), db likewise (NULL: no backward). */
  double (*da)(double a, double b, double y);
  double (*db)(double a, double b, double y);
  opinfo_range domain, domain_b; /* the value tests' ranges, which keep the op well defined */
  double rtol;                   /* the value tests' bound against ref */
  opinfo_conf conf;
  opinfo_range sweep, sweep_b; /* the accuracy report's grid */
  opinfo_range bench_range, bench_range_b;
  opinfo_flops flops;
} opinfo_binary;

/* ---- Every other kernel: reductions, softmax family, gemm, shape, image ops, updates ---- */

/* The double-precision reference of a row op (reductions, argmax / argmin, the softmax family,
   softmax_cross_entropy), written once in opinfo_reduce.c and named by its row; each row gives
   the members its kernel needs (tests/test_opinfo.c checks which). A row is the r floats
   x[0], x[stride], ..., x[(r - 1) stride]; a double output row is strided the same way.
   NaN policy: a row holding a NaN reduces to NaN (sum, max, min, logsumexp), and its softmax
   and log_softmax are NaN throughout (as the kernels' and the engine's); argmax / argmin
   return the first NaN's index. An empty row sums to +0; its max is -inf, min +inf, logsumexp
   -inf. Sums run in double in row order, from +0. */
typedef struct opinfo_row_ref {
  /* Reductions: the row's value. */
  double (*reduce)(const float *x, size_t r, size_t stride);
  /* Elementwise backward formulas, dx = dx(dy, a, b): for a reduction a = x, b = y (the
     reduced value); for softmax_cross_entropy (dlogits) and its dlabels output, a = the
     label, b = the log-probability, dy = the row's dloss. */
  double (*dx)(double dy, double a, double b);
  /* argmax, argmin (r >= 1): the first extremum's index, or the first NaN's. */
  size_t (*arg)(const float *x, size_t r, size_t stride);
  /* softmax, log_softmax (and softmax_cross_entropy's log_probs): the output row y. */
  void (*map)(const float *x, size_t r, size_t stride, double *y);
  /* softmax_backward, log_softmax_backward, from the row's probabilities p (e^y for
     log_softmax): dx = p (dy - sum dy p), dx = dy - p sum dy. */
  void (*map_backward)(const float *dy, const double *p, size_t r, size_t stride, double *dx);
  /* softmax_cross_entropy: one row's loss, -sum labels lp, from the log-probabilities lp. */
  double (*loss)(const float *labels, const double *lp, size_t r, size_t stride);
} opinfo_row_ref;

/* A kernel with a conformance contract (conf) and/or bench FLOPs. Names are the slots'
   ("reduce_sum", "gemm"); an output of a kernel with several has its own contract under
   "slot:output" ("softmax_cross_entropy:log_probs"). */
typedef struct opinfo_kernel {
  const char *name;
  bool has_conf; /* the conformance tests and/or the fuzzers check this kernel against conf */
  opinfo_conf conf;
  opinfo_flops flops;
  opinfo_row_ref row_ref; /* row ops only (opinfo_reduce.c) */
} opinfo_kernel;

/* gemm's double reference (opinfo_kernel.c; read by tests/test_matmul.c and the accuracy
   report): c = op(a) op(b), m x n, the products added in order of p, and mag = sum_p
   |a_ip b_pj| (the scale of the rounding error; NULL: not wanted), both with row stride ldc.
   op(a) is m x k, a stored k x m when ta (a_ip = a[p lda + i], else a[i lda + p]); op(b) is
   k x n, b stored n x k when tb. */
void opinfo_ref_gemm(size_t m, size_t n, size_t k, const float *a, size_t lda, bool ta,
                     const float *b, size_t ldb, bool tb, double *c, double *mag, size_t ldc);

/* The tables, and lookups by name (NULL when there is no row). */
extern const opinfo_unary opinfo_unary_table[];
extern const size_t opinfo_unary_count;
extern const opinfo_binary opinfo_binary_table[];
extern const size_t opinfo_binary_count;
extern const opinfo_kernel opinfo_reduce_table[];
extern const size_t opinfo_reduce_count;
extern const opinfo_kernel opinfo_kernel_table[];
extern const size_t opinfo_kernel_count;

const opinfo_unary *opinfo_unary_find(const char *name);
const opinfo_binary *opinfo_binary_find(const char *name);
/* Searches the reduce table, then the other kernels'. */
const opinfo_kernel *opinfo_kernel_find(const char *name);

/* ---- Contracts (opinfo_conf.c): what the conformance tests and the fuzzers check ---- */

/* The contract of a kernel slot: its own row's conf ("exp", "gemm",
   "softmax_cross_entropy:log_probs"), else for "<op>_backward" op's row, with *backward set
   (the caller then reads conf->bwd). NULL when neither row has a conf. */
const opinfo_conf *opinfo_conf_of(const char *slot, bool *backward);
/* Distance in representable floats, with -0 and +0 one apart; 0 for two NaNs, infinite for a
   NaN against a number or an infinity against anything else. */
double opinfo_ulp_distance(float a, float b);
/* Whether got (a backend's result) meets bound b against want (the scalar backend's): the rule
   of opinfo_bound above, with r the reduced length, scale the abs bound's magnitude and tscale
   what the tiny bound scales with (1 if nothing). NaN must meet NaN. */
bool opinfo_agrees(const opinfo_bound *b, float got, float want, double r, double scale,
                   double tscale);

#endif /* SIMDGRAD_OPINFO_H */
