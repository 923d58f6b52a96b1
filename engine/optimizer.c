/* Optimizers: SGD, momentum and Adam. A step runs one fused update kernel of the backend per
 * variable (parameters, gradient and state in one pass), split across threads in elementwise
 * chunks. The state (velocity, Adam's moments) is raw storage made on the first step, one slot
 * per variable position. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

typedef enum opt_kind { OPT_SGD, OPT_MOMENTUM, OPT_ADAM } opt_kind;

struct sg_optimizer {
  opt_kind kind;
  float lr, momentum, beta1, beta2, epsilon;
  bool nesterov;
  int64_t t;         /* steps taken */
  int n;             /* variables the state was made for (0 until the first step) */
  int64_t *numel;    /* [n] */
  sg_storage **slot; /* [n * states]: velocity, or Adam's m then v, per variable */
};

static int states(const sg_optimizer *o) {
  return o->kind == OPT_SGD ? 0 : o->kind == OPT_MOMENTUM ? 1 : 2;
}

static sg_optimizer *make(opt_kind kind, float lr) {
  sg_optimizer *o = sg__calloc(1, sizeof *o);
  if (!o) {
    sg__error(SG_ERR_OOM, "optimizer", "out of memory");
    return NULL;
  }
  o->kind = kind;
  o->lr = lr;
  return o;
}

sg_optimizer *sg_sgd(float lr) { return make(OPT_SGD, lr); }

sg_optimizer *sg_momentum(float lr, float momentum, bool nesterov) {
  sg_optimizer *o = make(OPT_MOMENTUM, lr);
  if (o) o->momentum = momentum, o->nesterov = nesterov;
  return o;
}

sg_optimizer *sg_adam(float lr, float beta1, float beta2, float epsilon) {
  if (!(beta1 >= 0.0f && beta1 < 1.0f && beta2 >= 0.0f && beta2 < 1.0f && epsilon >= 0.0f)) {
    sg__error(SG_ERR_ARG, "adam", "needs 0 <= beta1, beta2 < 1 and epsilon >= 0 (got %g, %g, %g)",
              (double)beta1, (double)beta2, (double)epsilon);
    return NULL;
  }
  sg_optimizer *o = make(OPT_ADAM, lr);
  if (o) o->beta1 = beta1, o->beta2 = beta2, o->epsilon = epsilon;
  return o;
}

void sg_optimizer_set_lr(sg_optimizer *opt, float lr) {
  if (opt) opt->lr = lr;
}

static void free_state(sg_optimizer *o) {
  for (int i = 0; i < o->n * states(o); i++) sg__storage_release(o->slot[i]);
  sg__free(o->slot);
  sg__free(o->numel);
  o->slot = NULL;
  o->numel = NULL;
  o->n = 0;
}

void sg_optimizer_free(sg_optimizer *opt) {
  if (!opt) return;
  free_state(opt);
  sg__free(opt);
}

static bool make_state(sg_optimizer *o, sg_tensor *const *vars, int n) {
  int s = states(o);
  o->numel = sg__calloc((size_t)n, sizeof *o->numel);
  o->slot = sg__calloc((size_t)(n * s + 1), sizeof *o->slot);
  if (!o->numel || !o->slot) goto oom;
  o->n = n;
  for (int i = 0; i < n; i++) {
    o->numel[i] = vars[i]->numel;
    for (int k = 0; k < s; k++) {
      size_t bytes = (size_t)vars[i]->numel * sizeof(float);
      sg_storage *st = sg__storage_new(bytes);
      if (!st) goto oom;
      memset(st->data, 0, bytes);
      o->slot[i * s + k] = st;
    }
  }
  return true;
oom:
  free_state(o);
  sg__oom("optimizer_step", "the optimizer state");
  return false;
}

typedef struct step_job {
  const sg_backend *be;
  const sg_optimizer *o;
  float *w, *s0, *s1;
  const float *g;
  float lr_t, c2; /* Adam's bias-corrected step and 1 / sqrt(1 - beta2^t) */
} step_job;

