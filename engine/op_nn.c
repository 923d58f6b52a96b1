/* Neural-net ops: sg_softmax and sg_log_softmax over one axis, and sg_softmax_cross_entropy
 * (the mean over all leading dims of -sum(labels * log_softmax(logits)) over the last axis),
 * with their gradients. Work is split over the leading rows in chunks that depend only on the
 * shape. */
#include "engine.h"

#define CHUNK SG_GRAIN_ELEMENTWISE

/* Rows per parallel chunk for rows of `row` elements (row > 0). */
static int64_t rows_grain(int64_t row) { return sg__grain_for((double)row, CHUNK); }

/* Rows per chunk for a pass whose kernel streams its output over rows (row > 0): whole rows of
   at least SG_STREAM_CHUNK elements past the last-level cache (sg__rows_stream_grain),
   rows_grain's otherwise. */
static int64_t rows_grain_streamed(int64_t rows, int64_t row, int bytes) {
  int64_t g = sg__rows_stream_grain(rows, row, bytes);
  return g ? g : rows_grain(row);
}

static int64_t prod(const int64_t *d, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++) p *= d[i];
  return p;
}

/* ---- softmax, log_softmax -------------------------------------------------------------------- */

typedef struct sm_job {
  sg_softmax_kernel fwd;
  sg_softmax_backward_kernel bwd;
  const float *x, *dy; /* x: the forward input, or the saved y for the backward */
  float *y;
  int64_t r, inner;
} sm_job;

static void sm_forward(int64_t lo, int64_t hi, void *arg) {
  const sm_job *j = arg;
  int64_t off = lo * j->r * j->inner;
  j->fwd(j->x + off, (size_t)(hi - lo), (size_t)j->r, (size_t)j->inner, j->y + off);
}

static void sm_backward(int64_t lo, int64_t hi, void *arg) {
  const sm_job *j = arg;
  int64_t off = lo * j->r * j->inner;
  j->bwd(j->dy + off, j->x + off, (size_t)(hi - lo), (size_t)j->r, (size_t)j->inner, j->y + off);
}

/* Runs fn over a tensor of shape/rank viewed as [outer, r, inner] around axis a: r and inner go
   into j, and the outer rows are split into chunks. A pass whose kernel streams its output over
   rows (every one here with inner 1; softmax's forward only for rows of up to 4096 floats, and
   longer rows merely get the larger chunks) and that touches `stream_bytes` bytes an element
   (0: it does not stream) gets chunks of at least SG_STREAM_CHUNK elements where it outgrows the
   last-level cache, as the flat elementwise passes (sg__flat_grain). */
static void sm_run(sm_job *j, const int64_t *shape, int rank, int a, int stream_bytes,
                   sg_range_fn fn) {
  j->r = shape[a];
  j->inner = prod(shape, a + 1, rank);
  int64_t row = j->r * j->inner, rows = prod(shape, 0, a);
  if (row <= 0) return;
  int64_t grain = stream_bytes && j->inner == 1 ? rows_grain_streamed(rows, row, stream_bytes)
                                                : rows_grain(row);
  sg__parallel_for(rows, grain, fn, j);
}

/* iparam[0]: the normalised axis, iparam[1]: 1 for log_softmax. Saved: y. */
static sg_status softmax_grad(const sg_node *node, sg_tensor *dy, const bool *need,
                              sg_tensor **dx) {
  if (!need[0]) return SG_OK;
  const sg_node_input *in = &node->inputs[0];
  int a = (int)node->iparam[0];
  const sg_backend *be = sg__backend();
  sg_tensor *g = sg__new(SG_F32, in->shape, in->rank);
  if (!g) return sg_last_status();
  sm_job j = {.bwd = node->iparam[1] ? be->log_softmax_backward : be->softmax_backward,
              .x = sg__f32(node->saved[0]),
              .dy = sg__f32(dy),
              .y = sg__f32(g)};
  sm_run(&j, in->shape, in->rank, a, 12, sm_backward); /* dy, y, dx */
  dx[0] = g;
  return SG_OK;
}

static sg_tensor *softmax_op(bool log_form, sg_tensor *x, int axis) {
  const char *name = log_form ? "log_softmax" : "softmax";
  sg_op op;
  if (!sg__op_begin(&op, name)) return NULL;
  int a;
  if (!sg__check_f32(x, name, "x") || !sg__norm_axis(axis, x, name, "x", &a))
    return sg__op_fail(&op);
  sg_tensor *y = sg__new(SG_F32, x->shape, x->rank);
  if (!y) return sg__op_fail(&op);
  const sg_backend *be = sg__backend();
  sm_job j = {.fwd = log_form ? be->log_softmax : be->softmax, .x = sg__f32(x), .y = sg__f32(y)};
  sm_run(&j, x->shape, x->rank, a, 8, sm_forward); /* x, y */
  sg_node *node = sg__record(&op, softmax_grad, &x, 1, y);
  if (op.record) {
    if (!node) {
      sg_dispose(y);
      return sg__op_fail(&op);
    }
    node->iparam[0] = a;
    node->iparam[1] = log_form;
    sg__save(node, y);
  }
  return sg__op_end(&op, y);
}

sg_tensor *sg_softmax(sg_tensor *x, int axis) { return softmax_op(false, x, axis); }
sg_tensor *sg_log_softmax(sg_tensor *x, int axis) { return softmax_op(true, x, axis); }

/* ---- softmax_cross_entropy ------------------------------------------------------------------- */

