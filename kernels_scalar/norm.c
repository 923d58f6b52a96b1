/* Scalar reference kernels of batch normalisation (forward, and the backward's dx plus the
 * per-channel sums the engine turns into the statistics' gradients) and of seeded dropout. */
#include "dropout_hash.h"
#include "kernels_scalar.h"

void sg_f32_batch_norm__scalar(const float *x, size_t rows, size_t channels, const float *a,
                               const float *b, float *y) {
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < channels; c++) y[r * channels + c] = x[r * channels + c] * a[c] + b[c];
}

void sg_f32_batch_norm_backward__scalar(const float *dy, const float *x, size_t rows,
                                        size_t channels, const float *a, const float *mean,
                                        float *dx, float *sum_dy, float *sum_dy_xc) {
  for (size_t r = 0; r < rows; r++)
    for (size_t c = 0; c < channels; c++) {
      size_t i = r * channels + c;
      float d = dy[i];
      sum_dy[c] += d;
      sum_dy_xc[c] += d * (x[i] - mean[c]);
      if (dx) dx[i] = d * a[c];
    }
}

void sg_f32_dropout__scalar(const float *x, float *y, size_t n, uint64_t offset, uint64_t seed,
                            uint64_t threshold, float scale) {
  for (size_t i = 0; i < n; i++)
    y[i] = sg_dropout_hash(seed, offset + i) >= threshold ? x[i] * scale : 0.0f;
}
