/* The op frame: recording decisions (only the outermost op is recorded), debug mode's per-op
 * log line and NaN/Inf scan, and the profiler's hooks (Note [profiler cost] in
 * engine/profile.h: with both off, an op pays two relaxed loads and one predictable branch). */
#define _POSIX_C_SOURCE 199309L /* clock_gettime under -std=c11 */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "engine.h"
#include "engine/fpmode.h"
#include "engine/profile.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool sg__op_begin(sg_op *op, const char *name) {
  sg_ctx *c = sg__ctx();
  op->name = name;
  op->record = c->tape != NULL && c->op_depth == 0;
  op->t0 = 0;
  op->prof = false;
  op->named = c->op_name == NULL;
  if (op->named) c->op_name = name;
  sg__fpmode_enter(&op->fp); /* Note [FP mode] */
  c->op_depth++;
  /* Either mode sets t0, which sends sg__op_end down its slow path; only debug mode's log reads
     it as a time (the profiler takes its own). */
  if (__builtin_expect(sg_debug() || sg__profile_on(), 0)) {
    op->t0 = sg_debug() ? now_ns() : 1;
    if (sg__profile_on()) sg__profile_op_begin(op);
  }
  return true;
}

static int64_t first_non_finite(const sg_tensor *t) {
  if (t->dtype != SG_F32) return -1;
  const float *p = t->data;
  for (int64_t i = 0; i < t->numel; i++)
    if (!isfinite(p[i])) return i;
  return -1;
}

sg_tensor *sg__op_end(sg_op *op, sg_tensor *out) {
  sg_ctx *c = sg__ctx();
  c->op_depth--;
  if (op->named) c->op_name = NULL;
  sg__fpmode_leave(&op->fp);
  if (__builtin_expect(op->t0 == 0, 1)) return out;
  if (op->prof) sg__profile_op_end(op, out, out == NULL);
  if (!out || !sg_debug()) return out;
  /* Debug mode. Inner ops of a composite log too, indented by depth. */
  uint64_t dt = now_ns() - op->t0;
  char shape[SG_SHAPE_STR_MAX];
  sg__shape_str(out->shape, out->rank, shape, sizeof shape);
  fprintf(stderr, "simdgrad: %*s%s%s%s -> %s %s  %.3f us  [%s]\n", 2 * c->op_depth, "",
          c->path[0] ? c->path : "", c->path[0] ? " / " : "", op->name, sg__dtype_name(out->dtype),
          shape, (double)dt / 1e3, sg__backend()->name);
  int64_t bad = first_non_finite(out);
  if (bad >= 0) {
    float v = ((const float *)out->data)[bad];
    sg__error(SG_ERR_ARG, op->name, "output element %lld of shape %s is %s", (long long)bad, shape,
              isnan(v) ? "NaN" : "Inf");
    sg_dispose(out);
    return NULL;
  }
  return out;
}

sg_tensor *sg__op_fail(sg_op *op) {
  sg_ctx *c = sg__ctx();
  c->op_depth--;
  if (op->named) c->op_name = NULL;
  sg__fpmode_leave(&op->fp);
  if (__builtin_expect(op->prof, 0)) sg__profile_op_end(op, NULL, true);
  return NULL;
}
