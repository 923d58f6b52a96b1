/* Tape tests: gradients through chains, accumulation, pruning, saved tensors, missing
 * gradients, composite ops recorded once, and the tape's state rules. */
#include <math.h>
#include <string.h>

#include "engine/engine.h"
#include "support.h"

/* An op with no gradient, built on the internal op frame as a library op would be. */
static sg_tensor *no_grad_op(sg_tensor *x) {
  sg_op op;
  sg__op_begin(&op, "mystery");
  sg_tensor *y = sg__copy(x);
  sg__record(&op, NULL, &x, 1, y);
  return sg__op_end(&op, y);
}

/* A composite op: inner ops must not be recorded, only the outer node with its gradient. */
static sg_status twice_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  (void)node;
  if (!need[0]) return SG_OK;
  dx[0] = sg__new(SG_F32, dy->shape, dy->rank);
  for (int64_t i = 0; i < dy->numel; i++) sg__f32(dx[0])[i] = 2 * sg__f32(dy)[i];
  return SG_OK;
}
static int twice_grad_calls;
static sg_status counting_twice_grad(const sg_node *node, sg_tensor *dy, const bool *need,
                                     sg_tensor **dx) {
  twice_grad_calls++;
  return twice_grad(node, dy, need, dx);
}
static sg_tensor *twice(sg_tensor *x) {
  sg_op op;
  sg__op_begin(&op, "twice");
  sg_tensor *y = sg_add(x, x); /* inner op: not recorded */
  sg__record(&op, counting_twice_grad, &x, 1, y);
  return sg__op_end(&op, y);
}

Test(tape, chain_rule_through_a_chain) {
  int64_t live = t_live_tensors();
  float xv[] = {0.5f, -1.0f, 2.0f};
  int64_t s[] = {3};
  sg_tensor *x = sg_tensor_f32(xv, s, 1);
  sg_tape_begin();
  sg_tensor *e = sg_exp(x);
  sg_tensor *m = sg_mul(e, x);
  sg_tensor *y = sg_sum(m, NULL, 0, false); /* sum(x e^x) */
  sg_tensor *g;
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  float want[3];
  for (int i = 0; i < 3; i++) want[i] = (float)(exp(xv[i]) * (1 + xv[i]));
  t_expect_f32(g, want, 1, s, 1e-5, 1e-5);
  cr_assert_eq(t_live_tensors(), live + 5, "x, e, m, y, g: the tape released what it saved");
  sg_dispose(g);
  sg_dispose(y);
  sg_dispose(m);
  sg_dispose(e);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live);
}

Test(tape, scoped_run_leaves_nothing) {
  int64_t live = t_live_tensors();
  int64_t bytes = sg_memory().num_bytes;
  int64_t s[] = {4};
  sg_tensor *x = sg_ones(s, 1);
  sg_scope_begin("step");
  sg_tape_begin();
  sg_tensor *y = sg_sum(sg_tanh(sg_mul(x, x)), NULL, 0, false);
  sg_tensor *g;
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  sg_scope_end(NULL, 0);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live, "saved tensors and intermediates are released");
  cr_assert_eq(sg_memory().num_bytes, bytes);
}

