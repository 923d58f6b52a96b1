/* The cross-backend conformance harness (support_conformance.h): sizes, offsets, inputs with
 * IEEE edge values, guarded buffers, the comparison against the scalar backend's result under
 * an op-info contract, and the grouped failure report. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support_conformance.h"

const char *const k_backends[4] = {"scalar", "avx2", "avx512", "neon"};
const size_t k_sizes[N_SIZES] = {0, 1, 7, 15, 16, 17, 31, 33, 63, 65, 1000, 100003};

/* Known kernel disagreements: a failing element of (backend, slot) whose inputs satisfy `when`
   is reported as a warning, not a failure, until the bug named is fixed. NULL backend matches
   every one. Each entry is one bug; remove it with the fix (the suite then checks the case). */
typedef struct known_bug {
  const char *backend, *slot;
  bool (*when)(const cctx *c, size_t i);
  const char *bug;
} known_bug;
/* None is open: the NULL entry only keeps the array non-empty (ISO C has no empty arrays). */
static const known_bug k_known_bugs[] = {
    {NULL, NULL, NULL, "(none)"},
};

/* ==== Contracts, from the op-info tables ===================================================== */

/* The contracts asked for so far, so that tol_for hands out stable pointers. */
#define MAX_TOLS 64
static tol g_tols[MAX_TOLS];
static char g_tol_names[MAX_TOLS][80];
static int g_ntols;

static tol tol_of(const char *slot, const opinfo_conf *conf, bool backward) {
  const opinfo_bound *b = backward ? &conf->bwd : &conf->fwd;
  return (tol){slot,   conf->domain.lo, conf->domain.hi, conf->domain_b.lo, conf->domain_b.hi,
               b->ulp, b->grow,         b->abs,          b->zero_any,       b->tiny,
               b->mag};
}

const tol *tol_for(const char *slot) {
  for (int i = 0; i < g_ntols; i++)
    if (strcmp(g_tol_names[i], slot) == 0) return &g_tols[i];
  cr_assert_lt(g_ntols, MAX_TOLS, "conformance: more than %d slots", MAX_TOLS);
  /* No default: a slot without a row is an error (tests/test_opinfo.c names it too). */
  bool backward;
  const opinfo_conf *conf = opinfo_conf_of(slot, &backward);
  cr_assert_not_null(conf, "conformance: no op-info row with a .conf for slot %s (opinfo/)", slot);
  snprintf(g_tol_names[g_ntols], sizeof g_tol_names[g_ntols], "%s", slot);
  g_tols[g_ntols] = tol_of(g_tol_names[g_ntols], conf, backward);
  return &g_tols[g_ntols++];
}

const sg_backend *ref_backend(void) {
  const sg_backend *s = sg_backend_get("scalar");
  cr_assert_not_null(s, "the scalar backend is always available");
  return s;
}

/* ==== Sizes, offsets, inputs ================================================================ */
/* ==== Sizes, offsets, inputs ================================================================ */

/* Pointer offsets in floats: all of 0..15 on small sizes, a few on big ones. */
size_t n_offsets(size_t n) { return n < BIG ? 16 : n < 100000 ? 4 : 2; }
size_t offset_at(size_t n, size_t k) {
  static const size_t big[] = {0, 1, 7, 15};
  return n < BIG ? k : big[k];
}
/* Each operand gets its own offset, so inputs and outputs are misaligned to each other too. */
size_t off_of(size_t base, int operand) { return (base + 5u * (unsigned)operand) % 16u; }

const char *const k_pass_names[P_COUNT] = {"clean", "special", "wide"};
int n_passes(size_t n) { return n >= 100000 ? 2 : P_COUNT; }

static uint64_t g_rng;
void seed(uint64_t s) { g_rng = s * 0x9e3779b97f4a7c15u + 0x632be59bd9b4e019u; }
uint64_t next_u64(void) {
  g_rng ^= g_rng << 13;
  g_rng ^= g_rng >> 7;
  g_rng ^= g_rng << 17;
  return g_rng;
}
double unif(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; }
float uniform(float lo, float hi) { return (float)(lo + (hi - (double)lo) * unif()); }

