/* What the libFuzzer harnesses of tests/fuzz/ share: a reader that turns the fuzzer's bytes into
 * sizes, choices and float values (IEEE edge values included), guarded buffers, the backends to
 * compare, and the check of a backend's result against the scalar backend's under the slot's
 * op-info contract (opinfo_conf_of, opinfo_agrees: the conformance tests' rule, not a copy).
 *
 * Every harness defines LLVMFuzzerTestOneInput. A mismatch or a broken invariant prints what it
 * saw and aborts, which libFuzzer reports as a crash and saves the input (docs/testing.md,
 * "Fuzzing"). fuzz_replay.c runs the same function over files without libFuzzer. */
#ifndef SIMDGRAD_FUZZ_H
#define SIMDGRAD_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <simdgrad/backend.h>

#include "opinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- The byte reader ---- */

/* Bytes are consumed from the front; once they run out, values come from a generator seeded by
   everything read, so a short input still describes a whole case (and the same one each run). */
typedef struct fz {
  const uint8_t *p;
  size_t n;
  uint64_t rng;
} fz;
fz fz_make(const uint8_t *data, size_t size);
uint8_t fz_u8(fz *f);
uint32_t fz_u32(fz *f);
bool fz_bool(fz *f);
/* A value in [lo, hi] (hi >= lo). */
size_t fz_range(fz *f, size_t lo, size_t hi);
/* A size: mostly small (0..70, around every vector width), sometimes up to max. */
size_t fz_size(fz *f, size_t max);

/* Kinds of float a harness accepts (or together). */
enum {
  FZ_DOMAIN = 1,  /* uniform in the slot's domain [lo, hi) */
  FZ_SPECIAL = 2, /* NaN of both signs, +-inf, +-0, denormals */
  FZ_HUGE = 4,    /* +-1e38, +-FLT_MAX */
  FZ_WIDE = 8,    /* random magnitudes 2^-149 .. 2^50 (never overflowing a product of two) */
  FZ_BITS = 16,   /* any 32 bits, every exponent; a signalling NaN is made quiet unless */
  FZ_SNAN = 32,   /* signalling NaNs stay (bit-exact moves only: docs/floating-point.md covers
                     arithmetic on quiet NaNs; libm's powf(1, sNaN) is NaN, SLEEF's 1) */
  FZ_ANY = 31
};
/* One float of the kinds allowed (FZ_DOMAIN always is). */
float fz_float(fz *f, float lo, float hi, unsigned kinds);
/* n of them, in x; each element's kind is chosen from the bytes. */
void fz_floats(fz *f, float *x, size_t n, float lo, float hi, unsigned kinds);

/* ---- Buffers ---- */

/* malloc that fails the case instead of returning NULL (0 bytes: a valid pointer). */
void *fz_malloc(size_t bytes);

/* n elements of elem bytes, `off` elements past a 64-byte boundary, the block ending exactly at
   the last element (AddressSanitizer catches a write or read past it); the off elements before
   hold a canary that fz_buf_free checks. Copies init when not NULL, else fills with 0xA5 bytes
   (NaN as floats): an element a kernel skips shows up. */
typedef struct fz_buf {
  unsigned char *mem;
  void *p;
  size_t bytes, off_bytes;
} fz_buf;
fz_buf fz_buf_make(const void *init, size_t n, size_t elem, size_t off);
static inline float *fz_f(const fz_buf *b) { return (float *)b->p; }
/* Aborts if the canary before the buffer changed; frees. */
void fz_buf_free(fz_buf *b, const char *what);
/* Aborts if the buffer no longer holds want (an input a kernel must not write). */
void fz_buf_unchanged(const fz_buf *b, const void *want, const char *what);

/* ---- Backends and checks ---- */

/* The backends this CPU and build have, scalar first (NULL-terminated; scalar is compared with
   itself too, which checks its in-place and guard behaviour). */
const sg_backend *const *fz_backends(void);
const sg_backend *fz_scalar(void);

/* The contract of slot (aborts when it has none: every slot a harness runs must have a row). */
opinfo_bound fz_bound(const char *slot);
/* The domain of slot's first (b: second) float input. */
opinfo_range fz_domain(const char *slot, bool b);

/* The case being checked, printed with a failure. */
extern char fz_case[512];
/* Compares n floats of backend be's result got against the scalar want under bound b, r the
   reduced length, scale[i] (NULL: 1) the abs bound's magnitude, tiny_by[i] (NULL: 1) what the
   tiny bound scales with; skip[i] (NULL: none) marks elements outside the contract. Aborts
   with the first disagreement. */
void fz_check_f32(const sg_backend *be, const char *slot, const opinfo_bound *b, const float *got,
                  const float *want, size_t n, double r, const double *scale, const double *tiny_by,
                  const bool *skip);
/* Byte-exact comparison of n elements of elem bytes. */
void fz_check_bytes(const sg_backend *be, const char *slot, const void *got, const void *want,
                    size_t n, size_t elem);
/* Prints fz_case and the message, then aborts. */
_Noreturn void fz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define FZ_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#endif /* SIMDGRAD_FUZZ_H */
