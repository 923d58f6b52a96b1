/* simdgrad kernel ABI: a backend is a struct of kernel function pointers on raw buffers.
 *
 * A framework can link simdgrad purely as a kernel library: take sg_backend_current() (or
 * sg_backend_get("avx2")) and call its kernels on plain float arrays. Nothing here sees an
 * sg_tensor. Kernels are single-threaded on the range they are given (the engine splits work
 * across threads); they never fail and accept any alignment. None allocates per call; gemm
 * keeps one set of packing buffers per thread, made on the thread's first gemm and freed when
 * the thread exits (when they cannot be made it runs the unpacked reference loop instead).
 *
 * Forward and backward kernels sit side by side: `exp` and `exp_backward`. A backward kernel
 * receives dy and the tensors its forward saved (x, y or both, as its entry below says) and
 * writes dx. Unless a field says otherwise: n == 0 is allowed; outputs may alias the first input
 * of the same length (in place) but must not partially overlap any input. gemm, gemm_taps,
 * transpose, scatter_add, im2col, col2im, the depthwise and pooling kernels and the optimizer
 * updates never work in place: their outputs overlap no input. sg_backend_checked() gives
 * tables whose kernels check these preconditions (for debug builds).
 *
 * "step" arguments (a_step, b_step, c_step) are 0 or 1: 1 walks a contiguous operand, 0 repeats
 * its first element (a broadcast scalar). This is how the engine expresses NumPy broadcasting to
 * a kernel: it walks the broadcast shape and hands the kernel contiguous runs.
 */
#ifndef SIMDGRAD_BACKEND_H
#define SIMDGRAD_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef SG_API
#define SG_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Kernel signatures ------------------------------------------------------------------- */

/* Each signature is written once, as a function type sg_<kind>_fn. The struct's slots point to
   these, and every backend declares its kernels with them (kernels_scalar.h, simd_decls.inc),
   so a kernel whose definition drifts from its slot does not compile. sg_<kind>_kernel is the
   matching pointer type. The op lists below use these kinds; the hand-written slots have a
   type each, after the lists. */

/* y[i] = f(x[i]) for i < n. */
typedef void sg_unary_fn(const float *x, float *y, size_t n);
typedef sg_unary_fn *sg_unary_kernel;
/* dx[i] = dy[i] * f'(x[i]); x or y is the saved tensor named in the op list (the other may be
   NULL). */
typedef void sg_unary_backward_fn(const float *dy, const float *x, const float *y, float *dx,
                                  size_t n);
typedef sg_unary_backward_fn *sg_unary_backward_kernel;
/* y[i] = a[i*a_step] OP b[i*b_step]. */
typedef void sg_binary_fn(const float *a, size_t a_step, const float *b, size_t b_step, float *y,
                          size_t n);
typedef sg_binary_fn *sg_binary_kernel;
/* da[i] = dy[i] * d(a OP b)/da, db[i] likewise, at a[i*a_step], b[i*b_step]; y is the forward
   output. da and db have n elements (not reduced to a broadcast operand's size); either may
   be NULL when that gradient is not wanted. add and sub read neither a nor b (pass dy, they
   must still be valid pointers); only pow reads y, which may be NULL for every other op. */
typedef void sg_binary_backward_fn(const float *dy, const float *a, size_t a_step, const float *b,
                                   size_t b_step, const float *y, float *da, float *db, size_t n);
typedef sg_binary_backward_fn *sg_binary_backward_kernel;
/* y[i] = a[i*a_step] CMP b[i*b_step] ? 1 : 0 (IEEE: every comparison with NaN is false, except
   not_equal). */
typedef void sg_compare_fn(const float *a, size_t a_step, const float *b, size_t b_step, uint8_t *y,
                           size_t n);
typedef sg_compare_fn *sg_compare_kernel;
/* A reduction over the middle axis of x viewed as [outer, r, inner]: y is [outer, inner]. */
typedef void sg_reduce_fn(const float *x, size_t outer, size_t r, size_t inner, float *y);
typedef sg_reduce_fn *sg_reduce_kernel;
/* Its backward: dy is [outer, inner], x and y as in the forward, dx is [outer, r, inner]. */
typedef void sg_reduce_backward_fn(const float *dy, const float *x, const float *y, size_t outer,
                                   size_t r, size_t inner, float *dx);
