/* The two models the Fashion-MNIST examples train and the bench times, and their training step,
 * so that the bench's images/s is the examples' step exactly. Public simdgrad API only. */
#ifndef SIMDGRAD_EXAMPLES_MODELS_H
#define SIMDGRAD_EXAMPLES_MODELS_H

#include <simdgrad/simdgrad.h>

#define FM_MAX_PARAMS 8

typedef struct fm_model {
  const char *name;
  sg_tensor *params[FM_MAX_PARAMS]; /* variables, in the order forward uses them */
  int n_params;
  int images; /* takes x as [b, 28, 28, 1] instead of [b, 784] */
  /* Logits [b, 10] for images x. */
  sg_tensor *(*forward)(const struct fm_model *m, sg_tensor *x);
} fm_model;

/* A multilayer perceptron 784-1024-1024-10 with ReLU, He-initialised from fixed seeds. */
sg_status fm_mlp(fm_model *m);
/* conv 3x3 (32) + ReLU + max-pool 2, conv 3x3 (64) + ReLU + max-pool 2, dense 128 + ReLU,
   dense 10. */
sg_status fm_cnn(fm_model *m);
void fm_model_free(fm_model *m);

/* One training step on a batch: forward, softmax cross-entropy against the one-hot labels y,
   back-propagation to every parameter, one optimizer step. Everything it makes lives in a
   "step" scope; *loss (when not NULL) gets the batch's mean loss. */
sg_status fm_train_step(const fm_model *m, sg_optimizer *opt, sg_tensor *x, sg_tensor *y,
                        float *loss);

#endif
