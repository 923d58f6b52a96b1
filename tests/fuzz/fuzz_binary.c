/* Differential fuzzer of the binary slots: SG_FOR_EACH_BINARY_OP (forward and backward),
 * SG_FOR_EACH_COMPARE_OP, where, where_backward and fill, with either operand broadcast (step
 * 0), in place where the ABI allows it, on fuzzed lengths, offsets and values; every backend of
 * this CPU against the scalar backend under the slot's conformance contract. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "slot_lists.h"

static const bslot k_binary[] = {SG_FOR_EACH_BINARY_OP(B_ENTRY_)};
static const bslot k_compare[] = {SG_FOR_EACH_COMPARE_OP(C_ENTRY_)};

#define MAX_N 4100

enum { K_BINARY, K_BINARY_BWD, K_COMPARE, K_WHERE, K_WHERE_BWD, K_FILL };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz f = fz_make(data, size);
  size_t nb = FZ_COUNT(k_binary), nc = FZ_COUNT(k_compare);
  size_t pick = fz_range(&f, 0, 2 * nb + nc + 3 - 1);
  int kind;
  const bslot *s = NULL;
  const char *name;
  if (pick < 2 * nb) {
    kind = pick % 2 ? K_BINARY_BWD : K_BINARY;
    s = &k_binary[pick / 2];
    name = s->name;
  } else if (pick < 2 * nb + nc) {
    kind = K_COMPARE;
    s = &k_compare[pick - 2 * nb];
    name = s->name;
  } else {
    static const int last[] = {K_WHERE, K_WHERE_BWD, K_FILL};
    static const char *const names[] = {"where", "where", "fill"};
    kind = last[pick - 2 * nb - nc];
    name = names[pick - 2 * nb - nc];
  }
  size_t n = fz_size(&f, MAX_N);
  size_t a_step = fz_bool(&f), b_step = fz_bool(&f), c_step = fz_bool(&f);
  size_t na = a_step ? n : 1, nbv = b_step ? n : 1, ncv = c_step ? n : 1;
  size_t off[6];
  for (int i = 0; i < 6; i++) off[i] = fz_range(&f, 0, 15);
  int variant = (int)fz_range(&f, 0, 3); /* in place, or which outputs */
  char slot[96];
  snprintf(slot, sizeof slot, "%s%s", name,
           kind == K_BINARY_BWD || kind == K_WHERE_BWD ? "_backward" : "");
  opinfo_bound b = fz_bound(slot);
  opinfo_range da_dom = fz_domain(name, false), db_dom = fz_domain(name, true);
  snprintf(fz_case, sizeof fz_case,
           "%s n=%zu steps=(a %zu, b %zu, c %zu) off=(%zu,%zu,%zu,%zu,%zu,%zu) v=%d", slot, n,
           a_step, b_step, c_step, off[0], off[1], off[2], off[3], off[4], off[5], variant);

  float *a = fz_malloc(na * 4), *bv = fz_malloc(nbv * 4), *dy = fz_malloc(n * 4);
  float *want = fz_malloc(n * 4), *wa = fz_malloc(n * 4), *wb = fz_malloc(n * 4),
        *y = fz_malloc(n * 4);
  uint8_t *cond = fz_malloc(ncv), *wcmp = fz_malloc(n);
  double *scale = fz_malloc(n * sizeof *scale);
  /* Ties are common with small integers: the first bytes decide whether to round. */
  bool ties = fz_u8(&f) < 64;
  fz_floats(&f, a, na, da_dom.lo, da_dom.hi, FZ_ANY);
  fz_floats(&f, bv, nbv, db_dom.lo, db_dom.hi, FZ_ANY);
  if (ties) {
    for (size_t i = 0; i < na; i++)
      if (isfinite(a[i]) && fabsf(a[i]) < 1e6f) a[i] = roundf(a[i] * 2) / 2;
    for (size_t i = 0; i < nbv; i++)
      if (isfinite(bv[i]) && fabsf(bv[i]) < 1e6f) bv[i] = roundf(bv[i] * 2) / 2;
  }
  fz_floats(&f, dy, n, -1, 1, FZ_ANY);
  for (size_t i = 0; i < ncv; i++) cond[i] = fz_u8(&f) % 4 == 0 ? fz_u8(&f) : fz_u8(&f) & 1;
  for (size_t i = 0; i < n; i++) scale[i] = fabs(dy[i]);
  float fill_v = fz_float(&f, -10, 10, FZ_ANY | FZ_SNAN);
  bool needs_y = s && strcmp(name, "pow") == 0;
  const sg_backend *ref = fz_scalar();
  switch (kind) {
  case K_BINARY:
    SLOT(ref, sg_binary_kernel, s->fwd)(a, a_step, bv, b_step, want, n);
    break;
  case K_BINARY_BWD:
    SLOT(ref, sg_binary_kernel, s->fwd)(a, a_step, bv, b_step, y, n);
    SLOT(ref, sg_binary_backward_kernel, s->bwd)
    (dy, a, a_step, bv, b_step, needs_y ? y : NULL, wa, wb, n);
    break;
  case K_COMPARE:
    SLOT(ref, sg_compare_kernel, s->fwd)(a, a_step, bv, b_step, wcmp, n);
    break;
  case K_WHERE:
    ref->where(cond, c_step, a, a_step, bv, b_step, want, n);
    break;
  case K_WHERE_BWD:
    ref->where_backward(dy, cond, c_step, wa, wb, n);
    break;
  default:
    ref->fill(want, n, fill_v);
    break;
  }
  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    fz_buf ga = fz_buf_make(a, na, 4, off[0]), gb = fz_buf_make(bv, nbv, 4, off[1]);
    fz_buf gdy = fz_buf_make(dy, n, 4, off[2]), gy = fz_buf_make(y, n, 4, off[3]);
    fz_buf go1 = fz_buf_make(NULL, n, 4, off[4]), go2 = fz_buf_make(NULL, n, 4, off[5]);
    fz_buf gc = fz_buf_make(cond, ncv, 1, off[5]);
    switch (kind) {
    case K_BINARY: {
      /* variant 1: y over a contiguous a (or b when a is broadcast). */
      bool inplace = variant == 1 && (a_step || b_step);
      float *out = !inplace ? fz_f(&go1) : a_step ? fz_f(&ga) : fz_f(&gb);
      SLOT(be, sg_binary_kernel, s->fwd)(fz_f(&ga), a_step, fz_f(&gb), b_step, out, n);
      if (out != fz_f(&ga)) fz_buf_unchanged(&ga, a, "a");
      if (out != fz_f(&gb)) fz_buf_unchanged(&gb, bv, "b");
      fz_check_f32(be, slot, &b, out, want, n, 1, NULL, NULL, NULL);
      break;
    }
    case K_BINARY_BWD:
    case K_WHERE_BWD: {
      /* 0: da and db; 1: da only; 2: db only; 3: da over dy (in place), db apart. */
      float *da = variant == 2 ? NULL : variant == 3 ? fz_f(&gdy) : fz_f(&go1);
      float *db = variant == 1 ? NULL : fz_f(&go2);
      if (kind == K_BINARY_BWD) SLOT(be, sg_binary_backward_kernel, s->bwd)
      (fz_f(&gdy), fz_f(&ga), a_step, fz_f(&gb), b_step, needs_y ? fz_f(&gy) : NULL, da, db, n);
      else be->where_backward(fz_f(&gdy), gc.p, c_step, da, db, n);
      if (variant != 3) fz_buf_unchanged(&gdy, dy, "dy");
      fz_buf_unchanged(&ga, a, "a");
      fz_buf_unchanged(&gb, bv, "b");
      fz_buf_unchanged(&gc, cond, "c");
      if (da) fz_check_f32(be, slot, &b, da, wa, n, 1, scale, NULL, NULL);
      if (db) fz_check_f32(be, slot, &b, db, wb, n, 1, scale, NULL, NULL);
      break;
    }
    case K_COMPARE:
      SLOT(be, sg_compare_kernel, s->fwd)(fz_f(&ga), a_step, fz_f(&gb), b_step, go1.p, n);
      fz_buf_unchanged(&ga, a, "a");
      fz_buf_unchanged(&gb, bv, "b");
      fz_check_bytes(be, slot, go1.p, wcmp, n, 1);
      break;
    case K_WHERE: {
      bool inplace = variant == 1 && a_step;
      float *out = inplace ? fz_f(&ga) : fz_f(&go1);
      be->where(gc.p, c_step, fz_f(&ga), a_step, fz_f(&gb), b_step, out, n);
      if (!inplace) fz_buf_unchanged(&ga, a, "a");
      fz_buf_unchanged(&gb, bv, "b");
      fz_buf_unchanged(&gc, cond, "c");
      fz_check_f32(be, slot, &b, out, want, n, 1, NULL, NULL, NULL);
      break;
    }
    default:
      be->fill(fz_f(&go1), n, fill_v);
      fz_check_bytes(be, slot, go1.p, want, n, 4);
      break;
    }
    fz_buf_free(&ga, "a");
    fz_buf_free(&gb, "b");
    fz_buf_free(&gdy, "dy");
    fz_buf_free(&gy, "y");
    fz_buf_free(&go1, "the output");
    fz_buf_free(&go2, "the second output");
    fz_buf_free(&gc, "c");
  }
  free(a);
  free(bv);
  free(dy);
  free(want);
  free(wa);
  free(wb);
  free(y);
  free(cond);
  free(wcmp);
  free(scale);
  return 0;
}