Test(tape, saved_tensors_outlive_user_dispose) {
  int64_t s[] = {3};
  sg_tensor *x = sg_fill(s, 1, 0.5f);
  sg_tape_begin();
  sg_tensor *e = sg_exp(x); /* saves its output e */
  int64_t live = t_live_tensors();
  sg_dispose(e); /* the tape still holds e */
  cr_assert_eq(t_live_tensors(), live, "saved output still alive");
  sg_tensor *g;
  cr_assert_eq(sg_tape_end(x, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  cr_assert_eq(t_live_tensors(), live - 1 + 1, "e released, g made");
  sg_dispose(g);
  sg_dispose(x);
}

Test(tape, gradients_accumulate_over_uses) {
  int64_t s[] = {2};
  float xv[] = {3, -2};
  sg_tensor *x = sg_tensor_f32(xv, s, 1);
  sg_scope_begin("t");
  sg_tape_begin();
  sg_tensor *y = sg_add(sg_mul(x, x), sg_add(x, sg_neg(x))); /* x^2 + x - x */
  sg_tensor *g;
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  const float want[] = {6, -4};
  t_expect_f32(g, want, 1, s, 0, 0);
  sg_scope_end(NULL, 0);
  sg_dispose(x);
}

Test(tape, dy_seeds_backprop) {
  int64_t s[] = {2};
  float xv[] = {1, 2}, dv[] = {10, 100};
  sg_tensor *x = sg_tensor_f32(xv, s, 1), *dy = sg_tensor_f32(dv, s, 1);
  sg_scope_begin("t");
  sg_tape_begin();
  sg_tensor *y = sg_square(x);
  sg_tensor *g;
  cr_assert_eq(sg_tape_end(y, dy, &x, 1, &g), SG_OK, "%s", sg_last_error());
  const float want[] = {20, 400};
  t_expect_f32(g, want, 1, s, 0, 0);
  sg_scope_end(NULL, 0);
  sg_dispose(x);
  sg_dispose(dy);
}

/* Note [the seed] in engine/tape.c: sg_tape_end writes no seed of ones for an elementwise op
   and copies no given dy; the one buffer it makes is dx. */
Test(tape, no_seed_and_no_copy_of_dy) {
  enum { N = 1 << 16 };
  int64_t s[] = {N};
  sg_tensor *x = sg_fill(s, 1, 0.0f), *dy = sg_fill(s, 1, 3.0f);
  float *xv = sg_data_f32_mut(x);
  for (int i = 0; i < N; i++) xv[i] = (float)(i % 7) - 3.0f;
  for (int with_dy = 0; with_dy < 2; with_dy++) {
    sg_tape_begin();
    sg_tensor *y = sg_relu(x), *g;
    int64_t t0, b0, t1, b1;
    sg__thread_allocations(&t0, &b0);
    cr_assert_eq(sg_tape_end(y, with_dy ? dy : NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
    sg__thread_allocations(&t1, &b1);
    cr_assert_eq(b1 - b0, (int64_t)N * 4, "with_dy %d: %lld bytes made", with_dy,
                 (long long)(b1 - b0));
    const float *gv = sg_data_f32(g);
    for (int i = 0; i < N; i++)
      cr_assert_eq(gv[i], xv[i] > 0 ? (with_dy ? 3.0f : 1.0f) : 0.0f, "i %d", i);
    sg_dispose(g);
    sg_dispose(y);
  }
  sg_dispose(dy);
  sg_dispose(x);
}

/* The uniform gradients (no dy: ones that are never written out) give the bits that the same
   ops give with a dy of ones in memory: unary, step and binary ops, broadcast or not, over
   lengths that are not a multiple of the block the ones come from. */
static sg_tensor *op_exp(sg_tensor *const *t) { return sg_exp(t[0]); }
static sg_tensor *op_relu(sg_tensor *const *t) { return sg_relu(t[0]); }
static sg_tensor *op_leaky(sg_tensor *const *t) { return sg_leaky_relu(t[0], 0.25f); }
static sg_tensor *op_clip(sg_tensor *const *t) { return sg_clip(t[0], -0.5f, 0.5f); }
static sg_tensor *op_floor(sg_tensor *const *t) { return sg_floor(t[0]); }
static sg_tensor *op_mul(sg_tensor *const *t) { return sg_mul(t[0], t[1]); }
static sg_tensor *op_sub(sg_tensor *const *t) { return sg_sub(t[0], t[1]); }
static sg_tensor *op_div(sg_tensor *const *t) { return sg_div(t[0], t[1]); }
static sg_tensor *op_add(sg_tensor *const *t) { return sg_add(t[0], t[1]); }

Test(tape, uniform_seed_matches_ones_in_memory) {
  static const struct {
    sg_tensor *(*f)(sg_tensor *const *);
    int n_in;
  } ops[] = {{op_exp, 1}, {op_relu, 1}, {op_leaky, 1}, {op_clip, 1}, {op_floor, 1},
             {op_mul, 2}, {op_sub, 2},  {op_div, 2},   {op_add, 2}};
  /* a [rows, cols] and b [rows, cols] or [cols] (broadcast). */
  static const int64_t shapes[][2] = {{1, 1}, {3, 5000}, {7000, 3}, {2, 4097}};
  for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++)
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++)
      for (int bcast = 0; bcast < 2; bcast++) {
        sg_scope_begin("t");
        int64_t sa[2] = {shapes[k][0], shapes[k][1]}, sb[1] = {shapes[k][1]};
        sg_tensor *in[2] = {sg_fill(sa, 2, 0.0f),
                            bcast ? sg_fill(sb, 1, 0.0f) : sg_fill(sa, 2, 0.0f)};
        for (int i = 0; i < 2; i++) {
          float *v = sg_data_f32_mut(in[i]);
          for (int64_t e = 0; e < sg_numel(in[i]); e++)
            v[e] = (float)((e * 37 + 11 * i) % 29) / 7.0f - 2.0f + 0.125f;
        }
        sg_tensor *g[2][2] = {{NULL, NULL}, {NULL, NULL}};
        for (int with_dy = 0; with_dy < 2; with_dy++) {
          sg_tape_begin();
          sg_tensor *y = ops[o].f(in);
          cr_assert_not_null(y, "%s", sg_last_error());
          sg_tensor *dy = with_dy ? sg_ones(sg_shape(y), sg_rank(y)) : NULL;
          cr_assert_eq(sg_tape_end(y, dy, in, ops[o].n_in, g[with_dy]), SG_OK, "%s",
                       sg_last_error());
        }
        for (int i = 0; i < ops[o].n_in; i++) {
          int64_t n = sg_numel(g[1][i]);
          cr_assert_eq(sg_numel(g[0][i]), n);
          cr_assert_eq(memcmp(sg_data_f32(g[0][i]), sg_data_f32(g[1][i]), (size_t)n * 4), 0,
                       "op %zu shape %zu bcast %d input %d", o, k, bcast, i);
        }
        sg_scope_end(NULL, 0);
      }
}

/* The seed is a view of dy: gradients that are views of it are summed into a new tensor, dy is
   left as it was, and y itself in xs gets dy's values (ones without dy). */
Test(tape, dy_is_read_not_written) {
  int64_t s[] = {3};
  float xv[] = {1, 2, 3}, dv[] = {0.5f, -1, 4};
  sg_tensor *x = sg_tensor_f32(xv, s, 1), *dy = sg_tensor_f32(dv, s, 1);
  sg_scope_begin("t");
  sg_tape_begin();
  sg_tensor *y = sg_add(x, x); /* both gradients are views of the seed */
  sg_tensor *g;
  cr_assert_eq(sg_tape_end(y, dy, &x, 1, &g), SG_OK, "%s", sg_last_error());
  const float want[] = {1, -2, 8};
  t_expect_f32(g, want, 1, s, 0, 0);
  t_expect_f32(dy, dv, 1, s, 0, 0);
  sg_tape_begin();
  sg_tensor *xs[] = {x, x}, *gs[2];
  cr_assert_eq(sg_tape_end(x, dy, xs, 2, gs), SG_OK, "%s", sg_last_error());
  t_expect_f32(gs[0], dv, 1, s, 0, 0);
  t_expect_f32(gs[1], dv, 1, s, 0, 0);
  sg_tape_begin();
  cr_assert_eq(sg_tape_end(x, NULL, xs, 2, gs), SG_OK, "%s", sg_last_error());
  const float ones[] = {1, 1, 1};
  t_expect_f32(gs[0], ones, 1, s, 0, 0);
  t_expect_f32(gs[1], ones, 1, s, 0, 0);
  sg_scope_end(NULL, 0);
  t_expect_f32(dy, dv, 1, s, 0, 0);
  sg_dispose(x);
  sg_dispose(dy);
}

Test(tape, unrelated_x_gets_zeros) {
  int64_t s[] = {2, 2};
  sg_tensor *x = sg_ones(s, 2), *z = sg_ones(s, 2);
  sg_scope_begin("t");
  sg_tape_begin();
  sg_tensor *y = sg_exp(x);
  sg_tensor *xs[] = {x, z}, *g[2];
  cr_assert_eq(sg_tape_end(y, NULL, xs, 2, g), SG_OK, "%s", sg_last_error());
  const float zero[4] = {0};
  t_expect_f32(g[1], zero, 2, s, 0, 0);
  sg_scope_end(NULL, 0);
  sg_dispose(x);
  sg_dispose(z);
}

Test(tape, pruning_skips_nodes_off_the_path) {
  int64_t s[] = {3};
  sg_tensor *x = sg_fill(s, 1, 2.0f);
  sg_tensor *c = sg_fill(s, 1, 5.0f);
  sg_scope_begin("t");
  sg_tape_begin();
  sg_tensor *side = no_grad_op(x);   /* depends on x, does not lead to y */
  sg_tensor *consts = no_grad_op(c); /* leads to y, does not depend on x */
  sg_tensor *y = sg_mul(x, consts);
  (void)side;
  sg_tensor *g;
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "pruned: %s", sg_last_error());
  const float want[] = {5, 5, 5};
  t_expect_f32(g, want, 1, s, 0, 0);
  sg_scope_end(NULL, 0);
  sg_dispose(x);
  sg_dispose(c);
}

Test(tape, missing_gradient_names_the_op_and_scope) {
  int64_t live = t_live_tensors();
  int64_t s[] = {3};
  sg_tensor *x = sg_ones(s, 1);
  sg_scope_begin("model");
  sg_tape_begin();
  sg_scope_begin("layer");
  sg_tensor *h = no_grad_op(x);
  sg_scope_end(&h, 1);
  sg_tensor *y = sg_exp(h);
  sg_tensor *g = (sg_tensor *)1;
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_ERR_NO_GRADIENT);
  cr_assert_null(g);
  cr_assert(strstr(sg_last_error(), "mystery"), "%s", sg_last_error());
  cr_assert(strstr(sg_last_error(), "model/layer"), "%s", sg_last_error());
  sg_clear_error();
  cr_assert_not(sg_tape_active(), "the tape is closed after a failure");
  sg_scope_end(NULL, 0);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live);
}

