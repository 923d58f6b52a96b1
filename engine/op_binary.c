/* The broadcasting binary ops (sg_add ... sg_squared_difference), the comparisons (sg_equal ...
 * sg_greater_equal, giving SG_BOOL) and sg_where, with their gradients. Broadcasting itself is
 * engine/broadcast.c; the arithmetic is the backend's kernels. */
#include "engine/broadcast.h"

/* ---- Shared checks --------------------------------------------------------------------------- */

/* Both operands live and f32; SG_ERR_DTYPE names the op and both dtypes. */
static bool check_f32_pair(const sg_tensor *a, const sg_tensor *b, const char *op) {
  if (!sg__check(a, op, "a") || !sg__check(b, op, "b")) return false;
  if (a->dtype != SG_F32 || b->dtype != SG_F32) {
    sg__error(SG_ERR_DTYPE, op, "a and b must both be f32, got %s and %s", sg__dtype_name(a->dtype),
              sg__dtype_name(b->dtype));
    return false;
  }
  return true;
}

/* The broadcast shape and walk plan of n tensors; false with SG_ERR_SHAPE set. */
static bool plan_tensors(sg_bcast *bc, const char *op, sg_tensor *const *ts, int n,
                         int64_t *out_shape, int *out_rank) {
  const int64_t *shapes[SG_BCAST_MAX_OPERANDS];
  int ranks[SG_BCAST_MAX_OPERANDS];
  for (int k = 0; k < n; k++) {
    shapes[k] = ts[k]->shape;
    ranks[k] = ts[k]->rank;
  }
  if (!sg__broadcast_shape(op, n, shapes, ranks, out_shape, out_rank)) return false;
  sg__bcast_plan(bc, n, shapes, ranks, out_shape, *out_rank);
  return true;
}

/* The same plan rebuilt from a tape node's inputs and output. */
static void plan_node(sg_bcast *bc, const sg_node *node) {
  const int64_t *shapes[SG_BCAST_MAX_OPERANDS];
  int ranks[SG_BCAST_MAX_OPERANDS];
  for (int k = 0; k < node->n_inputs; k++) {
    shapes[k] = node->inputs[k].shape;
    ranks[k] = node->inputs[k].rank;
  }
  sg__bcast_plan(bc, node->n_inputs, shapes, ranks, node->out_shape, node->out_rank);
}

/* An output-shaped buffer at a run; NULL stays NULL (y unused, or a gradient not wanted). */
static inline const float *at(const float *p, int64_t off) { return p ? p + off : NULL; }
static inline float *at_mut(float *p, int64_t off) { return p ? p + off : NULL; }

/* Sums an output-shaped gradient down to input k's shape; consumes g. */
static sg_tensor *reduce_to_input(sg_tensor *g, const sg_node *node, int k) {
  if (!g) return NULL;
  sg_tensor *r = sg__reduce_to_shape(g, node->inputs[k].shape, node->inputs[k].rank);
  sg_dispose(g);
  return r;
}

/* ---- Arithmetic ------------------------------------------------------------------------------ */

typedef struct binary_ctx {
  sg_binary_kernel fn;
  const float *a, *b;
  float *y;
} binary_ctx;

static void binary_run(const sg_bcast_run *r, void *arg) {
  const binary_ctx *c = arg;
  c->fn(c->a + r->off[0], r->step[0], c->b + r->off[1], r->step[1], c->y + r->out, (size_t)r->n);
}

/* Same-shape operands skip the broadcast plan: one flat range. */
static void binary_flat(int64_t lo, int64_t hi, void *arg) {
  const binary_ctx *c = arg;
  c->fn(c->a + lo, 1, c->b + lo, 1, c->y + lo, (size_t)(hi - lo));
}

/* What the forward keeps for the backward kernel: the inputs (not for add, sub) and y (pow). */
enum { SAVE_NONE = 0, SAVE_AB = 1, SAVE_ABY = 2 };

