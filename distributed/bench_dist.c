/* The distributed benchmarks (docs/distributed.md, "Measured"), run under mpirun by
 * `make bench-dist`. Per rank count, on the MLP of examples/models.c (784-1024-1024-10, 7.2 MB of
 * gradients) and random data:
 *   allreduce   the reducer's bytes through one blocking MPI_Allreduce, and through the reducer
 *               (attach, a back-propagation that only copies, wait) less that back-propagation
 *               alone: GB/s of gradient bytes;
 *   step        one training step (forward, back-propagation, averaging, Adam) with the reducer
 *               and its default buckets (overlap), with one bucket (it starts when the last
 *               gradient is final: no overlap), with back-propagation first and then one blocking
 *               MPI_Allreduce of all gradients (reduce after backward), and without any
 *               communication (the floor);
 *   throughput  images/s of the whole job for a global batch of 128 split over the ranks
 *               (mpirun -np 1 with 2 threads against -np 2 with 1 thread each);
 *   latency     one MPI_Allreduce of a single float: the per-message alpha of the cost model
 *               (docs/distributed.md) on this transport.
 * Each figure is the median, and the fastest, of --reps timed repetitions after warm-up, the modes
 * of a group interleaved; a step's time is the slowest rank's. Rank 0 prints them. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <simdgrad/distributed.h>

#include "models.h"

static int g_me, g_np;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void die(const char *what) {
  fprintf(stderr, "bench_dist: rank %d: %s: %s\n", g_me, what, sg_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* COPY_*: a back-propagation that only makes the gradients (y = the sum of every parameter's
   sum), through the reducer with one bucket, with the default buckets, or with none. */
typedef enum mode {
  BLOCKING, /* one MPI_Allreduce of the gradients' bytes, nothing else */
  LOCAL,
  OVERLAP,
  OVERLAP_UNTESTED,
  ONE_BUCKET,
  AFTER_BACKWARD,
  COPY_ONE,
  COPY_BUCKETS,
  COPY_BASE
} mode;

typedef struct bench {
  fm_model m;
  sg_optimizer *opt;
  sg_reducer *buckets, *one, *untested;
  float *flat; /* for AFTER_BACKWARD */
  size_t flat_n;
  sg_tensor *x, *y;
} bench;

