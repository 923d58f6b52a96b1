/* An element's bits do not depend on the size of the call that computes it: the engine splits
 * an op into chunks by the tensor's size and the machine, and AVX-512 hands its calls of L2 size
 * to AVX2's kernels for some slots (SG_VEC_NARROW_IN_L2, kernels_simd/simd_decls.inc), so a
 * kernel's result must be the same in one call of 3 x 2^13 + 5 floats and in calls of 1000
 * (below where any kernel hands on). Every backend, the binary slots forward with both operands
 * stepping and every unary slot backward, compared bit for bit, on unaligned pointers, over two
 * ranges of inputs: one inside every op's domain, one across zero (NaN where an op is undefined,
 * the same NaN from the same instruction). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support_conformance.h"

#define N_CALL (3 * (1 << 13) + 5)
#define PIECE 1000

static const bslot k_binary[] = {SG_FOR_EACH_BINARY_OP(B_ENTRY_)};
static const uslot k_unary[] = {SG_FOR_EACH_UNARY_OP(U_ENTRY_)};

/* The inputs of one slot's calls, each one float past the start of its allocation (misaligned for
   every vector width): a and b (binary), or x, y = f(x) and dy (a unary gradient). */
typedef struct call_case {
  const sg_backend *be;
  size_t k; /* the slot's index in its list */
  float *in[3], *mem[3];
} call_case;

/* The slot's kernel over [lo, lo + m) of the case's arrays into out + lo. */
typedef void (*call_fn)(const call_case *c, size_t lo, size_t m, float *out);

static void binary_call(const call_case *c, size_t lo, size_t m, float *out) {
  SLOT(c->be, sg_binary_kernel, k_binary[c->k].fwd)
  (c->in[0] + lo, 1, c->in[1] + lo, 1, out + lo, m);
}
static void unary_backward_call(const call_case *c, size_t lo, size_t m, float *out) {
  SLOT(c->be, sg_unary_backward_kernel, k_unary[c->k].bwd)
  (c->in[2] + lo, c->in[0] + lo, c->in[1] + lo, out + lo, m);
}

static float *unaligned(float **mem, float lo, float hi) {
  *mem = fnew(N_CALL + 16);
  float *p = *mem + 1;
  for (size_t i = 0; i < N_CALL; i++) p[i] = uniform(lo, hi);
  return p;
}

/* Runs the case in one call and in pieces; expects the same bits. */
static void expect_same_bits(const call_case *c, call_fn call, const char *slot) {
  float *mo, *mp, *one = unaligned(&mo, 0, 0), *pieces = unaligned(&mp, 0, 0);
  call(c, 0, N_CALL, one);
  for (size_t lo = 0; lo < N_CALL; lo += PIECE)
    call(c, lo, N_CALL - lo < PIECE ? N_CALL - lo : PIECE, pieces);
  size_t at = 0;
  while (at < N_CALL && bits_of(one[at]) == bits_of(pieces[at])) at++;
  cr_expect_eq(at, (size_t)N_CALL,
               "%s %s: element %zu is %a in one call of %d floats, %a in calls of %d", c->be->name,
               slot, at, at < N_CALL ? one[at] : 0.0, N_CALL, at < N_CALL ? pieces[at] : 0.0,
               PIECE);
  free(mo), free(mp);
}

static void free_case(call_case *c) {
  for (int i = 0; i < 3; i++) free(c->mem[i]);
}

/* The first input's range: [0.5, 2), inside every op's domain (div, pow; log, sqrt, rsqrt,
   reciprocal), or [-3, 3), across zero (elu's negative side, pow's NaN for a negative base). */
static const float k_lo[2] = {0.5f, -3.0f}, k_hi[2] = {2.0f, 3.0f};

/* Fills a case's inputs: the first from the range r of k_lo, k_hi. */
typedef void (*prepare_fn)(call_case *c, size_t r);

static void binary_inputs(call_case *c, size_t r) {
  c->in[0] = unaligned(&c->mem[0], k_lo[r], k_hi[r]);
  c->in[1] = unaligned(&c->mem[1], 0.5f, 2.0f);
}
static void unary_backward_inputs(call_case *c, size_t r) {
  c->in[0] = unaligned(&c->mem[0], k_lo[r], k_hi[r]);
  c->in[1] = unaligned(&c->mem[1], 0, 0);
  c->in[2] = unaligned(&c->mem[2], -1.0f, 1.0f);
  /* y from this backend's own forward */
  SLOT(c->be, sg_unary_kernel, k_unary[c->k].fwd)(c->in[0], c->in[1], N_CALL);
}

/* Every backend, every slot of a list (names[k], with `suffix`), both ranges. */
static void check_list(const char *const *names, size_t n, const char *suffix, prepare_fn prepare,
                       call_fn call) {
  size_t checked = 0;
  FOR_EACH_BACKEND(be) {
    for (size_t k = 0; k < n; k++)
      for (size_t r = 0; r < 2; r++, checked++) {
        call_case c = {be, k, {NULL}, {NULL}};
        seed(case_seed(names[k], N_CALL, 1, r));
        prepare(&c, r);
        char slot[64];
        snprintf(slot, sizeof slot, "%s%s", names[k], suffix);
        expect_same_bits(&c, call, slot);
        free_case(&c);
      }
  }
  cr_assert_geq(checked, 2 * n, "the scalar backend at least");
}

Test(call_size, binary_forward_same_bits_in_one_call_and_in_pieces) {
  const char *names[COUNT(k_binary)];
  for (size_t k = 0; k < COUNT(k_binary); k++) names[k] = k_binary[k].name;
  check_list(names, COUNT(k_binary), "", binary_inputs, binary_call);
}

Test(call_size, unary_backward_same_bits_in_one_call_and_in_pieces) {
  const char *names[COUNT(k_unary)];
  for (size_t k = 0; k < COUNT(k_unary); k++) names[k] = k_unary[k].name;
  check_list(names, COUNT(k_unary), "_backward", unary_backward_inputs, unary_backward_call);
}
