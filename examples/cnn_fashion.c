/* A small convolutional network trained with Adam on Fashion-MNIST through simdgrad's public
 * API: conv 3x3 (32) + ReLU + max-pool 2, conv 3x3 (64) + ReLU + max-pool 2, dense 128 + ReLU,
 * dense 10. Usage: cnn_fashion [epochs [training images]]; FASHION_MNIST_DIR overrides the
 * data directory, SIMDGRAD_THREADS the thread count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fashion_mnist.h"

#define C1 32
#define C2 64
#define HIDDEN 128
#define FLAT (7 * 7 * C2)

typedef struct cnn {
  sg_tensor *k1, *c1, *k2, *c2, *w3, *b3, *w4, *b4; /* variables */
} cnn;

/* conv 3x3 SAME + bias + ReLU, then 2x2 max-pool. */
static sg_tensor *block(sg_tensor *x, sg_tensor *k, sg_tensor *b) {
  static const int64_t two[2] = {2, 2};
  sg_tensor *h = sg_relu(sg_add(sg_conv2d(x, k, NULL, SG_PADDING_SAME, NULL, NULL), b));
  return sg_max_pool(h, two, two, SG_PADDING_VALID, NULL);
}

static sg_tensor *forward(sg_tensor *x, void *model) {
  cnn *m = model;
  sg_tensor *h = block(block(x, m->k1, m->c1), m->k2, m->c2);
  const int64_t flat[2] = {-1, FLAT};
  sg_tensor *f = sg_reshape(h, flat, 2);
  sg_tensor *d = sg_relu(sg_add(sg_matmul(f, m->w3, false, false), m->b3));
  return sg_add(sg_matmul(d, m->w4, false, false), m->b4);
}

/* A variable of He-initialised weights (fan_in inputs per unit), or zeros when fan_in is 0. */
static sg_tensor *param(const int64_t *shape, int rank, int64_t fan_in, uint64_t seed) {
  sg_scope_begin("init");
  sg_tensor *v =
      sg_variable(fan_in ? sg_random_normal(shape, rank, 0.0f, sqrtf(2.0f / (float)fan_in), seed)
                         : sg_zeros(shape, rank));
  sg_scope_end(NULL, 0);
  return v;
}

int main(int argc, char **argv) {
  int epochs = argc > 1 ? atoi(argv[1]) : 5;
  int64_t max_train = argc > 2 ? atoll(argv[2]) : 0;
  char err[256];
  fm_set train, test;
  if (fm_load(fm_dir(), "train", max_train, &train, err, sizeof err) != 0 ||
      fm_load(fm_dir(), "t10k", 0, &test, err, sizeof err) != 0) {
    fprintf(stderr, "cnn_fashion: %s (apt-get install dataset-fashion-mnist)\n", err);
    return 2;
  }
  cnn m = {
      .k1 = param((int64_t[]){3, 3, 1, C1}, 4, 9, 1),
      .c1 = param((int64_t[]){C1}, 1, 0, 0),
      .k2 = param((int64_t[]){3, 3, C1, C2}, 4, 9 * C1, 2),
      .c2 = param((int64_t[]){C2}, 1, 0, 0),
      .w3 = param((int64_t[]){FLAT, HIDDEN}, 2, FLAT, 3),
      .b3 = param((int64_t[]){HIDDEN}, 1, 0, 0),
      .w4 = param((int64_t[]){HIDDEN, FM_CLASSES}, 2, HIDDEN, 4),
      .b4 = param((int64_t[]){FM_CLASSES}, 1, 0, 0),
  };
  sg_tensor *params[8] = {m.k1, m.c1, m.k2, m.c2, m.w3, m.b3, m.w4, m.b4};
  fm_trainer t = {.name = "cnn conv32-pool-conv64-pool-128-10",
                  .forward = forward,
                  .model = &m,
                  .params = params,
                  .n_params = 8,
                  .opt = sg_adam(1e-3f, 0.9f, 0.999f, 1e-7f),
                  .batch = 128,
                  .epochs = epochs,
                  .images = 1};
  double acc = fm_train(&t, &train, &test);
  sg_optimizer_free(t.opt);
  for (int i = 0; i < 8; i++) sg_dispose(params[i]);
  fm_free(&train);
  fm_free(&test);
  return acc < 0 ? 1 : 0;
}