typedef sg_reduce_backward_fn *sg_reduce_backward_kernel;
/* Index of the extremum over the middle axis of [outer, r, inner]; the first one on ties; the
   first NaN if any. r must be at least 1. */
typedef void sg_arg_reduce_fn(const float *x, size_t outer, size_t r, size_t inner, int32_t *y);
typedef sg_arg_reduce_fn *sg_arg_reduce_kernel;
/* softmax / log_softmax over the middle axis of [outer, r, inner]. */
typedef void sg_softmax_fn(const float *x, size_t outer, size_t r, size_t inner, float *y);
typedef sg_softmax_fn *sg_softmax_kernel;
/* Backward from the saved output y: dx for dy, all [outer, r, inner]. */
typedef void sg_softmax_backward_fn(const float *dy, const float *y, size_t outer, size_t r,
                                    size_t inner, float *dx);
typedef sg_softmax_backward_fn *sg_softmax_backward_kernel;

/* ---- The op lists -------------------------------------------------------------------------- */

/* Note [Appending slots]. struct sg_backend is an ABI: a program compiled against an older
   backend.h reads each slot at the offset its header gave it, so a slot once released never
   moves (tests/test_abi.c pins every offset, and `make abi-check` compares the library with
   abi/libsimdgrad.abi). The lists below are therefore split by the release that added their
   entries: SG_FOR_EACH_<KIND>_OP_ABI1 holds the ops of the layout of ABI version 1 and is
   frozen; their slots come first in the struct. A new op is not added to a frozen list: it
   goes into a list of its release, SG_FOR_EACH_<KIND>_OP_<MAJOR>_<MINOR> (e.g.
   SG_FOR_EACH_UNARY_OP_0_3; create it if it does not exist yet), expanded in that release's
   block at the END of the struct, after every earlier block; a hand-written slot goes into
   that block as well. The combined list SG_FOR_EACH_<KIND>_OP (every entry, in order) gains
   the new list, so whatever iterates over all the ops (declarations, tables, tests, bench)
   sees it without a change. A list of a release that is not yet out may still grow; once
   released, its block is frozen like the first. Moving, removing or retyping a slot is an
   ABI break: SG_BACKEND_ABI_VERSION and the SONAME change together (docs/embedding.md). */

/* Differentiable unary ops: OP(name, saved, doc). saved is X (the input) or Y (the output) or
   NONE: the tensor the forward keeps for the backward kernel. Accuracy per backend is measured
   in docs/accuracy.md. */
#define SG_FOR_EACH_UNARY_OP_ABI1(OP)                                                              \
  OP(neg, NONE, "-x")                                                                              \
  OP(abs, X, "|x|; gradient sign(x), 0 at 0")                                                      \
  OP(exp, Y, "e^x")                                                                                \
  OP(expm1, Y, "e^x - 1")                                                                          \
  OP(log, X, "ln x")                                                                               \
  OP(log1p, X, "ln(1 + x)")                                                                        \
  OP(sqrt, Y, "sqrt(x)")                                                                           \
  OP(rsqrt, Y, "1 / sqrt(x)")                                                                      \
  OP(square, X, "x^2")                                                                             \
  OP(reciprocal, Y, "1 / x")                                                                       \
  OP(relu, X, "max(x, 0); NaN stays NaN; gradient 0 at 0")                                         \
  OP(relu6, X, "min(max(x, 0), 6); NaN stays NaN; gradient 1 on (0, 6)")                           \
  OP(elu, Y, "x > 0 ? x : e^x - 1")                                                                \
  OP(selu, X, "scale * (x > 0 ? x : alpha * (e^x - 1)), scale 1.0507.., alpha 1.6732..")           \
  OP(sigmoid, Y, "1 / (1 + e^-x)")                                                                 \
  OP(tanh, Y, "tanh(x)")                                                                           \
  OP(softplus, X, "ln(1 + e^x)")                                                                   \
  OP(gelu, X, "x * Phi(x), exact erf form")                                                        \
  OP(sin, X, "sin(x)")                                                                             \
  OP(cos, X, "cos(x)")

