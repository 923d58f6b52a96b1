/* The binary ops' rows: SG_FOR_EACH_BINARY_OP, SG_FOR_EACH_COMPARE_OP, then where. Each op's
 * double reference and gradient factors are written here and nowhere else. */
#include <math.h>
#include <string.h>

#include "opinfo.h"

/* ---- Double references and gradient factors (dy times these) ------------------------------- */

static double ref_add(double a, double b) { return a + b; }
static double ref_sub(double a, double b) { return a - b; }
static double ref_mul(double a, double b) { return a * b; }
static double ref_div(double a, double b) { return a / b; }
static double ref_maximum(double a, double b) {
  return isnan(a) || isnan(b) ? NAN : a >= b ? a : b;
}
static double ref_minimum(double a, double b) {
  return isnan(a) || isnan(b) ? NAN : a <= b ? a : b;
}
static double ref_squared_difference(double a, double b) { return (a - b) * (a - b); }
static double ref_equal(double a, double b) { return a == b; }
static double ref_not_equal(double a, double b) { return a != b; }
static double ref_less(double a, double b) { return a < b; }
static double ref_less_equal(double a, double b) { return a <= b; }
static double ref_greater(double a, double b) { return a > b; }
static double ref_greater_equal(double a, double b) { return a >= b; }

static double g_one(double a, double b, double y) { return (void)a, (void)b, (void)y, 1; }
static double g_minus_one(double a, double b, double y) { return (void)a, (void)b, (void)y, -1; }
static double g_b(double a, double b, double y) { return (void)a, (void)y, b; }
static double g_a(double a, double b, double y) { return (void)b, (void)y, a; }
static double g_div_a(double a, double b, double y) { return (void)a, (void)y, 1 / b; }
static double g_div_b(double a, double b, double y) { return (void)y, -a / (b * b); }
static double g_pow_a(double a, double b, double y) { return (void)y, b * pow(a, b - 1); }
static double g_pow_b(double a, double b, double y) {
  (void)y;
  return a > 0 ? pow(a, b) * log(a) : 0;
}
static double g_max_a(double a, double b, double y) { return (void)y, a >= b ? 1 : 0; }
static double g_max_b(double a, double b, double y) { return (void)y, a < b ? 1 : 0; }
static double g_min_a(double a, double b, double y) { return (void)y, a <= b ? 1 : 0; }
static double g_min_b(double a, double b, double y) { return (void)y, a > b ? 1 : 0; }
static double g_sqd_a(double a, double b, double y) { return (void)y, 2 * (a - b); }
static double g_sqd_b(double a, double b, double y) { return (void)y, -2 * (a - b); }

/* ---- The rows -------------------------------------------------------------------------------- */

#define EXACT                                                                                      \
  { 0 }
#define SWEEP                                                                                      \
  { -1e3f, 1e3f }
#define BENCH_ANY                                                                                  \
  { -4, 4 }
/* Comparisons: the conformance inputs are rounded to half-integers in a narrow range, so that
   ties are common; every one is exact. */
#define COMPARE_ROW(nm)                                                                            \
  {                                                                                                \
    .name = #nm, .ref = ref_##nm, .domain = {-2, 2}, .domain_b = {-2, 2}, .rtol = 0,               \
    .conf = {.domain = {-3, 3}, .fwd = EXACT}, .sweep = SWEEP, .sweep_b = SWEEP,                   \
    .bench_range = BENCH_ANY, .bench_range_b = BENCH_ANY, .flops = OPINFO_FLOPS(1, 0)              \
  }

