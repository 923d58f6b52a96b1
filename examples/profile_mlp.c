/* profile_mlp: profiles one SGD training step of a 784-1024-1024-10 MLP on random data
 * (batch 128) and prints the profile tree and the per-op table.
 *
 *   profile_mlp [trace.json]       also writes a Chrome trace (open it in ui.perfetto.dev)
 *   profile_mlp --calls            also lists every call
 *   profile_mlp --overhead [N]     times N rounds of alternating steps without and with the
 *                                  profiler (begin, step, end, free) and prints the overhead;
 *                                  run it with SIMDGRAD_THREADS=1 to read thread CPU time
 *
 * PROFILE_MLP_WARMUP=N sets the untimed steps run first (default 3). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <simdgrad/profile.h>
#include <simdgrad/simdgrad.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 128
#define N_LAYERS 3
static const int64_t k_sizes[N_LAYERS + 1] = {784, 1024, 1024, 10};

typedef struct mlp {
  sg_tensor *params[2 * N_LAYERS]; /* w1, b1, w2, b2, w3, b3 */
} mlp;

static void fail(const char *what) {
  fprintf(stderr, "profile_mlp: %s: %s\n", what, sg_last_error());
  exit(1);
}

static sg_tensor *dense(const char *name, sg_tensor *x, sg_tensor *w, sg_tensor *b, bool relu) {
  sg_scope_begin(name);
  sg_tensor *y = sg_add(sg_matmul(x, w, false, false), b);
  if (relu) y = sg_relu(y);
  sg_scope_end(&y, 1);
  return y;
}

/* One step: forward, loss, backward, w = w - lr * g. Replaces the parameters. */
static void train_step(mlp *m, sg_tensor *x, sg_tensor *labels, sg_tensor *lr) {
  sg_tensor **p = m->params;
  sg_scope_begin("train");
  sg_tape_begin();
  sg_scope_begin("model");
  sg_tensor *h = dense("dense1", x, p[0], p[1], true);
  h = dense("dense2", h, p[2], p[3], true);
  sg_tensor *logits = dense("dense3", h, p[4], p[5], false);
  sg_scope_end(&logits, 1);
  sg_scope_begin("loss");
  sg_tensor *loss = sg_softmax_cross_entropy(labels, logits);
  sg_scope_end(&loss, 1);
  sg_tensor *grads[2 * N_LAYERS], *next[2 * N_LAYERS];
  if (sg_tape_end(loss, NULL, p, 2 * N_LAYERS, grads) != SG_OK) fail("training step");
  sg_scope_begin("sgd");
  for (int i = 0; i < 2 * N_LAYERS; i++) next[i] = sg_sub(p[i], sg_mul(lr, grads[i]));
  sg_scope_end(next, 2 * N_LAYERS);
  sg_scope_end(next, 2 * N_LAYERS); /* the outermost scope: they become untracked */
  for (int i = 0; i < 2 * N_LAYERS; i++) {
    if (!next[i]) fail("update");
    sg_dispose(p[i]);
    p[i] = next[i];
  }
}

