/* Geometry of the NHWC window ops (conv2d, depthwise_conv2d, max_pool, avg_pool): resolving
 * strides, padding and dilations into a sg_window2d, and keeping it in a tape node. */
#ifndef SIMDGRAD_WINDOW2D_H
#define SIMDGRAD_WINDOW2D_H

#include "engine.h"

/* Fills g for x [N, H, W, C] and a k_h x k_w window, from the user's strides (NULL = defaults),
   padding, pads (EXPLICIT only) and dilations (NULL = 1). out_c and multiplier are left for the
   caller (set to in_c and 1). False with an error naming op on a bad argument or an empty
   output. */
bool sg__window2d(const char *op, const sg_tensor *x, int64_t k_h, int64_t k_w,
                  const int64_t *strides, const int64_t *default_strides, sg_padding padding,
                  const int64_t *pads, const int64_t *dilations, sg_window2d *g);

/* The checks and geometry of a filtered window op (conv2d, depthwise_conv2d): x [N, H, W, C]
   and filter [KH, KW, C, last] (last names the filter's last axis in the error), both f32.
   Fills g (stride and dilation 1 by default; out_c and multiplier left for the caller); false
   with the error set. */
bool sg__window2d_filtered(const char *op, const sg_tensor *x, const sg_tensor *filter,
                           const char *last, const int64_t *strides, sg_padding padding,
                           const int64_t *pads, const int64_t *dilations, sg_window2d *g);

/* Ends a filtered window op that made y: records it on the tape with grad (saving x, the filter
   and g) and returns sg__op_end's result; on failure disposes y. */
sg_tensor *sg__window2d_filtered_end(sg_op *op, sg_grad_fn grad, sg_tensor *x, sg_tensor *filter,
                                     sg_tensor *y, const sg_window2d *g);

/* out = the sum of n_parts partial results of `size` floats each, added in order (so results do
   not depend on which thread made which part). */
void sg__sum_parts(const sg_backend *be, float *out, const float *parts, int64_t n_parts,
                   int64_t size);

/* Keeps g in node->iparam (all 16 fields) and gets it back. */
void sg__window2d_save(sg_node *node, const sg_window2d *g);
sg_window2d sg__window2d_load(const sg_node *node);

#endif