/* Unary ops whose gradient is zero everywhere it exists: OP(name, doc). No backward kernel. */
#define SG_FOR_EACH_STEP_OP_ABI1(OP)                                                               \
  OP(floor, "largest integer <= x")                                                                \
  OP(ceil, "smallest integer >= x")                                                                \
  OP(round, "nearest integer, half to even")                                                       \
  OP(sign, "-1, 0 or 1; NaN stays NaN")

/* Broadcasting binary ops: OP(name, doc). Every one has a backward kernel. */
#define SG_FOR_EACH_BINARY_OP_ABI1(OP)                                                             \
  OP(add, "a + b")                                                                                 \
  OP(sub, "a - b")                                                                                 \
  OP(mul, "a * b")                                                                                 \
  OP(div, "a / b")                                                                                 \
  OP(pow, "a^b (powf semantics); db uses ln(a), defined for a > 0")                                \
  OP(maximum, "max(a, b); NaN if either is NaN; on ties the gradient goes to a")                   \
  OP(minimum, "min(a, b); NaN if either is NaN; on ties the gradient goes to a")                   \
  OP(squared_difference, "(a - b)^2")

/* Comparisons: OP(name, doc). */
#define SG_FOR_EACH_COMPARE_OP_ABI1(OP)                                                            \
  OP(equal, "a == b")                                                                              \
  OP(not_equal, "a != b")                                                                          \
  OP(less, "a < b")                                                                                \
  OP(less_equal, "a <= b")                                                                         \
  OP(greater, "a > b")                                                                             \
  OP(greater_equal, "a >= b")

/* Reductions with a backward kernel: OP(name, doc). */
#define SG_FOR_EACH_REDUCE_OP_ABI1(OP)                                                             \
  OP(sum, "sum over r; backward broadcasts dy (x, y unused)")                                      \
  OP(max, "max over r, NaN propagates; backward: dy where x == y")                                 \
  OP(min, "min over r, NaN propagates; backward: dy where x == y")                                 \
  OP(logsumexp, "ln(sum(e^x)) computed stably; backward: dy * e^(x - y)")

/* Every op of each kind, in slot order: the lists above, then those appended since. */
#define SG_FOR_EACH_UNARY_OP(OP) SG_FOR_EACH_UNARY_OP_ABI1(OP)
#define SG_FOR_EACH_STEP_OP(OP) SG_FOR_EACH_STEP_OP_ABI1(OP)
#define SG_FOR_EACH_BINARY_OP(OP) SG_FOR_EACH_BINARY_OP_ABI1(OP)
#define SG_FOR_EACH_COMPARE_OP(OP) SG_FOR_EACH_COMPARE_OP_ABI1(OP)
#define SG_FOR_EACH_REDUCE_OP(OP) SG_FOR_EACH_REDUCE_OP_ABI1(OP)

#define SG_DECLARE_UNARY_SLOTS_(name, saved, doc)                                                  \
  sg_unary_kernel name;                                                                            \
  sg_unary_backward_kernel name##_backward;
#define SG_DECLARE_STEP_SLOT_(name, doc) sg_unary_kernel name;
#define SG_DECLARE_BINARY_SLOTS_(name, doc)                                                        \
  sg_binary_kernel name;                                                                           \
  sg_binary_backward_kernel name##_backward;
#define SG_DECLARE_COMPARE_SLOT_(name, doc) sg_compare_kernel name;
#define SG_DECLARE_REDUCE_SLOTS_(name, doc)                                                        \
  sg_reduce_kernel reduce_##name;                                                                  \
  sg_reduce_backward_kernel reduce_##name##_backward;

/* The geometry of a 2-D window op on NHWC images (convolution, depthwise convolution, pooling):
   x is [batch, in_h, in_w, in_c] and y is [batch, out_h, out_w, out_c], row-major. Output pixel
   (oh, ow) reads the k_h x k_w taps at input row oh * stride_h - pad_top + i * dilation_h and
   column ow * stride_w - pad_left + j * dilation_w; a tap outside the image reads 0 in a
   convolution and is skipped by pooling. Kernels taking a geometry work on one image (the
   engine loops over the batch); `batch` is informational. */
typedef struct sg_window2d {
  size_t batch, in_h, in_w, in_c;
  size_t out_h, out_w, out_c; /* conv: the filter's out channels; depthwise: in_c * multiplier */
  size_t k_h, k_w;
  size_t stride_h, stride_w, dilation_h, dilation_w;
  size_t pad_top, pad_left;
  size_t multiplier; /* depthwise: output channels per input channel (1 otherwise) */
} sg_window2d;

