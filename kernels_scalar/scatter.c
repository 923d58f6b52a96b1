/* The scalar scatter-add, the backward of gather: dx[o, idx[j], i] += dy[o, j, i]. */
#include "kernels_scalar.h"

void sg_f32_scatter_add__scalar(const float *dy, const int32_t *idx, size_t outer, size_t n_idx,
                                size_t inner, size_t axis_dim, float *dx) {
  for (size_t o = 0; o < outer; o++) {
    const float *dyo = dy + o * n_idx * inner;
    float *dxo = dx + o * axis_dim * inner;
    for (size_t j = 0; j < n_idx; j++) {
      /* Out-of-range indices (negative included) are skipped, as the ABI says. */
      if (idx[j] < 0 || (size_t)idx[j] >= axis_dim) continue;
      float *d = dxo + (size_t)idx[j] * inner;
      const float *s = dyo + j * inner;
      for (size_t i = 0; i < inner; i++) d[i] += s[i];
    }
  }
}