static sg_tensor *binary_op(const char *name, sg_tensor *a, sg_tensor *b, sg_binary_kernel fn,
                            sg_grad_fn grad, sg_grad_uniform_fn grad_uniform, int save) {
  sg_op op;
  if (!sg__op_begin(&op, name) || !check_f32_pair(a, b, name)) return sg__op_fail(&op);
  sg_tensor *ab[2] = {a, b};
  sg_tensor *y;
  if (sg__same_shape(a, b)) {
    y = sg__new(SG_F32, a->shape, a->rank);
    if (!y) return sg__op_fail(&op);
    binary_ctx c = {fn, sg__f32(a), sg__f32(b), sg__f32(y)};
    sg__parallel_for(y->numel, sg__flat_grain(y->numel, 12), binary_flat, &c);
  } else {
    sg_bcast bc;
    int64_t shape[SG_MAX_RANK];
    int rank;
    if (!plan_tensors(&bc, name, ab, 2, shape, &rank)) return sg__op_fail(&op);
    y = sg__new(SG_F32, shape, rank);
    if (!y) return sg__op_fail(&op);
    binary_ctx c = {fn, sg__f32(a), sg__f32(b), sg__f32(y)};
    sg__bcast_for_each(&bc, binary_run, &c);
  }
  sg_node *node = sg__record(&op, grad, ab, 2, y);
  if (op.record && !node) {
    sg_dispose(y);
    return sg__op_fail(&op);
  }
  if (node) node->grad_uniform = grad_uniform;
  if (node && save >= SAVE_AB) {
    sg__save(node, a);
    sg__save(node, b);
  }
  if (node && save == SAVE_ABY) sg__save(node, y);
  return sg__op_end(&op, y);
}

typedef struct binary_grad_ctx {
  sg_binary_backward_kernel fn;
  const float *dy; /* NULL: dy is g everywhere (a uniform gradient) */
  const float *a, *b, *y;
  float *da, *db;
  float g;
} binary_grad_ctx;

/* The kernel on n elements of run r from its element t, dy from the pointer given. add and sub
   save neither input and their kernels read neither, but a SIMD kernel may still load a[0] and
   b[0] up front: dy stands in as readable memory of the right length. */
static void binary_grad_call(const binary_grad_ctx *c, const float *dy, const sg_bcast_run *r,
                             int64_t t, size_t n) {
  int64_t out = r->out + t, oa = r->off[0] + t * (int64_t)r->step[0],
          ob = r->off[1] + t * (int64_t)r->step[1];
  c->fn(dy, c->a ? c->a + oa : dy, r->step[0], c->b ? c->b + ob : dy, r->step[1], at(c->y, out),
        at_mut(c->da, out), at_mut(c->db, out), n);
}

static void binary_grad_run(const sg_bcast_run *r, void *arg) {
  const binary_grad_ctx *c = arg;
  if (c->dy) {
    binary_grad_call(c, c->dy + r->out, r, 0, (size_t)r->n);
    return;
  }
  float g[SG_UNIFORM_BLOCK];
  sg__fill(g, r->n < SG_UNIFORM_BLOCK ? r->n : SG_UNIFORM_BLOCK, c->g);
  for (int64_t t = 0; t < r->n; t += SG_UNIFORM_BLOCK)
    binary_grad_call(c, g, r, t,
                     (size_t)(r->n - t < SG_UNIFORM_BLOCK ? r->n - t : SG_UNIFORM_BLOCK));
}

/* da and db over the output shape from the backward kernel, then summed down to a's and b's
   shapes where they were broadcast. dy NULL: dy is gv everywhere. */
static sg_status binary_grad(const sg_node *node, const sg_tensor *dy, float gv, const bool *need,
                             sg_tensor **dx, sg_binary_backward_kernel fn) {
  sg_bcast bc;
  plan_node(&bc, node);
  sg_tensor *full[2] = {NULL, NULL};
  for (int k = 0; k < 2; k++) {
    if (!need[k]) continue;
    full[k] = sg__new(SG_F32, node->out_shape, node->out_rank);
    if (!full[k]) {
      sg_dispose(full[0]);
      return sg_last_status();
    }
  }
  binary_grad_ctx c = {fn,
                       dy ? sg__f32(dy) : NULL,
                       node->n_saved >= 2 ? sg__f32(node->saved[0]) : NULL,
                       node->n_saved >= 2 ? sg__f32(node->saved[1]) : NULL,
                       node->n_saved >= 3 ? sg__f32(node->saved[2]) : NULL,
                       full[0] ? sg__f32(full[0]) : NULL,
                       full[1] ? sg__f32(full[1]) : NULL,
                       gv};
  if (c.dy) /* dy, the saved tensors the kernel reads, the gradients asked for */
    sg__bcast_for_each_streamed(&bc, 4 * (1 + node->n_saved + need[0] + need[1]), binary_grad_run,
                                &c);
  else /* a uniform gradient goes in blocks of SG_UNIFORM_BLOCK: no kernel call streams */
    sg__bcast_for_each(&bc, binary_grad_run, &c);
  sg_status st = SG_OK;
  for (int k = 0; k < 2; k++) {
    if (!full[k]) continue;
    dx[k] = reduce_to_input(full[k], node, k);
    if (!dx[k]) st = sg_last_status();
  }
  return st;
}