/* ---- The hand-written slots' signatures ------------------------------------------------ */

/* One function type per slot that no op list covers, named sg_<slot>_fn: the slot in struct
   sg_backend below is a pointer to it (its contract is written there), and every backend
   declares its kernel with it (`sg_gemm_fn sg_f32_gemm__avx2;`), so a kernel whose
   definition drifts from its slot does not compile. */
typedef void sg_leaky_relu_fn(const float *x, float *y, size_t n, float alpha);
typedef void sg_leaky_relu_backward_fn(const float *dy, const float *x, float *dx, size_t n,
                                       float alpha);
typedef void sg_clip_fn(const float *x, float *y, size_t n, float lo, float hi);
typedef void sg_clip_backward_fn(const float *dy, const float *x, float *dx, size_t n, float lo,
                                 float hi);
typedef void sg_fill_fn(float *y, size_t n, float v);
typedef void sg_where_fn(const uint8_t *c, size_t c_step, const float *a, size_t a_step,
                         const float *b, size_t b_step, float *y, size_t n);
typedef void sg_where_backward_fn(const float *dy, const uint8_t *c, size_t c_step, float *da,
                                  float *db, size_t n);
typedef void sg_softmax_cross_entropy_fn(const float *labels, const float *logits, size_t rows,
                                         size_t classes, float *loss, float *log_probs);
typedef void sg_softmax_cross_entropy_backward_fn(const float *dloss, const float *labels,
                                                  const float *log_probs, size_t rows,
                                                  size_t classes, float *dlabels, float *dlogits);
typedef void sg_gemm_fn(size_t m, size_t n, size_t k, const float *a, size_t lda, bool trans_a,
                        const float *b, size_t ldb, bool trans_b, float beta, float *c, size_t ldc);
typedef void sg_gemm_taps_fn(size_t m, size_t n, size_t k, size_t taps, const float *const *a,
                             size_t lda, bool trans_a, const float *const *b, size_t ldb,
                             float beta, float *c, size_t ldc);
typedef void sg_transpose_fn(const float *x, const int64_t *shape, const int *perm, int rank,
                             float *y);
typedef void sg_scatter_add_fn(const float *dy, const int32_t *idx, size_t outer, size_t n_idx,
                               size_t inner, size_t axis_dim, float *dx);
typedef void sg_im2col_fn(const sg_window2d *g, const float *x, size_t p0, size_t p1, float *col);
typedef void sg_col2im_fn(const sg_window2d *g, const float *col, size_t p0, size_t p1, float *dx);
typedef void sg_depthwise_conv2d_fn(const sg_window2d *g, const float *x, const float *f,
                                    size_t oh0, size_t oh1, float *y);
typedef void sg_depthwise_conv2d_backward_input_fn(const sg_window2d *g, const float *dy,
                                                   const float *f, float *dx);
typedef void sg_depthwise_conv2d_backward_filter_fn(const sg_window2d *g, const float *dy,
                                                    const float *x, float *df);
typedef void sg_max_pool_fn(const sg_window2d *g, const float *x, size_t oh0, size_t oh1, float *y);
typedef void sg_avg_pool_fn(const sg_window2d *g, const float *x, size_t oh0, size_t oh1, float *y);
typedef void sg_max_pool_backward_fn(const sg_window2d *g, const float *dy, const float *x,
                                     const float *y, float *dx);
typedef void sg_avg_pool_backward_fn(const sg_window2d *g, const float *dy, float *dx);
typedef void sg_batch_norm_fn(const float *x, size_t rows, size_t channels, const float *a,
                              const float *b, float *y);
typedef void sg_batch_norm_backward_fn(const float *dy, const float *x, size_t rows,
                                       size_t channels, const float *a, const float *mean,
                                       float *dx, float *sum_dy, float *sum_dy_xc);
typedef void sg_dropout_fn(const float *x, float *y, size_t n, uint64_t offset, uint64_t seed,
                           uint64_t threshold, float scale);
typedef void sg_sgd_update_fn(float *w, const float *g, size_t n, float lr);
typedef void sg_momentum_update_fn(float *w, float *v, const float *g, size_t n, float lr,
                                   float momentum, bool nesterov);
