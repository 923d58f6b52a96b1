/* Differential fuzzer of the unary slots: SG_FOR_EACH_UNARY_OP (forward and backward),
 * SG_FOR_EACH_STEP_OP, leaky_relu and clip (forward and backward). Each input picks one slot,
 * a length, pointer offsets, in place or not, the parameters and the values (NaN, infinities,
 * denormals and huge values among them); every backend of this CPU runs it and must agree with
 * the scalar backend under the slot's conformance contract. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "slot_lists.h"

static const uslot k_unary[] = {SG_FOR_EACH_UNARY_OP(U_ENTRY_)};
static const uslot k_step[] = {SG_FOR_EACH_STEP_OP(S_ENTRY_)};

#define MAX_N 4100

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz f = fz_make(data, size);
  size_t nu = FZ_COUNT(k_unary), ns = FZ_COUNT(k_step);
  size_t pick = fz_range(&f, 0, nu + ns + 2 - 1);
  ucall u = {0};
  if (pick < nu)
    u = (ucall){
        k_unary[pick].name, k_unary[pick].fwd, k_unary[pick].bwd, k_unary[pick].saved, 0, 0, 0};
  else if (pick < nu + ns)
    u = (ucall){k_step[pick - nu].name, k_step[pick - nu].fwd, 0, SV_NONE, 0, 0, 0};
  else if (pick == nu + ns)
    u = (ucall){"leaky_relu", 0, 1, SV_X, 1, 0, 0};
  else
    u = (ucall){"clip", 0, 1, SV_X, 2, 0, 0};
  bool backward = u.bwd != 0 && fz_bool(&f);
  /* The parameters: finite (the engine rejects others before a kernel sees them), clip's
     bounds ordered, signed zeros and lo == hi included. */
  if (u.param) {
    u.p0 = fz_float(&f, -3, 3, FZ_SPECIAL | FZ_WIDE);
    u.p1 = fz_float(&f, -3, 3, FZ_SPECIAL | FZ_WIDE);
    if (!isfinite(u.p0)) u.p0 = 0.5f;
    if (!isfinite(u.p1)) u.p1 = -0.0f;
    if (u.param == 2 && u.p1 < u.p0) {
      float t = u.p0;
      u.p0 = u.p1;
      u.p1 = t;
    }
  }
  size_t n = fz_size(&f, MAX_N);
  size_t off[4];
  for (int i = 0; i < 4; i++) off[i] = fz_range(&f, 0, 15);
  bool inplace = fz_bool(&f);
  char slot[96];
  snprintf(slot, sizeof slot, "%s%s", u.slot, backward ? "_backward" : "");
  opinfo_bound b = fz_bound(slot);
  opinfo_range dom = fz_domain(u.slot, false);
  snprintf(fz_case, sizeof fz_case, "%s n=%zu off=(%zu,%zu,%zu,%zu)%s p=(%g,%g)", slot, n, off[0],
           off[1], off[2], off[3], inplace ? " in place" : "", u.p0, u.p1);

  float *x = malloc((n ? n : 1) * sizeof *x), *y = malloc((n ? n : 1) * sizeof *y);
  float *dy = malloc((n ? n : 1) * sizeof *dy), *want = malloc((n ? n : 1) * sizeof *want);
  double *scale = malloc((n ? n : 1) * sizeof *scale), *tiny = malloc((n ? n : 1) * sizeof *tiny);
  fz_floats(&f, x, n, dom.lo, dom.hi, FZ_ANY);
  const sg_backend *ref = fz_scalar();
  if (!backward) {
    ucall_fwd(ref, &u, x, want, n);
  } else {
    fz_floats(&f, dy, n, -1, 1, FZ_ANY);
    ucall_fwd(ref, &u, x, y, n);
    for (size_t i = 0; i < n; i++) {
      scale[i] = fabs(dy[i]) * (b.mag ? b.mag(x[i]) : 1);
      tiny[i] = fabs(dy[i]);
    }
    /* The saved tensor the op list does not name is passed as NULL: kernels must not read it. */
    ucall_bwd(ref, &u, dy, u.saved == SV_X ? x : NULL, u.saved == SV_Y ? y : NULL, want, n);
  }
  for (const sg_backend *const *bp = fz_backends(); *bp; bp++) {
    const sg_backend *be = *bp;
    if (!backward) {
      fz_buf gx = fz_buf_make(x, n, 4, off[0]), gy = fz_buf_make(NULL, n, 4, off[1]);
      float *out = inplace ? fz_f(&gx) : fz_f(&gy);
      ucall_fwd(be, &u, fz_f(&gx), out, n);
      if (!inplace) fz_buf_unchanged(&gx, x, "x");
      fz_check_f32(be, slot, &b, out, want, n, 1, NULL, NULL, NULL);
      fz_buf_free(&gx, "x");
      fz_buf_free(&gy, "y");
    } else {
      fz_buf gdy = fz_buf_make(dy, n, 4, off[0]), gx = fz_buf_make(x, n, 4, off[1]);
      fz_buf gy = fz_buf_make(y, n, 4, off[2]), gdx = fz_buf_make(NULL, n, 4, off[3]);
      float *dx = inplace ? fz_f(&gdy) : fz_f(&gdx);
      ucall_bwd(be, &u, fz_f(&gdy), u.saved == SV_X ? fz_f(&gx) : NULL,
                u.saved == SV_Y ? fz_f(&gy) : NULL, dx, n);
      if (!inplace) fz_buf_unchanged(&gdy, dy, "dy");
      fz_buf_unchanged(&gx, x, "x");
      fz_buf_unchanged(&gy, y, "y");
      fz_check_f32(be, slot, &b, dx, want, n, 1, scale, tiny, NULL);
      fz_buf_free(&gdy, "dy");
      fz_buf_free(&gx, "x");
      fz_buf_free(&gy, "y");
      fz_buf_free(&gdx, "dx");
    }
  }
  free(x);
  free(y);
  free(dy);
  free(want);
  free(scale);
  free(tiny);
  return 0;
}
