/* Scalar reference kernels of the fused optimizer updates (SGD, momentum, Adam): one pass over
 * the parameters, their gradients and the optimizer state, in place. */
#include <math.h>

#include "kernels_scalar.h"

void sg_f32_sgd_update__scalar(float *w, const float *g, size_t n, float lr) {
  for (size_t i = 0; i < n; i++) w[i] -= lr * g[i];
}

void sg_f32_momentum_update__scalar(float *w, float *v, const float *g, size_t n, float lr,
                                    float momentum, bool nesterov) {
  for (size_t i = 0; i < n; i++) {
    float vi = momentum * v[i] + g[i];
    v[i] = vi;
    w[i] -= lr * (nesterov ? g[i] + momentum * vi : vi);
  }
}

void sg_f32_adam_update__scalar(float *w, float *m, float *v, const float *g, size_t n, float lr_t,
                                float beta1, float beta2, float c2, float epsilon) {
  for (size_t i = 0; i < n; i++) {
    float gi = g[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    w[i] -= lr_t * mi / (sqrtf(vi) * c2 + epsilon);
  }
}