typedef void sg_adam_update_fn(float *w, float *m, float *v, const float *g, size_t n, float lr_t,
                               float beta1, float beta2, float c2, float epsilon);
/* Conversions between f32 and i32 (0.3), elementwise over n. */
typedef void sg_cast_f32_i32_fn(const float *x, int32_t *y, size_t n);
typedef void sg_cast_i32_f32_fn(const int32_t *x, float *y, size_t n);

/* ---- The backend ----------------------------------------------------------------------------- */

/* The version of struct sg_backend's layout. It changes only when a released slot moves, goes
   or changes type, and the SONAME changes with it; appending slots keeps it (Note [Appending
   slots]). */
#define SG_BACKEND_ABI_VERSION 1

/* The layout of ABI version 1, frozen: new slots are only appended, in a block per release at
   the end (Note [Appending slots]). */
typedef struct sg_backend {
  /* sizeof(sg_backend) in the library that filled the table. A program compiled against a
     newer backend.h than the library it runs with finds the slots the library lacks beyond
     size: test with SG_BACKEND_HAS(b, slot) before calling a slot appended after 0.2. */
  size_t size;
  /* SG_BACKEND_ABI_VERSION of the library that filled the table. */
  uint32_t abi_version;
  /* "scalar", "avx2", "avx512" or "neon"; a checked table (sg_backend_checked) is named
     "checked:" and its backend's name, e.g. "checked:avx2". */
  const char *name;

  /* Elementwise, from the lists above: `exp` and `exp_backward`, `floor`, `add` and
     `add_backward`, `equal`, ... */
  SG_FOR_EACH_UNARY_OP_ABI1(SG_DECLARE_UNARY_SLOTS_)
  SG_FOR_EACH_STEP_OP_ABI1(SG_DECLARE_STEP_SLOT_)
  SG_FOR_EACH_BINARY_OP_ABI1(SG_DECLARE_BINARY_SLOTS_)
  SG_FOR_EACH_COMPARE_OP_ABI1(SG_DECLARE_COMPARE_SLOT_)

  /* y = x > 0 ? x : alpha * x. Backward saves x: dx = dy * (x > 0 ? 1 : alpha). */
  sg_leaky_relu_fn *leaky_relu;
  sg_leaky_relu_backward_fn *leaky_relu_backward;
  /* y = min(max(x, lo), hi), NaN stays NaN. Backward saves x: dx = dy where lo <= x <= hi. */
  sg_clip_fn *clip;
  sg_clip_backward_fn *clip_backward;

  /* y[i] = v for i < n (the bits of v, NaN and -0 included). */
  sg_fill_fn *fill;

  /* y[i] = c[i*c_step] ? a[i*a_step] : b[i*b_step]. */
  sg_where_fn *where;
  /* da[i] = c ? dy[i] : 0, db[i] = c ? 0 : dy[i]; either output may be NULL. */
  sg_where_backward_fn *where_backward;

  /* Reductions over the middle axis of [outer, r, inner]: reduce_sum, reduce_sum_backward,
     reduce_max, ... (see SG_FOR_EACH_REDUCE_OP). */
  SG_FOR_EACH_REDUCE_OP_ABI1(SG_DECLARE_REDUCE_SLOTS_)
  sg_arg_reduce_kernel argmax;
  sg_arg_reduce_kernel argmin;

  /* softmax and log_softmax over the middle axis of [outer, r, inner]; backward from the saved
     output: softmax dx = y * (dy - sum(dy * y)), log_softmax dx = dy - e^y * sum(dy). */
  sg_softmax_kernel softmax;
  sg_softmax_backward_kernel softmax_backward;
  sg_softmax_kernel log_softmax;
  sg_softmax_backward_kernel log_softmax_backward;

  /* Fused softmax cross-entropy over rows of `classes` logits: loss[r] = -sum(labels * lsm),
     and the log-softmax lsm [rows, classes] is written for the backward (over logits, if
     log_probs == logits; never over labels). A row with a label of +-inf or NaN has a loss of
     +-inf or NaN, which one unspecified (-inf times an lsm that rounded to 0 is NaN). */
  sg_softmax_cross_entropy_fn *softmax_cross_entropy;
  /* From dloss [rows]: dlogits = dloss * (e^lsm - labels), dlabels = -dloss * lsm; either
     output may be NULL. The logits gradient assumes each row of labels sums to 1 (as
     TensorFlow's does). A row whose dloss is +-inf or NaN has dlogits of +-inf or NaN, which
     one unspecified (NaN, for one, where e^lsm rounds to the label). */
  sg_softmax_cross_entropy_backward_fn *softmax_cross_entropy_backward;

  /* C = op(A) op(B) + beta * C, C is m x n with row stride ldc; op(A) is m x k (A stored k x m
     when trans_a), op(B) is k x n (B stored n x k when trans_b). beta == 0 ignores C's old
     contents (NaN included). The matmul backward is this kernel with transposes:
     dA = dC op(B)^T, dB = op(A)^T dC. */
  sg_gemm_fn *gemm;
  /* C = sum over t < taps of op(A_t) B_t + beta * C, C m x n (row stride ldc), op(A_t) m x k
     (A_t = a[t], row stride lda, stored k x m when trans_a), B_t = b[t] k x n (row stride ldb).
     A convolution's shifted products summed in one pass, C written once however many taps:
     the forward sums each filter tap's [in_c, out_c] slice times the input pixels it meets; the
     filter gradient sums, for one tap, the input pixels (transposed) times dy over many rows.
     beta == 0 ignores C's old contents; taps == 0 gives beta * C. The products add up over t,
     then k, in order. */
  sg_gemm_taps_fn *gemm_taps;

  /* y = x permuted: y's axis i is x's axis perm[i]; shape is x's shape; 4-byte elements (f32
     or i32 bits). rank <= 8. The backward of a transpose is a transpose by the inverse perm. */
  sg_transpose_fn *transpose;

  /* Gather backward: x viewed as [outer, axis_dim, inner], indices [n_idx] into axis_dim;
     dx[o, idx[j], i] += dy[o, j, i]. dx must be zeroed first; out-of-range indices are
     skipped. */
  sg_scatter_add_fn *scatter_add;
  /* ---- Convolution, pooling, normalisation, optimizers (one image at a time where a field
     takes a sg_window2d; x, y, dx, dy point at that image) ---- */

  /* im2col for a convolution: for output pixels p in [p0, p1) (p = oh * out_w + ow), writes row
     p - p0 of col: the k_h * k_w * in_c input values under the window, tap-major and
     channel-minor (the order of a [k_h, k_w, in_c, out_c] filter's rows), 0 for taps outside
     the image. A convolution is then the gemm col [p1 - p0, K] x filter [K, out_c]. */
  sg_im2col_fn *im2col;
  /* Its adjoint, for the input gradient: dx += each row of col (pixels [p0, p1)) scattered back
     to its taps; taps outside the image are dropped. dx is one whole image. */
  sg_col2im_fn *col2im;

  /* Depthwise convolution, filter [k_h, k_w, in_c, multiplier]: output channel c * multiplier
     + m sums x[.., c] * f[i, j, c, m] over the window. Forward writes output rows [oh0, oh1).
     The backward kernels accumulate over the whole image: dx += (dx zeroed by the caller), and
     df += (so the engine can sum images into one filter gradient). */
  sg_depthwise_conv2d_fn *depthwise_conv2d;
  sg_depthwise_conv2d_backward_input_fn *depthwise_conv2d_backward_input;
  sg_depthwise_conv2d_backward_filter_fn *depthwise_conv2d_backward_filter;

  /* Pooling over the window's taps inside the image (out_c == in_c, dilation 1), output rows
     [oh0, oh1).
     max_pool: NaN propagates; a window with no tap inside gives -inf. avg_pool divides by the
     number of taps inside the image (TensorFlow's SAME average), 0 taps give 0. */
  sg_max_pool_fn *max_pool;
  sg_avg_pool_fn *avg_pool;
  /* Backward over the whole image, dx += (zeroed by the caller). max_pool routes each dy to the
     first tap (row-major in the window) where x == y (or both are NaN); avg_pool spreads dy /
     count over the taps inside the image. */
  sg_max_pool_backward_fn *max_pool_backward;
  sg_avg_pool_backward_fn *avg_pool_backward;

  /* Batch normalisation over x viewed as [rows, channels] with per-channel a and b precomputed
     by the engine (a = scale / sqrt(variance + epsilon), b = offset - mean * a): y = x*a + b. */
  sg_batch_norm_fn *batch_norm;
  /* Backward: dx = dy * a (dx may be NULL), and per channel sum_dy[c] += sum over rows of dy,
     sum_dy_xc[c] += sum of dy * (x - mean[c]). The engine turns these into the gradients of
     mean, variance, offset and scale. */
  sg_batch_norm_backward_fn *batch_norm_backward;

  /* Dropout of elements [offset, offset + n) of a tensor: y[i] = keep ? x[i] * scale : 0, with
     keep = hash(seed, offset + i) >= threshold, threshold = rate * 2^32, scale = 1 / (1 - rate).
     hash (every backend must give the same bits): h = fmix32((uint32)i * 0x9E3779B1 +
     (uint32)seed), then h = fmix32(h ^ (uint32)(seed >> 32) ^ (uint32)(i >> 32)), where fmix32
     is MurmurHash3's finaliser. The backward is this kernel on dy with the same seed. */
  sg_dropout_fn *dropout;

  /* Fused optimizer updates, one pass over the parameters w, the gradients g and the state, all
     n long, updated in place. sgd: w -= lr * g. momentum: v = momentum * v + g, then w -= lr *
     (nesterov ? g + momentum * v : v). adam (bias correction folded in by the caller: lr_t =
     lr / (1 - beta1^t), c2 = 1 / sqrt(1 - beta2^t)): m = beta1 m + (1 - beta1) g, v = beta2 v +
     (1 - beta2) g^2, w -= lr_t * m / (sqrt(v) * c2 + epsilon). */
  sg_sgd_update_fn *sgd_update;
  sg_momentum_update_fn *momentum_update;
  sg_adam_update_fn *adam_update;

  /* ---- Slots appended after 0.2 go here, one block per release (Note [Appending slots]). */

  /* ---- 0.3: sg_cast's conversions. They may work in place (y == x); check
     SG_BACKEND_HAS(b, cast_f32_i32) before calling them through an older library's table. */
  /* y[i] = x[i] truncated toward zero; NaN and every x outside [-2^31, 2^31) give INT32_MIN
     (what x86's cvttps2dq gives, so every backend and CPU agree). */
  sg_cast_f32_i32_fn *cast_f32_i32;
  /* y[i] = x[i] rounded to the nearest float, ties to even (in the default rounding mode; like
     C's conversion, the current mode decides). */
  sg_cast_i32_f32_fn *cast_i32_f32;
} sg_backend;

