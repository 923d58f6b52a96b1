/* Per-op figures the benchmarks need beyond the kernel ABI: input ranges inside each op's
 * domain, and nominal FLOPs per element for the FLOP/s and roofline counters.
 *
 * Counting rule (docs/bench.md): each +, -, *, /, comparison, min or max in the op's formula is
 * one FLOP; sqrt is one; a transcendental function (exp, log, tanh, erf, sin, pow, ...) is
 * charged TRANSC, about what a vectorised polynomial implementation executes (range reduction
 * plus a degree 6-8 polynomial in FMAs). An op missing from the table counts 1 forward and 2
 * backward, so a new op in backend.h's lists is benchmarked before anyone edits this file. */
#include <stddef.h>
#include <string.h>

#include "bench.h"

#define TRANSC 20.0

typedef struct range {
  const char *op;
  int operand;
  float lo, hi;
} range;

static const range k_ranges[] = {
    {"log", 0, 0.1f, 8},         {"log1p", 0, 0, 8},  {"sqrt", 0, 0.1f, 8}, {"rsqrt", 0, 0.1f, 8},
    {"reciprocal", 0, 0.25f, 4}, {"pow", 0, 0.1f, 4}, {"pow", 1, -2, 2},    {"div", 1, 0.5f, 4},
};

void bench_op_range(const char *op, int i, float *lo, float *hi) {
  *lo = -4, *hi = 4;
  for (size_t k = 0; k < sizeof k_ranges / sizeof k_ranges[0]; k++)
    if (k_ranges[k].operand == i && strcmp(k_ranges[k].op, op) == 0) {
      *lo = k_ranges[k].lo, *hi = k_ranges[k].hi;
      return;
    }
}

typedef struct flops {
  const char *slot;
  double fwd, bwd; /* per element of the op's (largest) input; bwd: its "_backward" slot */
} flops;

static const flops k_flops[] = {
    /* unary: the backward is dy times the derivative */
    {"neg", 1, 1},
    {"abs", 1, 2},
    {"exp", TRANSC, 1},
    {"expm1", TRANSC, 2},
    {"log", TRANSC, 1},
    {"log1p", TRANSC, 2},
    {"sqrt", 1, 2},
    {"rsqrt", 2, 3},
    {"square", 1, 2},
    {"reciprocal", 1, 2},
    {"relu", 1, 1},
    {"relu6", 2, 2},
    {"elu", TRANSC + 2, 2},
    {"selu", TRANSC + 3, 3},
    {"sigmoid", TRANSC + 2, 3},
    {"tanh", TRANSC, 3},
    {"softplus", 2 * TRANSC + 1, TRANSC + 3},
    {"gelu", TRANSC + 4, 2 * TRANSC + 6},
    {"sin", TRANSC, TRANSC + 1},
    {"cos", TRANSC, TRANSC + 2},
    {"leaky_relu", 2, 2},
    {"clip", 2, 2},
    /* step ops: no backward */
    {"floor", 1, 0},
    {"ceil", 1, 0},
    {"round", 1, 0},
    {"sign", 2, 0},
    /* binary: da and db */
    {"add", 1, 0},
    {"sub", 1, 1},
    {"mul", 1, 2},
    {"div", 1, 4},
    {"pow", 2 * TRANSC + 1, 2 * TRANSC + 5},
    {"maximum", 1, 1},
    {"minimum", 1, 1},
    {"squared_difference", 2, 4},
    /* selection: data movement only */
    {"where", 0, 0},
    {"fill", 0, 0},
    /* reductions, per input element */
    {"reduce_sum", 1, 0},
    {"reduce_max", 1, 1},
    {"reduce_min", 1, 1},
    {"reduce_logsumexp", TRANSC + 3, TRANSC + 2},
    {"argmax", 1, 0},
    {"argmin", 1, 0},
    /* softmax family: max, subtract, exp, sum, scale; backward y * (dy - sum(dy * y)) */
    {"softmax", TRANSC + 4, 4},
    {"log_softmax", TRANSC + 4, TRANSC + 3},
    {"softmax_cross_entropy", TRANSC + 6, TRANSC + 4},
    /* shape: transpose moves data; scatter_add adds */
    {"transpose", 0, 0},
    {"scatter_add", 1, 0},
    /* dropout: a multiply (the mask is integer hashing); the updates: sgd w -= lr g, momentum
       two more, adam m, v, a sqrt, a divide and the step */
    {"dropout", 1, 1},
    {"sgd_update", 2, 0},
    {"momentum_update", 4, 0},
    {"adam_update", 13, 0},
    /* batch norm from the engine's a and b: y = x a + b; backward dx = dy a and two sums */
    {"batch_norm", 2, 5},
    /* the image ops as bench_api.c runs them, per input element: 3x3 filters, 16 channels in
       and out (depthwise: 1 per channel), 2x2 pooling windows */
    {"conv2d", 2 * 9 * 16, 4 * 9 * 16},
    {"depthwise_conv2d", 2 * 9, 4 * 9},
    {"max_pool", 1, 1},
    {"avg_pool", 1, 1},
};

double bench_op_flops(const char *slot) {
  size_t len = strlen(slot), suffix = strlen("_backward");
  int backward = len > suffix && strcmp(slot + len - suffix, "_backward") == 0;
  for (size_t k = 0; k < sizeof k_flops / sizeof k_flops[0]; k++) {
    const flops *f = &k_flops[k];
    if (backward ? strlen(f->slot) == len - suffix && strncmp(f->slot, slot, len - suffix) == 0
                 : strcmp(f->slot, slot) == 0)
      return backward ? f->bwd : f->fwd;
  }
  return backward ? 2 : 1;
}
