/* The MLP and CNN of the Fashion-MNIST examples (models.h). */
#include "models.h"

#include <math.h>
#include <string.h>

#include "fashion_mnist.h" /* FM_PIXELS, FM_CLASSES */

#define MLP_HIDDEN 1024
#define CNN_C1 32
#define CNN_C2 64
#define CNN_HIDDEN 128
#define CNN_FLAT (7 * 7 * CNN_C2)

/* A variable of He-initialised weights (fan_in inputs per unit), or zeros when fan_in is 0. */
static sg_tensor *param(const int64_t *shape, int rank, int64_t fan_in, uint64_t seed) {
  sg_scope_begin("init");
  sg_tensor *v =
      sg_variable(fan_in ? sg_random_normal(shape, rank, 0.0f, sqrtf(2.0f / (float)fan_in), seed)
                         : sg_zeros(shape, rank));
  sg_scope_end(NULL, 0);
  return v;
}

static sg_tensor *dense(sg_tensor *x, sg_tensor *w, sg_tensor *b) {
  return sg_add(sg_matmul(x, w, false, false), b);
}

static sg_tensor *mlp_forward(const fm_model *m, sg_tensor *x) {
  sg_tensor *const *p = m->params;
  sg_tensor *h1 = sg_relu(dense(x, p[0], p[1]));
  sg_tensor *h2 = sg_relu(dense(h1, p[2], p[3]));
  return dense(h2, p[4], p[5]);
}

/* conv 3x3 SAME + bias + ReLU, then 2x2 max-pool. */
static sg_tensor *conv_block(sg_tensor *x, sg_tensor *k, sg_tensor *b) {
  static const int64_t two[2] = {2, 2};
  sg_tensor *h = sg_relu(sg_add(sg_conv2d(x, k, NULL, SG_PADDING_SAME, NULL, NULL), b));
  return sg_max_pool(h, two, two, SG_PADDING_VALID, NULL);
}

static sg_tensor *cnn_forward(const fm_model *m, sg_tensor *x) {
  sg_tensor *const *p = m->params;
  sg_tensor *h = conv_block(conv_block(x, p[0], p[1]), p[2], p[3]);
  static const int64_t flat[2] = {-1, CNN_FLAT};
  sg_tensor *d = sg_relu(dense(sg_reshape(h, flat, 2), p[4], p[5]));
  return dense(d, p[6], p[7]);
}

/* SG_OK when every parameter was made; otherwise frees them and returns the error. */
static sg_status check_params(fm_model *m) {
  for (int i = 0; i < m->n_params; i++)
    if (!m->params[i]) {
      fm_model_free(m);
      return sg_last_status();
    }
  return SG_OK;
}

sg_status fm_mlp(fm_model *m) {
  static const int64_t sizes[4] = {FM_PIXELS, MLP_HIDDEN, MLP_HIDDEN, FM_CLASSES};
  memset(m, 0, sizeof *m);
  m->name = "mlp 784-1024-1024-10";
  m->forward = mlp_forward;
  m->n_params = 6;
  for (int l = 0; l < 3; l++) {
    const int64_t ws[2] = {sizes[l], sizes[l + 1]}, bs[1] = {sizes[l + 1]};
    m->params[2 * l] = param(ws, 2, sizes[l], 10 + (uint64_t)l);
    m->params[2 * l + 1] = param(bs, 1, 0, 0);
  }
  return check_params(m);
}

sg_status fm_cnn(fm_model *m) {
  memset(m, 0, sizeof *m);
  m->name = "cnn conv32-pool-conv64-pool-128-10";
  m->forward = cnn_forward;
  m->n_params = 8;
  m->images = 1;
  m->params[0] = param((const int64_t[]){3, 3, 1, CNN_C1}, 4, 9, 1);
  m->params[1] = param((const int64_t[]){CNN_C1}, 1, 0, 0);
  m->params[2] = param((const int64_t[]){3, 3, CNN_C1, CNN_C2}, 4, 9 * CNN_C1, 2);
  m->params[3] = param((const int64_t[]){CNN_C2}, 1, 0, 0);
  m->params[4] = param((const int64_t[]){CNN_FLAT, CNN_HIDDEN}, 2, CNN_FLAT, 3);
  m->params[5] = param((const int64_t[]){CNN_HIDDEN}, 1, 0, 0);
  m->params[6] = param((const int64_t[]){CNN_HIDDEN, FM_CLASSES}, 2, CNN_HIDDEN, 4);
  m->params[7] = param((const int64_t[]){FM_CLASSES}, 1, 0, 0);
  return check_params(m);
}

void fm_model_free(fm_model *m) {
  for (int i = 0; i < m->n_params; i++) sg_dispose(m->params[i]);
  memset(m, 0, sizeof *m);
}

sg_status fm_train_step(const fm_model *m, sg_optimizer *opt, sg_tensor *x, sg_tensor *y,
                        float *loss) {
  sg_tensor *grads[FM_MAX_PARAMS];
  sg_scope_begin("step");
  sg_tape_begin();
  sg_tensor *l = sg_softmax_cross_entropy(y, m->forward(m, x));
  sg_status st = sg_tape_end(l, NULL, m->params, m->n_params, grads);
  if (st == SG_OK) st = sg_optimizer_step(opt, m->params, grads, m->n_params);
  if (st == SG_OK && loss) *loss = sg_data_f32(l)[0];
  sg_scope_end(NULL, 0);
  return st;
}
