/* The scalar gemm: C = op(A) op(B) + beta * C on row-major matrices with leading dimensions.
 * The reference every SIMD gemm is tested against; each C element's sum runs over p in order. */
#include "kernels_scalar.h"

/* C rows i: beta == 0 overwrites (NaN included), beta == 1 leaves C alone. */
static void scale_rows(size_t m, size_t n, float beta, float *c, size_t ldc) {
  if (beta == 1.0f) return;
  for (size_t i = 0; i < m; i++) {
    float *ci = c + i * ldc;
    if (beta == 0.0f)
      for (size_t j = 0; j < n; j++) ci[j] = 0.0f;
    else
      for (size_t j = 0; j < n; j++) ci[j] *= beta;
  }
}

void sg_f32_gemm__scalar(size_t m, size_t n, size_t k, const float *a, size_t lda, bool trans_a,
                         const float *b, size_t ldb, bool trans_b, float beta, float *c,
                         size_t ldc) {
  scale_rows(m, n, beta, c, ldc);
  if (!trans_b) {
    /* i-k-j: the inner loop streams a row of B into a row of C. A(i,p) is a[i*lda+p], or
       a[p*lda+i] when A is stored transposed. */
    for (size_t i = 0; i < m; i++) {
      float *ci = c + i * ldc;
      for (size_t p = 0; p < k; p++) {
        float aip = trans_a ? a[p * lda + i] : a[i * lda + p];
        const float *bp = b + p * ldb;
        for (size_t j = 0; j < n; j++) ci[j] += aip * bp[j];
      }
    }
    return;
  }
  /* B stored n x k: row j of B is column j of op(B), so each C element is a dot product over
     contiguous B (and contiguous A unless A is transposed too). */
  for (size_t i = 0; i < m; i++) {
    float *ci = c + i * ldc;
    for (size_t j = 0; j < n; j++) {
      const float *bj = b + j * ldb;
      float s = 0.0f;
      if (trans_a)
        for (size_t p = 0; p < k; p++) s += a[p * lda + i] * bj[p];
      else
        for (size_t p = 0; p < k; p++) s += a[i * lda + p] * bj[p];
      ci[j] += s;
    }
  }
}

/* i-t-p-j like the gemm above: the inner loop streams a row of B_t into a row of C. */
void sg_f32_gemm_taps__scalar(size_t m, size_t n, size_t k, size_t taps, const float *const *a,
                              size_t lda, bool trans_a, const float *const *b, size_t ldb,
                              float beta, float *c, size_t ldc) {
  scale_rows(m, n, beta, c, ldc);
  for (size_t i = 0; i < m; i++) {
    float *ci = c + i * ldc;
    for (size_t t = 0; t < taps; t++)
      for (size_t p = 0; p < k; p++) {
        float aip = trans_a ? a[t][p * lda + i] : a[t][i * lda + p];
        const float *bp = b[t] + p * ldb;
        for (size_t j = 0; j < n; j++) ci[j] += aip * bp[j];
      }
  }
}
