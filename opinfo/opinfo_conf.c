/* The conformance contract of a kernel slot and the rule that says whether a result meets it:
 * the one definition the conformance tests (tests/support_conformance.c) and the differential
 * fuzzers (tests/fuzz/) share. Plain C and libm, no test framework. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "opinfo.h"

/* The contract of the op-info row named name, NULL when there is none. */
static const opinfo_conf *find_conf(const char *name) {
  const opinfo_unary *u = opinfo_unary_find(name);
  const opinfo_binary *b = opinfo_binary_find(name);
  const opinfo_kernel *k = opinfo_kernel_find(name);
  return u ? &u->conf : b ? &b->conf : k && k->has_conf ? &k->conf : NULL;
}

const opinfo_conf *opinfo_conf_of(const char *slot, bool *backward) {
  *backward = false;
  const opinfo_conf *conf = find_conf(slot);
  if (conf) return conf;
  size_t len = strlen(slot), suffix = strlen("_backward");
  if (len <= suffix || strcmp(slot + len - suffix, "_backward") != 0) return NULL;
  char op[80];
  snprintf(op, sizeof op, "%.*s", (int)(len - suffix), slot);
  conf = find_conf(op);
  *backward = conf != NULL;
  return conf;
}

/* Distance in representable floats, with -0 and +0 one apart. */
static int64_t ordered(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u & 0x80000000u ? -(int64_t)(u & 0x7fffffffu) - 1 : (int64_t)u;
}
double opinfo_ulp_distance(float a, float b) {
  if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) ? 0 : INFINITY;
  if (isinf(a) || isinf(b)) return a == b ? 0 : INFINITY;
  int64_t d = ordered(a) - ordered(b);
  return (double)(d < 0 ? -d : d);
}

bool opinfo_agrees(const opinfo_bound *b, float got, float want, double r, double scale,
                   double tscale) {
  if (isnan(got) || isnan(want)) return isnan(got) && isnan(want);
  if (b->zero_any && got == 0.0f && want == 0.0f) return true;
  double g = sqrt(r > 1 ? r : 1);
  if (opinfo_ulp_distance(got, want) <= b->ulp + b->grow * g) return true;
  if (!isfinite(got) || !isfinite(want)) return false;
  double diff = fabs((double)got - want);
  if (b->tiny > 0 && diff <= b->tiny * FLT_TRUE_MIN * tscale) return true;
  return b->abs > 0 && diff <= (b->abs + b->grow * g) * FLT_EPSILON * scale;
}
