/* An element's bits do not depend on the size of the call that computes it: the engine splits
 * an op into chunks by the tensor's size and the machine, and AVX-512 hands its calls of L2 size
 * to AVX2's kernels for some slots (SG_VEC_NARROW_IN_L2, kernels_simd/simd_decls.inc), so a
 * kernel's result must be the same in one call of 3 x 2^13 + 5 floats and in calls of 1000
 * (below where any kernel hands on). Every backend, the binary slots forward with both operands
 * stepping and every unary slot backward, compared bit for bit, on unaligned pointers. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support_conformance.h"

#define N_CALL (3 * (1 << 13) + 5)
#define PIECE 1000

static const bslot k_binary[] = {SG_FOR_EACH_BINARY_OP(B_ENTRY_)};
static const uslot k_unary[] = {SG_FOR_EACH_UNARY_OP(U_ENTRY_)};

/* n floats at one float past a 64-byte boundary, each from [lo, hi). */
static float *inputs(float **base, size_t n, float lo, float hi) {
  *base = fnew(n + 16);
  float *p = *base + 1;
  for (size_t i = 0; i < n; i++) p[i] = uniform(lo, hi);
  return p;
}

/* The first index where one call and the pieces differ, or n. */
static size_t first_difference(const float *one, const float *pieces, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (bits_of(one[i]) != bits_of(pieces[i])) return i;
  return n;
}

Test(call_size, binary_forward_same_bits_in_one_call_and_in_pieces) {
  size_t checked = 0;
  FOR_EACH_BACKEND(be) {
    for (size_t k = 0; k < COUNT(k_binary); k++) {
      const bslot *s = &k_binary[k];
      seed(case_seed(s->name, N_CALL, 1, 0));
      float *ab, *bb, *ob, *pb;
      /* Positive operands of moderate size: every binary op (pow and div included) is defined
         there and stays finite. */
      float *a = inputs(&ab, N_CALL, 0.5f, 2.0f), *b = inputs(&bb, N_CALL, 0.5f, 2.0f);
      float *one = inputs(&ob, N_CALL, 0, 0), *pieces = inputs(&pb, N_CALL, 0, 0);
      sg_binary_kernel f = SLOT(be, sg_binary_kernel, s->fwd);
      f(a, 1, b, 1, one, N_CALL);
      for (size_t i = 0; i < N_CALL; i += PIECE) {
        size_t m = N_CALL - i < PIECE ? N_CALL - i : PIECE;
        f(a + i, 1, b + i, 1, pieces + i, m);
      }
      size_t at = first_difference(one, pieces, N_CALL);
      cr_expect_eq(at, (size_t)N_CALL,
                   "%s %s: element %zu is %a in one call of %d floats, %a in calls of %d",
                   k_backends[bi_], s->name, at, at < N_CALL ? one[at] : 0.0,
                   at < N_CALL ? pieces[at] : 0.0, N_CALL, PIECE);
      checked++;
      free(ab), free(bb), free(ob), free(pb);
    }
  }
  cr_assert_geq(checked, COUNT(k_binary), "the scalar backend at least");
}

Test(call_size, unary_backward_same_bits_in_one_call_and_in_pieces) {
  size_t checked = 0;
  FOR_EACH_BACKEND(be) {
    for (size_t k = 0; k < COUNT(k_unary); k++) {
      const uslot *s = &k_unary[k];
      seed(case_seed(s->name, N_CALL, 2, 0));
      float *xb, *yb, *db, *ob, *pb;
      /* x in [0.5, 2): inside every unary op's domain (log, sqrt, rsqrt, reciprocal), its
         forward finite; y from this backend's own forward. */
      float *x = inputs(&xb, N_CALL, 0.5f, 2.0f), *y = inputs(&yb, N_CALL, 0, 0);
      float *dy = inputs(&db, N_CALL, -1.0f, 1.0f);
      float *one = inputs(&ob, N_CALL, 0, 0), *pieces = inputs(&pb, N_CALL, 0, 0);
      SLOT(be, sg_unary_kernel, s->fwd)(x, y, N_CALL);
      sg_unary_backward_kernel f = SLOT(be, sg_unary_backward_kernel, s->bwd);
      f(dy, x, y, one, N_CALL);
      for (size_t i = 0; i < N_CALL; i += PIECE) {
        size_t m = N_CALL - i < PIECE ? N_CALL - i : PIECE;
        f(dy + i, x + i, y + i, pieces + i, m);
      }
      size_t at = first_difference(one, pieces, N_CALL);
      cr_expect_eq(at, (size_t)N_CALL,
                   "%s %s_backward: element %zu is %a in one call of %d floats, %a in calls "
                   "of %d",
                   k_backends[bi_], s->name, at, at < N_CALL ? one[at] : 0.0,
                   at < N_CALL ? pieces[at] : 0.0, N_CALL, PIECE);
      checked++;
      free(xb), free(yb), free(db), free(ob), free(pb);
    }
  }
  cr_assert_geq(checked, COUNT(k_unary), "the scalar backend at least");
}
