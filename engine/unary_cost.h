/* Which unary kernels are costly enough to split finer than cheap elementwise work: the engine
 * (op_unary.c) and the bench's kernel rows (bench/bench_elementwise.c, bench_api.c) read this
 * one list, so that a row's threads:2 figure is what the op gets from the engine. */
#ifndef SIMDGRAD_UNARY_COST_H
#define SIMDGRAD_UNARY_COST_H

#include <stdint.h>

/* X(op, forward, backward): 1 where that kernel evaluates a transcendental (0.15-0.8 ns an
   element on one Zen 4 core, 10-55 us at 2^16), 0 where it is a multiply or two, which the
   memory bounds. Ops not listed are cheap both ways. A costly kernel streams past the last-level
   cache as a cheap one does (sg__unary_grain_of_cost): its streamed loop prefetches its inputs
   (kernels_simd/simd_unary.inc), so that even gelu, log or sin, which take longer than the memory
   does, overlap the two there (docs/kernels.md, "Twenty-seventh landing"). */
#define SG_COST_CHEAP 0
#define SG_COST_COSTLY 1
#define SG_FOR_EACH_COSTLY_UNARY(X)                                                                \
  X(exp, 1, 0)                                                                                     \
  X(expm1, 1, 0)                                                                                   \
  X(log, 1, 0)                                                                                     \
  X(log1p, 1, 0)                                                                                   \
  X(elu, 1, 0)                                                                                     \
  X(selu, 1, 1)                                                                                    \
  X(sigmoid, 1, 0)                                                                                 \
  X(tanh, 1, 0)                                                                                    \
  X(softplus, 1, 1)                                                                                \
  X(gelu, 1, 1)                                                                                    \
  X(sin, 1, 1)                                                                                     \
  X(cos, 1, 1)

/* Elements of a costly kernel's chunk: 2^14 take 3-13 us, above the fork/join's ~3 us, so from
   2^15 elements on the op runs on two threads (2^16 of tanh: 20 us on one core). Cheap work
   keeps SG_GRAIN_ELEMENTWISE (2^16): halving it there would cost more in the fork than the
   second core gives back. */
#define SG_GRAIN_COSTLY ((int64_t)1 << 14)

#endif