/* One step of the given kind; the time it took (the same on every rank after the barrier). */
static double step(bench *b, mode how) {
  const fm_model *m = &b->m;
  sg_tensor *local[FM_MAX_PARAMS], *grads[FM_MAX_PARAMS];
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = now_s();
  if (how == BLOCKING) {
    MPI_Allreduce(MPI_IN_PLACE, b->flat, (int)b->flat_n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double dt = now_s() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return dt;
  }
  sg_scope_begin("step");
  sg_tape_begin();
  sg_reducer *r = NULL;
  if (how == OVERLAP || how == COPY_BUCKETS) r = b->buckets;
  if (how == OVERLAP_UNTESTED) r = b->untested;
  if (how == ONE_BUCKET || how == COPY_ONE) r = b->one;
  bool copy = how == COPY_ONE || how == COPY_BUCKETS || how == COPY_BASE;
  if (r && sg_reducer_attach(r) != SG_OK) die("attach");
  sg_tensor *l;
  if (copy) {
    l = sg_sum(m->params[0], NULL, 0, false);
    for (int i = 1; i < m->n_params; i++) l = sg_add(l, sg_sum(m->params[i], NULL, 0, false));
  } else {
    l = sg_softmax_cross_entropy(b->y, m->forward(m, b->x));
  }
  if (sg_tape_end(l, NULL, m->params, m->n_params, local) != SG_OK) die("tape_end");
  sg_tensor *const *g = local;
  if (r) {
    if (sg_reducer_wait(r, grads) != SG_OK) die("wait");
    g = grads;
  } else if (how == AFTER_BACKWARD) {
    size_t at = 0;
    for (int i = 0; i < m->n_params; i++) {
      memcpy(b->flat + at, sg_data_f32(local[i]), sizeof(float) * (size_t)sg_numel(local[i]));
      at += (size_t)sg_numel(local[i]);
    }
    MPI_Allreduce(MPI_IN_PLACE, b->flat, (int)b->flat_n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    at = 0;
    for (int i = 0; i < m->n_params; i++) {
      for (size_t k = 0; k < (size_t)sg_numel(local[i]); k++) b->flat[at + k] /= (float)g_np;
      grads[i] = sg_tensor_f32(b->flat + at, sg_shape(local[i]), sg_rank(local[i]));
      at += (size_t)sg_numel(local[i]);
    }
    g = grads;
  }
  if (!copy && sg_optimizer_step(b->opt, m->params, g, m->n_params) != SG_OK) die("optimizer_step");
  sg_scope_end(NULL, 0);
  double dt = now_s() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return dt;
}

/* Times every mode in modes[] reps times, interleaved (one of each per round, after two rounds of
   warm-up), so that a machine whose load changes during the run weighs on every mode alike; the
   median and the fastest of each into med[] and best[]. */
static void timed(bench *b, const mode *modes, int n, int reps, double *med, double *best) {
  double *t = malloc(sizeof(double) * (size_t)(reps * n));
  for (int r = -2; r < reps; r++)
    for (int k = 0; k < n; k++) {
      double dt = step(b, modes[k]);
      if (r >= 0) t[k * reps + r] = dt;
    }
  for (int k = 0; k < n; k++) {
    med[k] = median(t + k * reps, reps);
    best[k] = t[k * reps]; /* sorted by median() */
  }
  free(t);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (sg_dist_init(MPI_COMM_WORLD) != SG_OK) die("dist_init");
  g_me = sg_dist_rank();
  g_np = sg_dist_size();
  int reps = 20;
  const char *what = "all";
  for (int i = 1; i < argc; i++) {
    if (strncmp(argv[i], "--reps=", 7) == 0)
      reps = atoi(argv[i] + 7);
    else
      what = argv[i];
  }
  if (reps < 1) reps = 1;
  sg_set_flush_denormals(true);
  bench b = {0};
  if (fm_mlp(&b.m) != SG_OK) die("fm_mlp");
  b.opt = sg_adam(1e-3f, 0.9f, 0.999f, 1e-7f);
  b.buckets = sg_reducer_new(b.m.params, b.m.n_params, 0);
  b.one = sg_reducer_new(b.m.params, b.m.n_params, (size_t)1 << 30);
  /* The same buckets, but the tape's hook does not test the buckets in flight: how much of the
     overlap comes from driving MPI's progress from inside back-propagation. */
  setenv("SIMDGRAD_MPI_NO_TEST", "1", 1);
  b.untested = sg_reducer_new(b.m.params, b.m.n_params, 0);
  unsetenv("SIMDGRAD_MPI_NO_TEST");
  if (!b.buckets || !b.one || !b.untested) die("reducer_new");
  for (int i = 0; i < b.m.n_params; i++) b.flat_n += (size_t)sg_numel(b.m.params[i]);
  b.flat = calloc(b.flat_n, sizeof(float));
  const int64_t batch = 128 / g_np, xs[] = {batch, 784}, ys[] = {batch, 10};
  b.x = sg_keep(sg_random_uniform(xs, 2, 0, 1, 11 + (uint64_t)g_me));
  sg_tensor *cls = sg_cast(sg_random_uniform(ys, 1, 0, 10, 12 + (uint64_t)g_me), SG_I32);
  b.y = sg_keep(sg_one_hot(cls, 10));
  sg_dispose(cls);
  double bytes = (double)b.flat_n * sizeof(float);
  if (g_me == 0)
    printf("bench_dist: %d ranks x %d threads, backend %s, MLP 784-1024-1024-10: %.2f MB of "
           "gradients, %d buckets by default, %d median of %d reps\n",
           g_np, sg_threads(), sg_backend_name(), bytes / 1e6, sg_reducer_buckets(b.buckets), reps,
           reps);
  if (strcmp(what, "all") == 0 || strcmp(what, "allreduce") == 0) {
    const mode modes[] = {BLOCKING, COPY_BASE, COPY_ONE, COPY_BUCKETS};
    double med[4], best[4];
    timed(&b, modes, 4, reps, med, best);
    const char *names[] = {"allreduce/blocking", "allreduce/one_bucket", "allreduce/buckets"};
    const char *notes[] = {"one MPI_Allreduce of the bytes",
                           "the reducer: copy in, allreduce, average, copy out",
                           "the same, default buckets"};
    for (int k = 0; k < 3; k++) {
      /* The reducer's rows less the same back-propagation without a reducer. */
      double m = k ? med[k + 1] - med[1] : med[0], f = k ? best[k + 1] - best[1] : best[0];
      if (g_me == 0)
        printf("%-22s median %8.3f ms %6.2f GB/s  best %8.3f ms %6.2f GB/s  (%s)\n", names[k],
               1e3 * m, bytes / m / 1e9, 1e3 * f, bytes / f / 1e9, notes[k]);
    }
  }
  if (strcmp(what, "all") == 0 || strcmp(what, "step") == 0) {
    const mode all[] = {LOCAL, OVERLAP, OVERLAP_UNTESTED, ONE_BUCKET, AFTER_BACKWARD};
    const char *names[] = {"step/local", "step/overlap", "step/overlap_no_test", "step/one_bucket",
                           "step/after_backward"};
    const char *notes[] = {"no communication: the floor", "reducer, default buckets",
                           "the same, no MPI_Test from the hook",
                           "reducer, one bucket: starts after backward",
                           "backward, then one MPI_Allreduce"};
    int n = g_np > 1 ? 5 : 1; /* on one rank, only the floor */
    double med[5], best[5];
    timed(&b, all, n, reps, med, best);
    for (int k = 0; k < n; k++)
      if (g_me == 0)
        printf("%-22s median %8.3f ms %6.0f images/s  best %8.3f ms %6.0f images/s  (%s)\n",
               names[k], 1e3 * med[k], (double)(batch * g_np) / med[k], 1e3 * best[k],
               (double)(batch * g_np) / best[k], notes[k]);
  }
  if ((strcmp(what, "all") == 0 || strcmp(what, "latency") == 0) && g_np > 1) {
    int n = reps * 50;
    double *t = malloc(sizeof(double) * (size_t)n);
    if (!t) die("latency");
    float one = 1;
    for (int r = -100; r < n; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_s();
      MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double dt = now_s() - t0;
      MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (r >= 0) t[r] = dt;
    }
    double med = median(t, n);
    if (g_me == 0)
      printf("%-22s median %8.1f us            best %8.1f us  (one MPI_Allreduce of 4 bytes: "
             "alpha)\n",
             "latency/allreduce", 1e6 * med, 1e6 * t[0]);
    free(t);
  }
  sg_dispose(b.x);
  sg_dispose(b.y);
  free(b.flat);
  sg_reducer_free(b.buckets);
  sg_reducer_free(b.one);
  sg_reducer_free(b.untested);
  sg_optimizer_free(b.opt);
  fm_model_free(&b.m);
  MPI_Finalize();
  return 0;
}