static void step_range(int64_t lo, int64_t hi, void *arg) {
  const step_job *j = arg;
  const sg_optimizer *o = j->o;
  size_t n = (size_t)(hi - lo);
  switch (o->kind) {
  case OPT_SGD:
    j->be->sgd_update(j->w + lo, j->g + lo, n, o->lr);
    break;
  case OPT_MOMENTUM:
    j->be->momentum_update(j->w + lo, j->s0 + lo, j->g + lo, n, o->lr, o->momentum, o->nesterov);
    break;
  case OPT_ADAM:
    j->be->adam_update(j->w + lo, j->s0 + lo, j->s1 + lo, j->g + lo, n, j->lr_t, o->beta1, o->beta2,
                       j->c2, o->epsilon);
    break;
  }
}

/* Whether two float tensors are one or share any bytes of their elements. */
static bool share_memory(const sg_tensor *a, const sg_tensor *b) {
  const float *pa = sg__f32(a), *pb = sg__f32(b);
  return a == b || (a->numel > 0 && b->numel > 0 && pa < pb + b->numel && pb < pa + a->numel);
}

sg_status sg_optimizer_step(sg_optimizer *opt, sg_tensor *const *vars, sg_tensor *const *grads,
                            int n) {
  const char *name = "optimizer_step";
  char a[SG_SHAPE_STR_MAX], b[SG_SHAPE_STR_MAX];
  if (!opt || n < 0 || (n > 0 && (!vars || !grads)))
    return sg__error(SG_ERR_ARG, name, "needs an optimizer and n >= 0 variables and gradients");
  if (sg_tape_active())
    return sg__error(SG_ERR_STATE, name,
                     "cannot update variables while a tape is open (it may hold them)");
  for (int i = 0; i < n; i++) {
    if (!sg__check_f32(vars[i], name, "vars[i]") || !sg__check_f32(grads[i], name, "grads[i]"))
      return sg_last_status();
    if (!sg__same_shape(vars[i], grads[i]))
      return sg__error(SG_ERR_SHAPE, name, "vars[%d] has shape %s but grads[%d] has shape %s", i,
                       sg__shape_str(vars[i]->shape, vars[i]->rank, a, sizeof a), i,
                       sg__shape_str(grads[i]->shape, grads[i]->rank, b, sizeof b));
  }
  /* The update kernels read a gradient while they write the variables: one that shares memory
     with any of them would be read after it changed (backend.h's update contract). */
  for (int i = 0; i < n; i++)
    for (int k = 0; k < n; k++)
      if (share_memory(grads[i], vars[k]))
        return sg__error(SG_ERR_ARG, name,
                         "grads[%d] shares memory with vars[%d]; a gradient must be a tensor of "
                         "its own",
                         i, k);
  if (n == 0) return SG_OK; /* nothing to update: no step is counted, no state is made */
  if (opt->n == 0 && !make_state(opt, vars, n)) return sg_last_status();
  if (n != opt->n)
    return sg__error(SG_ERR_ARG, name, "the optimizer's state is for %d variables, got %d", opt->n,
                     n);
  for (int i = 0; i < n; i++)
    if (vars[i]->numel != opt->numel[i])
      return sg__error(SG_ERR_SHAPE, name,
                       "vars[%d] has %lld elements but its state was made for %lld", i,
                       (long long)vars[i]->numel, (long long)opt->numel[i]);
  opt->t++;
  step_job j = {.be = sg__backend(), .o = opt};
  if (opt->kind == OPT_ADAM) {
    double t = (double)opt->t;
    j.lr_t = (float)(opt->lr / (1.0 - pow(opt->beta1, t)));
    j.c2 = (float)(1.0 / sqrt(1.0 - pow(opt->beta2, t)));
  }
  int s = states(opt);
  for (int i = 0; i < n; i++) {
    j.w = sg__f32(vars[i]);
    j.g = sg__f32(grads[i]);
    j.s0 = s > 0 ? opt->slot[i * s]->data : NULL;
    j.s1 = s > 1 ? opt->slot[i * s + 1]->data : NULL;
    sg__parallel_for(vars[i]->numel, SG_GRAIN_ELEMENTWISE, step_range, &j);
  }
  return SG_OK;
}
