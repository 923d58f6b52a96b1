/* backend.h's op lists as tables of slot offsets into sg_backend, for the programs that walk
 * every slot of a list on every backend (the conformance tests, the accuracy report). Header
 * only, no Criterion: the accuracy report is a plain program. */
#ifndef SIMDGRAD_TESTS_SLOT_LISTS_H
#define SIMDGRAD_TESTS_SLOT_LISTS_H

#include <stddef.h>

#include <simdgrad/backend.h>

/* What a unary op's backward kernel reads besides dy (the op list's X, Y or NONE). */
typedef enum { SV_NONE, SV_X, SV_Y } saved_kind;
typedef struct uslot {
  const char *name;
  size_t fwd, bwd; /* bwd 0: no backward kernel (a step op) */
  saved_kind saved;
} uslot;
typedef struct bslot {
  const char *name;
  size_t fwd, bwd; /* bwd 0: none (a comparison) */
} bslot;

/* Entries for SG_FOR_EACH_<KIND>_OP: unary, step, binary, comparison, reduction. */
#define U_ENTRY_(nm, sv, doc)                                                                      \
  {#nm, offsetof(sg_backend, nm), offsetof(sg_backend, nm##_backward), SV_##sv},
#define S_ENTRY_(nm, doc) {#nm, offsetof(sg_backend, nm), 0, SV_NONE},
#define B_ENTRY_(nm, doc) {#nm, offsetof(sg_backend, nm), offsetof(sg_backend, nm##_backward)},
#define C_ENTRY_(nm, doc) {#nm, offsetof(sg_backend, nm), 0},
#define R_ENTRY_(nm, doc)                                                                          \
  {"reduce_" #nm, offsetof(sg_backend, reduce_##nm), offsetof(sg_backend, reduce_##nm##_backward)},

/* The slot at byte offset off of backend be, as a function pointer of type `type`. */
#define SLOT(be, type, off) (*(const type *)((const char *)(be) + (off)))

/* How to call one unary slot on a backend: a plain slot at its offsets, or one of the two that
   take parameters (leaky_relu's alpha, clip's bounds), for the programs that drive every unary
   slot alike (the conformance tests, the unary fuzzer). */
typedef struct ucall {
  const char *slot;
  size_t fwd, bwd;
  saved_kind saved;
  int param; /* 0: plain, 1: leaky_relu(alpha), 2: clip(lo, hi) */
  float p0, p1;
} ucall;

static inline void ucall_fwd(const sg_backend *be, const ucall *u, const float *x, float *y,
                             size_t n) {
  if (u->param == 1)
    be->leaky_relu(x, y, n, u->p0);
  else if (u->param == 2)
    be->clip(x, y, n, u->p0, u->p1);
  else
    SLOT(be, sg_unary_kernel, u->fwd)(x, y, n);
}
static inline void ucall_bwd(const sg_backend *be, const ucall *u, const float *dy, const float *x,
                             const float *y, float *dx, size_t n) {
  if (u->param == 1)
    be->leaky_relu_backward(dy, x, dx, n, u->p0);
  else if (u->param == 2)
    be->clip_backward(dy, x, dx, n, u->p0, u->p1);
  else
    SLOT(be, sg_unary_backward_kernel, u->bwd)(dy, x, y, dx, n);
}

#endif /* SIMDGRAD_TESTS_SLOT_LISTS_H */
