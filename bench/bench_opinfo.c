/* Per-op figures the benchmarks need beyond the kernel ABI, read from the op-info tables
 * (opinfo/opinfo.h) that the tests and the accuracy report read too: input ranges inside each
 * op's domain, and nominal FLOPs per element for the FLOP/s and roofline counters.
 *
 * Counting rule (docs/bench.md): each +, -, *, /, comparison, min or max in the op's formula is
 * one FLOP; sqrt is one; a transcendental function (exp, log, tanh, erf, sin, pow, ...) is
 * charged OPINFO_TRANSC, about what a vectorised polynomial implementation executes (range
 * reduction plus a degree 6-8 polynomial in FMAs). A slot without FLOPs in the tables is an
 * error (tests/test_opinfo.c checks every slot of backend.h's lists has them). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "engine/cpu.h"
#include "opinfo.h"

static bool g_range_set;
static opinfo_range g_range;

bool bench_set_input_range(const char *text) {
  char *end;
  if (isspace((unsigned char)*text)) return false;
  float lo = strtof(text, &end);
  if (end == text || *end != ',' || isspace((unsigned char)end[1])) return false;
  const char *rest = end + 1;
  float hi = strtof(rest, &end);
  /* The buffers draw lo + (hi - lo) u: the width must be finite too. */
  if (end == rest || *end || !isfinite(lo) || !isfinite(hi) || !(lo < hi) || !isfinite(hi - lo))
    return false;
  g_range = (opinfo_range){lo, hi};
  g_range_set = true;
  return true;
}

void bench_op_range(const char *op, int i, float *lo, float *hi) {
  const opinfo_unary *u = opinfo_unary_find(op);
  const opinfo_binary *b = opinfo_binary_find(op);
  opinfo_range r = {-4, 4}; /* ops without a row are defined everywhere (reshape, matmul, ...) */
  if (u) r = u->bench_range;
  if (b) r = i == 0 ? b->bench_range : b->bench_range_b;
  if (g_range_set && i == 0) r = g_range;
  *lo = r.lo, *hi = r.hi;
}

static opinfo_flops flops_of(const char *op) {
  const opinfo_unary *u = opinfo_unary_find(op);
  if (u) return u->flops;
  const opinfo_binary *b = opinfo_binary_find(op);
  if (b) return b->flops;
  const opinfo_kernel *k = opinfo_kernel_find(op);
  return k ? k->flops : (opinfo_flops){0};
}

/* The op-info row's FLOPs of a slot ("<op>" or "<op>_backward"); the bench stops without one. */
static opinfo_flops slot_flops(const char *slot, bool *backward) {
  size_t len = strlen(slot), suffix = strlen("_backward");
  *backward = len > suffix && strcmp(slot + len - suffix, "_backward") == 0;
  char op[128];
  snprintf(op, sizeof op, "%.*s", (int)(*backward ? len - suffix : len), slot);
  opinfo_flops f = flops_of(op);
  if (!f.given) {
    fprintf(stderr, "simdgrad_bench: no FLOPs for %s in the op-info tables (opinfo/)\n", slot);
    exit(2);
  }
  return f;
}

double bench_op_flops(const char *slot) {
  bool backward;
  opinfo_flops f = slot_flops(slot, &backward);
  return backward ? f.bwd : f.fwd;
}

double bench_kernel_flops(const char *slot, const char *backend) {
  bool backward;
  opinfo_flops f = slot_flops(slot, &backward);
  double simd = backward ? f.simd_bwd : f.simd_fwd;
  if (simd > 0 && backend && strcmp(backend, "scalar") != 0) return simd;
  return backward ? f.bwd : f.fwd;
}

bool bench_kernel_opaque(const char *slot, const char *backend) {
  bool backward;
  opinfo_flops f = slot_flops(slot, &backward);
  double nominal = backward ? f.bwd : f.fwd, simd = backward ? f.simd_bwd : f.simd_fwd;
  bool scalar = !backend || strcmp(backend, "scalar") == 0;
  return nominal >= OPINFO_TRANSC && (scalar || simd <= 0);
}

/* docs/kernel_loops.py --issued writes the table; ctest kernel_issued_current checks it against
   the objects of a gcc build. */
static const struct {
  const char *slot, *isa;
  double insns, cls[ROOF_N_CLASSES];
} k_issued[] = {
#define KERNEL_ISSUED(slot, isa, insns, ...) {slot, isa, insns, {__VA_ARGS__}},
#include "kernel_issued.inc"
#undef KERNEL_ISSUED
};

const char *bench_unary_loops(void) {
  static const char *form;
  if (!form) {
    sg_cpu_info c = sg__cpu_detect();
    bool known;
    form = sg__cpu_plain_loops(&c, getenv("SIMDGRAD_UNARY_LOOPS"), &known) ? "plain" : "staged";
  }
  return form;
}

const char *bench_issued_slot(const char *slot, const char *backend) {
  if (!slot || !backend || strcmp(bench_unary_loops(), "plain") != 0) return slot;
  size_t len = strlen(slot);
  for (size_t i = 0; i < sizeof k_issued / sizeof k_issued[0]; i++)
    if (strncmp(k_issued[i].slot, slot, len) == 0 &&
        strcmp(k_issued[i].slot + len, "_plain") == 0 && strcmp(k_issued[i].isa, backend) == 0)
      return k_issued[i].slot;
  return slot;
}

bool bench_kernel_issued(const char *slot, const char *backend, double n, double *insns,
                         double cls[ROOF_N_CLASSES]) {
  if (!backend || bench_kernel_opaque(slot, backend)) return false;
  slot = bench_issued_slot(slot, backend);
  for (size_t i = 0; i < sizeof k_issued / sizeof k_issued[0]; i++)
    if (strcmp(k_issued[i].slot, slot) == 0 && strcmp(k_issued[i].isa, backend) == 0) {
      *insns += k_issued[i].insns * n;
      for (int k = 0; k < ROOF_N_CLASSES; k++) cls[k] += k_issued[i].cls[k] * n;
      return true;
    }
  return false;
}
