/* Declarations of the scalar reference kernels (the .c files beside this header). Every sg_backend
 * slot has one; the SIMD backends start from this table and override what they vectorise. The names
 * follow sg_f32_<slot>__<isa>. */
#ifndef SIMDGRAD_KERNELS_SCALAR_H
#define SIMDGRAD_KERNELS_SCALAR_H

#include <simdgrad/backend.h>

#define SG_SCALAR_UNARY_DECL_(name, saved, doc)                                                    \
  void sg_f32_##name##__scalar(const float *x, float *y, size_t n);                                \
  void sg_f32_##name##_backward__scalar(const float *dy, const float *x, const float *y,           \
                                        float *dx, size_t n);
#define SG_SCALAR_STEP_DECL_(name, doc)                                                            \
  void sg_f32_##name##__scalar(const float *x, float *y, size_t n);
#define SG_SCALAR_BINARY_DECL_(name, doc)                                                          \
  void sg_f32_##name##__scalar(const float *a, size_t a_step, const float *b, size_t b_step,       \
                               float *y, size_t n);                                                \
  void sg_f32_##name##_backward__scalar(const float *dy, const float *a, size_t a_step,            \
                                        const float *b, size_t b_step, const float *y, float *da,  \
                                        float *db, size_t n);
#define SG_SCALAR_COMPARE_DECL_(name, doc)                                                         \
  void sg_f32_##name##__scalar(const float *a, size_t a_step, const float *b, size_t b_step,       \
                               uint8_t *y, size_t n);
#define SG_SCALAR_REDUCE_DECL_(name, doc)                                                          \
  void sg_f32_reduce_##name##__scalar(const float *x, size_t outer, size_t r, size_t inner,        \
                                      float *y);                                                   \
  void sg_f32_reduce_##name##_backward__scalar(const float *dy, const float *x, const float *y,    \
                                               size_t outer, size_t r, size_t inner, float *dx);

SG_FOR_EACH_UNARY_OP(SG_SCALAR_UNARY_DECL_)
SG_FOR_EACH_STEP_OP(SG_SCALAR_STEP_DECL_)
SG_FOR_EACH_BINARY_OP(SG_SCALAR_BINARY_DECL_)
SG_FOR_EACH_COMPARE_OP(SG_SCALAR_COMPARE_DECL_)
SG_FOR_EACH_REDUCE_OP(SG_SCALAR_REDUCE_DECL_)

void sg_f32_leaky_relu__scalar(const float *x, float *y, size_t n, float alpha);
void sg_f32_leaky_relu_backward__scalar(const float *dy, const float *x, float *dx, size_t n,
                                        float alpha);
void sg_f32_clip__scalar(const float *x, float *y, size_t n, float lo, float hi);
void sg_f32_clip_backward__scalar(const float *dy, const float *x, float *dx, size_t n, float lo,
                                  float hi);
void sg_f32_where__scalar(const uint8_t *c, size_t c_step, const float *a, size_t a_step,
                          const float *b, size_t b_step, float *y, size_t n);
void sg_f32_where_backward__scalar(const float *dy, const uint8_t *c, size_t c_step, float *da,
                                   float *db, size_t n);
void sg_f32_argmax__scalar(const float *x, size_t outer, size_t r, size_t inner, int32_t *y);
void sg_f32_argmin__scalar(const float *x, size_t outer, size_t r, size_t inner, int32_t *y);
void sg_f32_softmax__scalar(const float *x, size_t outer, size_t r, size_t inner, float *y);
void sg_f32_softmax_backward__scalar(const float *dy, const float *y, size_t outer, size_t r,
                                     size_t inner, float *dx);
void sg_f32_log_softmax__scalar(const float *x, size_t outer, size_t r, size_t inner, float *y);
void sg_f32_log_softmax_backward__scalar(const float *dy, const float *y, size_t outer, size_t r,
                                         size_t inner, float *dx);
void sg_f32_softmax_cross_entropy__scalar(const float *labels, const float *logits, size_t rows,
                                          size_t classes, float *loss, float *log_probs);
void sg_f32_softmax_cross_entropy_backward__scalar(const float *dloss, const float *labels,
                                                   const float *log_probs, size_t rows,
                                                   size_t classes, float *dlabels, float *dlogits);
void sg_f32_gemm__scalar(size_t m, size_t n, size_t k, const float *a, size_t lda, bool trans_a,
                         const float *b, size_t ldb, bool trans_b, float beta, float *c,
                         size_t ldc);
void sg_f32_transpose__scalar(const float *x, const int64_t *shape, const int *perm, int rank,
                              float *y);
void sg_f32_scatter_add__scalar(const float *dy, const int32_t *idx, size_t outer, size_t n_idx,
                                size_t inner, size_t axis_dim, float *dx);

/* The complete scalar table. */
extern const sg_backend sg_backend_scalar;

#endif /* SIMDGRAD_KERNELS_SCALAR_H */
