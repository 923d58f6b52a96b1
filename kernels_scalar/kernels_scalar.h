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
void sg_f32_fill__scalar(float *y, size_t n, float v);
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
void sg_f32_gemm_taps__scalar(size_t m, size_t n, size_t k, size_t taps, const float *const *a,
                              size_t lda, bool trans_a, const float *const *b, size_t ldb,
                              float beta, float *c, size_t ldc);
void sg_f32_transpose__scalar(const float *x, const int64_t *shape, const int *perm, int rank,
                              float *y);
void sg_f32_scatter_add__scalar(const float *dy, const int32_t *idx, size_t outer, size_t n_idx,
                                size_t inner, size_t axis_dim, float *dx);

/* Convolution, pooling, normalisation, dropout, optimizers (conv.c, pool.c, norm.c,
   optimizer.c). */
void sg_f32_im2col__scalar(const sg_window2d *g, const float *x, size_t p0, size_t p1, float *col);
void sg_f32_col2im__scalar(const sg_window2d *g, const float *col, size_t p0, size_t p1, float *dx);
void sg_f32_depthwise_conv2d__scalar(const sg_window2d *g, const float *x, const float *f,
                                     size_t oh0, size_t oh1, float *y);
void sg_f32_depthwise_conv2d_backward_input__scalar(const sg_window2d *g, const float *dy,
                                                    const float *f, float *dx);
void sg_f32_depthwise_conv2d_backward_filter__scalar(const sg_window2d *g, const float *dy,
                                                     const float *x, float *df);
void sg_f32_max_pool__scalar(const sg_window2d *g, const float *x, size_t oh0, size_t oh1,
                             float *y);
void sg_f32_avg_pool__scalar(const sg_window2d *g, const float *x, size_t oh0, size_t oh1,
                             float *y);
void sg_f32_max_pool_backward__scalar(const sg_window2d *g, const float *dy, const float *x,
                                      const float *y, float *dx);
void sg_f32_avg_pool_backward__scalar(const sg_window2d *g, const float *dy, float *dx);
void sg_f32_batch_norm__scalar(const float *x, size_t rows, size_t channels, const float *a,
                               const float *b, float *y);
void sg_f32_batch_norm_backward__scalar(const float *dy, const float *x, size_t rows,
                                        size_t channels, const float *a, const float *mean,
                                        float *dx, float *sum_dy, float *sum_dy_xc);
void sg_f32_dropout__scalar(const float *x, float *y, size_t n, uint64_t offset, uint64_t seed,
                            uint64_t threshold, float scale);
void sg_f32_sgd_update__scalar(float *w, const float *g, size_t n, float lr);
void sg_f32_momentum_update__scalar(float *w, float *v, const float *g, size_t n, float lr,
                                    float momentum, bool nesterov);
void sg_f32_adam_update__scalar(float *w, float *m, float *v, const float *g, size_t n, float lr_t,
                                float beta1, float beta2, float c2, float epsilon);

/* The complete scalar table. */
extern const sg_backend sg_backend_scalar;

#endif /* SIMDGRAD_KERNELS_SCALAR_H */
