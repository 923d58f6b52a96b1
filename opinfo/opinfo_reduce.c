/* The reductions' rows (SG_FOR_EACH_REDUCE_OP as "reduce_<name>", argmax, argmin) and the
 * softmax family's (softmax, log_softmax, softmax_cross_entropy with an entry per extra
 * output). Forward and backward bounds are per kernel; see opinfo_bound. */
#include <string.h>

#include "opinfo.h"

#define EXACT                                                                                      \
  { 0 }
/* The reductions' inputs: multiples of 1/8 in this range in the clean pass, so every partial
   sum is exact. */
#define GRID                                                                                       \
  { -16, 16 }
/* The softmax family: a float row sum (grows like sqrt(r)) against a double one. */
#define ROWS                                                                                       \
  { -10, 10 }

const opinfo_kernel opinfo_reduce_table[] = {
    /* Exact on the dyadic grid; with edge values, within 2 (r + 2) eps sum|x| (the worst case
       of recursive summation, twice; the conformance test widens abs for those passes). */
    {.name = "reduce_sum",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = EXACT, .bwd = EXACT},
     .flops = OPINFO_FLOPS(1, 0)},
    /* The sign of max(+0, -0) is open. */
    {.name = "reduce_max",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = {.zero_any = true}, .bwd = EXACT},
     .flops = OPINFO_FLOPS(1, 1)},
    {.name = "reduce_min",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = {.zero_any = true}, .bwd = EXACT},
     .flops = OPINFO_FLOPS(1, 1)},
    /* abs relative to 1 + |row max| */
    {.name = "reduce_logsumexp",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = {.ulp = 4, .grow = 1, .abs = 4}, .bwd = {.ulp = 2}},
     .flops = OPINFO_FLOPS(OPINFO_TRANSC + 3, OPINFO_TRANSC + 2)},
    {.name = "argmax",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = EXACT},
     .flops = OPINFO_FLOPS(1, 0)},
    {.name = "argmin",
     .has_conf = true,
     .conf = {.domain = GRID, .fwd = EXACT},
     .flops = OPINFO_FLOPS(1, 0)},
    /* FLOPs: max, subtract, exp, sum, scale; backward y * (dy - sum(dy * y)). Bounds: abs
       relative to 1 + |y| (log_softmax), |y| (|dy| + sum|dy y|) (softmax backward), |dy| + e^y
       sum|dy| (log_softmax backward). */
    {.name = "softmax",
     .has_conf = true,
     .conf = {.domain = ROWS, .fwd = {.ulp = 6, .grow = 1}, .bwd = {.ulp = 4, .grow = 1, .abs = 4}},
     .flops = OPINFO_FLOPS(OPINFO_TRANSC + 4, 4)},
    {.name = "log_softmax",
     .has_conf = true,
     .conf = {.domain = ROWS,
              .fwd = {.ulp = 4, .grow = 1, .abs = 4},
              .bwd = {.ulp = 4, .grow = 1, .abs = 4}},
     .flops = OPINFO_FLOPS(OPINFO_TRANSC + 4, OPINFO_TRANSC + 3)},
    /* The loss, abs relative to sum|t lp|; dlogits, abs relative to |g| (e^lp + |t|). */
    {.name = "softmax_cross_entropy",
     .has_conf = true,
     .conf = {.domain = ROWS, .fwd = {.ulp = 4, .grow = 1, .abs = 4}, .bwd = {.ulp = 2, .abs = 4}},
     .flops = OPINFO_FLOPS(OPINFO_TRANSC + 6, OPINFO_TRANSC + 4)},
    /* Its other outputs: the log-softmax it writes, and dlabels = -g lp (one product). */
    {.name = "softmax_cross_entropy:log_probs",
     .has_conf = true,
     .conf = {.domain = ROWS, .fwd = {.ulp = 4, .grow = 1, .abs = 4}}},
    {.name = "softmax_cross_entropy_backward:dlabels",
     .has_conf = true,
     .conf = {.domain = ROWS, .fwd = EXACT}},
};
const size_t opinfo_reduce_count = sizeof opinfo_reduce_table / sizeof opinfo_reduce_table[0];
