/* Training through the public API, on each backend and thread count:
 *   "train.mlp", "train.cnn"  one training step of the Fashion-MNIST examples' models
 *                             (examples/models.c: forward, softmax cross-entropy, back-propagation,
 *                             Adam) on a batch of 128 random images; images_per_second is the
 *                             throughput, FLOPS counts the matmul and convolution work only;
 *   "train.mlp.profiled"      MLP steps alternately without and with the profiler around them
 *                             (sg_profile_begin, the step, sg_profile_end, sg_profile_free), on
 *                             the engine's backend: the table gives both times and the profiler's
 *                             cost in percent (alternating, so drift hits both alike);
 *   "conv2d.3x3", "tape.conv2d.3x3"  a 3x3 SAME convolution 64 -> 64 channels on [32, 56, 56, 64]:
 *                             the forward alone, then forward + both backward passes (input and
 *                             filter) through the tape, in GFLOP/s against the FMA peak;
 *   "engine.op_1elem.profiled" the 1-element sg_add of engine.op_1elem, alternately 4096 calls
 *                             without and 4096 with the profiler on (records ended and freed
 *                             after each batch, their cost included): both times per call. */
#include <simdgrad/profile.h>
#include <simdgrad/simdgrad.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "models.h"
#include "roofline.h"

#define BATCH 128
#define CONV_SHAPE "32x56x56x64"

typedef enum train_kind { MLP, CNN, MLP_PROFILED, CONV_FWD, CONV_TAPE, OP_PROFILED } train_kind;

typedef struct train_case {
  train_kind kind;
  const sg_backend *be;
  int threads;
} train_case;

/* Multiply-adds x 2 of one step: each matmul and convolution once forward and twice backward
   (the gradients of its input and of its weights), the first layer's input gradient left out
   since the tape does not compute it. */
static double step_flops(train_kind kind) {
  const double b = BATCH;
  if (kind == MLP || kind == MLP_PROFILED) {
    double macs = b * (784.0 * 1024 + 1024.0 * 1024 + 1024.0 * 10);
    return 2 * (3 * macs - b * 784.0 * 1024);
  }
  double conv1 = b * 28 * 28 * 32 * 9, conv2 = b * 14 * 14 * 32 * 64 * 9;
  double dense = b * (7 * 7 * 64 * 128.0 + 128 * 10);
  return 2 * (2 * conv1 + 3 * (conv2 + dense));
}

/* Random images and one-hot labels for a batch, in the model's input layout. */
static void make_batch(const fm_model *m, sg_tensor **x, sg_tensor **y) {
  const int64_t flat[2] = {BATCH, 784}, img[4] = {BATCH, 28, 28, 1}, ls[1] = {BATCH};
  *x = m->images ? sg_random_uniform(img, 4, 0, 1, 7) : sg_random_uniform(flat, 2, 0, 1, 7);
  int32_t classes[BATCH];
  for (int i = 0; i < BATCH; i++) classes[i] = (int32_t)((i * 7919u) % 10u);
  sg_tensor *idx = sg_tensor_i32(classes, ls, 1);
  *y = sg_one_hot(idx, 10);
  sg_dispose(idx);
}

/* Seconds spent without [0] and with [1] the profiler, for the alternating cases. */
typedef struct onoff {
  double s[2];
} onoff;

static void report_onoff(bench_state *st, const onoff *t, double calls_per_side) {
  bench_counter(st, "profile_off_s", t->s[0] / calls_per_side);
  bench_counter(st, "profile_on_s", t->s[1] / calls_per_side);
}

/* Runs the training steps; returns an error message or NULL. */
static const char *run_steps(bench_state *st, train_kind kind, onoff *t) {
  fm_model m;
  if ((kind == CNN ? fm_cnn(&m) : fm_mlp(&m)) != SG_OK) return sg_last_error();
  sg_optimizer *opt = sg_adam(1e-3f, 0.9f, 0.999f, 1e-7f);
  sg_tensor *x, *y;
  make_batch(&m, &x, &y);
  const char *error = NULL;
  if (!x || !y) error = sg_last_error();
  /* One untimed step: the first one faults in every buffer the caching allocator then reuses. */
  if (!error && fm_train_step(&m, opt, x, y, NULL) != SG_OK) error = sg_last_error();
  while (!error && bench_keep_running(st)) {
    for (int on = 0; on <= (kind == MLP_PROFILED) && !error; on++) {
      double t0 = bench_now();
      if (on && sg_profile_begin() != SG_OK) error = sg_last_error();
      if (!error && fm_train_step(&m, opt, x, y, NULL) != SG_OK) error = sg_last_error();
      if (on) sg_profile_free(sg_profile_end());
      t->s[on] += bench_now() - t0;
    }
  }
  sg_dispose(x);
  sg_dispose(y);
  sg_optimizer_free(opt);
  fm_model_free(&m);
  return error;
}

/* Runs the convolution forward, or forward and backward (then *bwd_s gets the seconds spent in
   sg_tape_end, the two backward passes); returns an error message or NULL. */