typedef struct ce_job {
  const float *labels, *logits, *dloss;
  float *loss, *log_probs, *dlabels, *dlogits;
  int64_t classes;
} ce_job;

static void ce_forward(int64_t lo, int64_t hi, void *arg) {
  const ce_job *j = arg;
  int64_t off = lo * j->classes;
  sg__backend()->softmax_cross_entropy(j->labels + off, j->logits + off, (size_t)(hi - lo),
                                       (size_t)j->classes, j->loss + lo, j->log_probs + off);
}

static void ce_backward(int64_t lo, int64_t hi, void *arg) {
  const ce_job *j = arg;
  int64_t off = lo * j->classes;
  sg__backend()->softmax_cross_entropy_backward(
      j->dloss + lo, j->labels + off, j->log_probs + off, (size_t)(hi - lo), (size_t)j->classes,
      j->dlabels ? j->dlabels + off : NULL, j->dlogits ? j->dlogits + off : NULL);
}

/* Saved: labels, then the log-probabilities. Each row's loss gets dy / rows. */
static sg_status ce_grad(const sg_node *node, sg_tensor *dy, const bool *need, sg_tensor **dx) {
  const sg_node_input *in = &node->inputs[1];
  int64_t classes = in->shape[in->rank - 1], rows = prod(in->shape, 0, in->rank - 1);
  sg_tensor *dloss = sg__new(SG_F32, &rows, 1);
  sg_tensor *dlabels = need[0] ? sg__new(SG_F32, in->shape, in->rank) : NULL;
  sg_tensor *dlogits = need[1] ? sg__new(SG_F32, in->shape, in->rank) : NULL;
  if (!dloss || (need[0] && !dlabels) || (need[1] && !dlogits)) {
    sg_dispose(dloss);
    sg_dispose(dlabels);
    sg_dispose(dlogits);
    return sg_last_status();
  }
  float g = (float)((double)sg__f32(dy)[0] / (double)rows);
  for (int64_t i = 0; i < rows; i++) sg__f32(dloss)[i] = g;
  ce_job j = {.labels = sg__f32(node->saved[0]),
              .dloss = sg__f32(dloss),
              .log_probs = sg__f32(node->saved[1]),
              .dlabels = dlabels ? sg__f32(dlabels) : NULL,
              .dlogits = dlogits ? sg__f32(dlogits) : NULL,
              .classes = classes};
  /* labels and log_probs read, each gradient asked for written (streamed) */
  int bytes = 4 * (2 + need[0] + need[1]);
  if (rows > 0 && classes > 0)
    sg__parallel_for(rows, rows_grain_streamed(rows, classes, bytes), ce_backward, &j);
  sg_dispose(dloss);
  dx[0] = dlabels;
  dx[1] = dlogits;
  return SG_OK;
}

sg_tensor *sg_softmax_cross_entropy(sg_tensor *labels, sg_tensor *logits) {
  const char *name = "softmax_cross_entropy";
  char a[SG_SHAPE_STR_MAX], b[SG_SHAPE_STR_MAX];
  sg_op op;
  if (!sg__op_begin(&op, name)) return NULL;
  if (!sg__check_f32(labels, name, "labels") || !sg__check_f32(logits, name, "logits"))
    return sg__op_fail(&op);
  if (!sg__same_shape(labels, logits)) {
    sg__error(SG_ERR_SHAPE, name, "labels have shape %s but logits have shape %s",
              sg__shape_str(labels->shape, labels->rank, a, sizeof a),
              sg__shape_str(logits->shape, logits->rank, b, sizeof b));
    return sg__op_fail(&op);
  }
  if (logits->rank == 0) {
    sg__error(SG_ERR_SHAPE, name,
              "logits must have rank >= 1 (the last axis holds the classes), "
              "got a scalar");
    return sg__op_fail(&op);
  }
  int64_t classes = logits->shape[logits->rank - 1];
  int64_t rows = prod(logits->shape, 0, logits->rank - 1);
  sg_tensor *log_probs = sg__new(SG_F32, logits->shape, logits->rank);
  sg_tensor *loss = sg__new(SG_F32, &rows, 1);
  sg_tensor *y = sg__new(SG_F32, NULL, 0);
  if (!log_probs || !loss || !y) goto fail;
  ce_job j = {.labels = sg__f32(labels),
              .logits = sg__f32(logits),
              .loss = sg__f32(loss),
              .log_probs = sg__f32(log_probs),
              .classes = classes};
  /* labels and logits read, log_probs written (streamed); no classes: only the loss */
  if (rows > 0)
    sg__parallel_for(rows, classes > 0 ? rows_grain_streamed(rows, classes, 12) : rows_grain(1),
                     ce_forward, &j);
  /* The batch mean: one sum in row order, then one division (0 rows: 0 / 0 = NaN). */
  float total = 0.0f;
  sg__backend()->reduce_sum(sg__f32(loss), 1, (size_t)rows, 1, &total);
  sg__f32(y)[0] = (float)((double)total / (double)rows);
  sg_tensor *inputs[2] = {labels, logits};
  sg_node *node = sg__record(&op, ce_grad, inputs, 2, y);
  if (op.record) {
    if (!node) goto fail;
    sg__save(node, labels);
    sg__save(node, log_probs);
  }
  sg_dispose(log_probs);
  sg_dispose(loss);
  return sg__op_end(&op, y);
fail:
  sg_dispose(log_probs);
  sg_dispose(loss);
  sg_dispose(y);
  return sg__op_fail(&op);
}
