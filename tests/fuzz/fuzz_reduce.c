/* Differential fuzzer of the row kernels: SG_FOR_EACH_REDUCE_OP (forward and backward), argmax,
 * argmin, softmax and log_softmax (forward and backward, in place too), over fuzzed [outer, r,
 * inner] shapes, offsets and values; every backend of this CPU against the scalar backend under
 * the slot's conformance contract, with the conformance tests' magnitudes for the abs bounds. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "slot_lists.h"

static const bslot k_reduce[] = {SG_FOR_EACH_REDUCE_OP(R_ENTRY_)};

#define MAX_NUMEL 8192

enum { K_REDUCE, K_ARG, K_SOFTMAX };

static size_t at3(size_t o, size_t j, size_t i, size_t r, size_t inner) {
  return (o * r + j) * inner + i;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz f = fz_make(data, size);
  size_t nr = FZ_COUNT(k_reduce);
  size_t pick = fz_range(&f, 0, nr + 2 + 2 - 1);
  int kind = pick < nr ? K_REDUCE : pick < nr + 2 ? K_ARG : K_SOFTMAX;
  bool log_form = pick == nr + 3;
  const char *name = kind == K_REDUCE ? k_reduce[pick].name
                     : kind == K_ARG  ? (pick == nr ? "argmax" : "argmin")
                                      : (log_form ? "log_softmax" : "softmax");
  bool backward = kind != K_ARG && fz_bool(&f);
  size_t outer = fz_size(&f, 64), r = fz_size(&f, 600), inner = fz_size(&f, 64);
  if (kind == K_ARG && r == 0) r = 1; /* the ABI needs r >= 1 */
  /* Keep the case small: shrink the largest extent until it fits. */
  while (outer * r * inner > MAX_NUMEL) {
    if (r >= outer && r >= inner)
      r /= 2;
    else if (outer >= inner)
      outer /= 2;
    else
      inner /= 2;
  }
  size_t numel = outer * r * inner, nout = outer * inner;
  size_t off[5];
  for (int i = 0; i < 5; i++) off[i] = fz_range(&f, 0, 15);
  bool inplace = kind == K_SOFTMAX && fz_bool(&f);
  char slot[96];
  snprintf(slot, sizeof slot, "%s%s", name, backward ? "_backward" : "");
  opinfo_bound b = fz_bound(slot);
  opinfo_range dom = fz_domain(name, false);
  snprintf(fz_case, sizeof fz_case, "%s [%zu, %zu, %zu] off=(%zu,%zu,%zu,%zu,%zu)%s", slot, outer,
           r, inner, off[0], off[1], off[2], off[3], off[4], inplace ? " in place" : "");

  /* y and dy hold [outer, inner] for a reduction, which is more than numel when r is 0. */
  size_t nbig = numel > nout ? numel : nout;
  float *x = fz_malloc(numel * 4), *y = fz_malloc(nbig * 4), *dy = fz_malloc(nbig * 4);
  float *dxw = fz_malloc(numel * 4);
  int32_t *iwant = fz_malloc(nout * 4);
  double *scale = fz_malloc(nbig * sizeof *scale), *bscale = fz_malloc(numel * sizeof *bscale);
  bool *skip = fz_malloc(nbig);
  memset(skip, 0, nbig ? nbig : 1);
  /* One kind of edge value per case keeps most rows from turning NaN (which would hide the
     rest); ties come from small integers. */
  static const unsigned kinds_of[] = {FZ_DOMAIN, FZ_SPECIAL, FZ_HUGE, FZ_WIDE, FZ_ANY};
  unsigned kinds = kinds_of[fz_range(&f, 0, FZ_COUNT(kinds_of) - 1)];
  bool ties = fz_u8(&f) < 64;
  fz_floats(&f, x, numel, dom.lo, dom.hi, kinds);
  if (ties)
    for (size_t i = 0; i < numel; i++)
      if (isfinite(x[i]) && fabsf(x[i]) < 1e6f) x[i] = roundf(x[i]);
  size_t ndy = kind == K_REDUCE ? nout : numel;
  fz_floats(&f, dy, ndy, -8, 8, kind == K_SOFTMAX ? FZ_DOMAIN | FZ_SPECIAL : FZ_DOMAIN);
  const sg_backend *ref = fz_scalar();
  bool is_sum = strcmp(name, "reduce_sum") == 0, is_lse = strcmp(name, "reduce_logsumexp") == 0;

  if (kind == K_REDUCE) {
    const bslot *s = &k_reduce[pick];
    SLOT(ref, sg_reduce_kernel, s->fwd)(x, outer, r, inner, y);
    if (backward) SLOT(ref, sg_reduce_backward_kernel, s->bwd)(dy, x, y, outer, r, inner, dxw);
    /* The magnitudes: a sum's is the row's sum of |x|, held to 2 (r + 2) eps of it (recursive
       summation's worst case, twice; the conformance tests' bound off the grid); logsumexp's
       1 + max |x|. A row whose sum of |x| overflows may round to inf or not, depending on the
       order of the additions: outside the contract. */
    if (is_sum) b.abs = 2.0 * ((double)r + 2);
    for (size_t o = 0; o < outer; o++)
      for (size_t i = 0; i < inner; i++) {
        double sa = 0, mx = 0;
        for (size_t j = 0; j < r; j++) {
          double v = x[at3(o, j, i, r, inner)];
          if (isfinite(v)) {
            sa += fabs(v);
            if (fabs(v) > mx) mx = fabs(v);
          }
        }
        scale[o * inner + i] = is_sum ? sa : is_lse ? 1 + mx : 1;
        skip[o * inner + i] = is_sum && sa > FLT_MAX / 2;
        for (size_t j = 0; j < r; j++) bscale[at3(o, j, i, r, inner)] = fabs(dy[o * inner + i]);
      }
    for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
      const sg_backend *be = *bp;
      fz_buf gx = fz_buf_make(x, numel, 4, off[0]), gy = fz_buf_make(NULL, nout, 4, off[1]);
      if (!backward) {
        SLOT(be, sg_reduce_kernel, s->fwd)(fz_f(&gx), outer, r, inner, fz_f(&gy));
        fz_buf_unchanged(&gx, x, "x");
        fz_check_f32(be, slot, &b, fz_f(&gy), y, nout, (double)r, scale, NULL, skip);
      } else {
        /* Backward from the scalar forward's y. */
        fz_buf gdy = fz_buf_make(dy, nout, 4, off[2]), gw = fz_buf_make(y, nout, 4, off[3]);
        fz_buf gdx = fz_buf_make(NULL, numel, 4, off[4]);
        SLOT(be, sg_reduce_backward_kernel, s->bwd)
        (fz_f(&gdy), fz_f(&gx), fz_f(&gw), outer, r, inner, fz_f(&gdx));
        fz_buf_unchanged(&gdy, dy, "dy");
        fz_buf_unchanged(&gx, x, "x");
        fz_buf_unchanged(&gw, y, "y");
        fz_check_f32(be, slot, &b, fz_f(&gdx), dxw, numel, 1, bscale, bscale, NULL);
        fz_buf_free(&gdy, "dy");
        fz_buf_free(&gw, "y");
        fz_buf_free(&gdx, "dx");
      }
      fz_buf_free(&gx, "x");
      fz_buf_free(&gy, "y");
    }
  } else if (kind == K_ARG) {
    size_t slot_off = pick == nr ? offsetof(sg_backend, argmax) : offsetof(sg_backend, argmin);
    SLOT(ref, sg_arg_reduce_kernel, slot_off)(x, outer, r, inner, iwant);
    for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
      const sg_backend *be = *bp;
      fz_buf gx = fz_buf_make(x, numel, 4, off[0]), gy = fz_buf_make(NULL, nout, 4, off[1]);
      SLOT(be, sg_arg_reduce_kernel, slot_off)(fz_f(&gx), outer, r, inner, (int32_t *)gy.p);
      fz_buf_unchanged(&gx, x, "x");
      fz_check_bytes(be, slot, gy.p, iwant, nout, 4);
      fz_buf_free(&gx, "x");
      fz_buf_free(&gy, "y");
    }
  } else {
    sg_softmax_kernel rf = log_form ? ref->log_softmax : ref->softmax;
    sg_softmax_backward_kernel rb = log_form ? ref->log_softmax_backward : ref->softmax_backward;
    rf(x, outer, r, inner, y);
    if (backward) rb(dy, y, outer, r, inner, dxw);
    /* The magnitudes of the abs bounds: 1 + |y|; softmax backward |y| (|dy| + sum |dy y|),
       log_softmax backward |dy| + e^y sum |dy|. */
    for (size_t o = 0; o < outer; o++)
      for (size_t i = 0; i < inner; i++) {
        double s = 0;
        for (size_t j = 0; j < r; j++) {
          size_t at = at3(o, j, i, r, inner);
          s += log_form ? fabs(dy[at]) : fabs((double)dy[at] * y[at]);
        }
        for (size_t j = 0; j < r; j++) {
          size_t at = at3(o, j, i, r, inner);
          scale[at] = 1 + fabs(y[at]);
          bscale[at] = log_form ? fabs(dy[at]) + exp(y[at]) * s : fabs(y[at]) * (fabs(dy[at]) + s);
        }
      }
    for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
      const sg_backend *be = *bp;
      sg_softmax_kernel fw = log_form ? be->log_softmax : be->softmax;
      sg_softmax_backward_kernel bw = log_form ? be->log_softmax_backward : be->softmax_backward;
      if (!backward) {
        fz_buf gx = fz_buf_make(x, numel, 4, off[0]), gy = fz_buf_make(NULL, numel, 4, off[1]);
        float *out = inplace ? fz_f(&gx) : fz_f(&gy);
        fw(fz_f(&gx), outer, r, inner, out);
        if (!inplace) fz_buf_unchanged(&gx, x, "x");
        fz_check_f32(be, slot, &b, out, y, numel, (double)r, scale, NULL, NULL);
        fz_buf_free(&gx, "x");
        fz_buf_free(&gy, "y");
      } else {
        fz_buf gdy = fz_buf_make(dy, numel, 4, off[2]), gyy = fz_buf_make(y, numel, 4, off[3]);
        fz_buf gdx = fz_buf_make(NULL, numel, 4, off[4]);
        float *dx = inplace ? fz_f(&gdy) : fz_f(&gdx);
        bw(fz_f(&gdy), fz_f(&gyy), outer, r, inner, dx);
        if (!inplace) fz_buf_unchanged(&gdy, dy, "dy");
        fz_buf_unchanged(&gyy, y, "y");
        fz_check_f32(be, slot, &b, dx, dxw, numel, (double)r, bscale, NULL, NULL);
        fz_buf_free(&gdy, "dy");
        fz_buf_free(&gyy, "y");
        fz_buf_free(&gdx, "dx");
      }
    }
  }
  free(x);
  free(y);
  free(dy);
  free(dxw);
  free(iwant);
  free(scale);
  free(bscale);
  free(skip);
  return 0;
}
