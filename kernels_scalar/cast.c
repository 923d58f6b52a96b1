/* sg_cast's conversions between f32 and i32, the reference for every backend. */
#include "kernels_scalar.h"

/* C leaves a float outside int32_t's range undefined to convert, so the range is tested first;
   what falls outside it (NaN too, which fails both compares) gets x86's "integer indefinite". */
void sg_f32_cast_f32_i32__scalar(const float *x, int32_t *y, size_t n) {
  for (size_t i = 0; i < n; i++) {
    float v = x[i];
    y[i] = v >= -2147483648.0f && v < 2147483648.0f ? (int32_t)v : INT32_MIN;
  }
}

void sg_f32_cast_i32_f32__scalar(const int32_t *x, float *y, size_t n) {
  for (size_t i = 0; i < n; i++) y[i] = (float)x[i];
}
