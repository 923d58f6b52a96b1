/* Whole ops through the public API, on each backend (sg_use_backend) and thread count
 * (sg_set_threads): "tape.<op>" is the op's forward and backward, sg_tape_begin, the op,
 * sg_tape_end back-propagating ones to every float input; "tape_dy.<op>" (unary ops, from 2^20
 * elements) the same with a given dy, as a training step passes one, and beside it the op's two
 * kernels alone (tape_over_kernels); "api.<op>" is the forward alone, for
 * ops without a gradient (comparisons, argmax, one_hot, cast), and "api.sgd_step" (momentum,
 * adam) one sg_optimizer_step on a variable. Convolution, pooling, batch norm and dropout run on
 * NHWC images of 16 channels (image_of). Allocation, checks, the tape and
 * the engine's own splitting are all in the figure: compare with the kernel rows of the same op
 * for the engine's share. The unary, binary, comparison and reduction entries come from
 * backend.h's op lists, so a new listed op (with its sg_<name> function) is benchmarked here
 * too. */
#include <simdgrad/simdgrad.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "roofline.h"

/* How an op's inputs are made from the size n (elements; N for a matmul). */
typedef enum api_layout {
  L_VEC1,      /* x [n] */
  L_VEC2,      /* a [n], b [n] */
  L_WHERE,     /* cond [n] (bool), a [n], b [n] */
  L_ROWS,      /* x [rows, cols] */
  L_CE,        /* labels [rows, cols] (rows sum to 1), logits [rows, cols] */
  L_MAT,       /* a [N, N], b [N, N] */
  L_HALVES,    /* a [rows, cols / 2], b [rows, cols / 2] */
  L_HALF_ROWS, /* x [rows / 2, cols] (tile doubles it) */
  L_GATHER,    /* x [rows, cols], indices [rows] (i32) */
  L_INDICES,   /* indices [rows] (i32) in [0, cols) */
  L_IMAGE,     /* x [b, h, w, 16] (image_of), filter [3, 3, 16, 16] */
  L_IMAGE_DW,  /* x [b, h, w, 16], filter [3, 3, 16, 1] */
  L_IMAGE1,    /* x [b, h, w, 16] */
  L_BN,        /* x [rows, cols], then mean, variance (> 0), offset and scale [cols] */
  L_STEP       /* an optimizer step on a variable [n] and its gradient [n] */
} api_layout;

typedef sg_tensor *(*api_call)(sg_tensor *const *in);

typedef struct api_op {
  const char *name;
  api_layout layout;
  unsigned grads; /* bit i: back-propagate to input i; 0: forward only ("api.") */
  api_call call;
  const char *fwd_slot, *bwd_slot; /* bench_kernel_flops keys; NULL: no FLOPs; the bytes are
                                      api_traffic's */
} api_op;

/* ---- The calls ---------------------------------------------------------------------------- */

#define UNARY_CALL_(name, saved, doc)                                                              \
  static sg_tensor *call_##name(sg_tensor *const *in) { return sg_##name(in[0]); }
#define STEP_CALL_(name, doc)                                                                      \
  static sg_tensor *call_##name(sg_tensor *const *in) { return sg_##name(in[0]); }
#define BINARY_CALL_(name, doc)                                                                    \
  static sg_tensor *call_##name(sg_tensor *const *in) { return sg_##name(in[0], in[1]); }
#define REDUCE_CALL_(name, doc)                                                                    \
  static sg_tensor *call_##name(sg_tensor *const *in) {                                            \
    static const int axis = 1;                                                                     \
    return sg_##name(in[0], &axis, 1, false);                                                      \
  }
SG_FOR_EACH_UNARY_OP(UNARY_CALL_)
SG_FOR_EACH_STEP_OP(STEP_CALL_)
SG_FOR_EACH_BINARY_OP(BINARY_CALL_)
SG_FOR_EACH_COMPARE_OP(BINARY_CALL_)
SG_FOR_EACH_REDUCE_OP(REDUCE_CALL_)

