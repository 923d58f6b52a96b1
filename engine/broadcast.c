/* NumPy broadcasting: shape rules, the merged-dimension walk plan, and the run iterator. */
#include "engine/broadcast.h"

#include <stdio.h>

/* "shapes [2] and [3]" or "shapes [2], [3] and [4]" into buf. */
static void shape_list(int n, const int64_t *const *shapes, const int *ranks, char *buf,
                       size_t size) {
  size_t used = (size_t)snprintf(buf, size, "shapes ");
  for (int k = 0; k < n && used < size; k++) {
    char s[SG_SHAPE_STR_MAX];
    const char *sep = k == 0 ? "" : k == n - 1 ? " and " : ", ";
    used += (size_t)snprintf(buf + used, size - used, "%s%s", sep,
                             sg__shape_str(shapes[k], ranks[k], s, sizeof s));
  }
}

/* All n shapes equal (the common case, and the one tiny ops hit): no rules to apply. */
static bool all_same(int n, const int64_t *const *shapes, const int *ranks) {
  for (int k = 1; k < n; k++) {
    if (ranks[k] != ranks[0]) return false;
    for (int d = 0; d < ranks[0]; d++)
      if (shapes[k][d] != shapes[0][d]) return false;
  }
  return true;
}

bool sg__broadcast_shape(const char *op, int n, const int64_t *const *shapes, const int *ranks,
                         int64_t *out_shape, int *out_rank) {
  if (all_same(n, shapes, ranks)) {
    for (int d = 0; d < ranks[0]; d++) out_shape[d] = shapes[0][d];
    *out_rank = ranks[0];
    return true;
  }
  int rank = 0;
  for (int k = 0; k < n; k++)
    if (ranks[k] > rank) rank = ranks[k];
  for (int d = 0; d < rank; d++) {
    /* Dimension d of the output, counted from the left; operand k aligns at the right. */
    int64_t dim = 1;
    for (int k = 0; k < n; k++) {
      int kd = d - (rank - ranks[k]);
      if (kd < 0 || shapes[k][kd] == 1) continue;
      if (dim != 1 && shapes[k][kd] != dim) {
        char list[SG_BCAST_MAX_OPERANDS * SG_SHAPE_STR_MAX + 32];
        shape_list(n, shapes, ranks, list, sizeof list);
        sg__error(SG_ERR_SHAPE, op, "%s do not broadcast (dimension %d: %lld vs %lld)", list, d,
                  (long long)dim, (long long)shapes[k][kd]);
        return false;
      }
      dim = shapes[k][kd];
    }
    out_shape[d] = dim;
  }
  *out_rank = rank;
  return true;
}

void sg__bcast_plan(sg_bcast *bc, int n, const int64_t *const *shapes, const int *ranks,
                    const int64_t *out_shape, int out_rank) {
  bc->n_operands = n;
  bc->numel = 1;
  for (int d = 0; d < out_rank; d++) bc->numel *= out_shape[d];
  if (all_same(n, shapes, ranks)) { /* one contiguous run for every operand */
    bc->rank = 1;
    bc->dims[0] = bc->numel;
    for (int k = 0; k < n; k++) bc->strides[k][0] = bc->numel > 1 ? 1 : 0;
    return;
  }

  /* Each operand's row-major element strides along the output's dimensions, 0 where it
     broadcasts (a missing leading dimension or a 1 against a larger dimension). */
  int64_t stride[SG_BCAST_MAX_OPERANDS][SG_MAX_RANK];
  for (int k = 0; k < n; k++) {
    int64_t s = 1;
    for (int d = out_rank - 1; d >= 0; d--) {
      int kd = d - (out_rank - ranks[k]);
      int64_t kdim = kd < 0 ? 1 : shapes[k][kd];
      stride[k][d] = kdim == 1 ? 0 : s;
      s *= kdim;
    }
  }

  /* Drop size-1 dimensions, then merge dimension d into the one before it when every operand
     is laid out the same across both (contiguous, or broadcast along both). */
  int r = 0;
  for (int d = 0; d < out_rank; d++) {
    if (out_shape[d] == 1) continue;
    bool merge = r > 0;
    for (int k = 0; k < n && merge; k++)
      merge = bc->strides[k][r - 1] == stride[k][d] * out_shape[d];
    if (merge) {
      bc->dims[r - 1] *= out_shape[d];
      for (int k = 0; k < n; k++) bc->strides[k][r - 1] = stride[k][d];
    } else {
      bc->dims[r] = out_shape[d];
      for (int k = 0; k < n; k++) bc->strides[k][r] = stride[k][d];
      r++;
    }
  }
  if (r == 0) { /* a single element (or rank 0): one run of 1 */
    bc->dims[0] = 1;
    for (int k = 0; k < n; k++) bc->strides[k][0] = 0;
    r = 1;
  }
  bc->rank = r;
}

void sg__bcast_walk(const sg_bcast *bc, int64_t lo, int64_t hi, sg_bcast_fn fn, void *arg) {
  if (lo >= hi) return;
  const int r = bc->rank, n = bc->n_operands;
  const int64_t inner = bc->dims[r - 1];
  int64_t idx[SG_MAX_RANK];
  int64_t rest = lo;
  for (int d = r - 1; d >= 0; d--) {
    idx[d] = rest % bc->dims[d];
    rest /= bc->dims[d];
  }
  sg_bcast_run run;
  for (int k = 0; k < n; k++) {
    run.step[k] = (size_t)bc->strides[k][r - 1];
    run.off[k] = 0;
    for (int d = 0; d < r; d++) run.off[k] += idx[d] * bc->strides[k][d];
  }
  run.out = lo;
  while (run.out < hi) {
    run.n = inner - idx[r - 1];
    if (run.n > hi - run.out) run.n = hi - run.out;
    fn(&run, arg);
    run.out += run.n;
    idx[r - 1] += run.n;
    for (int k = 0; k < n; k++) run.off[k] += run.n * bc->strides[k][r - 1];
    /* Carry into the outer dimensions at the end of a row. */
    for (int d = r - 1; d > 0 && idx[d] == bc->dims[d]; d--) {
      idx[d] = 0;
      idx[d - 1]++;
      for (int k = 0; k < n; k++)
        run.off[k] += bc->strides[k][d - 1] - bc->dims[d] * bc->strides[k][d];
    }
  }
}

typedef struct walk_ctx {
  const sg_bcast *bc;
  sg_bcast_fn fn;
  void *arg;
} walk_ctx;

static void walk_chunk(int64_t lo, int64_t hi, void *arg) {
  const walk_ctx *c = arg;
  sg__bcast_walk(c->bc, lo, hi, c->fn, c->arg);
}

void sg__bcast_for_each(const sg_bcast *bc, sg_bcast_fn fn, void *arg) {
  walk_ctx c = {bc, fn, arg};
  sg__parallel_for(bc->numel, SG_GRAIN_ELEMENTWISE, walk_chunk, &c);
}

void sg__bcast_for_each_streamed(const sg_bcast *bc, int bytes, sg_bcast_fn fn, void *arg) {
  /* Every operand contiguous: `bytes` counts each as a whole array. (A broadcast scalar would
     also give one run per chunk, with fewer bytes; it keeps the usual grain.) */
  bool flat = bc->rank == 1;
  for (int k = 0; k < bc->n_operands && flat; k++) flat = bc->strides[k][0] == 1;
  walk_ctx c = {bc, fn, arg};
  sg__parallel_for(bc->numel, flat ? sg__flat_grain(bc->numel, bytes) : SG_GRAIN_ELEMENTWISE,
                   walk_chunk, &c);
}