Test(tape, composite_op_records_once) {
  int64_t s[] = {2};
  sg_tensor *x = sg_fill(s, 1, 3.0f);
  sg_scope_begin("t");
  sg_tape_begin();
  sg_tensor *y = twice(x);
  twice_grad_calls = 0;
  sg_tensor *g;
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  cr_assert_eq(twice_grad_calls, 1);
  const float want[] = {2, 2}; /* the add inside was not recorded: it would have added 2 more */
  t_expect_f32(g, want, 1, s, 0, 0);
  sg_scope_end(NULL, 0);
  sg_dispose(x);
}

Test(tape, state_rules) {
  sg_tensor *g = NULL;
  cr_assert_eq(sg_tape_end(NULL, NULL, NULL, 0, &g), SG_ERR_STATE, "no tape open");
  sg_clear_error();
  cr_assert_eq(sg_tape_begin(), SG_OK);
  cr_assert_eq(sg_tape_begin(), SG_ERR_STATE, "tapes do not nest");
  cr_assert(strstr(sg_last_error(), "already open"));
  sg_clear_error();
  /* y NULL because the forward failed: the tape still closes and reports the forward's error. */
  int64_t s1[] = {2}, s2[] = {3};
  sg_tensor *a = sg_ones(s1, 1), *b = sg_ones(s2, 1);
  sg_tensor *y = sg_add(a, b);
  cr_assert_eq(sg_tape_end(y, NULL, &a, 1, &g), SG_ERR_SHAPE);
  cr_assert_null(g);
  cr_assert_not(sg_tape_active());
  sg_clear_error();
  sg_dispose(a);
  sg_dispose(b);
}

