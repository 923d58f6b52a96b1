/* The rows of every other kernel: fill, the casts, gemm, shape, the image ops, dropout, batch norm
 * and the optimizer updates (their contracts: the conformance tests' and the fuzzers',
 * tests/fuzz/); gemm's double reference; and the lookup over these and the reductions' table. */
#include <math.h>
#include <string.h>

#include "opinfo.h"

#define EXACT                                                                                      \
  { 0 }

const opinfo_kernel opinfo_kernel_table[] = {
    {.name = "fill",
     .has_conf = true,
     .conf = {.domain = {-10, 10}, .fwd = EXACT},
     .flops = OPINFO_FLOPS(0, 0)},
    /* sg_cast's conversions move data (the conformance test holds them to scalar's bits). */
    {.name = "cast_f32_i32", .flops = OPINFO_FLOPS(0, 0)},
    {.name = "cast_i32_f32", .flops = OPINFO_FLOPS(0, 0)},
    /* gemm and gemm_taps: |diff| <= 2 (k + 2) eps (sum_p |a_ip b_pj| + |beta c_ij|), k counting
       taps * k products for gemm_taps; the conformance test sets abs from k. The bench counts
       their FLOPs itself (2 m n k). */
    {.name = "gemm", .has_conf = true, .conf = {.domain = {-2, 2}, .fwd = EXACT}},
    {.name = "gemm_taps", .has_conf = true, .conf = {.domain = {-2, 2}, .fwd = EXACT}},
    /* transpose moves data; scatter_add adds dyadic values, exact in any order. */
    {.name = "transpose",
     .has_conf = true,
     .conf = {.domain = {-10, 10}, .fwd = EXACT},
     .flops = OPINFO_FLOPS(0, 0)},
    {.name = "scatter_add",
     .has_conf = true,
     .conf = {.domain = {-8, 8}, .fwd = EXACT},
     .flops = OPINFO_FLOPS(1, 0)},
    /* The image ops as bench_api.c runs them, per input element: 3x3 filters, 16 channels in
       and out (depthwise: 1 per channel), 2x2 pooling windows. The SIMD depthwise kernels add
       the products in the scalar kernel's order, unfused. */
    {.name = "conv2d", .flops = OPINFO_FLOPS(2 * 9 * 16, 4 * 9 * 16)},
    {.name = "depthwise_conv2d",
     .has_conf = true,
     .conf = {.domain = {-4, 4}, .fwd = EXACT, .bwd = EXACT},
     .flops = OPINFO_FLOPS(2 * 9, 4 * 9)},
    {.name = "depthwise_conv2d_backward_input",
     .has_conf = true,
     .conf = {.domain = {-4, 4}, .fwd = EXACT}},
    {.name = "depthwise_conv2d_backward_filter",
     .has_conf = true,
     .conf = {.domain = {-4, 4}, .fwd = EXACT}},
    /* im2col moves data; col2im adds each column value to its pixel in the scalar order (the
       SIMD kernels add along channels, pixels in the same order). */
    {.name = "im2col", .has_conf = true, .conf = {.domain = {-4, 4}, .fwd = EXACT}},
    {.name = "col2im", .has_conf = true, .conf = {.domain = {-4, 4}, .fwd = EXACT}},
    /* Pooling: the SIMD kernels take the max (first NaN, first of equal taps) and sum the taps
       in the scalar order, then multiply by 1 / count; the backward passes route or spread dy
       the same way. Bit-exact, edge values included. */
    {.name = "max_pool",
     .has_conf = true,
     .conf = {.domain = {-4, 4}, .fwd = EXACT, .bwd = EXACT},
     .flops = OPINFO_FLOPS(1, 1)},
    {.name = "avg_pool",
     .has_conf = true,
     .conf = {.domain = {-4, 4}, .fwd = EXACT, .bwd = EXACT},
     .flops = OPINFO_FLOPS(1, 1)},
    /* batch norm from the engine's a and b: y = x a + b; backward dx = dy a (one rounding each,
       bit-exact) and two sums over the rows. */
    {.name = "batch_norm",
     .has_conf = true,
     .conf = {.domain = {-2, 2}, .fwd = EXACT, .bwd = EXACT},
     .flops = OPINFO_FLOPS(2, 5)},
    /* The backward's sums (sum_dy, sum_dy_xc) added to their old values: the SIMD kernels sum
       the rows first, then add. Exact on dyadic values (tests/test_pool_norm.c); otherwise
       within reduce_sum's bound, 2 (r + 2) eps times the sum of |terms| with r the rows plus
       the old value (the fuzzer sets abs from r, as for reduce_sum). */
    {.name = "batch_norm_backward:sums",
     .has_conf = true,
     .conf = {.domain = {-2, 2}, .fwd = EXACT}},
    /* dropout: a multiply (the mask is integer hashing, the same bits on every backend); the
       updates: sgd w -= lr g, momentum two more, adam m, v, a sqrt, a divide and the step, each
       the scalar kernel's expression (correctly rounded sqrt and divide on every ISA). */
    {.name = "dropout",
     .has_conf = true,
     .conf = {.domain = {-4, 4}, .fwd = EXACT},
     .flops = OPINFO_FLOPS(1, 1)},
    {.name = "sgd_update",
     .has_conf = true,
     .conf = {.domain = {-4, 4}, .fwd = EXACT},
     .flops = OPINFO_FLOPS(2, 0)},
    {.name = "momentum_update",
     .has_conf = true,
     .conf = {.domain = {-4, 4}, .fwd = EXACT},
     .flops = OPINFO_FLOPS(4, 0)},
    {.name = "adam_update",
     .has_conf = true,
     .conf = {.domain = {-4, 4}, .fwd = EXACT},
     .flops = OPINFO_FLOPS(13, 0)},
};
const size_t opinfo_kernel_count = sizeof opinfo_kernel_table / sizeof opinfo_kernel_table[0];

const opinfo_kernel *opinfo_kernel_find(const char *name) {
  for (size_t i = 0; i < opinfo_reduce_count; i++)
    if (strcmp(opinfo_reduce_table[i].name, name) == 0) return &opinfo_reduce_table[i];
  for (size_t i = 0; i < opinfo_kernel_count; i++)
    if (strcmp(opinfo_kernel_table[i].name, name) == 0) return &opinfo_kernel_table[i];
  return NULL;
}

void opinfo_ref_gemm(size_t m, size_t n, size_t k, const float *a, size_t lda, bool ta,
                     const float *b, size_t ldb, bool tb, double *c, double *mag, size_t ldc) {
  for (size_t i = 0; i < m; i++)
    for (size_t j = 0; j < n; j++) {
      double s = 0, sa = 0;
      for (size_t p = 0; p < k; p++) {
        double x = ta ? a[p * lda + i] : a[i * lda + p];
        double y = tb ? b[j * ldb + p] : b[p * ldb + j];
        s += x * y;
        sa += fabs(x * y);
      }
      c[i * ldc + j] = s;
      if (mag) mag[i * ldc + j] = sa;
    }
}
