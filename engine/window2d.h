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

/* Keeps g in node->iparam (all 16 fields) and gets it back. */
void sg__window2d_save(sg_node *node, const sg_window2d *g);
sg_window2d sg__window2d_load(const sg_node *node);

/* Items per parallel chunk so that one chunk holds about `target` units of work when each item
   costs `per_item` (at least 1). */
static inline int64_t sg__grain_for(double per_item, double target) {
  return per_item >= target ? 1 : (int64_t)(target / (per_item > 1 ? per_item : 1));
}

#endif
