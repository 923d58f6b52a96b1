/* The unary ops: every op of SG_FOR_EACH_UNARY_OP and SG_FOR_EACH_STEP_OP, leaky_relu and clip.
 *
 * One table-driven implementation: a descriptor per op holds the offsets of its backend slots
 * and which tensor (x or y) its backward kernel needs, so each public function is one line.
 * The slots are called directly through those offsets (no look-up by name).
 * The step ops (floor, ceil, round, sign) are recorded with a gradient that is zero, as in
 * TensorFlow.js: back-propagating through them gives 0, not SG_ERR_NO_GRADIENT.
 */
#include <stddef.h>

#include "engine.h"

typedef enum unary_kind { KIND_PLAIN, KIND_STEP, KIND_LEAKY, KIND_CLIP } unary_kind;
typedef enum unary_save { SAVE_NONE, SAVE_X, SAVE_Y } unary_save;

typedef struct unary_desc {
  const char *name;
  unary_kind kind;
  unary_save save; /* the tensor the backward kernel reads */
  size_t fwd, bwd; /* offsetof(sg_backend, slot): KIND_PLAIN both, KIND_STEP fwd only */
} unary_desc;

#define OP_ENUM_(name, saved, doc) OP_##name,
#define OP_ENUM_STEP_(name, doc) OP_##name,
enum {
  SG_FOR_EACH_UNARY_OP(OP_ENUM_) SG_FOR_EACH_STEP_OP(OP_ENUM_STEP_) OP_leaky_relu,
  OP_clip,
  OP_COUNT
};

