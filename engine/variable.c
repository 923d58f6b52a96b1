/* Variables: kept f32 tensors that change in place (sg_variable, sg_assign). Everything else in
 * the engine is immutable once made; the tape relies on that, which is why in-place writes are
 * refused while this thread has a tape open. */
#include <string.h>

#include "engine.h"

sg_tensor *sg_variable(sg_tensor *init) {
  if (!sg__check_f32(init, "variable", "init")) return NULL;
  sg_ctx *c = sg__ctx();
  const char *outer = sg__name_begin(c, "variable");
  sg_tensor *v = sg__copy(init);
  sg__name_end(c, outer);
  return v ? sg_keep(v) : NULL;
}

typedef struct copy_job {
  const float *src;
  float *dst;
} copy_job;

static void copy_range(int64_t lo, int64_t hi, void *arg) {
  const copy_job *j = arg;
  memcpy(j->dst + lo, j->src + lo, (size_t)(hi - lo) * sizeof(float));
}

sg_status sg_assign(sg_tensor *var, sg_tensor *value) {
  char a[SG_SHAPE_STR_MAX], b[SG_SHAPE_STR_MAX];
  if (!sg__check_f32(var, "assign", "var") || !sg__check_f32(value, "assign", "value"))
    return sg_last_status();
  if (sg_tape_active())
    return sg__error(SG_ERR_STATE, "assign",
                     "cannot write a variable while a tape is open (it may be saved for the "
                     "backward pass)");
  if (!sg__same_shape(var, value))
    return sg__error(SG_ERR_SHAPE, "assign", "var has shape %s but value has shape %s",
                     sg__shape_str(var->shape, var->rank, a, sizeof a),
                     sg__shape_str(value->shape, value->rank, b, sizeof b));
  if (var->data != value->data) {
    copy_job j = {.src = sg__f32(value), .dst = sg__f32(var)};
    sg__parallel_for(var->numel, SG_GRAIN_ELEMENTWISE, copy_range, &j);
  }
  return SG_OK;
}