const opinfo_binary opinfo_binary_table[] = {
    {.name = "add",
     .ref = ref_add,
     .da = g_one,
     .db = g_one,
     .domain = {-3, 3},
     .domain_b = {-3, 3},
     .rtol = 1e-6,
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = SWEEP,
     .sweep_b = SWEEP,
     .bench_range = BENCH_ANY,
     .bench_range_b = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 0)},
    {.name = "sub",
     .ref = ref_sub,
     .da = g_one,
     .db = g_minus_one,
     .domain = {-3, 3},
     .domain_b = {-3, 3},
     .rtol = 1e-6,
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = SWEEP,
     .sweep_b = SWEEP,
     .bench_range = BENCH_ANY,
     .bench_range_b = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 1)},
    {.name = "mul",
     .ref = ref_mul,
     .da = g_b,
     .db = g_a,
     .domain = {-3, 3},
     .domain_b = {-3, 3},
     .rtol = 1e-6,
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = SWEEP,
     .sweep_b = SWEEP,
     .bench_range = BENCH_ANY,
     .bench_range_b = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 2)},
    {.name = "div",
     .ref = ref_div,
     .da = g_div_a,
     .db = g_div_b,
     .domain = {-3, 3},
     .domain_b = {0.5f, 3},
     .rtol = 1e-6,
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = SWEEP,
     .sweep_b = SWEEP,
     .bench_range = BENCH_ANY,
     .bench_range_b = {0.5f, 4},
     .flops = OPINFO_FLOPS(1, 4)},
    /* powf against SLEEF's pow u10; in the backward a^(b-1) may be denormal (fewer bits) before
       dy b scales it up. */
    {.name = "pow",
     .ref = pow,
     .da = g_pow_a,
     .db = g_pow_b,
     .domain = {0.25f, 3},
     .domain_b = {-2, 2},
     .rtol = 2e-6,
     .conf = {.domain = {0, 8}, .domain_b = {-8, 8}, .fwd = {.ulp = 2}, .bwd = {.ulp = 4}},
     .sweep = {0, 1e3f},
     .sweep_b = {-30, 30},
     .bench_range = {0.1f, 4},
     .bench_range_b = {-2, 2},
     .flops = OPINFO_FLOPS(2 * OPINFO_TRANSC + 1, 2 * OPINFO_TRANSC + 5)},
    /* A narrow conformance range makes ties. */
    {.name = "maximum",
     .ref = ref_maximum,
     .da = g_max_a,
     .db = g_max_b,
     .domain = {-3, 3},
     .domain_b = {-3, 3},
     .rtol = 0,
     .conf = {.domain = {-3, 3}, .fwd = EXACT, .bwd = EXACT},
     .sweep = SWEEP,
     .sweep_b = SWEEP,
     .bench_range = BENCH_ANY,
     .bench_range_b = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 1)},
    {.name = "minimum",
     .ref = ref_minimum,
     .da = g_min_a,
     .db = g_min_b,
     .domain = {-3, 3},
     .domain_b = {-3, 3},
     .rtol = 0,
     .conf = {.domain = {-3, 3}, .fwd = EXACT, .bwd = EXACT},
     .sweep = SWEEP,
     .sweep_b = SWEEP,
     .bench_range = BENCH_ANY,
     .bench_range_b = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 1)},
    {.name = "squared_difference",
     .ref = ref_squared_difference,
     .da = g_sqd_a,
     .db = g_sqd_b,
     .domain = {-3, 3},
     .domain_b = {-3, 3},
     .rtol = 1e-6,
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = SWEEP,
     .sweep_b = SWEEP,
     .bench_range = BENCH_ANY,
     .bench_range_b = BENCH_ANY,
     .flops = OPINFO_FLOPS(2, 4)},
    COMPARE_ROW(equal),
    COMPARE_ROW(not_equal),
    COMPARE_ROW(less),
    COMPARE_ROW(less_equal),
    COMPARE_ROW(greater),
    COMPARE_ROW(greater_equal),
    /* where: selection, data movement only; a and b are the selected operands. */
    {.name = "where",
     .domain = {-3, 3},
     .domain_b = {-3, 3},
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = SWEEP,
     .sweep_b = SWEEP,
     .bench_range = BENCH_ANY,
     .bench_range_b = BENCH_ANY,
     .flops = OPINFO_FLOPS(0, 0)},
};
const size_t opinfo_binary_count = sizeof opinfo_binary_table / sizeof opinfo_binary_table[0];

const opinfo_binary *opinfo_binary_find(const char *name) {
  for (size_t i = 0; i < opinfo_binary_count; i++)
    if (strcmp(opinfo_binary_table[i].name, name) == 0) return &opinfo_binary_table[i];
  return NULL;
}