static const int k_axis1 = 1;
static sg_tensor *call_leaky_relu(sg_tensor *const *in) { return sg_leaky_relu(in[0], 0.1f); }
static sg_tensor *call_clip(sg_tensor *const *in) { return sg_clip(in[0], -1, 1); }
static sg_tensor *call_where(sg_tensor *const *in) { return sg_where(in[0], in[1], in[2]); }
static sg_tensor *call_mean(sg_tensor *const *in) { return sg_mean(in[0], &k_axis1, 1, false); }
static sg_tensor *call_argmax(sg_tensor *const *in) { return sg_argmax(in[0], 1); }
static sg_tensor *call_argmin(sg_tensor *const *in) { return sg_argmin(in[0], 1); }
static sg_tensor *call_softmax(sg_tensor *const *in) { return sg_softmax(in[0], -1); }
static sg_tensor *call_log_softmax(sg_tensor *const *in) { return sg_log_softmax(in[0], -1); }
static sg_tensor *call_ce(sg_tensor *const *in) { return sg_softmax_cross_entropy(in[0], in[1]); }
static sg_tensor *call_matmul(sg_tensor *const *in) {
  return sg_matmul(in[0], in[1], false, false);
}
static sg_tensor *call_reshape(sg_tensor *const *in) {
  static const int64_t shape[2] = {-1, 2};
  return sg_reshape(in[0], shape, 2);
}
static sg_tensor *call_transpose(sg_tensor *const *in) { return sg_transpose(in[0], NULL); }
static sg_tensor *call_slice(sg_tensor *const *in) { /* the middle half of the columns */
  int64_t cols = sg_shape(in[0])[1], begin[2] = {0, cols / 4}, size[2] = {-1, cols / 2};
  return sg_slice(in[0], begin, size);
}
static sg_tensor *call_concat(sg_tensor *const *in) { return sg_concat(in, 2, 1); }
static sg_tensor *call_pad(sg_tensor *const *in) {
  static const int64_t pads[4] = {0, 0, 1, 1};
  return sg_pad(in[0], pads, 0.0f);
}
static sg_tensor *call_tile(sg_tensor *const *in) {
  static const int64_t reps[2] = {2, 1};
  return sg_tile(in[0], reps);
}
static sg_tensor *call_gather(sg_tensor *const *in) { return sg_gather(in[0], in[1], 0); }
static sg_tensor *call_one_hot(sg_tensor *const *in) { return sg_one_hot(in[0], BENCH_COLS); }
static sg_tensor *call_cast(sg_tensor *const *in) { return sg_cast(in[0], SG_I32); }
static sg_tensor *call_conv2d(sg_tensor *const *in) {
  return sg_conv2d(in[0], in[1], NULL, SG_PADDING_SAME, NULL, NULL);
}
static sg_tensor *call_depthwise(sg_tensor *const *in) {
  return sg_depthwise_conv2d(in[0], in[1], NULL, SG_PADDING_SAME, NULL, NULL);
}
static const int64_t k_window[2] = {2, 2};
static sg_tensor *call_max_pool(sg_tensor *const *in) {
  return sg_max_pool(in[0], k_window, NULL, SG_PADDING_VALID, NULL);
}
static sg_tensor *call_avg_pool(sg_tensor *const *in) {
  return sg_avg_pool(in[0], k_window, NULL, SG_PADDING_VALID, NULL);
}
static sg_tensor *call_batch_norm(sg_tensor *const *in) {
  return sg_batch_norm(in[0], in[1], in[2], in[3], in[4], 1e-3f);
}
static sg_tensor *call_dropout(sg_tensor *const *in) { return sg_dropout(in[0], 0.5f, 42); }

/* ---- The table ---------------------------------------------------------------------------- */