Test(tape, dy_shape_must_match) {
  int64_t s1[] = {2}, s2[] = {3};
  sg_tensor *x = sg_ones(s1, 1), *dy = sg_ones(s2, 1);
  sg_scope_begin("t");
  sg_tape_begin();
  sg_tensor *y = sg_exp(x), *g;
  cr_assert_eq(sg_tape_end(y, dy, &x, 1, &g), SG_ERR_SHAPE);
  cr_assert(strstr(sg_last_error(), "[3]") && strstr(sg_last_error(), "[2]"));
  sg_clear_error();
  sg_scope_end(NULL, 0);
  sg_dispose(x);
  sg_dispose(dy);
}

Test(tape, outside_a_tape_nothing_is_saved) {
  int64_t s[] = {3};
  sg_tensor *x = sg_ones(s, 1);
  int64_t live = t_live_tensors();
  sg_tensor *e = sg_exp(x);
  sg_dispose(e);
  cr_assert_eq(t_live_tensors(), live, "no hidden references without a tape");
  sg_dispose(x);
}

/* ---- sg_tape_on_grad_ready (Note [gradient ready] in engine/tape.c) ---- */

typedef struct ready_log {
  int calls, order[8];
  float first[8]; /* each reported gradient's first element */
  int64_t numel[8];
} ready_log;

