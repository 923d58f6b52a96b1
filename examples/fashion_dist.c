/* Data-parallel training on Fashion-MNIST over MPI: the loop of mlp_fashion_dist and
 * cnn_fashion_dist (docs/distributed.md). Public simdgrad and simdgrad_mpi API only. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "fashion_dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <simdgrad/distributed.h>

#include "fashion_mnist.h"

#define GLOBAL_BATCH 128

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One step on this rank's part of the global batch: back-propagation with the reducer attached
   (its buckets go out while the earlier layers' gradients are computed), then the averaged
   gradients into the optimizer. */
static sg_status dist_step(const fm_model *m, sg_reducer *r, sg_optimizer *opt, sg_tensor *x,
                           sg_tensor *y, float *loss) {
  sg_tensor *local[FM_MAX_PARAMS], *grads[FM_MAX_PARAMS];
  sg_scope_begin("step");
  sg_tape_begin();
  sg_status st = sg_reducer_attach(r);
  sg_tensor *l = sg_softmax_cross_entropy(y, m->forward(m, x));
  sg_status bst = sg_tape_end(l, NULL, m->params, m->n_params, local);
  /* Always waited for, also after a failure here: the other ranks wait for this one's buckets. */
  sg_status wst = sg_reducer_wait(r, grads);
  if (st == SG_OK) st = bst != SG_OK ? bst : wst;
  if (st == SG_OK) st = sg_optimizer_step(opt, m->params, grads, m->n_params);
  if (st == SG_OK) *loss = sg_data_f32(l)[0];
  sg_scope_end(NULL, 0);
  return st;
}

static int train(const char *prog, const fm_model *m, const fm_set *train, const fm_set *test,
                 int epochs) {
  int me = sg_dist_rank(), np = sg_dist_size();
  int64_t batch = GLOBAL_BATCH / np, first = train->n * me / np;
  int64_t shard = train->n * (me + 1) / np - first;
  /* Every rank takes the same number of steps: the smallest shard's. */
  int64_t steps = shard / batch;
  MPI_Allreduce(MPI_IN_PLACE, &steps, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  int64_t *order = malloc(sizeof(int64_t) * (size_t)shard);
  float *x = malloc(sizeof(float) * (size_t)(batch * FM_PIXELS));
  float *y = malloc(sizeof(float) * (size_t)(batch * FM_CLASSES));
  sg_optimizer *opt = sg_adam(1e-3f, 0.9f, 0.999f, 1e-7f);
  int rc = 0;
  sg_status st = sg_dist_broadcast(m->params, m->n_params, 0);
  sg_reducer *r = st == SG_OK ? sg_reducer_new(m->params, m->n_params, 0) : NULL;
  if (!r) {
    fprintf(stderr, "%s: rank %d: %s\n", prog, me, sg_last_error());
    rc = 1;
    goto done;
  }
  if (me == 0)
    printf("%s: %d ranks, each %lld training images, batch %lld per rank (%lld in all), backend "
           "%s, %d threads per rank, %d gradient buckets\n",
           m->name, np, (long long)shard, (long long)batch, (long long)batch * np,
           sg_backend_name(), sg_threads(), sg_reducer_buckets(r));
  fflush(stdout);
  for (int epoch = 1; epoch <= epochs && rc == 0; epoch++) {
    fm_shuffle(order, shard, (uint64_t)(epoch * 1000 + me));
    for (int64_t i = 0; i < shard; i++) order[i] += first;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now_s(), loss_sum = 0;
    for (int64_t s = 0; s < steps; s++) {
      fm_batch(train, order + s * batch, batch, x, y);
      const int64_t lshape[2] = {batch, FM_CLASSES}, flat[2] = {batch, FM_PIXELS},
                    img[4] = {batch, FM_ROWS, FM_COLS, 1};
      sg_scope_begin("batch");
      sg_tensor *xb = m->images ? sg_tensor_f32(x, img, 4) : sg_tensor_f32(x, flat, 2);
      float loss = 0;
      st = dist_step(m, r, opt, xb, sg_tensor_f32(y, lshape, 2), &loss);
      sg_scope_end(NULL, 0);
      if (st != SG_OK) {
        fprintf(stderr, "%s: rank %d: step failed: %s\n", prog, me, sg_last_error());
        rc = 1;
        break;
      }
      loss_sum += loss;
    }
    double dt = now_s() - t0;
    printf("rank %d: epoch %d/%d  %.0f images/s  %.1f s\n", me, epoch, epochs,
           (double)(steps * batch) / dt, dt);
    fflush(stdout);
    MPI_Allreduce(MPI_IN_PLACE, &loss_sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0 && rc == 0) {
      printf("epoch %d/%d  loss %.4f  test accuracy %.2f%%  %.0f images/s in all\n", epoch, epochs,
             steps ? loss_sum / (double)(steps * np) : 0.0, 100.0 * fm_accuracy(m, test),
             (double)(steps * batch * np) / dt);
      fflush(stdout);
    }
  }
done:
  sg_reducer_free(r);
  sg_optimizer_free(opt);
  free(order);
  free(x);
  free(y);
  return rc;
}

int fm_run_dist(int *argc, char ***argv, const char *prog, sg_status (*make_model)(fm_model *)) {
  MPI_Init(argc, argv);
  int epochs = *argc > 1 ? atoi((*argv)[1]) : 5;
  int64_t max_train = *argc > 2 ? atoll((*argv)[2]) : 0;
  int rc = 0;
  if (sg_dist_init(MPI_COMM_WORLD) != SG_OK || GLOBAL_BATCH % sg_dist_size() != 0) {
    fprintf(stderr, "%s: %s (and the rank count must divide %d)\n", prog, sg_last_error(),
            GLOBAL_BATCH);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char err[256];
  fm_set train_set = {0}, test_set = {0};
  if (fm_load(fm_dir(), "train", max_train, &train_set, err, sizeof err) != 0 ||
      fm_load(fm_dir(), "t10k", 0, &test_set, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s (apt-get install dataset-fashion-mnist)\n", prog, err);
    MPI_Abort(MPI_COMM_WORLD, 2); /* every rank reads the same files: no rank goes on alone */
  }
  /* The ranks on one machine share its cores: unless told (SIMDGRAD_THREADS, OMP_NUM_THREADS),
     each takes its share instead of one thread per core. */
  if (!getenv("SIMDGRAD_THREADS") && !getenv("OMP_NUM_THREADS")) {
    MPI_Comm node;
    int here = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &here);
    MPI_Comm_free(&node);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    sg_set_threads(cores / here > 1 ? (int)(cores / here) : 1);
  }
  /* As mlp_fashion: denormals flushed (fm_run_example says why). */
  sg_set_flush_denormals(true);
  fm_model m;
  if (make_model(&m) != SG_OK) {
    fprintf(stderr, "%s: %s\n", prog, sg_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  rc = train(prog, &m, &train_set, &test_set, epochs);
  fm_model_free(&m);
  fm_free(&train_set);
  fm_free(&test_set);
  MPI_Finalize();
  return rc;
}