#define UNARY_ENTRY_(name, saved, doc) {#name, L_VEC1, 1, call_##name, #name, #name "_backward"},
#define STEP_ENTRY_(name, doc) {#name, L_VEC1, 1, call_##name, #name, NULL},
#define BINARY_ENTRY_(name, doc) {#name, L_VEC2, 3, call_##name, #name, #name "_backward"},
#define COMPARE_ENTRY_(name, doc) {#name, L_VEC2, 0, call_##name, #name, NULL},
#define REDUCE_ENTRY_(name, doc)                                                                   \
  {#name, L_ROWS, 1, call_##name, "reduce_" #name, "reduce_" #name "_backward"},

static const api_op k_ops[] = {
    SG_FOR_EACH_UNARY_OP(UNARY_ENTRY_) SG_FOR_EACH_STEP_OP(STEP_ENTRY_){
        "leaky_relu", L_VEC1, 1, call_leaky_relu, "leaky_relu", "leaky_relu_backward"},
    {"clip", L_VEC1, 1, call_clip, "clip", "clip_backward"},
    SG_FOR_EACH_BINARY_OP(BINARY_ENTRY_) SG_FOR_EACH_COMPARE_OP(COMPARE_ENTRY_){
        "where", L_WHERE, 6, call_where, "where", "where_backward"},
    {"matmul", L_MAT, 3, call_matmul, NULL, NULL},
    SG_FOR_EACH_REDUCE_OP(REDUCE_ENTRY_){"mean", L_ROWS, 1, call_mean, "reduce_sum",
                                         "reduce_sum_backward"},
    {"argmax", L_ROWS, 0, call_argmax, "argmax", NULL},
    {"argmin", L_ROWS, 0, call_argmin, "argmin", NULL},
    {"softmax", L_ROWS, 1, call_softmax, "softmax", "softmax_backward"},
    {"log_softmax", L_ROWS, 1, call_log_softmax, "log_softmax", "log_softmax_backward"},
    {"softmax_cross_entropy", L_CE, 2, call_ce, "softmax_cross_entropy",
     "softmax_cross_entropy_backward"},
    {"reshape", L_ROWS, 1, call_reshape, NULL, NULL},
    {"transpose", L_ROWS, 1, call_transpose, NULL, NULL},
    {"slice", L_ROWS, 1, call_slice, NULL, NULL},
    {"concat", L_HALVES, 3, call_concat, NULL, NULL},
    {"pad", L_ROWS, 1, call_pad, NULL, NULL},
    {"tile", L_HALF_ROWS, 1, call_tile, NULL, NULL},
    {"gather", L_GATHER, 1, call_gather, "scatter_add", NULL},
    {"one_hot", L_INDICES, 0, call_one_hot, NULL, NULL},
    {"cast", L_VEC1, 0, call_cast, NULL, NULL},
    {"conv2d", L_IMAGE, 3, call_conv2d, "conv2d", "conv2d_backward"},
    {"depthwise_conv2d", L_IMAGE_DW, 3, call_depthwise, "depthwise_conv2d",
     "depthwise_conv2d_backward"},
    {"max_pool", L_IMAGE1, 1, call_max_pool, "max_pool", "max_pool_backward"},
    {"avg_pool", L_IMAGE1, 1, call_avg_pool, "avg_pool", "avg_pool_backward"},
    {"batch_norm", L_BN, 1u | 8u | 16u, call_batch_norm, "batch_norm", "batch_norm_backward"},
    {"dropout", L_VEC1, 1, call_dropout, "dropout", "dropout_backward"},
    {"sgd_step", L_STEP, 0, NULL, "sgd_update", NULL},
    {"momentum_step", L_STEP, 0, NULL, "momentum_update", NULL},
    {"adam_step", L_STEP, 0, NULL, "adam_update", NULL},
};
#define N_OPS (sizeof k_ops / sizeof k_ops[0])
#define MAX_IN 5

typedef struct api_case {
  const api_op *op;
  const sg_backend *be;
  int64_t n; /* elements, or N for L_MAT */
  int threads;
  bool given_dy; /* a "tape_dy." row: sg_tape_end gets dy (unary ops only) */
} api_case;

static sg_tensor *f32(int buf, const int64_t *shape, int rank, float lo, float hi) {
  size_t n = 1;
  for (int i = 0; i < rank; i++) n *= (size_t)shape[i];
  return sg_tensor_f32(bench_buffer(buf, n, lo, hi), shape, rank);
}

/* The NHWC images of n elements with 16 channels: one square image up to 32 x 32, then a batch
   of them (n is a power of 2 from 2^10). */
static void image_of(int64_t n, int64_t *shape) {
  int64_t pixels = n / 16, side = 32, batch = 1;
  if (pixels <= 1024)
    for (side = 1; side * side < pixels;) side++;
  else
    batch = pixels / 1024;
  shape[0] = batch, shape[1] = side, shape[2] = side, shape[3] = 16;
}

/* Makes the inputs of c in in[]; returns how many. */
static int make_inputs(const api_case *c, sg_tensor **in) {
  int64_t rows, cols, n = c->n;
  bench_rows_of(n, &rows, &cols);
  float lo0, hi0, lo1, hi1;
  bench_op_range(c->op->name, 0, &lo0, &hi0);
  bench_op_range(c->op->name, 1, &lo1, &hi1);
  int64_t vec[1] = {n}, mat[2] = {rows, cols};
  switch (c->op->layout) {
  case L_VEC1:
    in[0] = f32(0, vec, 1, lo0, hi0);
    return 1;
  case L_VEC2:
    in[0] = f32(0, vec, 1, lo0, hi0);
    in[1] = f32(1, vec, 1, lo1, hi1);
    return 2;
  case L_WHERE:
    in[0] = sg_tensor_bool(bench_buffer_bool(2, (size_t)n), vec, 1);
    in[1] = f32(0, vec, 1, -4, 4);
    in[2] = f32(1, vec, 1, -4, 4);
    return 3;
  case L_ROWS:
    in[0] = f32(0, mat, 2, -4, 4);
    return 1;
  case L_CE: {
    in[0] = sg_tensor_f32(bench_buffer_labels(1, (size_t)rows, (size_t)cols), mat, 2);
    in[1] = f32(0, mat, 2, -4, 4);
    return 2;
  }
  case L_MAT: {
    int64_t sq[2] = {n, n};
    in[0] = f32(0, sq, 2, -1, 1);
    in[1] = f32(1, sq, 2, -1, 1);
    return 2;
  }
  case L_HALVES: {
    int64_t half[2] = {rows, cols / 2};
    in[0] = f32(0, half, 2, -4, 4);
    in[1] = f32(1, half, 2, -4, 4);
    return 2;
  }
  case L_HALF_ROWS: {
    int64_t half[2] = {rows > 1 ? rows / 2 : 1, cols};
    in[0] = f32(0, half, 2, -4, 4);
    return 1;
  }
  case L_GATHER: {
    int64_t idx[1] = {rows};
    in[0] = f32(0, mat, 2, -4, 4);
    in[1] = sg_tensor_i32(bench_buffer_index(2, (size_t)rows, (int32_t)rows), idx, 1);
    return 2;
  }
  case L_INDICES: {
    int64_t idx[1] = {rows};
    in[0] = sg_tensor_i32(bench_buffer_index(2, (size_t)rows, (int32_t)cols), idx, 1);
    return 1;
  }
  case L_IMAGE:
  case L_IMAGE_DW:
  case L_IMAGE1: {
    int64_t img[4], filter[4] = {3, 3, 16, c->op->layout == L_IMAGE ? 16 : 1};
    image_of(n, img);
    in[0] = f32(0, img, 4, -1, 1);
    if (c->op->layout == L_IMAGE1) return 1;
    in[1] = f32(1, filter, 4, -0.5f, 0.5f);
    return 2;
  }
  case L_BN: {
    int64_t ch[1] = {cols};
    in[0] = f32(0, mat, 2, -4, 4);
    in[1] = f32(1, ch, 1, -1, 1);      /* mean */
    in[2] = f32(2, ch, 1, 0.5f, 2);    /* variance */
    in[3] = f32(3, ch, 1, -1, 1);      /* offset */
    in[4] = f32(4, ch, 1, 0.5f, 1.5f); /* scale */
    return 5;
  }
  case L_STEP:
    in[0] = f32(0, vec, 1, -1, 1); /* the weights */
    in[1] = f32(1, vec, 1, -1, 1); /* their gradient */
    return 2;
  }
  return 0;
}

/* ---- Bytes: what the kernels of forward, seed and backward move (api_traffic) ------------- */

#define SAVED_(name, saved, doc) {#name, #saved},
static const struct { const char *op, *saved; } k_saved[] = {SG_FOR_EACH_UNARY_OP(SAVED_)};

/* Gradients that are views of dy, with no kernel (engine/op_binary.c SG_IDENTITY_GRAD_<op>,
   engine/op_shape.c for reshape). */
static bool grad_is_view(const char *op) {
  return strcmp(op, "add") == 0 || strcmp(op, "reshape") == 0;
}

static bool is_unary(const char *op, const char **saved) {
  for (size_t k = 0; k < sizeof k_saved / sizeof k_saved[0]; k++)
    if (strcmp(k_saved[k].op, op) == 0) {
      *saved = k_saved[k].saved;
      return true;
    }
  return false;
}

/* Bytes read and written by the forward kernel (fwd) and the backward kernel (bwd) of c, and the
   size of the seed sg_tape_end fills with ones (the output's bytes; none for the elementwise
   ops), from the kernel contracts in backend.h; n elements in rows of cols (N x N for a
   matmul). */
static roof_work api_traffic(const api_case *c) {
  const api_op *op = c->op;
  int64_t rows_i, cols_i;
  bench_rows_of(c->n, &rows_i, &cols_i);
  double n = (double)c->n, rows = (double)rows_i, seed = 4 * n;
  roof_work f = {0}, b = {0};
  const char *saved = NULL;
  switch (op->layout) {
  case L_VEC1:
    /* The unary ops (and leaky_relu, clip and the step ops) take the seed of ones as a value
       (engine/tape.c, Note [the seed]): no seed is written and dy is not read. */
    f = (roof_work){.read = 4 * n, .written = 4 * n};
    if (strcmp(op->name, "dropout") != 0) seed = 0;
    if (is_unary(op->name, &saved)) /* the saved x or y (some save none), a given dy; dx */
      b = (roof_work){.read = (strcmp(saved, "NONE") == 0 ? 0 : 4 * n) + (c->given_dy ? 4 * n : 0),
                      .written = 4 * n};
    else if (op->bwd_slot) /* leaky_relu, clip: x; dropout: dy and the hashed mask */
      b = (roof_work){.read = 4 * n, .written = 4 * n};
    else /* a step op's gradient is zeros */
      b = (roof_work){.written = 4 * n};
    break;
  case L_VEC2:
    if (!op->grads) return (roof_work){.read = 8 * n, .written = n}; /* a comparison */
    /* add's gradients are the seed, written once; the others take it as a value (no seed
       written, no dy read), as the unary ops do. */
    f = (roof_work){.read = 8 * n, .written = 4 * n};
    if (!grad_is_view(op->name)) seed = 0;
    b = (roof_work){.read = strcmp(op->name, "sub") == 0   ? 0
                            : strcmp(op->name, "pow") == 0 ? 12 * n
                                                           : 8 * n,
                    .written = 8 * n};
    break;
  case L_WHERE:
    f = (roof_work){.read = 9 * n, .written = 4 * n};
    b = (roof_work){.read = 5 * n, .written = 8 * n};
    break;
  case L_MAT: /* C = A B; dA = dC B^T and dB = A^T dC */
    f = (roof_work){.read = 8 * n * n, .written = 4 * n * n};
    b = (roof_work){.read = 16 * n * n, .written = 8 * n * n};
    seed = 4 * n * n;
    break;
  case L_ROWS: /* slice and pad write only around their box (engine/op_slice.c) */
    if (strcmp(op->name, "argmax") == 0 || strcmp(op->name, "argmin") == 0)
      return (roof_work){.read = 4 * n, .written = 4 * rows};
    if (strcmp(op->name, "reshape") == 0) {
      f = (roof_work){0};                        /* a view */
    } else if (strcmp(op->name, "slice") == 0) { /* half the columns; dx: zeros and the half */
      f = (roof_work){.read = 2 * n, .written = 2 * n};
      b = (roof_work){.read = 2 * n, .written = 4 * n};
      seed = 2 * n;
    } else if (op->bwd_slot && strncmp(op->bwd_slot, "reduce_", 7) == 0) {
      f = (roof_work){.read = 4 * n, .written = 4 * rows};
      bool sum = strcmp(op->bwd_slot, "reduce_sum_backward") == 0; /* reads neither x nor y */
      b = (roof_work){.read = sum ? 4 * rows : 4 * n + 8 * rows, .written = 4 * n};
      seed = 4 * rows;
    } else { /* softmax, log_softmax, transpose, pad: a pass each way; softmax's reads y */
      f = (roof_work){.read = 4 * n, .written = 4 * n};
      b = (roof_work){.read = op->bwd_slot ? 8 * n : 4 * n, .written = 4 * n};
    }
    break;
  case L_CE: /* labels, logits in; log-probs and the loss out; dlogits from dy, labels, y */
    f = (roof_work){.read = 8 * n, .written = 4 * n + 4 * rows};
    b = (roof_work){.read = 8 * n + 4 * rows, .written = 4 * n};
    seed = 4 * rows;
    break;
  case L_HALVES: /* concat: two halves in, n out; back: two slices */
  case L_BN:     /* x (and per-channel figures) in, y out; back: dy and x in, dx out */
    f = (roof_work){.read = 4 * n, .written = 4 * n};
    b = (roof_work){.read = op->layout == L_BN ? 8 * n : 4 * n, .written = 4 * n};
    break;
  case L_HALF_ROWS: /* tile: n / 2 in, n out; back: the two halves summed */
    f = (roof_work){.read = 2 * n, .written = 4 * n};
    b = (roof_work){.read = 4 * n, .written = 2 * n};
    break;
  case L_GATHER: { /* rows gathered; back: zeros, then the rows scattered back (read and added) */
    /* The indices name about 63% of x's rows (drawn with repeats): those are read, and those of
       dx read and written in place, as bench_shape.c counts scatter_add. */
    double hit = 4 * (double)cols_i * (double)bench_index_distinct((size_t)rows_i, (int32_t)rows_i);
    f = (roof_work){.read = hit + 4 * rows, .written = 4 * n};
    b = (roof_work){
        .read = 4 * n + hit + 4 * rows, .written = 4 * n + hit, .written_in_place = hit};
    break;
  }
  case L_INDICES:
    return (roof_work){.read = 4 * rows, .written = 4 * n};
  case L_IMAGE:
  case L_IMAGE_DW: /* the filters are small; back: dy and x in, dx out (and the filter's) */
    f = (roof_work){.read = 4 * n, .written = 4 * n};
    b = (roof_work){.read = 8 * n, .written = 4 * n};
    break;
  case L_IMAGE1: /* 2x2 windows: a quarter out */
    f = (roof_work){.read = 4 * n, .written = n};
    /* Back (engine/op_pool.c): dx zeroed whole, then the kernels add into it (every tap of a
       window for avg; for max the first tap equal to y, but over channels some channel's max is
       in every tap, so every line of dx and x is touched): dy (and for max y and x) in, dx read
       and written once more. */
    b = (roof_work){.read = strcmp(op->name, "max_pool") == 0 ? 10 * n : 5 * n, .written = 8 * n};
    seed = n;
    break;
  case L_STEP: /* in place: w and g in, w out; momentum and adam also read and write state */
    if (strcmp(op->name, "sgd_step") == 0)
      return (roof_work){
          .read = 8 * n, .written = 4 * n, .written_in_place = 4 * n, .footprint = 8 * n};
    if (strcmp(op->name, "momentum_step") == 0)
      return (roof_work){
          .read = 12 * n, .written = 8 * n, .written_in_place = 8 * n, .footprint = 12 * n};
    return (roof_work){
        .read = 16 * n, .written = 12 * n, .written_in_place = 12 * n, .footprint = 16 * n};
  }
  if (!op->grads) return f;
  return roof_tape_work(&f, &b, seed, grad_is_view(op->name));
}

/* ---- tape_dy rows: the tape against the op's two kernels --------------------------------- */

/* A unary op's two kernels on one backend, with the buffers they run over. */
typedef struct kernel_pair {
  sg_unary_kernel fwd;
  sg_unary_backward_kernel bwd;
  int64_t fwd_grain, bwd_grain; /* the engine's chunks of each */
  const float *x, *dy;
  float *y, *dx;
} kernel_pair;

static bool kernel_pair_of(const sg_backend *be, const char *op, int64_t n, kernel_pair *k) {
#define PAIR_OF_(name, saved, doc)                                                                 \
  if (strcmp(op, #name) == 0) {                                                                    \
    k->fwd = be->name, k->bwd = be->name##_backward;                                               \
    k->fwd_grain = bench_unary_grain(#name, n, 8);                                                 \
    k->bwd_grain = bench_unary_grain(#name "_backward", n, strcmp(#saved, "NONE") ? 12 : 8);       \
    return k->fwd && k->bwd;                                                                       \
  }
  SG_FOR_EACH_UNARY_OP(PAIR_OF_)
#undef PAIR_OF_
  return false;
}

static void pair_forward(int64_t lo, int64_t hi, void *ctx) {
  const kernel_pair *k = ctx;
  k->fwd(k->x + lo, k->y + lo, (size_t)(hi - lo));
}
static void pair_backward(int64_t lo, int64_t hi, void *ctx) {
  const kernel_pair *k = ctx;
  k->bwd(k->dy + lo, k->x + lo, k->y + lo, k->dx + lo, (size_t)(hi - lo));
}

/* One taped call (forward, sg_tape_end with dy, disposal) in seconds; < 0 when it failed. */
static double time_taped(const api_case *c, sg_tensor *const *in, sg_tensor *dy) {
  double t0 = bench_now();
  sg_tape_begin();
  sg_tensor *out = c->op->call(in), *grad = NULL;
  sg_status s = sg_tape_end(out, dy, in, 1, &grad);
  sg_dispose(out);
  sg_dispose(grad);
  double t = bench_now() - t0;
  return s == SG_OK ? t : -1;
}

/* The two kernels alone, split as the engine splits them, in seconds. */
static double time_kernels(const api_case *c, kernel_pair *k) {
  double t0 = bench_now();
  bench_parallel_for(c->n, k->fwd_grain, c->threads, pair_forward, k);
  bench_parallel_for(c->n, k->bwd_grain, c->threads, pair_backward, k);
  bench_clobber_memory();
  return bench_now() - t0;
}

/* The taped op's best time over its two kernels' best: the tape's own share (allocation, page
   faults, bookkeeping), meant to stay within 5% from 2^20 elements up. Timed in turn after the
   row's own loop, 16 rounds, so that a drift in clock or bandwidth hits both alike, and in
   alternating order: whichever of the two runs second finds x and dy fresh in the cache and
   gained up to 30% at 2^20 when the order was fixed. The kernels get preallocated outputs; the
   taped op gets what the engine gives it. 0 when the backend lacks a kernel or a call failed. */
static double tape_over_kernels(const api_case *c, sg_tensor *const *in, sg_tensor *dy) {
  kernel_pair k;
  if (!kernel_pair_of(c->be, c->op->name, c->n, &k)) return 0;
  size_t n = (size_t)c->n;
  float *y = bench_alloc(4 * n), *dx = bench_alloc(4 * n);
  k.x = sg_data_f32(in[0]), k.dy = sg_data_f32(dy), k.y = y, k.dx = dx;
  double best_tape = 1e30, best_kernels = 1e30;
  for (int round = 0; round < 16 && best_tape > 0; round++) {
    double kernels = round & 1 ? time_kernels(c, &k) : 0, taped = time_taped(c, in, dy);
    if (!(round & 1)) kernels = time_kernels(c, &k);
    if (taped < 0) best_tape = 0;
    if (taped < best_tape) best_tape = taped;
    if (kernels < best_kernels) best_kernels = kernels;
  }
  free(y);
  free(dx);
  return best_tape > 0 ? best_tape / best_kernels : 0;
}

/* One call of the row's work: an optimizer step, the op through the tape (back-propagating dy,
   or ones when dy is NULL, to xs), or the op alone. NULL, or the engine's error text. */
static const char *run_once(const api_op *op, sg_optimizer *opt, sg_tensor **var,
                            sg_tensor *const *in, sg_tensor *dy, sg_tensor *const *xs, int nx,
                            sg_tensor **grads) {
  if (opt) return sg_optimizer_step(opt, var, &in[1], 1) == SG_OK ? NULL : sg_last_error();
  if (nx > 0) {
    sg_tape_begin();
    sg_tensor *y = op->call(in);
    sg_status s = sg_tape_end(y, dy, xs, nx, grads);
    sg_dispose(y);
    if (s != SG_OK) return sg_last_error();
    for (int i = 0; i < nx; i++) sg_dispose(grads[i]);
    return NULL;
  }
  sg_tensor *y = op->call(in);
  if (!y) return sg_last_error();
  sg_dispose(y);
  return NULL;
}

static void run_api(bench_state *st, void *arg) {
  const api_case *c = arg;
  const api_op *op = c->op;
  bench_engine_state saved;
  bench_enter(c->be, c->threads, &saved);

  sg_tensor *in[MAX_IN] = {NULL}, *xs[MAX_IN], *grads[MAX_IN];
  int n_in = make_inputs(c, in), nx = 0;
  sg_tensor *var = NULL;
  sg_optimizer *opt = NULL;
  if (op->layout == L_STEP) { /* a variable updated in place, as a training loop does */
    var = sg_variable(in[0]);
    opt = strcmp(op->name, "sgd_step") == 0        ? sg_sgd(1e-3f)
          : strcmp(op->name, "momentum_step") == 0 ? sg_momentum(1e-3f, 0.9f, false)
                                                   : sg_adam(1e-3f, 0.9f, 0.999f, 1e-8f);
  }
  for (int i = 0; i < n_in; i++)
    if (op->grads >> i & 1u) xs[nx++] = in[i];
  sg_tensor *dy = NULL;
  if (c->given_dy) {
    int64_t shape[1] = {c->n};
    dy = f32(1, shape, 1, -1, 1);
  }
  /* One untimed call first: the first call of a process faults in the engine's cached blocks,
     and on these VMs a first touch costs 10-50x the kernels (a 2^22 tape.relu's first call took
     80-190 ms, the next ones 3-4 ms); with a short --benchmark_min_time Google Benchmark would
     report that one call. A training loop pays it once. */
  const char *error = run_once(op, opt, &var, in, dy, xs, nx, grads);
  while (!error && bench_keep_running(st)) error = run_once(op, opt, &var, in, dy, xs, nx, grads);
  double tape_ratio = !error && c->given_dy ? tape_over_kernels(c, in, dy) : 0;
  if (error) bench_skip_with_error(st, error);
  sg_clear_error();
  sg_optimizer_free(opt);
  sg_dispose(var);
  bench_leave(&saved);
  if (error) return;

  double n = (double)c->n, flops = 0, items = n, kernel_s = 0, kernel_flops = 0, insns = 0,
         cls[ROOF_N_CLASSES] = {0};
  const char *mix_slots[2] = {NULL, NULL};
  int n_mix = 0;
  if (op->layout == L_MAT) { /* C = A B, then dA = dC B^T and dB = A^T dC */
    flops = 6 * n * n * n, items = n * n;
  } else {
    const char *slots[2] = {
        op->fwd_slot, op->bwd_slot && op->grads && !grad_is_view(op->name) ? op->bwd_slot : NULL};
    for (int k = 0; k < 2; k++) {
      if (!slots[k]) continue;
      double f = bench_kernel_flops(slots[k], c->be->name) * n;
      flops += f;
      if (bench_kernel_issued(slots[k], c->be->name, n, &insns, cls)) mix_slots[n_mix++] = slots[k];
      if (!bench_kernel_opaque(slots[k], c->be->name)) continue;
      bool rows = op->layout == L_ROWS || op->layout == L_CE;
      double rate = rows ? bench_rows_rate(c->be, slots[k]) : bench_ew_rate(c->be, slots[k]);
      kernel_s += rate * n / c->threads, kernel_flops += f;
    }
  }
  roof_work tr = api_traffic(c);
  bench_work w = {.flops = flops,
                  .kernel_s = kernel_s,
                  .kernel_flops = kernel_flops,
                  .insns = insns,
                  .mix_slots = {mix_slots[0], mix_slots[1]},
                  .mix_n = n,
                  .bytes = tr.read + tr.written,
                  .written = tr.written,
                  .written_in_place = tr.written_in_place,
                  .footprint = tr.footprint,
                  .items = items,
                  .isa = roofline_isa_of(c->be->name),
                  .threads = c->threads,
                  .desc = op->grads ? "forward + backward through the tape"
                          : opt     ? "one optimizer step"
                                    : "forward"};
  for (int k = 0; k < ROOF_N_CLASSES; k++) w.cls[k] = cls[k];
  char label[96];
  if (tape_ratio > 0) {
    snprintf(label, sizeof label,
             "forward + backward through the tape, dy given: %.3fx its kernels", tape_ratio);
    w.desc = label;
    bench_counter(st, "tape_over_kernels", tape_ratio);
  }
  bench_report(st, &w);
}

/* The "tape_dy." rows: every unary op from 2^20 elements, where the tape must cost its kernels
   plus at most 5%, on every thread count (all sizes are above the engine's grain). */
static void register_given_dy(int nb, const sg_backend *const *backends, int nt,
                              const int *threads) {
  static const int64_t sizes[] = {1 << 20, 1 << 22, 1 << 24};
  const char *saved;
  for (size_t o = 0; o < N_OPS; o++) {
    const api_op *op = &k_ops[o];
    if (!is_unary(op->name, &saved)) continue;
    char name[64];
    snprintf(name, sizeof name, "tape_dy.%s", op->name);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
      char shape[32];
      snprintf(shape, sizeof shape, "%lld", (long long)sizes[s]);
      for (int t = 0; t < nt; t++)
        for (int b = 0; b < nb; b++) {
          api_case *c = malloc(sizeof *c);
          if (!c) abort();
          *c = (api_case){op, backends[b], sizes[s], threads[t], true};
          bench_add(name, backends[b]->name, shape, threads[t], bench_in_default(name, sizes[s]),
                    run_api, c);
        }
    }
  }
}

void bench_register_api(void) {
  const sg_backend *backends[4];
  int nb = bench_backends(backends), threads[2], nt = bench_thread_counts(threads);
  for (size_t o = 0; o < N_OPS; o++) {
    const api_op *op = &k_ops[o];
    bool mat = op->layout == L_MAT;
    const int64_t *sizes = mat ? bench_matmul_sizes : bench_sizes;
    int n_sizes = mat ? bench_n_matmul_sizes : bench_n_sizes;
    char name[64];
    snprintf(name, sizeof name, "%s.%s", op->grads ? "tape" : "api", op->name);
    for (int s = 0; s < n_sizes; s++) {
      int64_t n = sizes[s], rows, cols;
      bench_rows_of(n, &rows, &cols);
      char shape[96];
      if (op->layout == L_IMAGE || op->layout == L_IMAGE_DW || op->layout == L_IMAGE1) {
        int64_t img[4];
        image_of(n, img);
        snprintf(shape, sizeof shape, "%lldx%lldx%lldx%lld", (long long)img[0], (long long)img[1],
                 (long long)img[2], (long long)img[3]);
      } else if (mat || op->layout == L_VEC1 || op->layout == L_VEC2 || op->layout == L_WHERE ||
                 op->layout == L_STEP) {
        snprintf(shape, sizeof shape, "%lld", (long long)n);
      } else {
        snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows, (long long)cols);
      }
      for (int t = 0; t < nt; t++) {
        /* Threads only where the engine splits the op: above one chunk of work (a matmul: from
           2 x 2^21 multiply-adds, engine/op_matmul.c; a costly unary op above 2^14 elements,
           engine/unary_cost.h: bench_unary_grain, which gives any other name the flat grain;
           its bytes do not matter here: either grain is below any n from 2^22 on). */
        if (threads[t] > 1 &&
            (mat ? (double)n * n * n < 2.0 * (1 << 21) : n <= bench_unary_grain(op->name, n, 8)))
          continue;
        for (int b = 0; b < nb; b++) {
          api_case *c = malloc(sizeof *c);
          if (!c) abort();
          *c = (api_case){op, backends[b], n, threads[t], false};
          bench_add(name, backends[b]->name, shape, threads[t], bench_in_default(name, n), run_api,
                    c);
        }
      }
    }
  }
  register_given_dy(nb, backends, nt, threads);
}