/* True when table b has the slot (it lies within b->size) and the slot is set. A program that
   uses a slot appended after the release it requires checks this first. */
#define SG_BACKEND_HAS(b, slot)                                                                    \
  ((b)->size >= offsetof(sg_backend, slot) + sizeof((b)->slot) && (b)->slot != NULL)

/* The backend the engine uses now (after sg_init's choice or sg_use_backend). */
SG_API const sg_backend *sg_backend_current(void);
/* A backend by name: "scalar", "avx2", "avx512", "neon"; NULL if this CPU or build lacks it. */
SG_API const sg_backend *sg_backend_get(const char *name);
/* The checked twin of a backend (NULL name: the current one), for an integrator's debug builds;
   NULL where sg_backend_get(name) is. Its kernels first check their arguments against the
   preconditions written above (buffers NULL where elements would be touched, element counts
   or byte sizes that overflow, steps other than 0 or 1, gemm's lda, ldb or ldc below the row
   length they stride, argmax / argmin with r == 0, transpose's rank outside [0, 8] or a perm
   that is no permutation, window geometries that do not hold together, outputs that partially
   overlap an input, or overlap one at all where the kernel does not work in place: gemm,
   gemm_taps, transpose, scatter_add, the window kernels, the optimizer updates). A call that
   breaks one does not run: its outputs stay untouched, and sg_last_status() / sg_last_error()
   of the calling thread say which slot and which argument ("checked kernel gemm: lda is 2,
   less than the 3 columns of a as stored"); a valid call runs the real kernel, with the same
   results. The error stays until sg_clear_error(). The tables are made on first request and
   live as long as the process; their name is "checked:" and the backend's, their size and
   abi_version the backend's. */
SG_API const sg_backend *sg_backend_checked(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* SIMDGRAD_BACKEND_H */