float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* The edge values: NaN of both signs, infinities, signed zeros, denormals, huge values. */
float special(size_t k) {
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
void inject(float *x, size_t n, size_t rot) {
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

void gen(float *x, size_t n, float lo, float hi, int pass, size_t rot) {
  for (size_t i = 0; i < n; i++) x[i] = pass == P_WIDE ? wide_value() : uniform(lo, hi);
  if (pass != P_CLEAN) inject(x, n, rot);
}

/* ==== Guarded buffers ======================================================================= */

/* An output or input living at `off` bytes past a 64-byte boundary, with canary bytes on both
   sides; outputs start as canary too (an element the kernel skips then fails the comparison). */
#define GUARD 64
#define CANARY 0xA5

/* Freed blocks are kept for reuse: a fresh large block costs a page fault per 4 KiB, which
   would dominate the run time of the big cases. */
#define POOL 32
static struct {
  unsigned char *mem;
  size_t cap;
} g_pool[POOL];

gbuf gb_make(size_t bytes, size_t off_bytes) {
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

gbuf gb_floats(const float *init, size_t n, size_t off) {
  gbuf g = gb_make(n * sizeof(float), off * sizeof(float));
  if (init && n) memcpy(g.p, init, n * sizeof(float));
  return g;
}
float *gf(const gbuf *g) { return (float *)(void *)g->p; }
static bool gb_intact(const gbuf *g) {
  for (unsigned char *q = g->mem; q < g->p; q++)
    if (*q != CANARY) return false;
  for (unsigned char *q = g->p + g->bytes; q < g->mem + g->total; q++)
    if (*q != CANARY) return false;
  return true;
}
void gb_free(gbuf *g) {
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

static int g_failures;
int g_cases;
static long g_known_hits[COUNT(k_known_bugs)];
static char g_known_first[COUNT(k_known_bugs)][800];

void ctx_init(cctx *c, const sg_backend *be, const char *slot, const char *pass, const char *fmt,
              ...) {
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
void ctx_input(cctx *c, int k, const char *name, const float *p, size_t step) {
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
bool failure_at(const cctx *c, size_t i, const char *fmt, ...) {
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

double ulp_distance(float a, float b) { return opinfo_ulp_distance(a, b); }

bool agrees(float got, float want, const tol *t, double r, double scale, double tscale) {
  const opinfo_bound b = {t->ulp, t->grow, t->abs, t->zero_any, t->tiny, t->mag};
  return opinfo_agrees(&b, got, want, r, scale, tscale);
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
void check_f32(const cctx *c, const tol *t, const float *got, const float *want, size_t n, double r,
               const double *scale) {
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

void check_bytes(const cctx *c, const void *got, const void *want, size_t bytes, size_t elem) {
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

bool loops_sampled(size_t i, size_t n) {
  return n <= BIG || i < 64 || n - i <= 64 || i % 1009 == 0;
}

void check_same_bits(const cctx *c, const char *what, const float *got, const float *alone,
                     size_t n) {
  for (size_t i = 0; i < n; i++)
    if (bits_of(got[i]) != bits_of(alone[i]) && !(isnan(got[i]) && isnan(alone[i])) &&
        failure_at(c, i, "[%zu] %s=%.9g: %s %.9g (0x%08x) in the long call, %.9g (0x%08x) alone", i,
                   c->in_name[0] ? c->in_name[0] : "-", c->in[0] ? in_at(c, 0, i) : NAN, what,
                   got[i], bits_of(got[i]), alone[i], bits_of(alone[i])))
      return;
}

void check_guards(const cctx *c, const gbuf *g, const char *name) {
  if (!gb_intact(g)) failure(c, "wrote outside %s (canary changed)", name);
}
void check_unchanged(const cctx *c, const gbuf *g, const void *orig, const char *name) {
  if (g->bytes && memcmp(g->p, orig, g->bytes) != 0) failure(c, "modified its input %s", name);
  check_guards(c, g, name);
}

void finish(const char *family) {
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

float *fnew(size_t n) {
  float *p = calloc(n ? n : 1, sizeof *p);
  cr_assert_not_null(p);
  return p;
}

/* A seed per case, so every case is reproducible on its own. */
uint64_t case_seed(const char *slot, size_t a, size_t b, size_t c) {
  uint64_t h = 1469598103934665603u;
  for (const char *q = slot; *q; q++) h = (h ^ (unsigned char)*q) * 1099511628211u;
  return h ^ (a * 0x100000001b3u) ^ (b << 40) ^ (c << 52);
}
