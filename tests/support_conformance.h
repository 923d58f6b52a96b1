/* The cross-backend conformance harness, shared by the tests/test_conformance_<family>.c
 * binaries: every kernel slot of every available backend against the scalar backend's kernel
 * for the same slot, on awkward sizes (empty, one element, around the vector widths, large), on
 * pointers offset by 0..15 floats, in place where the ABI allows it, and with IEEE edge values
 * (NaN, +-inf, +-0, denormals, +-1e38) in the vector body and in the tail.
 *
 * Each slot's contract (input domain, ULP and absolute bounds) is its row's .conf in the op-info
 * tables (opinfo/opinfo.h); a slot without one fails (tol_for), there is no default. Tolerances
 * are ULP distances from the scalar result (0 = bit-exact, sign of zero included; NaN must match
 * NaN), with an absolute floor for results near a zero of the function. Every output has
 * canaries on both sides (a write outside [0, n) fails), every input is checked unchanged
 * afterwards, and outputs start as garbage (an element the kernel skips fails). The scalar
 * backend is a candidate too, so its in-place and canary behaviour is checked even on a CPU
 * without SIMD; a backend the CPU lacks is skipped. docs/floating-point.md explains the policy
 * this enforces; docs/accuracy.md has the accuracy against double precision. */
#ifndef SIMDGRAD_TEST_SUPPORT_CONFORMANCE_H
#define SIMDGRAD_TEST_SUPPORT_CONFORMANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "opinfo.h"
#include "slot_lists.h"
#include "support.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* One slot's contract against scalar, flattened from its op-info row (opinfo_bound says how a
   result passes): lo..hi is the domain of the first float input in the clean pass, blo..bhi the
   second's when not 0..0. */
typedef struct tol {
  const char *slot;
  float lo, hi, blo, bhi;
  double ulp, grow, abs;
  bool zero_any;
  double tiny;
  double (*mag)(double x);
} tol;
/* The contract of a slot: its op-info row's forward bound, or for "<op>_backward" the backward
   bound of op's row. Fails the test when there is no row. */
const tol *tol_for(const char *slot);

/* Candidates: every backend the CPU and build have. */
extern const char *const k_backends[4];
#define FOR_EACH_BACKEND(be)                                                                       \
  for (size_t bi_ = 0; bi_ < COUNT(k_backends); bi_++)                                             \
    for (const sg_backend *be = sg_backend_get(k_backends[bi_]); be; be = NULL)
const sg_backend *ref_backend(void);

/* ---- Sizes, offsets, inputs ---- */

#define N_SIZES 12
extern const size_t k_sizes[N_SIZES];
#define BIG 1000 /* from here on only a few offsets and passes */
/* Pointer offsets in floats: all of 0..15 on small sizes, a few on big ones. */
size_t n_offsets(size_t n);
size_t offset_at(size_t n, size_t k);
/* Each operand gets its own offset, so inputs and outputs are misaligned to each other too. */
size_t off_of(size_t base, int operand);

typedef enum { P_CLEAN, P_SPECIAL, P_WIDE, P_COUNT } pass_kind;
extern const char *const k_pass_names[P_COUNT];
int n_passes(size_t n);

/* A xorshift generator; seed(case_seed(...)) makes every case reproducible on its own. */
void seed(uint64_t s);
uint64_t case_seed(const char *slot, size_t a, size_t b, size_t c);
uint64_t next_u64(void);
double unif(void);
float uniform(float lo, float hi);
float from_bits(uint32_t u);
uint32_t bits_of(float f);

/* The edge values: NaN of both signs, infinities, signed zeros, denormals, huge values. */
#define N_SPECIALS 12
float special(size_t k);
/* Writes edge values at the head, the middle and the last elements, rotated by rot. */
void inject(float *x, size_t n, size_t rot);
/* n values of a pass: uniform in [lo, hi) (P_CLEAN), with edge values (P_SPECIAL), or random
   magnitudes over the whole float range with edge values (P_WIDE). */
void gen(float *x, size_t n, float lo, float hi, int pass, size_t rot);
/* calloc'ed floats (at least one); fails the test when out of memory. */
float *fnew(size_t n);

/* ---- Guarded buffers ---- */

/* An output or input living at `off` bytes past a 64-byte boundary, with canary bytes on both
   sides; outputs start as canary too (an element the kernel skips then fails the comparison). */
typedef struct gbuf {
  unsigned char *mem, *p;
  size_t bytes, total, cap;
} gbuf;
gbuf gb_make(size_t bytes, size_t off_bytes);
gbuf gb_floats(const float *init, size_t n, size_t off);
float *gf(const gbuf *g);
void gb_free(gbuf *g);

/* ---- Comparison and reporting ---- */

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

void ctx_init(cctx *c, const sg_backend *be, const char *slot, const char *pass, const char *fmt,
              ...);
void ctx_input(cctx *c, int k, const char *name, const float *p, size_t step);
static inline float in_at(const cctx *c, int k, size_t i) { return c->in[k][i * c->step[k]]; }

/* Records one failure of the case at element i (SIZE_MAX: not an element). Returns false when a
   known bug covers it (the caller keeps looking). */
bool failure_at(const cctx *c, size_t i, const char *fmt, ...);
#define failure(c, ...) failure_at((c), SIZE_MAX, __VA_ARGS__)

/* Distance in representable floats, with -0 and +0 one apart. */
double ulp_distance(float a, float b);
/* got against want under t, with r the reduced length and scale the abs bound's magnitude. */
bool agrees(float got, float want, const tol *t, double r, double scale, double tscale);
/* Compares n floats; scale[i] (NULL: 1) is the abs bound's magnitude at i. */
void check_f32(const cctx *c, const tol *t, const float *got, const float *want, size_t n, double r,
               const double *scale);
void check_bytes(const cctx *c, const void *got, const void *want, size_t bytes, size_t elem);
/* A kernel's loops against its one-element calls (the masked tail), as the unary and binary
   conformance tests check them: whether element i of a call of n is compared (every element up
   to BIG, beyond every 1009th and the first and last 64), and got (the long call) against alone
   (one-element calls) bit for bit, NaN matching NaN (which NaN an x86 operation returns depends
   on its operand order); a failure shows the case's first input at the element. */
bool loops_sampled(size_t i, size_t n);
void check_same_bits(const cctx *c, const char *what, const float *got, const float *alone,
                     size_t n);
void check_guards(const cctx *c, const gbuf *g, const char *name);
void check_unchanged(const cctx *c, const gbuf *g, const void *orig, const char *name);
/* Prints each failure group's first message and asserts that no case failed. */
void finish(const char *family);

#endif /* SIMDGRAD_TEST_SUPPORT_CONFORMANCE_H */
