/* Gradients of broadcast operands: sum a gradient back down to the operand's shape. */
#include "engine.h"

sg_tensor *sg__reduce_to_shape(sg_tensor *g, const int64_t *shape, int rank) {
  if (g->rank == rank) {
    bool same = true;
    for (int i = 0; i < rank; i++) same &= g->shape[i] == shape[i];
    if (same) return sg__view(g, shape, rank);
  }
  /* Reduce one broadcast axis at a time as [outer, r, inner] over the current tensor. */
  const sg_backend *be = sg__backend();
  int64_t cur_shape[SG_MAX_RANK];
  int cur_rank = g->rank;
  for (int i = 0; i < cur_rank; i++) cur_shape[i] = g->shape[i];
  sg_tensor *cur = g;
  int lead = g->rank - rank; /* axes that the operand lacks */
  for (int ax = 0; ax < g->rank; ax++) {
    int64_t target = ax < lead ? 1 : shape[ax - lead];
    if (cur_shape[ax] == target) continue;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < ax; i++) outer *= cur_shape[i];
    for (int i = ax + 1; i < cur_rank; i++) inner *= cur_shape[i];
    int64_t r = cur_shape[ax];
    cur_shape[ax] = 1;
    sg_tensor *next = sg__new(SG_F32, cur_shape, cur_rank);
    if (!next) {
      if (cur != g) sg_dispose(cur);
      return NULL;
    }
    be->reduce_sum(cur->data, (size_t)outer, (size_t)r, (size_t)inner, next->data);
    if (cur != g) sg_dispose(cur);
    cur = next;
  }
  sg_tensor *out = sg__view(cur, shape, rank);
  if (cur != g) sg_dispose(cur);
  return out;
}