/* clang-format off */
#define OP_DESC_(name, saved, doc)                                                                 \
  [OP_##name] = {#name, KIND_PLAIN, SAVE_##saved, offsetof(sg_backend, name),                      \
                 offsetof(sg_backend, name##_backward)},
#define OP_DESC_STEP_(name, doc)                                                                   \
  [OP_##name] = {#name, KIND_STEP, SAVE_NONE, offsetof(sg_backend, name), 0},
static const unary_desc k_ops[OP_COUNT] = {
    SG_FOR_EACH_UNARY_OP(OP_DESC_) SG_FOR_EACH_STEP_OP(OP_DESC_STEP_)
    [OP_leaky_relu] = {"leaky_relu", KIND_LEAKY, SAVE_X, 0, 0},
    [OP_clip] = {"clip", KIND_CLIP, SAVE_X, 0, 0},
};
/* clang-format on */

/* Per op, the cost class of its forward and backward kernels (engine/unary_cost.h; 0: cheap). */
#define OP_COSTLY_(name, fwd, bwd) [OP_##name] = {fwd, bwd},
static const struct {
  unsigned char fwd, bwd;
} k_costly[OP_COUNT] = {SG_FOR_EACH_COSTLY_UNARY(OP_COSTLY_)};

/* bytes: what the pass reads and writes an element (sg__flat_grain); 0 for a pass whose kernel
   calls never stream (leaky_relu and clip, forward and backward, have no streamed loop; a uniform
   dy runs the kernel on SG_UNIFORM_BLOCK floats at a time), which keeps the usual grain at any
   size: chunks of 2^21 would only leave cores idle. */
static int64_t unary_grain(const unary_desc *d, bool backward, int64_t n, int bytes) {
  int cost = backward ? k_costly[d - k_ops].bwd : k_costly[d - k_ops].fwd;
  if (bytes == 0 || d->kind == KIND_LEAKY || d->kind == KIND_CLIP)
    return cost != SG_COST_CHEAP ? SG_GRAIN_COSTLY : SG_GRAIN_ELEMENTWISE;
  return sg__unary_grain_of_cost(cost, n, bytes);
}

static sg_unary_kernel fwd_slot(const sg_backend *be, const unary_desc *d) {
  return *(const sg_unary_kernel *)((const char *)be + d->fwd);
}
static sg_unary_backward_kernel bwd_slot(const sg_backend *be, const unary_desc *d) {
  return *(const sg_unary_backward_kernel *)((const char *)be + d->bwd);
}

/* One elementwise pass, forward (in = x) or backward (in = dy, x/y = the saved tensor). A
   uniform backward has no dy in memory: every element of dy is g. */
typedef struct unary_job {
  const sg_backend *be;
  const unary_desc *d;
  bool backward, uniform;
  const float *in;
  const float *x, *y;
  float *out;
  float p0, p1; /* leaky_relu: alpha; clip: lo, hi */
  float g;      /* uniform: the value of dy */
} unary_job;

static void unary_call(const unary_job *j, const float *in, int64_t lo, size_t n) {
  const float *x = j->x ? j->x + lo : NULL;
  const float *y = j->y ? j->y + lo : NULL;
  float *out = j->out + lo;
  switch (j->d->kind) {
  case KIND_PLAIN:
    if (j->backward)
      bwd_slot(j->be, j->d)(in, x, y, out, n);
    else
      fwd_slot(j->be, j->d)(in, out, n);
    break;
  case KIND_STEP:
    fwd_slot(j->be, j->d)(in, out, n);
    break;
  case KIND_LEAKY:
    if (j->backward)
      j->be->leaky_relu_backward(in, x, out, n, j->p0);
    else
      j->be->leaky_relu(in, out, n, j->p0);
    break;
  case KIND_CLIP:
    if (j->backward)
      j->be->clip_backward(in, x, out, n, j->p0, j->p1);
    else
      j->be->clip(in, out, n, j->p0, j->p1);
    break;
  }
}

static void unary_range(int64_t lo, int64_t hi, void *arg) {
  const unary_job *j = arg;
  if (!j->uniform) {
    unary_call(j, j->in + lo, lo, (size_t)(hi - lo));
    return;
  }
  float g[SG_UNIFORM_BLOCK];
  size_t nb = hi - lo < SG_UNIFORM_BLOCK ? (size_t)(hi - lo) : SG_UNIFORM_BLOCK;
  sg__fill(g, (int64_t)nb, j->g);
  for (int64_t at = lo; at < hi; at += SG_UNIFORM_BLOCK)
    unary_call(j, g, at, hi - at < SG_UNIFORM_BLOCK ? (size_t)(hi - at) : SG_UNIFORM_BLOCK);
}

/* dx from dy, or (dy NULL) from a dy that is g everywhere. */
static sg_status unary_backward(const sg_node *node, const sg_tensor *dy, float gv,
                                const bool *need, sg_tensor **dx) {
  if (!need[0]) return SG_OK;
  const unary_desc *d = &k_ops[node->iparam[0]];
  const sg_node_input *in = &node->inputs[0];
  sg_tensor *g = sg__new(SG_F32, in->shape, in->rank);
  if (!g) return sg_last_status();
  const float *saved = node->n_saved > 0 ? sg__f32(node->saved[0]) : NULL;
  unary_job job = {.be = sg__backend(),
                   .d = d,
                   .backward = true,
                   .uniform = !dy,
                   .in = dy ? sg__f32(dy) : NULL,
                   .x = d->save == SAVE_X ? saved : NULL,
                   .y = d->save == SAVE_Y ? saved : NULL,
                   .out = sg__f32(g),
                   .p0 = node->fparam[0],
                   .p1 = node->fparam[1],
                   .g = gv};
  /* dx, dy and the saved tensor if any; a uniform dy never streams. */
  int bytes = dy ? 4 * (2 + (saved != NULL)) : 0;
  sg__parallel_for(g->numel, unary_grain(d, true, g->numel, bytes), unary_range, &job);
  dx[0] = g;
  return SG_OK;
}

static sg_status unary_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  return unary_backward(node, dy, 0.0f, need, dx);
}

static sg_status unary_grad_uniform(const sg_node *node, float g, const bool *need,
                                    sg_tensor **dx) {
  return unary_backward(node, NULL, g, need, dx);
}

/* Step ops: the gradient is zero wherever it exists; NULL tells the tape "zero". */
static sg_status step_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  (void)node;
  (void)dy;
  (void)need;
  dx[0] = NULL;
  return SG_OK;
}

static sg_status step_grad_uniform(const sg_node *node, float g, const bool *need, sg_tensor **dx) {
  (void)g;
  return step_grad(node, NULL, need, dx);
}

static sg_tensor *unary_op(int id, sg_tensor *x, float p0, float p1) {
  const unary_desc *d = &k_ops[id];
  sg_op op;
  if (!sg__op_begin(&op, d->name) || !sg__check_f32(x, d->name, "x")) return sg__op_fail(&op);
  if (d->kind == KIND_CLIP && !(p0 <= p1)) {
    sg__error(SG_ERR_ARG, d->name, "need lo <= hi, got lo = %g, hi = %g", (double)p0, (double)p1);
    return sg__op_fail(&op);
  }
  sg_tensor *y = sg__new(SG_F32, x->shape, x->rank);
  if (!y) return sg__op_fail(&op);
  unary_job job = {
      .be = sg__backend(), .d = d, .in = sg__f32(x), .out = sg__f32(y), .p0 = p0, .p1 = p1};
  sg__parallel_for(x->numel, unary_grain(d, false, x->numel, 8), unary_range, &job);
  if (op.record) {
    sg_node *node = sg__record(&op, d->kind == KIND_STEP ? step_grad : unary_grad, &x, 1, y);
    if (!node) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    node->grad_uniform = d->kind == KIND_STEP ? step_grad_uniform : unary_grad_uniform;
    node->iparam[0] = id;
    node->fparam[0] = p0;
    node->fparam[1] = p1;
    if (d->save != SAVE_NONE) sg__save(node, d->save == SAVE_X ? x : y);
  }
  return sg__op_end(&op, y);
}

sg_tensor *sg_neg(sg_tensor *x) { return unary_op(OP_neg, x, 0.0f, 0.0f); }
sg_tensor *sg_abs(sg_tensor *x) { return unary_op(OP_abs, x, 0.0f, 0.0f); }
sg_tensor *sg_exp(sg_tensor *x) { return unary_op(OP_exp, x, 0.0f, 0.0f); }
sg_tensor *sg_expm1(sg_tensor *x) { return unary_op(OP_expm1, x, 0.0f, 0.0f); }
sg_tensor *sg_log(sg_tensor *x) { return unary_op(OP_log, x, 0.0f, 0.0f); }
sg_tensor *sg_log1p(sg_tensor *x) { return unary_op(OP_log1p, x, 0.0f, 0.0f); }
sg_tensor *sg_sqrt(sg_tensor *x) { return unary_op(OP_sqrt, x, 0.0f, 0.0f); }
sg_tensor *sg_rsqrt(sg_tensor *x) { return unary_op(OP_rsqrt, x, 0.0f, 0.0f); }
sg_tensor *sg_square(sg_tensor *x) { return unary_op(OP_square, x, 0.0f, 0.0f); }
sg_tensor *sg_reciprocal(sg_tensor *x) { return unary_op(OP_reciprocal, x, 0.0f, 0.0f); }
sg_tensor *sg_relu(sg_tensor *x) { return unary_op(OP_relu, x, 0.0f, 0.0f); }
sg_tensor *sg_relu6(sg_tensor *x) { return unary_op(OP_relu6, x, 0.0f, 0.0f); }
sg_tensor *sg_elu(sg_tensor *x) { return unary_op(OP_elu, x, 0.0f, 0.0f); }
sg_tensor *sg_selu(sg_tensor *x) { return unary_op(OP_selu, x, 0.0f, 0.0f); }
sg_tensor *sg_sigmoid(sg_tensor *x) { return unary_op(OP_sigmoid, x, 0.0f, 0.0f); }
sg_tensor *sg_tanh(sg_tensor *x) { return unary_op(OP_tanh, x, 0.0f, 0.0f); }
sg_tensor *sg_softplus(sg_tensor *x) { return unary_op(OP_softplus, x, 0.0f, 0.0f); }
sg_tensor *sg_gelu(sg_tensor *x) { return unary_op(OP_gelu, x, 0.0f, 0.0f); }
sg_tensor *sg_sin(sg_tensor *x) { return unary_op(OP_sin, x, 0.0f, 0.0f); }
sg_tensor *sg_cos(sg_tensor *x) { return unary_op(OP_cos, x, 0.0f, 0.0f); }
sg_tensor *sg_floor(sg_tensor *x) { return unary_op(OP_floor, x, 0.0f, 0.0f); }
sg_tensor *sg_ceil(sg_tensor *x) { return unary_op(OP_ceil, x, 0.0f, 0.0f); }
sg_tensor *sg_round(sg_tensor *x) { return unary_op(OP_round, x, 0.0f, 0.0f); }
sg_tensor *sg_sign(sg_tensor *x) { return unary_op(OP_sign, x, 0.0f, 0.0f); }
sg_tensor *sg_leaky_relu(sg_tensor *x, float alpha) {
  return unary_op(OP_leaky_relu, x, alpha, 0.0f);
}
sg_tensor *sg_clip(sg_tensor *x, float lo, float hi) { return unary_op(OP_clip, x, lo, hi); }