static void log_ready(void *ctx, int index, const sg_tensor *grad) {
  ready_log *log = ctx;
  cr_assert_lt(log->calls, 8);
  log->order[log->calls] = index;
  log->first[log->calls] = sg_data_f32(grad)[0];
  log->numel[log->calls] = sg_numel(grad);
  log->calls++;
}

/* w1 is used by the first node and again by the third, w3 by the fourth only (and passed twice),
   z by none: w3 is final first, then w2, then w1 after the last node, then z. Each report holds
   the gradient's final value. */
Test(tape, grad_ready_reports_each_gradient_once_when_final) {
  int64_t s[] = {2};
  float xv[] = {2, 3}, v1[] = {1, -1}, v2[] = {4, 5}, v3[] = {-2, 7};
  sg_tensor *x = sg_tensor_f32(xv, s, 1), *w1 = sg_tensor_f32(v1, s, 1);
  sg_tensor *w2 = sg_tensor_f32(v2, s, 1), *w3 = sg_tensor_f32(v3, s, 1), *z = sg_ones(s, 1);
  sg_scope_begin("t");
  ready_log log = {0};
  sg_tape_begin();
  cr_assert_eq(sg_tape_on_grad_ready(log_ready, &log), SG_OK);
  sg_tensor *h = sg_add(sg_mul(sg_mul(x, w1), w2), w1);
  sg_tensor *y = sg_sum(sg_mul(h, w3), NULL, 0, false);
  sg_tensor *xs[] = {w1, w2, w3, z, w3}, *g[5];
  cr_assert_eq(sg_tape_end(y, NULL, xs, 5, g), SG_OK, "%s", sg_last_error());
  cr_assert_eq(log.calls, 5);
  const int want_order[] = {2, 4, 1, 0, 3};
  for (int k = 0; k < 5; k++) {
    cr_assert_eq(log.order[k], want_order[k], "report %d: index %d, want %d", k, log.order[k],
                 want_order[k]);
    cr_assert_eq(log.first[k], sg_data_f32(g[log.order[k]])[0], "report %d is not final", k);
    cr_assert_eq(log.numel[k], 2);
  }
  /* dy/dw1 = w3 * (x * w2 + 1): the sum over both uses. */
  const float want_w1[] = {-2 * (2 * 4 + 1), 7 * (3 * 5 + 1)};
  t_expect_f32(g[0], want_w1, 1, s, 0, 0);
  sg_scope_end(NULL, 0);
  sg_tensor *all[] = {x, w1, w2, w3, z};
  for (int i = 0; i < 5; i++) sg_dispose(all[i]);
}

Test(tape, grad_ready_needs_an_open_tape_and_can_be_removed) {
  ready_log log = {0};
  cr_assert_eq(sg_tape_on_grad_ready(log_ready, &log), SG_ERR_STATE);
  cr_assert(strstr(sg_last_error(), "no tape is open"), "%s", sg_last_error());
  sg_clear_error();
  int64_t s[] = {2};
  sg_tensor *x = sg_ones(s, 1);
  sg_scope_begin("t");
  sg_tape_begin();
  sg_tape_on_grad_ready(log_ready, &log);
  cr_assert_eq(sg_tape_on_grad_ready(NULL, NULL), SG_OK);
  sg_tensor *y = sg_sum(sg_exp(x), NULL, 0, false), *g;
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  cr_assert_eq(log.calls, 0);
  /* The hook belongs to one tape: the next one starts without it. */
  sg_tape_begin();
  y = sg_sum(sg_exp(x), NULL, 0, false);
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, &g), SG_OK, "%s", sg_last_error());
  cr_assert_eq(log.calls, 0);
  sg_scope_end(NULL, 0);
  sg_dispose(x);
}
