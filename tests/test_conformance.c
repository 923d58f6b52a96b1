/* Cross-backend conformance: every kernel slot of every available backend against the scalar
 * backend's kernel for the same slot, on awkward sizes (empty, one element, around the vector
 * widths, large), on pointers offset by 0..15 floats, in place where the ABI allows it, and with
 * IEEE edge values (NaN, +-inf, +-0, denormals, +-1e38) in the vector body and in the tail.
 *
 * The slot lists come from the X-macros of include/simdgrad/backend.h, so a new op is covered
 * as soon as it is listed; it runs with the default tolerance below until the table gives it
 * one (the run says so). Tolerances are ULP distances from the scalar result (0 = bit-exact,
 * sign of zero included; NaN must match NaN), with an absolute floor for results near a zero
 * of the function, written next to each op in k_tol. Every output has canaries on both sides
 * (a write outside [0, n) fails), every input is checked unchanged afterwards, and outputs start
 * as garbage (an element the kernel skips fails). The scalar backend is a candidate too, so its
 * in-place and canary behaviour is checked even on a CPU without SIMD; a backend the CPU lacks
 * is skipped. docs/floating-point.md explains the policy this enforces; docs/accuracy.md has the
 * accuracy against double precision. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* ==== Tolerances ============================================================================ */

/* One slot's contract against scalar. lo..hi is the domain of the first float input (x, a,
   logits) in the clean pass, blo..bhi the second's (b) when not 0..0. A result passes when its
   ULP distance from scalar is <= ulp + grow * sqrt(r), or when |got - want| <= (abs + grow *
   sqrt(r)) * FLT_EPSILON * scale, scale being the magnitude the family's error is relative to
   (|dy| for backward kernels, the row's sum of |x| for sums, ...). ulp == 0 and abs == 0 is
   bit-exact; zero_any accepts either sign for a zero result (the policy leaves it open); tiny
   also accepts |got - want| <= tiny * FLT_TRUE_MIN (times |dy| for backward kernels), for ops
   whose last rounding happens in the denormal range and is then scaled up. r is the length of the
   reduced row for reductions, softmax and gemm (k), 1 elsewhere. */
typedef struct tol {
  const char *slot;
  float lo, hi, blo, bhi;
  double ulp, grow, abs;
  bool zero_any;
  double tiny;
  /* Unary backward: the magnitude of f''s terms at x, where f' cancels (NULL: 1). */
  double (*mag)(double x);
} tol;

static double gelu_terms(double x) {
  return 0.5 * erfc(-x / sqrt(2.0)) + fabs(x) * exp(-0.5 * x * x) / sqrt(2 * 3.14159265358979);
}

#define EXACT(slot, lo, hi)                                                                        \
  { slot, lo, hi, 0, 0, 0, 0, 0, false, 0, NULL }
#define ULP(slot, lo, hi, ulp, abs)                                                                \
  { slot, lo, hi, 0, 0, ulp, 0, abs, false, 0, NULL }
/* clang-format off */
static const tol k_tol[] = {
    /* ---- Unary forward: libm (scalar) against the SIMD math (SLEEF u10 or simd_math.inc,
       1 or 2 ulp each, docs/accuracy.md) ---- */
    EXACT("neg", -10, 10),
    EXACT("abs", -10, 10),
    ULP("exp", -100, 100, 2, 0),
    ULP("expm1", -100, 100, 2, 0),
    ULP("log", 1e-3f, 1e3f, 2, 0),
    ULP("log1p", -0.999f, 100, 2, 0),
    EXACT("sqrt", 0, 1e4f),                /* IEEE sqrt is correctly rounded */
    EXACT("rsqrt", 1e-3f, 1e4f),           /* 1 / sqrt(x): two correctly rounded steps */
    EXACT("square", -1e3f, 1e3f),
    EXACT("reciprocal", -10, 10),
    EXACT("relu", -10, 10),
    EXACT("relu6", -3, 9),
    ULP("elu", -20, 5, 2, 0),
    ULP("selu", -20, 5, 3, 0),
    ULP("sigmoid", -100, 100, 4, 0),       /* e^-|x|, 1 + e, a division */
    ULP("tanh", -20, 20, 3, 0),
    ULP("softplus", -100, 100, 4, 0),
    /* Scalar within 0.5 ulp (erfc in double), SIMD within 2.6 (docs/accuracy.md); below
       x = -13 the result is denormal and x / 2 scales the rounding of Phi */
    {"gelu", -30, 10, 0, 0, 4, 0, 0, false, 16, NULL},
    ULP("sin", -100, 100, 2, 0),
    ULP("cos", -100, 100, 2, 0),
    /* ---- Unary backward (dx = dy f'), abs relative to |dy| ---- */
    EXACT("neg_backward", -10, 10),
    EXACT("abs_backward", -10, 10),
    EXACT("exp_backward", -100, 100),
    EXACT("expm1_backward", -100, 100),
    EXACT("log_backward", 1e-3f, 1e3f),
    EXACT("log1p_backward", -0.999f, 100),
    EXACT("sqrt_backward", 0, 1e4f),
    EXACT("rsqrt_backward", 1e-3f, 1e4f),
    EXACT("square_backward", -1e3f, 1e3f),
    EXACT("reciprocal_backward", -10, 10),
    EXACT("relu_backward", -10, 10),
    EXACT("relu6_backward", -3, 9),
    EXACT("elu_backward", -20, 5),
    ULP("selu_backward", -20, 5, 3, 0),   /* e^x, then two products that may round apart */
    ULP("sigmoid_backward", -100, 100, 2, 0), /* (dy y)(1 - y) against dy (y (1 - y)) */
    EXACT("tanh_backward", -20, 20),
    ULP("softplus_backward", -100, 100, 4, 0),
    /* Phi + x phi cancels near x = -0.75: abs relative to |dy| (Phi + |x| phi); below x = -13
       the derivative is denormal (tiny, relative to |dy|) */
    {"gelu_backward", -30, 10, 0, 0, 4, 0, 4, false, 16, gelu_terms},
    ULP("sin_backward", -100, 100, 2, 0),
    ULP("cos_backward", -100, 100, 2, 0),
    /* ---- Step ops and the parametric ones ---- */
    EXACT("floor", -100, 100),
    EXACT("ceil", -100, 100),
    EXACT("round", -100, 100),
    EXACT("sign", -10, 10),
    EXACT("leaky_relu", -10, 10),
    EXACT("leaky_relu_backward", -10, 10),
    EXACT("clip", -3, 4),
    EXACT("clip_backward", -3, 4),
    /* ---- Binary: a's domain, b's domain ---- */
    EXACT("add", -10, 10),
    EXACT("sub", -10, 10),
    EXACT("mul", -10, 10),
    EXACT("div", -10, 10),
    {"pow", 0, 8, -8, 8, 2, 0, 0, false, 0, NULL},
    EXACT("maximum", -3, 3),              /* a narrow range makes ties */
    EXACT("minimum", -3, 3),
    EXACT("squared_difference", -10, 10),
    EXACT("add_backward", -10, 10),
    EXACT("sub_backward", -10, 10),
    EXACT("mul_backward", -10, 10),
    EXACT("div_backward", -10, 10),
    /* powf vs SLEEF pow u10; a^(b-1) may be denormal (fewer bits) before dy b scales it up */
    {"pow_backward", 0, 8, -8, 8, 4, 0, 0, false, 0, NULL},
    EXACT("maximum_backward", -3, 3),
    EXACT("minimum_backward", -3, 3),
    EXACT("squared_difference_backward", -10, 10),
    EXACT("where", -10, 10),
    EXACT("where_backward", -10, 10),
    /* ---- Reductions over r: a blocked float sum against scalar's double one ---- */
    /* Exact on the dyadic grid the clean pass uses (every partial sum is exact); with edge
       values, within 2 (r + 2) eps sum|x| (the worst case of recursive summation, twice). */
    EXACT("reduce_sum", -16, 16),
    {"reduce_max", -16, 16, 0, 0, 0, 0, 0, true, 0, NULL},  /* the sign of max(+0, -0) is open */
    {"reduce_min", -16, 16, 0, 0, 0, 0, 0, true, 0, NULL},
    /* abs relative to 1 + |row max| */
    {"reduce_logsumexp", -16, 16, 0, 0, 4, 1, 4, false, 0, NULL},
    EXACT("reduce_sum_backward", -16, 16),
    EXACT("reduce_max_backward", -16, 16),
    EXACT("reduce_min_backward", -16, 16),
    {"reduce_logsumexp_backward", -16, 16, 0, 0, 2, 0, 0, false, 0, NULL},
    EXACT("argmax", -16, 16),
    EXACT("argmin", -16, 16),
    /* ---- Softmax family: a float row sum (grows like sqrt(r)) against a double one ---- */
    {"softmax", -10, 10, 0, 0, 6, 1, 0, false, 0, NULL},
    {"log_softmax", -10, 10, 0, 0, 4, 1, 4, false, 0, NULL},           /* abs relative to 1 + |y| */
    {"softmax_backward", -10, 10, 0, 0, 4, 1, 4, false, 0, NULL},      /* |y| (|dy| + sum|dy y|) */
    {"log_softmax_backward", -10, 10, 0, 0, 4, 1, 4, false, 0, NULL},  /* |dy| + e^y sum|dy| */
    {"softmax_cross_entropy", -10, 10, 0, 0, 4, 1, 4, false, 0, NULL}, /* loss; sum|t lp| */
    {"softmax_cross_entropy:log_probs", -10, 10, 0, 0, 4, 1, 4, false, 0, NULL},
    /* dlogits: abs relative to |g| (e^lp + |t|); dlabels = -g lp is one product */
    {"softmax_cross_entropy_backward", -10, 10, 0, 0, 2, 0, 4, false, 0, NULL},
    EXACT("softmax_cross_entropy_backward:dlabels", -10, 10),
    /* ---- gemm: |diff| <= 2 (k + 2) eps (sum_p |a_ip b_pj| + |beta c_ij|) ---- */
    {"gemm", -2, 2, 0, 0, 0, 0, 0, false, 0, NULL},
    /* ---- gemm_taps: the same bound over taps * k products ---- */
    {"gemm_taps", -2, 2, 0, 0, 0, 0, 0, false, 0, NULL},
    EXACT("transpose", -10, 10),
    EXACT("scatter_add", -8, 8),          /* dyadic values: any summation order is exact */
    /* Depthwise: the SIMD kernels add the products in the scalar kernel's order, unfused */
    EXACT("depthwise_conv2d", -4, 4),
    EXACT("depthwise_conv2d_backward_input", -4, 4),
    EXACT("depthwise_conv2d_backward_filter", -4, 4),
};
/* clang-format on */
#define N_TOL (sizeof k_tol / sizeof k_tol[0])

