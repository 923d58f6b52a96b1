/* conv2d as a sum of shifted matrix products, without im2col: for each filter tap (kh, kw) the
 * output pixels of one row that the tap reaches form a matrix [pixels, C] inside x itself (rows
 * stride * C apart), and that matrix times the tap's [C, O] slice of the filter adds into the
 * output row. The backend's gemm_taps sums all of a row's taps in registers, reading x and the
 * filter where they lie, so a 3x3 convolution writes each output pixel once and copies nothing;
 * im2col would write and read back nine times the input. Worth it once C is a few vectors wide;
 * op_conv.c decides. */
#ifndef SIMDGRAD_CONV_SHIFTED_H
#define SIMDGRAD_CONV_SHIFTED_H

#include "engine.h"

/* Whether the shifted form suits g: a window bigger than 1x1 and at least this many input
   channels (the forward's k) and output channels (the input gradient's k). */
#define SG_CONV_SHIFTED_MIN_CHANNELS 16
bool sg__conv_shifted_suits(const sg_window2d *g);

/* y [N, OH, OW, O] = conv(x [N, H, W, C], f [KH, KW, C, O]), over the engine's threads. */
void sg__conv_shifted_forward(const sg_backend *be, const sg_window2d *g, const float *x,
                              const float *f, float *y);

/* dx [N, H, W, C] = the gradient of x for dy [N, OH, OW, O], given the filter as
   ft [KH, KW, O, C] (each tap transposed). */
void sg__conv_shifted_input_grad(const sg_backend *be, const sg_window2d *g, const float *dy,
                                 const float *ft, float *dx);

/* part [KH, KW, C, O] = the filter gradient from output rows [lo, hi) of all images (row
   (n, oh) is item n * OH + oh), single-threaded: the caller sums the parts in order. */
void sg__conv_shifted_filter_grad(const sg_backend *be, const sg_window2d *g, const float *x,
                                  const float *dy, int64_t lo, int64_t hi, float *part);

#endif
