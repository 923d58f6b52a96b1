/* Declarations of the scalar reference kernels (the .c files beside this header). Every sg_backend
 * slot has one; the SIMD backends start from this table and override what they vectorise. The names
 * follow sg_f32_<slot>__<isa>. */
#ifndef SIMDGRAD_KERNELS_SCALAR_H
#define SIMDGRAD_KERNELS_SCALAR_H

#include <simdgrad/backend.h>

#define SG_SCALAR_UNARY_DECL_(name, saved, doc)                                                    \
  sg_unary_fn sg_f32_##name##__scalar;                                                             \
  sg_unary_backward_fn sg_f32_##name##_backward__scalar;
#define SG_SCALAR_STEP_DECL_(name, doc) sg_unary_fn sg_f32_##name##__scalar;
#define SG_SCALAR_BINARY_DECL_(name, doc)                                                          \
  sg_binary_fn sg_f32_##name##__scalar;                                                            \
  sg_binary_backward_fn sg_f32_##name##_backward__scalar;
#define SG_SCALAR_COMPARE_DECL_(name, doc) sg_compare_fn sg_f32_##name##__scalar;
#define SG_SCALAR_REDUCE_DECL_(name, doc)                                                          \
  sg_reduce_fn sg_f32_reduce_##name##__scalar;                                                     \
  sg_reduce_backward_fn sg_f32_reduce_##name##_backward__scalar;

SG_FOR_EACH_UNARY_OP(SG_SCALAR_UNARY_DECL_)
SG_FOR_EACH_STEP_OP(SG_SCALAR_STEP_DECL_)
SG_FOR_EACH_BINARY_OP(SG_SCALAR_BINARY_DECL_)
SG_FOR_EACH_COMPARE_OP(SG_SCALAR_COMPARE_DECL_)
SG_FOR_EACH_REDUCE_OP(SG_SCALAR_REDUCE_DECL_)

sg_leaky_relu_fn sg_f32_leaky_relu__scalar;
sg_leaky_relu_backward_fn sg_f32_leaky_relu_backward__scalar;
sg_clip_fn sg_f32_clip__scalar;
sg_clip_backward_fn sg_f32_clip_backward__scalar;
sg_fill_fn sg_f32_fill__scalar;
sg_where_fn sg_f32_where__scalar;
sg_where_backward_fn sg_f32_where_backward__scalar;
sg_arg_reduce_fn sg_f32_argmax__scalar;
sg_arg_reduce_fn sg_f32_argmin__scalar;
sg_softmax_fn sg_f32_softmax__scalar;
sg_softmax_backward_fn sg_f32_softmax_backward__scalar;
sg_softmax_fn sg_f32_log_softmax__scalar;
sg_softmax_backward_fn sg_f32_log_softmax_backward__scalar;
sg_softmax_cross_entropy_fn sg_f32_softmax_cross_entropy__scalar;
sg_softmax_cross_entropy_backward_fn sg_f32_softmax_cross_entropy_backward__scalar;
sg_gemm_fn sg_f32_gemm__scalar;
sg_gemm_taps_fn sg_f32_gemm_taps__scalar;
sg_transpose_fn sg_f32_transpose__scalar;
sg_scatter_add_fn sg_f32_scatter_add__scalar;

/* Convolution, pooling, normalisation, dropout, optimizers (conv.c, pool.c, norm.c,
   optimizer.c). */
sg_im2col_fn sg_f32_im2col__scalar;
sg_col2im_fn sg_f32_col2im__scalar;
sg_depthwise_conv2d_fn sg_f32_depthwise_conv2d__scalar;
sg_depthwise_conv2d_backward_input_fn sg_f32_depthwise_conv2d_backward_input__scalar;
sg_depthwise_conv2d_backward_filter_fn sg_f32_depthwise_conv2d_backward_filter__scalar;
sg_max_pool_fn sg_f32_max_pool__scalar;
sg_avg_pool_fn sg_f32_avg_pool__scalar;
sg_max_pool_backward_fn sg_f32_max_pool_backward__scalar;
sg_avg_pool_backward_fn sg_f32_avg_pool_backward__scalar;
sg_batch_norm_fn sg_f32_batch_norm__scalar;
sg_batch_norm_backward_fn sg_f32_batch_norm_backward__scalar;
sg_dropout_fn sg_f32_dropout__scalar;
sg_sgd_update_fn sg_f32_sgd_update__scalar;
sg_momentum_update_fn sg_f32_momentum_update__scalar;
sg_adam_update_fn sg_f32_adam_update__scalar;
sg_cast_f32_i32_fn sg_f32_cast_f32_i32__scalar;
sg_cast_i32_f32_fn sg_f32_cast_i32_f32__scalar;

/* The complete scalar table. */
extern const sg_backend sg__backend_scalar;

#endif /* SIMDGRAD_KERNELS_SCALAR_H */