static void make_data(mlp *m, sg_tensor **x, sg_tensor **labels) {
  for (int l = 0; l < N_LAYERS; l++) {
    int64_t ws[2] = {k_sizes[l], k_sizes[l + 1]}, bs[1] = {k_sizes[l + 1]};
    float sd = 1.0f / (float)k_sizes[l];
    m->params[2 * l] = sg_random_normal(ws, 2, 0.0f, sd, 10 + (uint64_t)l);
    m->params[2 * l + 1] = sg_zeros(bs, 1);
  }
  int64_t xs[2] = {BATCH, k_sizes[0]}, ls[1] = {BATCH};
  *x = sg_random_normal(xs, 2, 0.0f, 1.0f, 1);
  int32_t classes[BATCH];
  for (int i = 0; i < BATCH; i++) classes[i] = (int32_t)((i * 7919u) % 10u);
  sg_tensor *idx = sg_tensor_i32(classes, ls, 1);
  *labels = sg_one_hot(idx, (int)k_sizes[N_LAYERS]);
  sg_dispose(idx);
  if (!*labels || !*x) fail("data");
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Wall and this thread's CPU time in ms. With SIMDGRAD_THREADS=1 every op runs on this thread,
   so its CPU time is the step's work, whatever else the machine runs. */
static void clocks(double *wall, double *cpu) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  *wall = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  *cpu = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Step time without and with the profiler (begin, step, end, free), steps alternating so that
   drift in clock and memory bandwidth hits both alike; and the time of sg_profile_end plus
   sg_profile_free alone. */
static void overhead(mlp *m, sg_tensor *x, sg_tensor *labels, sg_tensor *lr, int rounds) {
  enum { STEPS = 30, OFF = 0, ON = 1 };
  printf("%d threads; ms per step, median and minimum of %d alternating steps each\n", sg_threads(),
         STEPS);
  printf("%-6s %22s %22s %22s %8s\n", "round", "wall off / on", "min wall off / on",
         "thread CPU off / on", "end us");
  for (int r = 0; r < rounds; r++) {
    double wall[2][STEPS], cpu[2][STEPS], end_us[STEPS];
    for (int s = 0; s < STEPS; s++) {
      for (int on = OFF; on <= ON; on++) {
        double w0, c0, w1, c1, we, ce;
        clocks(&w0, &c0);
        if (on && sg_profile_begin() != SG_OK) fail("profile_begin");
        train_step(m, x, labels, lr);
        clocks(&we, &ce);
        if (on) {
          sg_profile *p = sg_profile_end();
          if (!p) fail("profile_end");
          sg_profile_free(p);
        }
        clocks(&w1, &c1);
        wall[on][s] = w1 - w0;
        cpu[on][s] = c1 - c0;
        if (on) end_us[s] = (c1 - ce) * 1e3;
      }
    }
    for (int on = OFF; on <= ON; on++) {
      qsort(wall[on], STEPS, sizeof(double), by_value);
      qsort(cpu[on], STEPS, sizeof(double), by_value);
    }
    qsort(end_us, STEPS, sizeof(double), by_value);
    double med[2] = {wall[OFF][STEPS / 2], wall[ON][STEPS / 2]};
    double lo[2] = {wall[OFF][0], wall[ON][0]};
    double c[2] = {cpu[OFF][STEPS / 2], cpu[ON][STEPS / 2]};
    printf("%-6d %7.3f/%7.3f %+5.1f%% %7.3f/%7.3f %+5.1f%% %7.3f/%7.3f %+5.1f%% %8.1f\n", r + 1,
           med[OFF], med[ON], 100 * (med[ON] / med[OFF] - 1), lo[OFF], lo[ON],
           100 * (lo[ON] / lo[OFF] - 1), c[OFF], c[ON], 100 * (c[ON] / c[OFF] - 1),
           end_us[STEPS / 2]);
  }
}

int main(int argc, char **argv) {
  mlp m;
  sg_tensor *x, *labels, *lr = sg_keep(sg_scalar(0.01f));
  make_data(&m, &x, &labels);
  /* Steps that warm the allocator's cache first: 3, or PROFILE_MLP_WARMUP (ctest sets 1 under
     an emulator, where a step takes seconds). */
  const char *warm = getenv("PROFILE_MLP_WARMUP");
  int warmup = warm && *warm ? atoi(warm) : 3;
  for (int i = 0; i < warmup; i++) train_step(&m, x, labels, lr);

  if (argc > 1 && strcmp(argv[1], "--overhead") == 0) {
    overhead(&m, x, labels, lr, argc > 2 ? atoi(argv[2]) : 3);
  } else {
    if (sg_profile_begin() != SG_OK) fail("profile_begin");
    train_step(&m, x, labels, lr);
    sg_profile *p = sg_profile_end();
    if (!p) fail("profile_end");
    sg_profile_print(p, stdout);
    if (argc > 1 && strcmp(argv[1], "--calls") == 0) {
      printf("\n");
      sg_profile_print_calls(p, stdout);
    } else if (argc > 1) {
      if (sg_profile_write_trace(p, argv[1]) != SG_OK) fail("trace");
      printf("\ntrace written to %s\n", argv[1]);
    }
    sg_profile_free(p);
  }
  for (int i = 0; i < 2 * N_LAYERS; i++) sg_dispose(m.params[i]);
  sg_dispose(x);
  sg_dispose(labels);
  sg_dispose(lr);
  return sg_memory().num_tensors == 0 ? 0 : 1;
}
