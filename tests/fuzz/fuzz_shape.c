/* Differential fuzzer of the data-movement kernels: transpose (rank 0 to 8, any permutation,
 * any 32-bit pattern, bit for bit) and scatter_add (repeated and out-of-range indices, dyadic
 * values so that every order of the additions is exact, as its conformance contract assumes);
 * every backend of this CPU against the scalar backend. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define MAX_NUMEL 16384

static void transpose_case(fz *f) {
  int rank = (int)fz_range(f, 0, 8);
  int64_t shape[8];
  int perm[8];
  size_t numel = 1;
  for (int i = 0; i < rank; i++) {
    /* Mostly short axes (ranks up to 8 multiply fast), sometimes a long one. */
    size_t d = fz_u8(f) < 220 ? fz_range(f, 0, 5) : fz_range(f, 0, 300);
    if (d && numel * d > MAX_NUMEL) d = 1 + fz_range(f, 0, 2);
    if (d && numel * d > MAX_NUMEL) d = 1;
    shape[i] = (int64_t)d;
    numel *= d;
    perm[i] = i;
  }
  for (int i = rank - 1; i > 0; i--) { /* Fisher-Yates from the bytes */
    int j = (int)fz_range(f, 0, (size_t)i), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  size_t off[2] = {fz_range(f, 0, 15), fz_range(f, 0, 15)};
  int len =
      snprintf(fz_case, sizeof fz_case, "transpose off=(%zu,%zu) shape/perm:", off[0], off[1]);
  for (int i = 0; i < rank; i++)
    len += snprintf(fz_case + len, sizeof fz_case - (size_t)len, " %lld/%d", (long long)shape[i],
                    perm[i]);
  float *x = fz_malloc(numel * 4), *want = fz_malloc(numel * 4);
  fz_floats(f, x, numel, -10, 10, FZ_ANY | FZ_SNAN);
  fz_scalar()->transpose(x, shape, perm, rank, want);
  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    fz_buf gx = fz_buf_make(x, numel, 4, off[0]), gy = fz_buf_make(NULL, numel, 4, off[1]);
    be->transpose(fz_f(&gx), shape, perm, rank, fz_f(&gy));
    fz_buf_unchanged(&gx, x, "x");
    fz_check_bytes(be, "transpose", gy.p, want, numel, 4);
    fz_buf_free(&gx, "x");
    fz_buf_free(&gy, "y");
  }
  free(x);
  free(want);
}

static void scatter_case(fz *f) {
  size_t outer = fz_size(f, 16), nidx = fz_size(f, 300), inner = fz_size(f, 200);
  size_t ad = fz_range(f, 0, 40);
  while (outer * nidx * inner > MAX_NUMEL || outer * ad * inner > MAX_NUMEL) {
    if (nidx >= inner && nidx > 1)
      nidx /= 2;
    else if (inner > 1)
      inner /= 2;
    else
      outer /= 2;
  }
  size_t ndy = outer * nidx * inner, ndx = outer * ad * inner;
  size_t off[3] = {fz_range(f, 0, 15), fz_range(f, 0, 15), fz_range(f, 0, 15)};
  snprintf(fz_case, sizeof fz_case,
           "scatter_add outer=%zu n_idx=%zu inner=%zu axis=%zu off=(%zu,%zu,%zu)", outer, nidx,
           inner, ad, off[0], off[1], off[2]);
  opinfo_bound b = fz_bound("scatter_add");
  opinfo_range dom = fz_domain("scatter_add", false);
  float *dy = fz_malloc(ndy * 4), *dx0 = fz_malloc(ndx * 4), *want = fz_malloc(ndx * 4);
  int32_t *idx = fz_malloc(nidx * 4);
  fz_floats(f, dy, ndy, dom.lo, dom.hi, FZ_DOMAIN);
  fz_floats(f, dx0, ndx, dom.lo, dom.hi, FZ_DOMAIN);
  for (size_t i = 0; i < ndy; i++) dy[i] = roundf(dy[i] * 8) / 8;
  for (size_t i = 0; i < ndx; i++) dx0[i] = roundf(dx0[i] * 8) / 8;
  for (size_t j = 0; j < nidx; j++) {
    uint8_t k = fz_u8(f);
    /* In range mostly; just outside, or anywhere in int32, sometimes. */
    idx[j] = k < 200   ? (int32_t)fz_range(f, 0, ad ? ad - 1 : 0)
             : k < 240 ? (int32_t)fz_range(f, 0, ad + 4) - 2
                       : (int32_t)fz_u32(f);
  }
  memcpy(want, dx0, ndx * 4);
  fz_scalar()->scatter_add(dy, idx, outer, nidx, inner, ad, want);
  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    fz_buf gdy = fz_buf_make(dy, ndy, 4, off[0]), gdx = fz_buf_make(dx0, ndx, 4, off[1]);
    fz_buf gi = fz_buf_make(idx, nidx, 4, off[2]);
    be->scatter_add(fz_f(&gdy), (const int32_t *)gi.p, outer, nidx, inner, ad, fz_f(&gdx));
    fz_buf_unchanged(&gdy, dy, "dy");
    fz_buf_unchanged(&gi, idx, "idx");
    fz_check_f32(be, "scatter_add", &b, fz_f(&gdx), want, ndx, 1, NULL, NULL, NULL);
    fz_buf_free(&gdy, "dy");
    fz_buf_free(&gdx, "dx");
    fz_buf_free(&gi, "idx");
  }
  free(dy);
  free(dx0);
  free(want);
  free(idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz f = fz_make(data, size);
  if (fz_bool(&f))
    transpose_case(&f);
  else
    scatter_case(&f);
  return 0;
}
