/* A multilayer perceptron, 784-1024-1024-10 with ReLU, trained with Adam on Fashion-MNIST
 * through simdgrad's public API. Usage: mlp_fashion [epochs [training images]];
 * FASHION_MNIST_DIR overrides the data directory, SIMDGRAD_THREADS the thread count. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "fashion_mnist.h"

#define HIDDEN 1024

typedef struct mlp {
  sg_tensor *w[3], *b[3]; /* variables */
} mlp;

static sg_tensor *dense(sg_tensor *x, sg_tensor *w, sg_tensor *b) {
  return sg_add(sg_matmul(x, w, false, false), b);
}

static sg_tensor *forward(sg_tensor *x, void *model) {
  mlp *m = model;
  sg_tensor *h1 = sg_relu(dense(x, m->w[0], m->b[0]));
  sg_tensor *h2 = sg_relu(dense(h1, m->w[1], m->b[1]));
  return dense(h2, m->w[2], m->b[2]);
}

int main(int argc, char **argv) {
  int epochs = argc > 1 ? atoi(argv[1]) : 5;
  int64_t max_train = argc > 2 ? atoll(argv[2]) : 0;
  char err[256];
  fm_set train, test;
  if (fm_load(fm_dir(), "train", max_train, &train, err, sizeof err) != 0 ||
      fm_load(fm_dir(), "t10k", 0, &test, err, sizeof err) != 0) {
    fprintf(stderr, "mlp_fashion: %s (apt-get install dataset-fashion-mnist)\n", err);
    return 2;
  }
  const int64_t sizes[4] = {FM_PIXELS, HIDDEN, HIDDEN, FM_CLASSES};
  mlp m;
  sg_tensor *params[6];
  for (int l = 0; l < 3; l++) {
    /* He initialisation for ReLU layers. */
    const int64_t ws[2] = {sizes[l], sizes[l + 1]}, bs[1] = {sizes[l + 1]};
    sg_scope_begin("init");
    m.w[l] = sg_variable(sg_random_normal(ws, 2, 0.0f, sqrtf(2.0f / (float)sizes[l]), 10 + l));
    m.b[l] = sg_variable(sg_zeros(bs, 1));
    sg_scope_end(NULL, 0);
    params[2 * l] = m.w[l];
    params[2 * l + 1] = m.b[l];
  }
  fm_trainer t = {.name = "mlp 784-1024-1024-10",
                  .forward = forward,
                  .model = &m,
                  .params = params,
                  .n_params = 6,
                  .opt = sg_adam(1e-3f, 0.9f, 0.999f, 1e-7f),
                  .batch = 128,
                  .epochs = epochs};
  double acc = fm_train(&t, &train, &test);
  sg_optimizer_free(t.opt);
  for (int i = 0; i < 6; i++) sg_dispose(params[i]);
  fm_free(&train);
  fm_free(&test);
  return acc < 0 ? 1 : 0;
}