/* A slot the table does not name runs with this, and the run says so. */
static const tol k_default_tol = {"(default)", -10, 10, 0, 0, 2, 0, 0, false, 0, NULL};

/* Known kernel disagreements: a failing element of (backend, slot) whose inputs satisfy `when`
   is reported as a warning, not a failure, until the bug named is fixed. NULL backend matches
   every one. Each entry is one bug; remove it with the fix (the suite then checks the case). */
struct cctx;
typedef struct known_bug {
  const char *backend, *slot;
  bool (*when)(const struct cctx *c, size_t i);
  const char *bug;
} known_bug;
/* None is open: the NULL entry only keeps the array non-empty (ISO C has no empty arrays). */
static const known_bug k_known_bugs[] = {
    {NULL, NULL, NULL, "(none)"},
};

static const tol *tol_for(const char *slot) {
  for (size_t i = 0; i < N_TOL; i++)
    if (strcmp(k_tol[i].slot, slot) == 0) return &k_tol[i];
  /* stderr, not cr_log_warn: a Criterion warning turns the exit status into a failure. */
  fprintf(stderr,
          "[NOTE] conformance: no tolerance for slot %s in k_tol; using the default "
          "(2 ULP)\n",
          slot);
  return &k_default_tol;
}

/* ==== The slot lists, from backend.h ======================================================= */

typedef enum { SV_NONE, SV_X, SV_Y } saved_kind;
typedef struct uslot {
  const char *name;
  size_t fwd, bwd;
  saved_kind saved;
} uslot;
typedef struct bslot {
  const char *name;
  size_t fwd, bwd;
} bslot;

