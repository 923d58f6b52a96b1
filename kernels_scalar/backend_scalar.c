/* The scalar backend table: every slot filled with the portable reference kernel. */
#include "kernels_scalar.h"

#define SG_FILL_UNARY_(name, saved, doc)                                                           \
  .name = sg_f32_##name##__scalar, .name##_backward = sg_f32_##name##_backward__scalar,
#define SG_FILL_STEP_(name, doc) .name = sg_f32_##name##__scalar,
#define SG_FILL_BINARY_(name, doc)                                                                 \
  .name = sg_f32_##name##__scalar, .name##_backward = sg_f32_##name##_backward__scalar,
#define SG_FILL_COMPARE_(name, doc) .name = sg_f32_##name##__scalar,
#define SG_FILL_REDUCE_(name, doc)                                                                 \
  .reduce_##name = sg_f32_reduce_##name##__scalar,                                                 \
  .reduce_##name##_backward = sg_f32_reduce_##name##_backward__scalar,

const sg_backend sg__backend_scalar = {
    .size = sizeof(sg_backend),
    .abi_version = SG_BACKEND_ABI_VERSION,
    .name = "scalar",
    SG_FOR_EACH_UNARY_OP(SG_FILL_UNARY_) SG_FOR_EACH_STEP_OP(SG_FILL_STEP_)
        SG_FOR_EACH_BINARY_OP(SG_FILL_BINARY_) SG_FOR_EACH_COMPARE_OP(SG_FILL_COMPARE_)
            SG_FOR_EACH_REDUCE_OP(SG_FILL_REDUCE_)
                .leaky_relu = sg_f32_leaky_relu__scalar,
    .leaky_relu_backward = sg_f32_leaky_relu_backward__scalar,
    .clip = sg_f32_clip__scalar,
    .clip_backward = sg_f32_clip_backward__scalar,
    .fill = sg_f32_fill__scalar,
    .where = sg_f32_where__scalar,
    .where_backward = sg_f32_where_backward__scalar,
    .argmax = sg_f32_argmax__scalar,
    .argmin = sg_f32_argmin__scalar,
    .softmax = sg_f32_softmax__scalar,
    .softmax_backward = sg_f32_softmax_backward__scalar,
    .log_softmax = sg_f32_log_softmax__scalar,
    .log_softmax_backward = sg_f32_log_softmax_backward__scalar,
    .softmax_cross_entropy = sg_f32_softmax_cross_entropy__scalar,
    .softmax_cross_entropy_backward = sg_f32_softmax_cross_entropy_backward__scalar,
    .gemm = sg_f32_gemm__scalar,
    .gemm_taps = sg_f32_gemm_taps__scalar,
    .transpose = sg_f32_transpose__scalar,
    .scatter_add = sg_f32_scatter_add__scalar,
    .im2col = sg_f32_im2col__scalar,
    .col2im = sg_f32_col2im__scalar,
    .depthwise_conv2d = sg_f32_depthwise_conv2d__scalar,
    .depthwise_conv2d_backward_input = sg_f32_depthwise_conv2d_backward_input__scalar,
    .depthwise_conv2d_backward_filter = sg_f32_depthwise_conv2d_backward_filter__scalar,
    .max_pool = sg_f32_max_pool__scalar,
    .avg_pool = sg_f32_avg_pool__scalar,
    .max_pool_backward = sg_f32_max_pool_backward__scalar,
    .avg_pool_backward = sg_f32_avg_pool_backward__scalar,
    .batch_norm = sg_f32_batch_norm__scalar,
    .batch_norm_backward = sg_f32_batch_norm_backward__scalar,
    .dropout = sg_f32_dropout__scalar,
    .sgd_update = sg_f32_sgd_update__scalar,
    .momentum_update = sg_f32_momentum_update__scalar,
    .adam_update = sg_f32_adam_update__scalar,
    .cast_f32_i32 = sg_f32_cast_f32_i32__scalar,
    .cast_i32_f32 = sg_f32_cast_i32_f32__scalar,
};