static const char *run_conv(bench_state *st, train_kind kind, double *bwd_s) {
  const int64_t xs[4] = {32, 56, 56, 64}, fs[4] = {3, 3, 64, 64};
  sg_tensor *x = sg_random_uniform(xs, 4, -1, 1, 1), *f = sg_random_uniform(fs, 4, -0.1f, 0.1f, 2);
  if (!x || !f) return sg_last_error();
  sg_tensor *in[2] = {x, f}, *grads[2];
  bench_time_each_call(st);
  while (bench_keep_running(st)) {
    if (kind == CONV_TAPE) sg_tape_begin();
    sg_tensor *out = sg_conv2d(x, f, NULL, SG_PADDING_SAME, NULL, NULL);
    double t0 = bench_now();
    if (kind == CONV_TAPE && sg_tape_end(out, NULL, in, 2, grads) != SG_OK) return sg_last_error();
    *bwd_s += bench_now() - t0;
    if (!out) return sg_last_error();
    sg_dispose(out);
    if (kind == CONV_TAPE) sg_dispose(grads[0]), sg_dispose(grads[1]);
  }
  return NULL;
}

enum { OP_BATCH = 4096 };

static const char *run_op_profiled(bench_state *st, onoff *t) {
  const int64_t one[1] = {1};
  sg_tensor *a = sg_fill(one, 1, 0.5f), *b = sg_fill(one, 1, 0.25f);
  const char *error = NULL;
  while (!error && bench_keep_running_batch(st, 2 * OP_BATCH)) {
    for (int on = 0; on <= 1 && !error; on++) {
      double t0 = bench_now();
      if (on && sg_profile_begin() != SG_OK) error = sg_last_error();
      for (int i = 0; !error && i < OP_BATCH; i++) {
        sg_tensor *c = sg_add(a, b);
        bench_do_not_optimize(c);
        sg_dispose(c);
      }
      if (on) sg_profile_free(sg_profile_end());
      t->s[on] += bench_now() - t0;
    }
  }
  return error;
}

static void run_train(bench_state *st, void *arg) {
  const train_case *c = arg;
  bench_engine_state saved;
  bench_enter(c->be, c->threads, &saved);
  onoff t = {{0, 0}};
  const char *error = c->kind == OP_PROFILED                        ? run_op_profiled(st, &t)
                      : c->kind == CONV_FWD || c->kind == CONV_TAPE ? run_conv(st, c->kind, &t.s[0])
                                                                    : run_steps(st, c->kind, &t);
  if (error) bench_skip_with_error(st, error);
  sg_clear_error();
  bench_leave(&saved);
  if (error) return;

  bench_work w = {.isa = roofline_isa_of(c->be->name), .threads = c->threads};
  double iters = (double)bench_iterations(st);
  if (c->kind == OP_PROFILED) {
    w.items = 1;
    report_onoff(st, &t, iters / 2);
  } else if (c->kind == CONV_FWD || c->kind == CONV_TAPE) {
    double fwd = 2.0 * 32 * 56 * 56 * 64 * 64 * 9;
    w.flops = c->kind == CONV_TAPE ? 3 * fwd : fwd;
    w.items = 32;
    w.desc = c->kind == CONV_TAPE ? "forward + input and filter gradients" : "forward";
    if (c->kind == CONV_TAPE && t.s[0] > 0) { /* the backward alone: 2 x the forward's FLOPs */
      double per_call = t.s[0] / iters;
      bench_counter(st, "backward_FLOPS", 2 * fwd / per_call);
      roof_work bwd = {.flops = 2 * fwd};
      double peak = roofline_judge(w.isa, c->threads, &bwd).seconds;
      if (peak > 0) bench_counter(st, "backward_pct_peak", 100 * peak / per_call);
    }
  } else {
    int steps = c->kind == MLP_PROFILED ? 2 : 1; /* an iteration: one step, or off and on */
    w.flops = steps * step_flops(c->kind);
    w.items = steps * BATCH;
    w.desc = "Adam training steps, batch 128; FLOPs of the matmuls and convolutions";
    if (c->kind == MLP_PROFILED) report_onoff(st, &t, iters);
  }
  bench_report(st, &w);
  if (c->kind != OP_PROFILED)
    bench_counter(st, "images_per_second", w.items * iters / bench_elapsed(st));
}

static void add(train_kind kind, const char *op, const char *shape, const sg_backend *be,
                int threads) {
  train_case *c = malloc(sizeof *c);
  if (!c) abort();
  *c = (train_case){kind, be, threads};
  bench_add(op, be->name, shape, threads, bench_in_default(op, 0), run_train, c);
}

void bench_register_train(void) {
  const sg_backend *backends[4];
  int nb = bench_backends(backends), threads[2], nt = bench_thread_counts(threads);
  const sg_backend *engine = sg_backend_get(sg_backend_name());
  static const struct {
    train_kind kind;
    const char *op, *shape;
  } k_cases[] = {{MLP, "train.mlp", "b128"},
                 {CNN, "train.cnn", "b128"},
                 {CONV_FWD, "conv2d.3x3", CONV_SHAPE},
                 {CONV_TAPE, "tape.conv2d.3x3", CONV_SHAPE}};
  for (size_t k = 0; k < sizeof k_cases / sizeof k_cases[0]; k++) {
    for (int t = 0; t < nt; t++) {
      for (int b = 0; b < nb; b++)
        add(k_cases[k].kind, k_cases[k].op, k_cases[k].shape, backends[b], threads[t]);
      /* the profiled step right after the plain one, on the same backend and threads */
      if (k_cases[k].kind == MLP)
        add(MLP_PROFILED, "train.mlp.profiled", "b128", engine, threads[t]);
    }
  }
  add(OP_PROFILED, "engine.op_1elem.profiled", "1", engine, 1);
}