#define U_ENTRY_(nm, sv, doc)                                                                      \
  {#nm, offsetof(sg_backend, nm), offsetof(sg_backend, nm##_backward), SV_##sv},
#define S_ENTRY_(nm, doc) {#nm, offsetof(sg_backend, nm), 0, SV_NONE},
#define B_ENTRY_(nm, doc) {#nm, offsetof(sg_backend, nm), offsetof(sg_backend, nm##_backward)},
#define C_ENTRY_(nm, doc) {#nm, offsetof(sg_backend, nm), 0},
#define R_ENTRY_(nm, doc)                                                                          \
  {"reduce_" #nm, offsetof(sg_backend, reduce_##nm), offsetof(sg_backend, reduce_##nm##_backward)},
static const uslot k_unary[] = {SG_FOR_EACH_UNARY_OP(U_ENTRY_)};
static const uslot k_step[] = {SG_FOR_EACH_STEP_OP(S_ENTRY_)};
static const bslot k_binary[] = {SG_FOR_EACH_BINARY_OP(B_ENTRY_)};
static const bslot k_compare[] = {SG_FOR_EACH_COMPARE_OP(C_ENTRY_)};
static const bslot k_reduce[] = {SG_FOR_EACH_REDUCE_OP(R_ENTRY_)};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

#define SLOT(be, type, off) (*(const type *)((const char *)(be) + (off)))

/* Candidates: every backend the CPU and build have. */
static const char *const k_backends[] = {"scalar", "avx2", "avx512", "neon"};
#define FOR_EACH_BACKEND(be)                                                                       \
  for (size_t bi_ = 0; bi_ < COUNT(k_backends); bi_++)                                             \
    for (const sg_backend *be = sg_backend_get(k_backends[bi_]); be; be = NULL)

static const sg_backend *ref_backend(void) {
  const sg_backend *s = sg_backend_get("scalar");
  cr_assert_not_null(s, "the scalar backend is always available");
  return s;
}

/* ==== Sizes, offsets, inputs ================================================================ */

static const size_t k_sizes[] = {0, 1, 7, 15, 16, 17, 31, 33, 63, 65, 1000, 100003};
#define BIG 1000 /* from here on only a few offsets and passes */

/* Pointer offsets in floats: all of 0..15 on small sizes, a few on big ones. */
static size_t n_offsets(size_t n) { return n < BIG ? 16 : n < 100000 ? 4 : 2; }
static size_t offset_at(size_t n, size_t k) {
  static const size_t big[] = {0, 1, 7, 15};
  return n < BIG ? k : big[k];
}
/* Each operand gets its own offset, so inputs and outputs are misaligned to each other too. */
static size_t off_of(size_t base, int operand) { return (base + 5u * (unsigned)operand) % 16u; }

typedef enum { P_CLEAN, P_SPECIAL, P_WIDE, P_COUNT } pass_kind;
static const char *const k_pass_names[] = {"clean", "special", "wide"};
static int n_passes(size_t n) { return n >= 100000 ? 2 : P_COUNT; }

static uint64_t g_rng;
static void seed(uint64_t s) { g_rng = s * 0x9e3779b97f4a7c15u + 0x632be59bd9b4e019u; }
static uint64_t next_u64(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}
static double unif(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; }
static float uniform(float lo, float hi) { return (float)(lo + (hi - (double)lo) * unif()); }

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* The edge values: NaN of both signs, infinities, signed zeros, denormals, huge values. */
#define N_SPECIALS 12
static float special(size_t k) {
  switch (k % N_SPECIALS) {
  case 0:
    return from_bits(0x7fc00000u); /* NaN */
  case 1:
    return INFINITY;
  case 2:
    return -INFINITY;
  case 3:
    return 0.0f;
  case 4:
    return -0.0f;
  case 5:
    return 1e-40f;
  case 6:
    return -1e-40f;
  case 7:
    return 1e38f;
  case 8:
    return -1e38f;
  case 9:
    return from_bits(0xffc00000u); /* NaN with the sign bit */
  case 10:
    return FLT_TRUE_MIN;
  default:
    return -FLT_MAX;
  }
}

/* Writes edge values at the head, the middle and the last elements: `per` at each place, from
   the list rotated by rot (each case rotates differently, so over the offsets every value lands
   in the vector body and in every tail position). */
static void inject(float *x, size_t n, size_t rot) {
  if (n == 0) return;
  size_t per = n >= 200 ? N_SPECIALS : 3;
  for (size_t k = 0; k < per; k++) {
    float v = special(rot + k);
    if (k < n) x[k] = v;
    if (n / 2 + k < n) x[n / 2 + k] = v;
    if (k < n) x[n - 1 - k] = special(rot + 5 + k);
  }
}

/* Random magnitudes over the whole float range, either sign. */
static float wide_value(void) {
  int e = (int)(next_u64() % 277) - 149;
  float v = ldexpf(1.0f + (float)unif(), e);
  return next_u64() & 1 ? -v : v;
}

static void gen(float *x, size_t n, float lo, float hi, int pass, size_t rot) {
  for (size_t i = 0; i < n; i++) x[i] = pass == P_WIDE ? wide_value() : uniform(lo, hi);
  if (pass != P_CLEAN) inject(x, n, rot);
}

/* ==== Guarded buffers ======================================================================= */

/* An output or input living at `off` bytes past a 64-byte boundary, with canary bytes on both
   sides; outputs start as canary too (an element the kernel skips then fails the comparison). */
#define GUARD 64
#define CANARY 0xA5
typedef struct gbuf {
  unsigned char *mem, *p;
  size_t bytes, total, cap;
} gbuf;

/* Freed blocks are kept for reuse: a fresh large block costs a page fault per 4 KiB, which
   would dominate the run time of the big cases. */
#define POOL 32
static struct {
  unsigned char *mem;
  size_t cap;
} g_pool[POOL];

static gbuf gb_make(size_t bytes, size_t off_bytes) {
  gbuf g;
  g.bytes = bytes;
  g.total = (GUARD + 64 + bytes + GUARD + 63) / 64 * 64;
  g.mem = NULL;
  int best = -1; /* the smallest pooled block that fits */
  for (int i = 0; i < POOL; i++)
    if (g_pool[i].mem && g_pool[i].cap >= g.total && (best < 0 || g_pool[i].cap < g_pool[best].cap))
      best = i;
  if (best >= 0) {
    g.mem = g_pool[best].mem;
    g.cap = g_pool[best].cap;
    g_pool[best].mem = NULL;
  } else {
    g.cap = g.total;
    g.mem = aligned_alloc(64, g.cap);
  }
  cr_assert_not_null(g.mem);
  memset(g.mem, CANARY, g.total);
  g.p = g.mem + GUARD + off_bytes;
  return g;
}

static gbuf gb_floats(const float *init, size_t n, size_t off) {
  gbuf g = gb_make(n * sizeof(float), off * sizeof(float));
  if (init && n) memcpy(g.p, init, n * sizeof(float));
  return g;
}
static float *gf(const gbuf *g) { return (float *)(void *)g->p; }
static bool gb_intact(const gbuf *g) {
  for (unsigned char *q = g->mem; q < g->p; q++)
    if (*q != CANARY) return false;
  for (unsigned char *q = g->p + g->bytes; q < g->mem + g->total; q++)
    if (*q != CANARY) return false;
  return true;
}
static void gb_free(gbuf *g) {
  int slot = -1;
  for (int i = 0; i < POOL; i++)
    if (!g_pool[i].mem) slot = i;
  if (slot >= 0) {
    g_pool[slot].mem = g->mem;
    g_pool[slot].cap = g->cap;
  } else {
    free(g->mem);
  }
  g->mem = g->p = NULL;
}

/* ==== Comparison and reporting ============================================================= */

static int g_failures, g_cases;
static long g_known_hits[COUNT(k_known_bugs)];
static char g_known_first[COUNT(k_known_bugs)][800];

/* The case being checked, for the messages. */
typedef struct cctx {
  const char *be, *slot, *pass;
  char desc[200];
  /* Up to 3 elementwise inputs shown at a failing index (step 0: a broadcast scalar). */
  const float *in[3];
  size_t step[3];
  const char *in_name[3];
  float p0, p1; /* leaky_relu's alpha, clip's bounds */
  /* What the tiny bound scales with at i (NULL: 1): dy, for a derivative that went denormal
     before dy multiplied it. */
  const float *tiny_by;
} cctx;

static void ctx_init(cctx *c, const sg_backend *be, const char *slot, const char *pass,
                     const char *fmt, ...) {
  memset(c, 0, sizeof *c);
  c->be = be->name;
  c->slot = slot;
  c->pass = pass;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->desc, sizeof c->desc, fmt, ap);
  va_end(ap);
  g_cases++;
}
static void ctx_input(cctx *c, int k, const char *name, const float *p, size_t step) {
  c->in[k] = p;
  c->in_name[k] = name;
  c->step[k] = step;
}

/* The known bug that covers element i of the case (i == SIZE_MAX: not an element). */
static const known_bug *known(const cctx *c, size_t i) {
  for (size_t k = 0; k < COUNT(k_known_bugs); k++) {
    const known_bug *b = &k_known_bugs[k];
    if (!b->slot) continue;
    if (b->backend && strcmp(b->backend, c->be) != 0) continue;
    if (strcmp(b->slot, c->slot) != 0) continue;
    if (i != SIZE_MAX && b->when(c, i)) return b;
  }
  return NULL;
}

static inline float in_at(const cctx *c, int k, size_t i) { return c->in[k][i * c->step[k]]; }
/* Failures are grouped by (backend, slot, pass): the first message of each group is printed,
   with the group's count at the end of the test. */
typedef struct fgroup {
  char key[128], first[700];
  int count;
} fgroup;
#define MAX_GROUPS 64
static fgroup g_groups[MAX_GROUPS];
static int g_ngroups;

/* Records one failure of the case at element i (SIZE_MAX: not an element); `what` says what
   went wrong. Returns false when a known bug covers it (the caller keeps looking). */
static bool failure_at(const cctx *c, size_t i, const char *fmt, ...) {
  char what[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const known_bug *k = known(c, i);
  if (k) {
    size_t b = (size_t)(k - k_known_bugs);
    if (g_known_hits[b]++ == 0) /* the first element each bug covers, as an example */
      snprintf(g_known_first[b], sizeof g_known_first[b], "%s %s %s [%s]: %s", c->be, c->slot,
               c->desc, c->pass ? c->pass : "-", what);
    return false;
  }
  g_failures++;
  char key[128];
  snprintf(key, sizeof key, "%s %s [%s]", c->be, c->slot, c->pass ? c->pass : "-");
  for (int g = 0; g < g_ngroups; g++)
    if (strcmp(g_groups[g].key, key) == 0) {
      g_groups[g].count++;
      return true;
    }
  if (g_ngroups == MAX_GROUPS) return true;
  fgroup *gr = &g_groups[g_ngroups++];
  snprintf(gr->key, sizeof gr->key, "%s", key);
  snprintf(gr->first, sizeof gr->first, "%s: %s", c->desc, what);
  gr->count = 1;
  return true;
}
#define failure(c, ...) failure_at((c), SIZE_MAX, __VA_ARGS__)

/* Distance in representable floats, with -0 and +0 one apart. */
static int64_t ordered(float f) {
  uint32_t u = bits_of(f);
  return u & 0x80000000u ? -(int64_t)(u & 0x7fffffffu) - 1 : (int64_t)u;
}
static double ulp_distance(float a, float b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INFINITY;
  if (isinf(a) || isinf(b)) return a == b ? 0 : INFINITY;
  int64_t d = ordered(a) - ordered(b);
  return (double)(d < 0 ? -d : d);
}

/* got against want under t, with r the reduced length and scale the abs bound's magnitude. */
static bool agrees(float got, float want, const tol *t, double r, double scale, double tscale) {
  if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
  if (t->zero_any && got == 0.0f && want == 0.0f) return true;
  double g = sqrt(r > 1 ? r : 1);
  if (ulp_distance(got, want) <= t->ulp + t->grow * g) return true;
  if (!isfinite(got) || !isfinite(want)) return false;
  double diff = fabs((double)got - want);
  if (t->tiny > 0 && diff <= t->tiny * FLT_TRUE_MIN * tscale) return true;
  return t->abs > 0 && diff <= (t->abs + t->grow * g) * FLT_EPSILON * scale;
}

static void describe_inputs(const cctx *c, size_t i, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
  for (int k = 0; k < 3 && len < cap; k++)
    if (c->in[k])
      len += (size_t)snprintf(out + len, cap - len, "%s=%.9g ", c->in_name[k],
                              c->in[k][i * c->step[k]]);
}

/* Compares n floats; scale[i] (NULL: 1) is the abs bound's magnitude at i. */
static void check_f32(const cctx *c, const tol *t, const float *got, const float *want, size_t n,
                      double r, const double *scale) {
  for (size_t i = 0; i < n; i++) {
    if (bits_of(got[i]) == bits_of(want[i])) continue; /* the common case, and the cheap one */
    double ts = c->tiny_by ? fabs((double)c->tiny_by[i]) : 1.0;
    if (agrees(got[i], want[i], t, r, scale ? scale[i] : 1.0, ts)) continue;
    const known_bug *k = known(c, i);
    if (k && g_known_hits[k - k_known_bugs]) { /* counted; its example is already kept */
      g_known_hits[k - k_known_bugs]++;
      continue;
    }
    char in[160];
    describe_inputs(c, i, in, sizeof in);
    if (failure_at(c, i, "[%zu] %sgot %.9g (0x%08x) want %.9g (0x%08x), %.0f ULP apart", i, in,
                   got[i], bits_of(got[i]), want[i], bits_of(want[i]),
                   ulp_distance(got[i], want[i])))
      return; /* one line per case is enough */
  }
}

static void check_bytes(const cctx *c, const void *got, const void *want, size_t bytes,
                        size_t elem) {
  const unsigned char *g = got, *w = want;
  for (size_t i = 0; i < bytes; i++)
    if (g[i] != w[i]) {
      char in[160];
      size_t e = i / elem;
      describe_inputs(c, e, in, sizeof in);
      long long gv = 0, wv = 0;
      memcpy(&gv, g + e * elem, elem);
      memcpy(&wv, w + e * elem, elem);
      failure(c, "[%zu] %sgot %lld want %lld", e, in, gv, wv);
      return;
    }
}

static void check_guards(const cctx *c, const gbuf *g, const char *name) {
  if (!gb_intact(g)) failure(c, "wrote outside %s (canary changed)", name);
}
static void check_unchanged(const cctx *c, const gbuf *g, const void *orig, const char *name) {
  if (g->bytes && memcmp(g->p, orig, g->bytes) != 0) failure(c, "modified its input %s", name);
  check_guards(c, g, name);
}

static void finish(const char *family) {
  for (int i = 0; i < g_ngroups; i++)
    cr_log_error("%s: %d case(s); first: %s", g_groups[i].key, g_groups[i].count,
                 g_groups[i].first);
  for (size_t b = 0; b < COUNT(k_known_bugs); b++)
    if (g_known_hits[b])
      fprintf(stderr, "[KNOWN] %s: %ld element(s) skipped as %.*s (k_known_bugs); first: %s\n",
              family, g_known_hits[b], (int)strcspn(k_known_bugs[b].bug, ":"), k_known_bugs[b].bug,
              g_known_first[b]);
  cr_assert_eq(g_failures, 0, "%s: %d of %d cases disagree with the scalar backend", family,
               g_failures, g_cases);
}

static float *fnew(size_t n) {
  float *p = calloc(n ? n : 1, sizeof *p);
  cr_assert_not_null(p);
  return p;
}

/* A seed per case, so every case is reproducible on its own. */
static uint64_t case_seed(const char *slot, size_t a, size_t b, size_t c) {
  uint64_t h = 1469598103934665603u;
  for (const char *q = slot; *q; q++) h = (h ^ (unsigned char)*q) * 1099511628211u;
  return h ^ (a * 0x100000001b3u) ^ (b << 40) ^ (c << 52);
}

/* ==== Unary: forward, backward, step ops, leaky_relu, clip ================================== */

/* How to call one unary slot on a backend: the plain slot at an offset, or a parametric one. */
typedef struct ucall {
  const char *slot;
  size_t fwd, bwd;
  saved_kind saved;
  int param; /* 0: plain, 1: leaky_relu(alpha), 2: clip(lo, hi) */
  float p0, p1;
} ucall;

static void ucall_fwd(const sg_backend *be, const ucall *u, const float *x, float *y, size_t n) {
  if (u->param == 1)
    be->leaky_relu(x, y, n, u->p0);
  else if (u->param == 2)
    be->clip(x, y, n, u->p0, u->p1);
  else
    SLOT(be, sg_unary_kernel, u->fwd)(x, y, n);
}
static void ucall_bwd(const sg_backend *be, const ucall *u, const float *dy, const float *x,
                      const float *y, float *dx, size_t n) {
  if (u->param == 1)
    be->leaky_relu_backward(dy, x, dx, n, u->p0);
  else if (u->param == 2)
    be->clip_backward(dy, x, dx, n, u->p0, u->p1);
  else
    SLOT(be, sg_unary_backward_kernel, u->bwd)(dy, x, y, dx, n);
}

static void unary_forward(const ucall *u) {
  const sg_backend *ref = ref_backend();
  const tol *t = tol_for(u->slot);
  for (size_t si = 0; si < COUNT(k_sizes); si++) {
    size_t n = k_sizes[si];
    for (size_t k = 0; k < n_offsets(n); k++) {
      size_t off = offset_at(n, k);
      for (int p = 0; p < n_passes(n); p++) {
        seed(case_seed(u->slot, n, k, (size_t)p));
        float *x = fnew(n), *want = fnew(n);
        gen(x, n, t->lo, t->hi, p, k + 3u * (size_t)p);
        ucall_fwd(ref, u, x, want, n);
        FOR_EACH_BACKEND(be) {
          cctx c;
          ctx_init(&c, be, u->slot, k_pass_names[p], "n=%zu off=%zu p=(%g,%g)", n, off, u->p0,
                   u->p1);
          ctx_input(&c, 0, "x", x, 1);
          c.p0 = u->p0, c.p1 = u->p1;
          gbuf in = gb_floats(x, n, off_of(off, 0)), out = gb_floats(NULL, n, off_of(off, 1));
          ucall_fwd(be, u, gf(&in), gf(&out), n);
          check_unchanged(&c, &in, x, "x");
          check_guards(&c, &out, "y");
          check_f32(&c, t, gf(&out), want, n, 1, NULL);
          ctx_init(&c, be, u->slot, k_pass_names[p], "n=%zu off=%zu p=(%g,%g) in place", n, off,
                   u->p0, u->p1);
          ctx_input(&c, 0, "x", x, 1);
          c.p0 = u->p0, c.p1 = u->p1;
          ucall_fwd(be, u, gf(&in), gf(&in), n);
          check_guards(&c, &in, "y (in place)");
          check_f32(&c, t, gf(&in), want, n, 1, NULL);
          gb_free(&in);
          gb_free(&out);
        }
        free(x);
        free(want);
      }
    }
  }
}

static void unary_backward(const ucall *u) {
  const sg_backend *ref = ref_backend();
  char slot[96];
  snprintf(slot, sizeof slot, "%s_backward", u->slot);
  const tol *tf = tol_for(u->slot), *t = tol_for(slot);
  for (size_t si = 0; si < COUNT(k_sizes); si++) {
    size_t n = k_sizes[si];
    for (size_t k = 0; k < n_offsets(n); k++) {
      size_t off = offset_at(n, k);
      for (int p = 0; p < n_passes(n); p++) {
        seed(case_seed(slot, n, k, (size_t)p));
        float *x = fnew(n), *y = fnew(n), *dy = fnew(n), *want = fnew(n);
        double *scale = calloc(n ? n : 1, sizeof *scale);
        gen(x, n, tf->lo, tf->hi, p, k + 3u * (size_t)p);
        gen(dy, n, -1, 1, p, k + 7u);
        ucall_fwd(ref, u, x, y, n);
        for (size_t i = 0; i < n; i++) scale[i] = fabs(dy[i]) * (t->mag ? t->mag(x[i]) : 1);
        /* The tensor the op list does not name saved is passed as NULL: kernels must not
           read it. */
        const float *xs = u->saved == SV_X ? x : NULL, *ys = u->saved == SV_Y ? y : NULL;
        ucall_bwd(ref, u, dy, xs, ys, want, n);
        FOR_EACH_BACKEND(be) {
          for (int inplace = 0; inplace < 2; inplace++) {
            cctx c;
            ctx_init(&c, be, slot, k_pass_names[p], "n=%zu off=%zu%s", n, off,
                     inplace ? " in place" : "");
            ctx_input(&c, 0, "dy", dy, 1);
            ctx_input(&c, 1, "x", x, 1);
            ctx_input(&c, 2, "y", y, 1);
            c.tiny_by = dy;
            gbuf gdy = gb_floats(dy, n, off_of(off, 0)), gx = gb_floats(x, n, off_of(off, 1));
            gbuf gy = gb_floats(y, n, off_of(off, 2)), gdx = gb_floats(NULL, n, off_of(off, 3));
            float *dx = inplace ? gf(&gdy) : gf(&gdx);
            ucall_bwd(be, u, gf(&gdy), xs ? gf(&gx) : NULL, ys ? gf(&gy) : NULL, dx, n);
            if (!inplace) check_unchanged(&c, &gdy, dy, "dy");
            check_unchanged(&c, &gx, x, "x");
            check_unchanged(&c, &gy, y, "y");
            check_guards(&c, &gdx, "dx");
            check_guards(&c, &gdy, "dy");
            check_f32(&c, t, dx, want, n, 1, scale);
            gb_free(&gdy);
            gb_free(&gx);
            gb_free(&gy);
            gb_free(&gdx);
          }
        }
        free(x);
        free(y);
        free(dy);
        free(want);
        free(scale);
      }
    }
  }
}

/* ==== Binary, comparisons, where ============================================================ */

/* The operand values of the all-pairs pass: the edge values and the ones pow treats specially. */
static const float k_pair_extra[] = {1, -1, 2, -2, 0.5f, 3, -3, 0.3f};
#define N_PAIR_VALUES (N_SPECIALS + COUNT(k_pair_extra))
static float pair_value(size_t k) {
  return k < N_SPECIALS ? special(k) : k_pair_extra[k - N_SPECIALS];
}

/* Operands of a binary case: a and b (1 element when their step is 0) and dy. Pass P_COUNT is
   the all-pairs pass (steps 1, 1). */
typedef struct bcase {
  size_t n, na, nb, a_step, b_step, off;
  int pass;
  float *a, *b, *dy;
} bcase;

static const char *bpass_name(int pass) { return pass == P_COUNT ? "pairs" : k_pass_names[pass]; }

static bcase bcase_make(const char *slot, const tol *t, size_t n, size_t a_step, size_t b_step,
                        size_t k, size_t off, int pass, bool ties) {
  bcase bc = {n, a_step ? n : 1, b_step ? n : 1, a_step, b_step, off, pass, NULL, NULL, NULL};
  seed(case_seed(slot, n, k * 4 + a_step * 2 + b_step, (size_t)pass));
  bc.a = fnew(bc.na);
  bc.b = fnew(bc.nb);
  bc.dy = fnew(n);
  float blo = t->blo != t->bhi ? t->blo : t->lo, bhi = t->blo != t->bhi ? t->bhi : t->hi;
  if (pass == P_COUNT) {
    for (size_t i = 0; i < n; i++) {
      bc.a[i] = pair_value(i / N_PAIR_VALUES);
      bc.b[i] = pair_value(i % N_PAIR_VALUES);
    }
  } else {
    gen(bc.a, bc.na, t->lo, t->hi, pass, k + 3u * (size_t)pass);
    gen(bc.b, bc.nb, blo, bhi, pass, k + 11u);
    /* A broadcast operand is an edge value on half of the non-clean cases. */
    if (pass != P_CLEAN && !a_step && k % 2 == 0) bc.a[0] = special(k / 2 + 5u * (size_t)pass);
    if (pass != P_CLEAN && !b_step && k % 2 == 1) bc.b[0] = special(k / 2 + 7u * (size_t)pass);
    if (ties) { /* half-integers, so equal operands are common */
      for (size_t i = 0; i < bc.na; i++)
        if (isfinite(bc.a[i]) && fabsf(bc.a[i]) < 1e6f) bc.a[i] = roundf(bc.a[i] * 2) / 2;
      for (size_t i = 0; i < bc.nb; i++)
        if (isfinite(bc.b[i]) && fabsf(bc.b[i]) < 1e6f) bc.b[i] = roundf(bc.b[i] * 2) / 2;
    }
  }
  gen(bc.dy, n, -1, 1, pass == P_COUNT ? P_CLEAN : pass, k + 13u);
  return bc;
}
static void bcase_free(bcase *bc) {
  free(bc->a);
  free(bc->b);
  free(bc->dy);
}

/* Calls fn(bc) for every binary case: sizes x offsets x passes x step pairs, plus the all-pairs
   pass. */
typedef void (*bcase_fn)(const bslot *s, const tol *t, const bcase *bc);
static void for_each_bcase(const bslot *s, const char *slot, const tol *t, bool ties, bcase_fn fn) {
  for (size_t steps = 0; steps < 4; steps++) {
    size_t a_step = steps & 1, b_step = steps >> 1;
    for (size_t si = 0; si < COUNT(k_sizes); si++) {
      size_t n = k_sizes[si];
      /* Every offset when both operands are arrays; 0, 1, 7 and 15 with a broadcast one. */
      bool all = a_step && b_step && n < BIG;
      for (size_t k = 0; k < (all ? 16 : n_offsets(n) < 4 ? n_offsets(n) : 4); k++)
        for (int p = 0; p < n_passes(n); p++) {
          size_t off = all ? k : offset_at(BIG, k);
          bcase bc = bcase_make(slot, t, n, a_step, b_step, k, off, p, ties);
          fn(s, t, &bc);
          bcase_free(&bc);
        }
    }
  }
  for (size_t off = 0; off < 4; off += 3) {
    bcase bc = bcase_make(slot, t, N_PAIR_VALUES * N_PAIR_VALUES, 1, 1, off, off, P_COUNT, ties);
    fn(s, t, &bc);
    bcase_free(&bc);
  }
}

static void binary_forward_case(const bslot *s, const tol *t, const bcase *bc) {
  const sg_backend *ref = ref_backend();
  size_t n = bc->n, off = bc->off;
  float *want = fnew(n);
  SLOT(ref, sg_binary_kernel, s->fwd)(bc->a, bc->a_step, bc->b, bc->b_step, want, n);
  FOR_EACH_BACKEND(be) {
    sg_binary_kernel f = SLOT(be, sg_binary_kernel, s->fwd);
    /* 0: out of place; 1: y over a contiguous a (or b when a is broadcast). */
    for (int inplace = 0; inplace < 2; inplace++) {
      if (inplace && !bc->a_step && !bc->b_step) continue;
      cctx c;
      ctx_init(&c, be, s->name, bpass_name(bc->pass), "n=%zu steps=(%zu,%zu) off=%zu%s", n,
               bc->a_step, bc->b_step, off, inplace ? " in place" : "");
      ctx_input(&c, 0, "a", bc->a, bc->a_step);
      ctx_input(&c, 1, "b", bc->b, bc->b_step);
      gbuf ga = gb_floats(bc->a, bc->na, off_of(off, 0)),
           gb = gb_floats(bc->b, bc->nb, off_of(off, 1));
      gbuf gy = gb_floats(NULL, n, off_of(off, 2));
      float *y = !inplace ? gf(&gy) : bc->a_step ? gf(&ga) : gf(&gb);
      f(gf(&ga), bc->a_step, gf(&gb), bc->b_step, y, n);
      if (y != gf(&ga)) check_unchanged(&c, &ga, bc->a, "a");
      if (y != gf(&gb)) check_unchanged(&c, &gb, bc->b, "b");
      check_guards(&c, &ga, "a");
      check_guards(&c, &gb, "b");
      check_guards(&c, &gy, "y");
      check_f32(&c, t, y, want, n, 1, NULL);
      gb_free(&ga);
      gb_free(&gb);
      gb_free(&gy);
    }
  }
  free(want);
}

static void binary_backward_case(const bslot *s, const tol *t, const bcase *bc) {
  const sg_backend *ref = ref_backend();
  size_t n = bc->n, off = bc->off;
  /* Only pow reads y (backend.h); the others get NULL. */
  bool needs_y = strcmp(s->name, "pow") == 0;
  float *y = fnew(n), *wa = fnew(n), *wb = fnew(n);
  double *scale = calloc(n ? n : 1, sizeof *scale);
  char slot[96];
  snprintf(slot, sizeof slot, "%s_backward", s->name);
  SLOT(ref, sg_binary_kernel, s->fwd)(bc->a, bc->a_step, bc->b, bc->b_step, y, n);
  SLOT(ref, sg_binary_backward_kernel, s->bwd)
  (bc->dy, bc->a, bc->a_step, bc->b, bc->b_step, needs_y ? y : NULL, wa, wb, n);
  for (size_t i = 0; i < n; i++) scale[i] = fabs(bc->dy[i]);
  FOR_EACH_BACKEND(be) {
    sg_binary_backward_kernel f = SLOT(be, sg_binary_backward_kernel, s->bwd);
    /* 0: da and db; 1: da only; 2: db only; 3: da over dy (in place), db apart. */
    for (int v = 0; v < 4; v++) {
      static const char *const vname[] = {"", " da only", " db only", " da in place"};
      cctx c;
      ctx_init(&c, be, slot, bpass_name(bc->pass), "n=%zu steps=(%zu,%zu) off=%zu%s", n, bc->a_step,
               bc->b_step, off, vname[v]);
      ctx_input(&c, 0, "dy", bc->dy, 1);
      ctx_input(&c, 1, "a", bc->a, bc->a_step);
      ctx_input(&c, 2, "b", bc->b, bc->b_step);
      gbuf gdy = gb_floats(bc->dy, n, off_of(off, 0)),
           ga = gb_floats(bc->a, bc->na, off_of(off, 1));
      gbuf gb = gb_floats(bc->b, bc->nb, off_of(off, 2)), gy = gb_floats(y, n, off_of(off, 3));
      gbuf gda = gb_floats(NULL, n, off_of(off, 4)), gdb = gb_floats(NULL, n, off_of(off, 5));
      float *da = v == 2 ? NULL : v == 3 ? gf(&gdy) : gf(&gda), *db = v == 1 ? NULL : gf(&gdb);
      f(gf(&gdy), gf(&ga), bc->a_step, gf(&gb), bc->b_step, needs_y ? gf(&gy) : NULL, da, db, n);
      if (v != 3) check_unchanged(&c, &gdy, bc->dy, "dy");
      check_unchanged(&c, &ga, bc->a, "a");
      check_unchanged(&c, &gb, bc->b, "b");
      check_unchanged(&c, &gy, y, "y");
      check_guards(&c, &gdy, "dy");
      check_guards(&c, &gda, "da");
      check_guards(&c, &gdb, "db");
      if (da) check_f32(&c, t, da, wa, n, 1, scale);
      if (db) check_f32(&c, t, db, wb, n, 1, scale);
      gb_free(&gdy);
      gb_free(&ga);
      gb_free(&gb);
      gb_free(&gy);
      gb_free(&gda);
      gb_free(&gdb);
    }
  }
  free(y);
  free(wa);
  free(wb);
  free(scale);
}

static void compare_case(const bslot *s, const tol *t, const bcase *bc) {
  (void)t;
  const sg_backend *ref = ref_backend();
  size_t n = bc->n, off = bc->off;
  uint8_t *want = calloc(n ? n : 1, 1);
  SLOT(ref, sg_compare_kernel, s->fwd)(bc->a, bc->a_step, bc->b, bc->b_step, want, n);
  FOR_EACH_BACKEND(be) {
    cctx c;
    ctx_init(&c, be, s->name, bpass_name(bc->pass), "n=%zu steps=(%zu,%zu) off=%zu", n, bc->a_step,
             bc->b_step, off);
    ctx_input(&c, 0, "a", bc->a, bc->a_step);
    ctx_input(&c, 1, "b", bc->b, bc->b_step);
    gbuf ga = gb_floats(bc->a, bc->na, off_of(off, 0)),
         gb = gb_floats(bc->b, bc->nb, off_of(off, 1));
    gbuf gy = gb_make(n, off_of(off, 2) * 3); /* byte offsets 0..45 */
    SLOT(be, sg_compare_kernel, s->fwd)(gf(&ga), bc->a_step, gf(&gb), bc->b_step, gy.p, n);
    check_unchanged(&c, &ga, bc->a, "a");
    check_unchanged(&c, &gb, bc->b, "b");
    check_guards(&c, &gy, "y");
    check_bytes(&c, gy.p, want, n, 1);
    gb_free(&ga);
    gb_free(&gb);
    gb_free(&gy);
  }
  free(want);
}

/* Condition bytes: any non-zero value selects a. */
static uint8_t *make_cond(size_t n) {
  static const uint8_t vals[] = {0, 1, 2, 255, 0, 1};
  uint8_t *c = malloc(n ? n : 1);
  cr_assert_not_null(c);
  for (size_t i = 0; i < (n ? n : 1); i++) c[i] = vals[next_u64() % sizeof vals];
  return c;
}

static void where_case(const bslot *s, const tol *t, const bcase *bc) {
  (void)s;
  const sg_backend *ref = ref_backend();
  const tol *tb = tol_for("where_backward");
  size_t n = bc->n, off = bc->off;
  for (size_t c_step = 0; c_step < 2; c_step++) {
    size_t nc = c_step ? n : 1;
    uint8_t *cond = make_cond(nc);
    float *want = fnew(n), *wa = fnew(n), *wb = fnew(n);
    ref->where(cond, c_step, bc->a, bc->a_step, bc->b, bc->b_step, want, n);
    ref->where_backward(bc->dy, cond, c_step, wa, wb, n);
    FOR_EACH_BACKEND(be) {
      for (int inplace = 0; inplace < 2; inplace++) {
        if (inplace && !bc->a_step) continue;
        cctx c;
        ctx_init(&c, be, "where", bpass_name(bc->pass), "n=%zu steps=(c %zu, %zu,%zu) off=%zu%s", n,
                 c_step, bc->a_step, bc->b_step, off, inplace ? " in place" : "");
        ctx_input(&c, 0, "a", bc->a, bc->a_step);
        ctx_input(&c, 1, "b", bc->b, bc->b_step);
        gbuf gc = gb_make(nc, off_of(off, 3)), ga = gb_floats(bc->a, bc->na, off_of(off, 0));
        gbuf gb = gb_floats(bc->b, bc->nb, off_of(off, 1)), gy = gb_floats(NULL, n, off_of(off, 2));
        memcpy(gc.p, cond, nc);
        float *y = inplace ? gf(&ga) : gf(&gy);
        be->where(gc.p, c_step, gf(&ga), bc->a_step, gf(&gb), bc->b_step, y, n);
        check_unchanged(&c, &gc, cond, "c");
        if (!inplace) check_unchanged(&c, &ga, bc->a, "a");
        check_unchanged(&c, &gb, bc->b, "b");
        check_guards(&c, &ga, "a");
        check_guards(&c, &gy, "y");
        check_f32(&c, t, y, want, n, 1, NULL);
        gb_free(&ga);
        gb_free(&gb);
        gb_free(&gy);
        gb_free(&gc);
      }
      /* Backward: 0 both, 1 da only, 2 db only, 3 da over dy. */
      for (int v = 0; v < 4; v++) {
        cctx c;
        ctx_init(&c, be, "where_backward", bpass_name(bc->pass), "n=%zu c_step=%zu off=%zu v=%d", n,
                 c_step, off, v);
        ctx_input(&c, 0, "dy", bc->dy, 1);
        gbuf gc = gb_make(nc, off_of(off, 3)), gdy = gb_floats(bc->dy, n, off_of(off, 0));
        gbuf gda = gb_floats(NULL, n, off_of(off, 1)), gdb = gb_floats(NULL, n, off_of(off, 2));
        memcpy(gc.p, cond, nc);
        float *da = v == 2 ? NULL : v == 3 ? gf(&gdy) : gf(&gda), *db = v == 1 ? NULL : gf(&gdb);
        be->where_backward(gf(&gdy), gc.p, c_step, da, db, n);
        check_unchanged(&c, &gc, cond, "c");
        if (v != 3) check_unchanged(&c, &gdy, bc->dy, "dy");
        check_guards(&c, &gdy, "dy");
        check_guards(&c, &gda, "da");
        check_guards(&c, &gdb, "db");
        if (da) check_f32(&c, tb, da, wa, n, 1, NULL);
        if (db) check_f32(&c, tb, db, wb, n, 1, NULL);
        gb_free(&gc);
        gb_free(&gdy);
        gb_free(&gda);
        gb_free(&gdb);
      }
    }
    free(cond);
    free(want);
    free(wa);
    free(wb);
  }
}

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
  shape3 shapes[MAX_SHAPES];
  size_t ns = make_shapes(shapes, false);
  for (size_t h = 0; h < ns; h++) {
    shape3 sh = shapes[h];
    size_t numel = sh.outer * sh.r * sh.inner;
    for (size_t k = 0; k < n_roffsets(numel); k++) {
      size_t off = k_roffsets[k];
      for (int p = 0; p < R_COUNT; p++) {
        if (numel >= 100000 && p != R_CLEAN && p != R_NAN && p != R_MIXED) continue;
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

static void sce_family(void) {
  const sg_backend *ref = ref_backend();
  const tol *tl = tol_for("softmax_cross_entropy"),
            *tp = tol_for("softmax_cross_entropy:log_probs");
  const tol *tb = tol_for("softmax_cross_entropy_backward");
  const tol *tdl = tol_for("softmax_cross_entropy_backward:dlabels");
  for (size_t si = 0; si < COUNT(k_sizes); si++) {
    size_t classes = k_sizes[si], rows = classes >= 100000 ? 1 : 3, n = rows * classes;
    for (size_t k = 0; k < n_roffsets(n); k++) {
      size_t off = k_roffsets[k];
      for (int p = 0; p < R_COUNT; p++) {
        if (n >= 100000 && p != R_CLEAN && p != R_NAN && p != R_MIXED) continue;
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
            if (isfinite(lp[at])) sl[r] += fabs((double)lab[at] * lp[at]);
            sp[at] = 1 + fabs(lp[at]);
            sb[at] = fabs(dloss[r]) * (exp(lp[at]) + fabs(lab[at]));
          }
        FOR_EACH_BACKEND(be) {
          cctx c;
          ctx_init(&c, be, "softmax_cross_entropy", k_rpass_names[p],
                   "rows=%zu classes=%zu off=%zu", rows, classes, off);
          gbuf gl = gb_floats(lab, n, off_of(off, 0)), gx = gb_floats(logit, n, off_of(off, 1));
          gbuf gloss = gb_floats(NULL, rows, off_of(off, 2)),
               glp = gb_floats(NULL, n, off_of(off, 3));
          be->softmax_cross_entropy(gf(&gl), gf(&gx), rows, classes, gf(&gloss), gf(&glp));
          check_unchanged(&c, &gl, lab, "labels");
          check_unchanged(&c, &gx, logit, "logits");
          check_guards(&c, &gloss, "loss");
          check_guards(&c, &glp, "log_probs");
          check_f32(&c, tl, gf(&gloss), loss, rows, (double)classes, sl);
          c.slot = "softmax_cross_entropy:log_probs";
          check_f32(&c, tp, gf(&glp), lp, n, (double)classes, sp);
          gb_free(&gx);
          gb_free(&gloss);
          gb_free(&glp);
          /* Backward from the scalar log_probs: both outputs, then each alone. */
          for (int v = 0; v < 3; v++) {
            ctx_init(&c, be, "softmax_cross_entropy_backward", k_rpass_names[p],
                     "rows=%zu classes=%zu off=%zu v=%d", rows, classes, off, v);
            gbuf gdl = gb_floats(dloss, rows, off_of(off, 4)),
                 gp = gb_floats(lp, n, off_of(off, 5));
            gbuf gdlab = gb_floats(NULL, n, off_of(off, 6)),
                 gdlog = gb_floats(NULL, n, off_of(off, 7));
            float *dlab = v == 2 ? NULL : gf(&gdlab), *dlog = v == 1 ? NULL : gf(&gdlog);
            be->softmax_cross_entropy_backward(gf(&gdl), gf(&gl), gf(&gp), rows, classes, dlab,
                                               dlog);
            check_unchanged(&c, &gdl, dloss, "dloss");
            check_unchanged(&c, &gl, lab, "labels");
            check_unchanged(&c, &gp, lp, "log_probs");
            check_guards(&c, &gdlab, "dlabels");
            check_guards(&c, &gdlog, "dlogits");
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

/* ==== gemm ================================================================================== */

/* After a gemm or gemm_taps call: A and B unchanged, no write outside C, C (m x n, row stride
   ldc) against want, each element within tg's bound times scale, and the padding columns past
   n (not C) keeping c0's bits; one failure line per case. Frees the three buffers. */
static void check_gemm_outputs(const cctx *c, gbuf *ga, const float *a, gbuf *gb, const float *b,
                               gbuf *gc, const float *c0, const float *want, const double *scale,
                               size_t m, size_t n, size_t ldc, const tol *tg) {
  check_unchanged(c, ga, a, "A");
  check_unchanged(c, gb, b, "B");
  check_guards(c, gc, "C");
  const float *got = gf(gc);
  for (size_t i = 0; i < m; i++) {
    if (ldc > n && memcmp(got + i * ldc + n, c0 + i * ldc + n, (ldc - n) * sizeof(float)) != 0)
      failure(c, "wrote C's padding in row %zu", i);
    for (size_t j = 0; j < n; j++) {
      size_t at = i * ldc + j;
      if (!agrees(got[at], want[at], tg, 1, scale[at], 1)) {
        failure(c, "C[%zu,%zu] got %.9g want %.9g (bound %.3g)", i, j, got[at], want[at],
                tg->abs * FLT_EPSILON * scale[at]);
        i = m;
        break;
      }
    }
  }
  gb_free(ga);
  gb_free(gb);
  gb_free(gc);
}

static void free_gemm_case(float *a, float *b, float *c0, float *want, double *scale) {
  free(a);
  free(b);
  free(c0);
  free(want);
  free(scale);
}

/* One gemm case: C (m x n, row stride ldc) = op(A) op(B) + beta C, padding filled with NaN (a
   kernel reading it poisons C) and C's padding columns checked untouched. */
static void gemm_case(size_t m, size_t n, size_t k, bool ta, bool tb, float beta, size_t pad,
                      size_t off, int pass) {
  const sg_backend *ref = ref_backend();
  const tol *t = tol_for("gemm");
  size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  size_t lda = ac + pad, ldb = bc + pad, ldc = n + pad;
  size_t na = ar * lda, nb = br * ldb, nc = m * ldc;
  seed(case_seed("gemm", m * 1000003u + n * 1009u + k, (size_t)ta * 2 + tb + pad * 4, off));
  float *a = fnew(na), *b = fnew(nb), *c0 = fnew(nc), *want = fnew(nc);
  for (size_t i = 0; i < na; i++) a[i] = (i % lda) < ac ? uniform(t->lo, t->hi) : NAN;
  for (size_t i = 0; i < nb; i++) b[i] = (i % ldb) < bc ? uniform(t->lo, t->hi) : NAN;
  for (size_t i = 0; i < nc; i++)
    c0[i] = (i % ldc) < n ? (beta == 0 ? NAN : uniform(-4, 4)) : from_bits(0x7fa5a5a5u);
  if (pass == P_SPECIAL) {
    /* No huge values here: whether a sum of huge products overflows depends on the order. */
    static const float sp[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-40f};
    for (size_t q = 0; q < 3; q++) {
      if (ar && ac) a[(next_u64() % ar) * lda + next_u64() % ac] = sp[(q + off) % 5];
      if (br && bc) b[(next_u64() % br) * ldb + next_u64() % bc] = sp[(q + off + 2) % 5];
    }
  }
  memcpy(want, c0, nc * sizeof *want);
  ref->gemm(m, n, k, a, lda, ta, b, ldb, tb, beta, want, ldc);
  /* The bound's magnitude per C element: sum_p |a_ip b_pj| + |beta c_ij|. */
  double *scale = calloc(nc ? nc : 1, sizeof *scale);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = beta != 0 ? fabs(c0[i * ldc + j]) : 0;
      for (size_t p = 0; p < k; p++) {
        double av = ta ? a[p * lda + i] : a[i * lda + p], bv = tb ? b[j * ldb + p] : b[p * ldb + j];
        s += fabs(av * bv);
      }
      scale[i * ldc + j] = s;
    }
  tol tg = *t;
  tg.abs = 2.0 * ((double)k + 2);
  FOR_EACH_BACKEND(be) {
    cctx c;
    ctx_init(&c, be, "gemm", k_pass_names[pass],
             "m=%zu n=%zu k=%zu ta=%d tb=%d beta=%g pad=%zu off=%zu", m, n, k, ta, tb, beta, pad,
             off);
    gbuf ga = gb_floats(a, na, off_of(off, 0)), gb = gb_floats(b, nb, off_of(off, 1));
    gbuf gc = gb_floats(c0, nc, off_of(off, 2));
    be->gemm(m, n, k, gf(&ga), lda, ta, gf(&gb), ldb, tb, beta, gf(&gc), ldc);
    check_gemm_outputs(&c, &ga, a, &gb, b, &gc, c0, want, scale, m, n, ldc, &tg);
  }
  free_gemm_case(a, b, c0, want, scale);
}

/* One shape, the h-th: every transpose, beta 0 and 1, the clean and the special pass, with the
   padding and the pointer offsets varying with h. */
static void gemm_shape(size_t m, size_t n, size_t k, size_t h) {
  for (int tr = 0; tr < 4; tr++)
    for (int bi = 0; bi < 2; bi++)
      for (int p = 0; p < 2; p++) {
        size_t off = (h + (size_t)tr * 3 + (size_t)p) % 16, pad = (h + (size_t)tr) % 2 ? 3 : 0;
        gemm_case(m, n, k, tr & 1, tr >> 1, bi ? 1.0f : 0.0f, pad, off, p);
      }
}

static void gemm_family(void) {
  /* m, n, k: empty, one element, around the register tile; past one k slice (KC 256) and past
     it twice; past the row blocks (MC 240 on NEON, 1200 on x86) and the column blocks (NC 512 on
     x86, also twice, 2048 on NEON). */
  static const size_t shapes[][3] = {{0, 4, 3},     {4, 0, 3},      {4, 3, 0},     {1, 1, 1},
                                     {1, 17, 1},    {7, 15, 16},    {16, 16, 16},  {17, 31, 33},
                                     {33, 65, 63},  {65, 17, 300},  {130, 9, 5},   {3, 1100, 9},
                                     {13, 33, 513}, {2, 3, 1500},   {1201, 17, 9}, {1201, 1, 1},
                                     {7, 513, 300}, {20, 1025, 33}, {3, 2049, 5}};
  size_t h = 0;
  for (; h < COUNT(shapes); h++) gemm_shape(shapes[h][0], shapes[h][1], shapes[h][2], h);
  /* The register tiles' edges: every row count around their heights (MR 6 and 12) with every
     column count around their widths (NR 8, 16 and 32), with k around one k slice. */
  static const size_t ms[] = {1, 5, 6, 7, 11, 12, 13, 25}, ns[] = {1, 15, 16, 17, 31, 32, 33, 65};
  static const size_t ks[] = {1, 255, 256, 257};
  for (size_t mi = 0; mi < COUNT(ms); mi++)
    for (size_t ni = 0; ni < COUNT(ns); ni++, h++) gemm_shape(ms[mi], ns[ni], ks[(mi + ni) % 4], h);
}

/* One gemm_taps case, laid out as a convolution row: A_t starts t rows into one A (the taps
   overlap, as a row's shifted pixels do; op(A_t) is m x k, stored k x m when ta), B_t is the
   t-th k x n block of one B. Rows of A and B are padded with NaN (a kernel reading past them
   poisons C, or the canary catches it). */
static void gemm_taps_case(size_t m, size_t n, size_t k, size_t taps, bool ta, float beta,
                           size_t off) {
  const sg_backend *ref = ref_backend();
  const tol *t = tol_for("gemm_taps");
  size_t ar = ta ? k : m, ac = ta ? m : k; /* A_t as stored */
  size_t lda = ac + 3, ldb = n + 2, ldc = n + 1;
  size_t na = (ar + taps) * lda, nb = (taps * k > 0 ? taps * k : 1) * ldb, nc = m * ldc;
  seed(case_seed("gemm_taps", m * 1000003u + n * 1009u + k, taps * 2 + ta, off));
  float *a = fnew(na), *b = fnew(nb), *c0 = fnew(nc), *want = fnew(nc);
  for (size_t i = 0; i < na; i++) a[i] = i % lda < ac ? uniform(t->lo, t->hi) : NAN;
  for (size_t i = 0; i < nb; i++) b[i] = i % ldb < n ? uniform(t->lo, t->hi) : NAN;
  for (size_t i = 0; i < nc; i++)
    c0[i] = i % ldc < n ? (beta == 0 ? NAN : uniform(-4, 4)) : from_bits(0x7fa5a5a5u);
  const float *ra[80], *rb[80];
  for (size_t q = 0; q < taps; q++) ra[q] = a + q * lda, rb[q] = b + q * k * ldb;
  memcpy(want, c0, nc * sizeof *want);
  ref->gemm_taps(m, n, k, taps, ra, lda, ta, rb, ldb, beta, want, ldc);
  double *scale = calloc(nc ? nc : 1, sizeof *scale);
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double sum = beta != 0 ? fabs(c0[i * ldc + j]) : 0;
      for (size_t q = 0; q < taps; q++)
        for (size_t p = 0; p < k; p++)
          sum += fabs((ta ? ra[q][p * lda + i] : ra[q][i * lda + p]) * rb[q][p * ldb + j]);
      scale[i * ldc + j] = sum;
    }
  tol tg = *t;
  tg.abs = 2.0 * ((double)(taps * k) + 2);
  FOR_EACH_BACKEND(be) {
    cctx c;
    ctx_init(&c, be, "gemm_taps", NULL, "m=%zu n=%zu k=%zu taps=%zu ta=%d beta=%g off=%zu", m, n, k,
             taps, ta, beta, off);
    gbuf ga = gb_floats(a, na, off_of(off, 0)), gb = gb_floats(b, nb, off_of(off, 1));
    gbuf gc = gb_floats(c0, nc, off_of(off, 2));
    const float *pa[80], *pb[80];
    for (size_t q = 0; q < taps; q++) pa[q] = gf(&ga) + q * lda, pb[q] = gf(&gb) + q * k * ldb;
    be->gemm_taps(m, n, k, taps, pa, lda, ta, pb, ldb, beta, gf(&gc), ldc);
    check_gemm_outputs(&c, &ga, a, &gb, b, &gc, c0, want, scale, m, n, ldc, &tg);
  }
  free_gemm_case(a, b, c0, want, scale);
}

static void gemm_taps_family(void) {
  /* m around the row tiles (4 to 12), n around the strips (8 to 64 wide) and the vectors */
  static const size_t ms[] = {0, 1, 7, 12, 13, 17, 33}, ns[] = {1, 7, 15, 16, 17, 31, 33, 64, 65};
  static const size_t ks[] = {0, 1, 16, 63}, taps[] = {0, 1, 3, 9};
  size_t off = 0;
  for (size_t im = 0; im < COUNT(ms); im++)
    for (size_t in = 0; in < COUNT(ns); in++)
      for (size_t ik = 0; ik < COUNT(ks); ik++)
        for (int ta = 0; ta < 2; ta++) {
          size_t q = (im + in + ik + (size_t)ta) % COUNT(taps);
          gemm_taps_case(ms[im], ns[in], ks[ik], taps[q], ta, (im + ik) % 2 ? 1.0f : 0.0f,
                         off++ % 16);
        }
  /* Ragged strips too big to pack (taps * k past the packing buffer, or more taps than it
     keeps pointers for) load B masked instead. */
  for (int ta = 0; ta < 2; ta++) {
    gemm_taps_case(3, 17, 7300, 9, ta, 1.0f, 5);
    gemm_taps_case(5, 33, 3, 70, ta, 0.0f, 9);
  }
}

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
    gbuf gx = gb_floats(x, numel, off_of(off, 0)), gy = gb_floats(NULL, numel, off_of(off, 1));
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

/* ==== The tests ============================================================================== */

Test(conformance, unary_forward) {
  for (size_t i = 0; i < COUNT(k_unary); i++) {
    ucall u = {k_unary[i].name, k_unary[i].fwd, 0, SV_NONE, 0, 0, 0};
    unary_forward(&u);
  }
  finish("unary forward");
}

Test(conformance, unary_backward) {
  for (size_t i = 0; i < COUNT(k_unary); i++) {
    ucall u = {k_unary[i].name, k_unary[i].fwd, k_unary[i].bwd, k_unary[i].saved, 0, 0, 0};
    unary_backward(&u);
  }
  finish("unary backward");
}

Test(conformance, step_ops) {
  for (size_t i = 0; i < COUNT(k_step); i++) {
    ucall u = {k_step[i].name, k_step[i].fwd, 0, SV_NONE, 0, 0, 0};
    unary_forward(&u);
  }
  finish("step ops");
}

Test(conformance, leaky_relu_and_clip) {
  /* alpha 0 makes -0 from negative x; clip bounds of +-0 and lo == hi probe the signed-zero and
     tie rules. */
  static const float alphas[] = {0.1f, 0.0f, 1.5f};
  static const float bounds[][2] = {{-1, 2}, {0, 6}, {-0.0f, 0.0f}, {0.5f, 0.5f}};
  for (size_t i = 0; i < COUNT(alphas); i++) {
    ucall u = {"leaky_relu", 0, 0, SV_X, 1, alphas[i], 0};
    unary_forward(&u);
    unary_backward(&u);
  }
  for (size_t i = 0; i < COUNT(bounds); i++) {
    ucall u = {"clip", 0, 0, SV_X, 2, bounds[i][0], bounds[i][1]};
    unary_forward(&u);
    unary_backward(&u);
  }
  finish("leaky_relu and clip");
}

/* Outputs of 2^21 floats and more take the SIMD binary kernels' non-temporal store path
   (SG_STREAM_MIN in kernels_simd/simd_binary.inc): a masked head up to y's vector alignment,
   streamed vectors, a fence, the tail. Offsets 6 and 13 put y at 0 and 7 floats past a 64-byte
   boundary (off_of), so the head is empty once and ragged once; n leaves a tail. */
#define STREAM_N (((size_t)2 << 20) + 13)
static void binary_forward_streamed(const bslot *s) {
  const tol *t = tol_for(s->name);
  static const size_t offs[] = {6, 13};
  for (size_t steps = 0; steps < 4; steps++)
    for (size_t k = 0; k < COUNT(offs); k++) {
      bcase bc =
          bcase_make(s->name, t, STREAM_N, steps & 1, steps >> 1, k, offs[k], P_SPECIAL, false);
      binary_forward_case(s, t, &bc);
      bcase_free(&bc);
    }
}

Test(conformance, binary_forward) {
  for (size_t i = 0; i < COUNT(k_binary); i++) {
    for_each_bcase(&k_binary[i], k_binary[i].name, tol_for(k_binary[i].name), false,
                   binary_forward_case);
    binary_forward_streamed(&k_binary[i]);
  }
  finish("binary forward");
}

Test(conformance, binary_backward) {
  for (size_t i = 0; i < COUNT(k_binary); i++) {
    char slot[96];
    snprintf(slot, sizeof slot, "%s_backward", k_binary[i].name);
    for_each_bcase(&k_binary[i], slot, tol_for(slot), strncmp(slot, "m", 1) == 0,
                   binary_backward_case);
  }
  finish("binary backward");
}

Test(conformance, comparisons) {
  static const tol ties = {"compare", -3, 3, 0, 0, 0, 0, 0, false, 0, NULL};
  for (size_t i = 0; i < COUNT(k_compare); i++)
    for_each_bcase(&k_compare[i], k_compare[i].name, &ties, true, compare_case);
  finish("comparisons");
}

/* fill: the bits of v at every size (STREAM_N: past the binary ops' streaming threshold, which
   fill does not stream) and offset; the guards catch a write past n. */
static void fill_family(void) {
  static const float values[] = {1.0f, -0.0f, 1e-40f, -INFINITY, NAN};
  const sg_backend *ref = ref_backend();
  for (size_t si = 0; si <= COUNT(k_sizes); si++) {
    size_t n = si < COUNT(k_sizes) ? k_sizes[si] : STREAM_N;
    for (size_t vi = 0; vi < COUNT(values); vi++) {
      float v = values[vi];
      float *want = fnew(n);
      ref->fill(want, n, v);
      for (size_t i = 0; i < n; i++)
        cr_assert_eq(bits_of(want[i]), bits_of(v), "scalar fill: [%zu] is not v", i);
      FOR_EACH_BACKEND(be) {
        cctx c;
        size_t off = (si + vi) % 16;
        ctx_init(&c, be, "fill", NULL, "n=%zu v=%g off=%zu", n, v, off);
        gbuf gy = gb_floats(NULL, n, off);
        be->fill(gf(&gy), n, v);
        check_guards(&c, &gy, "y");
        check_bytes(&c, gy.p, want, n * sizeof(float), sizeof(float));
        gb_free(&gy);
      }
      free(want);
    }
  }
}

Test(conformance, fill) {
  fill_family();
  finish("fill");
}

Test(conformance, where) {
  static const bslot w = {"where", 0, 0};
  for_each_bcase(&w, "where", tol_for("where"), false, where_case);
  finish("where");
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

Test(conformance, gemm) {
  gemm_family();
  finish("gemm");
}

Test(conformance, gemm_taps) {
  gemm_taps_family();
  finish("gemm_taps");
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