/* add's gradient is dy itself for both inputs: each gets a view of dy, or dy summed down to its
   shape where it was broadcast; no kernel runs and nothing output-sized is copied. */
static sg_status identity_grad(const sg_node *node, sg_tensor *dy, const bool *need,
                               sg_tensor **dx) {
  for (int k = 0; k < 2; k++) {
    if (!need[k]) continue;
    dx[k] = sg__reduce_to_shape(dy, node->inputs[k].shape, node->inputs[k].rank);
    if (!dx[k]) return sg_last_status(); /* the tape disposes what was made */
  }
  return SG_OK;
}

#define SG_IDENTITY_GRAD_add 1
#define SG_IDENTITY_GRAD_sub 0
#define SG_IDENTITY_GRAD_mul 0
#define SG_IDENTITY_GRAD_div 0
#define SG_IDENTITY_GRAD_pow 0
#define SG_IDENTITY_GRAD_maximum 0
#define SG_IDENTITY_GRAD_minimum 0
#define SG_IDENTITY_GRAD_squared_difference 0

#define SG_SAVE_add SAVE_NONE
#define SG_SAVE_sub SAVE_NONE
#define SG_SAVE_mul SAVE_AB
#define SG_SAVE_div SAVE_AB
#define SG_SAVE_pow SAVE_ABY
#define SG_SAVE_maximum SAVE_AB
#define SG_SAVE_minimum SAVE_AB
#define SG_SAVE_squared_difference SAVE_AB

#define SG_DEFINE_BINARY_OP_(name, doc)                                                            \
  static sg_status name##_grad(const sg_node *node, sg_tensor *dy, const bool *need,               \
                               sg_tensor **dx) {                                                   \
    if (SG_IDENTITY_GRAD_##name) return identity_grad(node, dy, need, dx);                         \
    return binary_grad(node, dy, 0.0f, need, dx, sg__backend()->name##_backward);                  \
  }                                                                                                \
  /* add's gradient is the seed itself: it has no uniform form, the tape writes the ones. */       \
  static sg_status name##_grad_uniform(const sg_node *node, float g, const bool *need,             \
                                       sg_tensor **dx) {                                           \
    return binary_grad(node, NULL, g, need, dx, sg__backend()->name##_backward);                   \
  }                                                                                                \
  sg_tensor *sg_##name(sg_tensor *a, sg_tensor *b) {                                               \
    return binary_op(#name, a, b, sg__backend()->name, name##_grad,                                \
                     SG_IDENTITY_GRAD_##name ? NULL : name##_grad_uniform, SG_SAVE_##name);        \
  }
SG_FOR_EACH_BINARY_OP(SG_DEFINE_BINARY_OP_)

/* ---- Comparisons (no gradient: nothing is recorded) ------------------------------------------ */

typedef struct compare_ctx {
  sg_compare_kernel fn;
  const float *a, *b;
  uint8_t *y;
} compare_ctx;

static void compare_run(const sg_bcast_run *r, void *arg) {
  const compare_ctx *c = arg;
  c->fn(c->a + r->off[0], r->step[0], c->b + r->off[1], r->step[1], c->y + r->out, (size_t)r->n);
}

static sg_tensor *compare_op(const char *name, sg_tensor *a, sg_tensor *b, sg_compare_kernel fn) {
  sg_op op;
  if (!sg__op_begin(&op, name) || !check_f32_pair(a, b, name)) return sg__op_fail(&op);
  sg_bcast bc;
  int64_t shape[SG_MAX_RANK];
  int rank;
  sg_tensor *ab[2] = {a, b};
  if (!plan_tensors(&bc, name, ab, 2, shape, &rank)) return sg__op_fail(&op);
  sg_tensor *y = sg__new(SG_BOOL, shape, rank);
  if (!y) return sg__op_fail(&op);
  compare_ctx c = {fn, sg__f32(a), sg__f32(b), (uint8_t *)y->data};
  sg__bcast_for_each(&bc, compare_run, &c);
  return sg__op_end(&op, y);
}

#define SG_DEFINE_COMPARE_OP_(name, doc)                                                           \
  sg_tensor *sg_##name(sg_tensor *a, sg_tensor *b) {                                               \
    return compare_op(#name, a, b, sg__backend()->name);                                           \
  }
SG_FOR_EACH_COMPARE_OP(SG_DEFINE_COMPARE_OP_)

/* ---- where ----------------------------------------------------------------------------------- */

typedef struct where_ctx {
  const sg_backend *be;
  const uint8_t *c;
  const float *a, *b, *dy;
  float *y, *da, *db;
} where_ctx;

static void where_run(const sg_bcast_run *r, void *arg) {
  const where_ctx *w = arg;
  w->be->where(w->c + r->off[0], r->step[0], w->a + r->off[1], r->step[1], w->b + r->off[2],
               r->step[2], w->y + r->out, (size_t)r->n);
}

static void where_grad_run(const sg_bcast_run *r, void *arg) {
  const where_ctx *w = arg;
  w->be->where_backward(w->dy + r->out, w->c + r->off[0], r->step[0], at_mut(w->da, r->out),
                        at_mut(w->db, r->out), (size_t)r->n);
}

/* dy flows to a where cond holds and to b elsewhere; cond (bool) gets none. */
static sg_status where_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  sg_bcast bc;
  plan_node(&bc, node);
  sg_tensor *full[3] = {NULL, NULL, NULL};
  for (int k = 1; k < 3; k++) {
    if (!need[k]) continue;
    full[k] = sg__new(SG_F32, node->out_shape, node->out_rank);
    if (!full[k]) {
      sg_dispose(full[1]);
      return sg_last_status();
    }
  }
  where_ctx w = {.be = sg__backend(),
                 .c = node->saved[0]->data,
                 .dy = sg__f32(dy),
                 .da = full[1] ? sg__f32(full[1]) : NULL,
                 .db = full[2] ? sg__f32(full[2]) : NULL};
  /* dy, a byte of cond, and the gradients asked for */
  sg__bcast_for_each_streamed(&bc, 5 + 4 * (need[1] + need[2]), where_grad_run, &w);
  sg_status st = SG_OK;
  for (int k = 1; k < 3; k++) {
    if (!full[k]) continue;
    dx[k] = reduce_to_input(full[k], node, k);
    if (!dx[k]) st = sg_last_status();
  }
  return st;
}

sg_tensor *sg_where(sg_tensor *cond, sg_tensor *a, sg_tensor *b) {
  sg_op op;
  if (!sg__op_begin(&op, "where")) return sg__op_fail(&op);
  if (!sg__check(cond, "where", "cond") || !check_f32_pair(a, b, "where")) return sg__op_fail(&op);
  if (cond->dtype != SG_BOOL) {
    sg__error(SG_ERR_DTYPE, "where", "cond must be bool, got %s", sg__dtype_name(cond->dtype));
    return sg__op_fail(&op);
  }
  sg_bcast bc;
  int64_t shape[SG_MAX_RANK];
  int rank;
  sg_tensor *cab[3] = {cond, a, b};
  if (!plan_tensors(&bc, "where", cab, 3, shape, &rank)) return sg__op_fail(&op);
  sg_tensor *y = sg__new(SG_F32, shape, rank);
  if (!y) return sg__op_fail(&op);
  where_ctx w = {
      .be = sg__backend(), .c = cond->data, .a = sg__f32(a), .b = sg__f32(b), .y = sg__f32(y)};
  sg__bcast_for_each_streamed(&bc, 13, where_run, &w); /* a byte of cond, a, b, y */
  sg_node *node = sg__record(&op, where_grad, cab, 3, y);
  if (op.record && !node) {
    sg_dispose(y);
    return sg__op_fail(&op);
  }
  if (node) sg__save(node, cond);
  return sg__op_end(&op, y);
}
