/* The tape: records one node per outermost op while open, then back-propagates from y to xs
 * over the pruned path, feeding each node's gradient function dy and its saved tensors. */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "engine/fpmode.h"
#include "engine/idmap.h"
#include "engine/profile.h"

#define NODES_PER_BLOCK 256

typedef struct node_block {
  struct node_block *next;
  sg_node nodes[NODES_PER_BLOCK];
} node_block;

typedef struct scope_string {
  struct scope_string *next;
  char text[];
} scope_string;

struct sg_tape {
  node_block *first, *last; /* nodes in recording order */
  size_t n_nodes;
  size_t n_blocks;        /* may hold one more block than the nodes fill (a record that failed) */
  size_t total_inputs;    /* sizes the id maps of back-propagation */
  scope_string *scopes;   /* interned scope paths, newest first */
  sg_grad_ready_fn ready; /* sg_tape_on_grad_ready's hook, or NULL */
  void *ready_ctx;
};

sg_status sg_tape_begin(void) {
  sg__ensure_init();
  sg_ctx *c = sg__ctx();
  if (c->tape)
    return sg__error(SG_ERR_STATE, "tape_begin",
                     "a tape is already open on this thread (tapes do not nest)");
  sg_tape *t = sg__calloc(1, sizeof *t);
  if (!t) return sg__error(SG_ERR_OOM, "tape_begin", "out of memory");
  c->tape = t;
  return SG_OK;
}

bool sg_tape_active(void) { return sg__ctx()->tape != NULL; }

sg_status sg_tape_on_grad_ready(sg_grad_ready_fn fn, void *ctx) {
  sg_tape *t = sg__ctx()->tape;
  if (!t) return sg__error(SG_ERR_STATE, "tape_on_grad_ready", "no tape is open on this thread");
  t->ready = fn;
  t->ready_ctx = fn ? ctx : NULL;
  return SG_OK;
}

static sg_node *node_at(const sg_tape *t, size_t i) {
  node_block *b = t->first;
  while (i >= NODES_PER_BLOCK) {
    b = b->next;
    i -= NODES_PER_BLOCK;
  }
  return &b->nodes[i];
}

static char *intern_scope(sg_tape *t, const char *path) {
  if (t->scopes && strcmp(t->scopes->text, path) == 0) return t->scopes->text;
  size_t len = strlen(path);
  scope_string *s = sg__malloc(sizeof *s + len + 1);
  if (!s) return NULL;
  memcpy(s->text, path, len + 1);
  s->next = t->scopes;
  t->scopes = s;
  return s->text;
}

sg_node *sg__record(sg_op *op, sg_grad_fn grad, sg_tensor *const *inputs, int n_inputs,
                    sg_tensor *out) {
  /* One branch for the common case, no tape and no profiler; the profiler takes the input
     shapes here (Note [profiler cost] in engine/profile.h). */
  if (__builtin_expect(!(op->record | op->prof), 1)) return NULL;
  if (op->prof) sg__profile_inputs(op, inputs, n_inputs);
  if (!op->record) return NULL;
  sg_ctx *c = sg__ctx();
  sg_tape *t = c->tape;
  size_t slot = t->n_nodes % NODES_PER_BLOCK;
  if (t->n_nodes == t->n_blocks * NODES_PER_BLOCK) {
    /* A block is ~160 KiB, above malloc's mmap threshold: reusing the thread's spare saves an
       mmap, a munmap and the page faults between them on every tape. */
    node_block *b = NULL;
    if (!t->first) {
      b = c->spare_nodes;
      c->spare_nodes = NULL;
    }
    if (!b) b = sg__malloc(sizeof *b);
    if (!b) goto oom;
    b->next = NULL;
    if (t->last)
      t->last->next = b;
    else
      t->first = b;
    t->last = b;
    t->n_blocks++;
  }
  sg_node *n = &t->last->nodes[slot];
  n->n_saved = 0;
  memset(n->fparam, 0, sizeof n->fparam);
  memset(n->iparam, 0, sizeof n->iparam);
  n->op = op->name;
  n->grad = grad;
  n->grad_uniform = NULL;
  n->scope = intern_scope(t, c->path);
  if (!n->scope) goto oom;
  n->inputs = n_inputs <= SG_NODE_INLINE_INPUTS ? n->inline_inputs
                                                : sg__malloc((size_t)n_inputs * sizeof *n->inputs);
  if (!n->inputs) goto oom;
  n->n_inputs = n_inputs;
  for (int i = 0; i < n_inputs; i++) {
    sg_node_input *in = &n->inputs[i];
    in->id = inputs[i]->id;
    in->dtype = inputs[i]->dtype;
    in->rank = inputs[i]->rank;
    memcpy(in->shape, inputs[i]->shape, sizeof in->shape);
  }
  t->total_inputs += (size_t)n_inputs;
  n->output_id = out->id;
  n->out_rank = out->rank;
  memcpy(n->out_shape, out->shape, sizeof n->out_shape);
  t->n_nodes++;
  return n;
oom:
  sg__error(SG_ERR_OOM, op->name, "out of memory recording the op on the tape");
  return NULL;
}

bool sg__save(sg_node *node, sg_tensor *t) {
  if (node->n_saved >= SG_NODE_MAX_SAVED) return false;
  atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
  node->saved[node->n_saved++] = t;
  return true;
}

void sg__tape_holds(const sg_tensor *t, int *on_tensor, int *on_storage) {
  *on_tensor = *on_storage = 0;
  const sg_tape *tape = sg__ctx()->tape;
  for (size_t i = 0; tape && i < tape->n_nodes; i++) {
    const sg_node *n = node_at(tape, i);
    for (int s = 0; s < n->n_saved; s++) {
      if (n->saved[s] == t)
        ++*on_tensor;
      else if (n->saved[s]->storage == t->storage)
        ++*on_storage;
    }
  }
}

static void tape_free(sg_tape *t) {
  for (size_t i = 0; i < t->n_nodes; i++) {
    sg_node *n = node_at(t, i);
    for (int s = 0; s < n->n_saved; s++) sg__release(n->saved[s]);
    if (n->inputs != n->inline_inputs) sg__free(n->inputs);
  }
  sg_ctx *c = sg__ctx();
  for (node_block *b = t->first; b;) {
    node_block *next = b->next;
    if (!c->spare_nodes && sg__ctx_keeps_spares(c))
      c->spare_nodes = b;
    else
      sg__free(b);
    b = next;
  }
  for (scope_string *s = t->scopes; s;) {
    scope_string *next = s->next;
    sg__free(s);
    s = next;
  }
  sg__free(t);
}

/* Only the tape sees t: one reference, storage shared with no view, not the caller's memory. */
static bool tape_owned(const sg_tensor *t) {
  return atomic_load_explicit(&t->refs, memory_order_relaxed) == 1 &&
         atomic_load_explicit(&t->storage->refs, memory_order_relaxed) == 1 && !t->storage->wrapped;
}

/* The running sum of gradients for one tensor, g + dx (both are consumed): added into g or dx
   where the tape alone holds it, so a tensor with several consumers costs one add each and no
   new buffer; a new tensor only when both are shared (views of dy, say). */
static sg_tensor *accumulate(sg_tensor *g, sg_tensor *dx) {
  if (!g) return dx;
  const sg_backend *be = sg__backend();
  size_t n = (size_t)g->numel;
  sg_tensor *sum = tape_owned(g) ? g : tape_owned(dx) ? dx : sg__new(SG_F32, g->shape, g->rank);
  if (sum)
    be->add(sum == dx ? dx->data : g->data, 1, sum == dx ? g->data : dx->data, 1, sum->data, n);
  if (g != sum) sg_dispose(g);
  if (dx != sum) sg_dispose(dx);
  return sum;
}

/* A new tensor of ones shaped like y: the seed where it must be in memory. */
static sg_tensor *ones_like(const sg_tensor *y) {
  sg_tensor *t = sg__new(SG_F32, y->shape, y->rank);
  if (t) sg__fill(sg__f32(t), t->numel, 1.0f);
  return t;
}

static sg_status check_tape_args(sg_tensor *y, sg_tensor *dy, sg_tensor *const *xs, int n,
                                 sg_tensor **grads) {
  if (!y) {
    if (sg__ctx()->status != SG_OK) return sg__ctx()->status;
    return sg__error(SG_ERR_ARG, "tape_end", "y is NULL");
  }
  if (!sg__check_f32(y, "tape_end", "y")) return sg_last_status();
  if (n < 0 || (n > 0 && (!xs || !grads)))
    return sg__error(SG_ERR_ARG, "tape_end", "xs and grads must hold n = %d entries", n);
  for (int i = 0; i < n; i++)
    if (!sg__check_f32(xs[i], "tape_end", "xs[i]")) return sg_last_status();
  if (dy) {
    if (!sg__check_f32(dy, "tape_end", "dy")) return sg_last_status();
    if (!sg__same_shape(dy, y)) {
      char a[SG_SHAPE_STR_MAX], b[SG_SHAPE_STR_MAX];
      return sg__error(SG_ERR_SHAPE, "tape_end", "dy has shape %s but y has shape %s",
                       sg__shape_str(dy->shape, dy->rank, a, sizeof a),
                       sg__shape_str(y->shape, y->rank, b, sizeof b));
    }
  }
  return SG_OK;
}

/* Note [gradient ready]: xs[i]'s gradient is final once back-propagation has passed the
   earliest kept node that takes xs[i] as an input (nodes run in reverse recording order, and
   only a kept node consuming xs[i] adds to it). ready_order lists the indices by that node,
   latest first; an x no kept node consumes (y does not reach it, or it is y) comes last and is
   reported at the end with the gradient grads[i] gets. */
typedef struct ready_state {
  size_t *first_use; /* per x: index of the earliest kept consumer, or SIZE_MAX */
  int *order;        /* xs indices, first_use descending */
  bool *done;        /* reported */
  int next;          /* order[next] is the next to report */
} ready_state;

typedef struct ready_key {
  size_t rank; /* first_use + 1, or 0 for never consumed (sorts last) */
  int index;
} ready_key;

static int by_rank_desc(const void *a, const void *b) {
  const ready_key *ka = a, *kb = b;
  if (ka->rank != kb->rank) return ka->rank < kb->rank ? 1 : -1;
  return ka->index - kb->index;
}

static bool ready_init(ready_state *r, const sg_tape *t, const bool *keep, sg_tensor *const *xs,
                       int n) {
  r->first_use = sg__malloc(((size_t)n + 1) * sizeof *r->first_use);
  r->order = sg__malloc(((size_t)n + 1) * sizeof *r->order);
  r->done = sg__calloc((size_t)n + 1, sizeof *r->done);
  r->next = 0;
  ready_key *keys = sg__malloc(((size_t)n + 1) * sizeof *keys);
  sg_idmap first = {0}; /* x id -> its smallest index in xs, plus one */
  bool ok = r->first_use && r->order && r->done && keys && sg_idmap_init(&first, (size_t)n + 1);
  if (ok) {
    for (int i = n; i-- > 0;) sg_idmap_put(&first, xs[i]->id, (void *)(uintptr_t)(i + 1));
    size_t *use = r->first_use; /* filled per first index, then copied to repeats */
    for (int i = 0; i < n; i++) use[i] = SIZE_MAX;
    for (size_t i = 0; i < t->n_nodes; i++) {
      if (!keep[i]) continue;
      const sg_node *nd = node_at(t, i);
      for (int k = 0; k < nd->n_inputs; k++) {
        uintptr_t at = (uintptr_t)sg_idmap_get(&first, nd->inputs[k].id);
        if (at && use[at - 1] == SIZE_MAX) use[at - 1] = i;
      }
    }
    for (int i = 0; i < n; i++) {
      use[i] = use[(uintptr_t)sg_idmap_get(&first, xs[i]->id) - 1];
      keys[i] = (ready_key){use[i] == SIZE_MAX ? 0 : use[i] + 1, i};
    }
    qsort(keys, (size_t)n, sizeof *keys, by_rank_desc);
    for (int i = 0; i < n; i++) r->order[i] = keys[i].index;
  }
  sg_idmap_free(&first);
  sg__free(keys);
  return ok;
}

static void ready_free(ready_state *r) {
  sg__free(r->first_use);
  sg__free(r->order);
  sg__free(r->done);
}

/* Reports every x whose earliest consumer lies above node `below` and whose gradient exists;
   one without a gradient yet is left for the end. */
static void ready_report(const sg_tape *t, ready_state *r, const sg_idmap *grad,
                         sg_tensor *const *xs, int n, size_t below) {
  while (r->next < n) {
    int i = r->order[r->next];
    size_t u = r->first_use[i];
    if (u == SIZE_MAX || u <= below) break;
    sg_tensor *g = sg_idmap_get(grad, xs[i]->id);
    if (g) {
      t->ready(t->ready_ctx, i, g);
      r->done[i] = true;
    }
    r->next++;
  }
}

static sg_status backprop(sg_tape *t, sg_tensor *y, sg_tensor *dy, sg_tensor *const *xs, int n,
                          sg_tensor **grads) {
  sg_idmap from_x = {0}, to_y = {0}, grad = {0};
  ready_state ready = {0};
  bool *keep = sg__calloc(t->n_nodes + 1, 1);
  size_t ids = t->n_nodes + t->total_inputs + (size_t)n + 1;
  bool ok =
      keep && sg_idmap_init(&from_x, ids) && sg_idmap_init(&to_y, ids) && sg_idmap_init(&grad, ids);
  sg_status st = SG_OK;
  if (!ok) {
    st = sg__error(SG_ERR_OOM, "tape_end", "out of memory for back-propagation");
    goto done;
  }
  /* Prune: keep the nodes that depend on some x and lead to y. */
  for (int i = 0; i < n; i++) sg_idmap_put(&from_x, xs[i]->id, (void *)1);
  for (size_t i = 0; i < t->n_nodes; i++) {
    sg_node *nd = node_at(t, i);
    for (int k = 0; k < nd->n_inputs; k++)
      if (sg_idmap_has(&from_x, nd->inputs[k].id)) {
        sg_idmap_put(&from_x, nd->output_id, (void *)1);
        keep[i] = true;
        break;
      }
  }
  sg_idmap_put(&to_y, y->id, (void *)1);
  for (size_t i = t->n_nodes; i-- > 0;) {
    sg_node *nd = node_at(t, i);
    keep[i] = keep[i] && sg_idmap_has(&to_y, nd->output_id);
    if (!keep[i]) continue;
    for (int k = 0; k < nd->n_inputs; k++) sg_idmap_put(&to_y, nd->inputs[k].id, (void *)1);
  }

  /* Note [the seed]: the gradient of y costs neither a copy nor a pass of its own. A given dy
     goes in as a view (the gradient functions only read dy; what the caller gets back may
     share dy's storage, which sg_data_f32_mut then refuses to write, as for any view). No dy
     means ones: they stay the value 1 (ones_pending) while the node that made y has a uniform
     form of its gradient (grad_uniform), and are written out only for a node without one, or
     when y is itself one of xs. Writing ones over a 2^22-element y cost as much as relu's
     forward kernel (tape.relu was 37% above its two kernels). */
  bool ones_pending = !dy;
  if (dy) {
    sg_tensor *seed = sg__view(dy, dy->shape, dy->rank);
    if (!seed) {
      st = sg_last_status();
      goto done;
    }
    sg_idmap_put(&grad, y->id, seed);
  }
  if (t->ready && !ready_init(&ready, t, keep, xs, n)) {
    st = sg__error(SG_ERR_OOM, "tape_end", "out of memory for back-propagation");
    goto done;
  }

  for (size_t i = t->n_nodes; i-- > 0 && st == SG_OK;) {
    if (__builtin_expect(t->ready != NULL, 0)) ready_report(t, &ready, &grad, xs, n, i);
    if (!keep[i]) continue;
    sg_node *nd = node_at(t, i);
    sg_tensor *gy = sg_idmap_get(&grad, nd->output_id);
    bool uniform = !gy && ones_pending && nd->output_id == y->id;
    if (!gy && !uniform) continue;
    if (!nd->grad) {
      st = sg__error_at(SG_ERR_NO_GRADIENT, nd->op, nd->scope,
                        "no gradient is defined for this op, and it lies between xs and y");
      break;
    }
    if (uniform) {
      ones_pending = false;
      if (!nd->grad_uniform) {
        gy = ones_like(y);
        if (!gy) {
          st = sg_last_status();
          break;
        }
        sg_idmap_put(&grad, y->id, gy);
        uniform = false;
      }
    }
    bool need[64];
    sg_tensor *dx_small[64];
    bool *needp = nd->n_inputs <= 64 ? need : sg__calloc((size_t)nd->n_inputs, sizeof *needp);
    sg_tensor **dx = nd->n_inputs <= 64 ? dx_small : sg__calloc((size_t)nd->n_inputs, sizeof *dx);
    if (!needp || !dx) {
      st = sg__error(SG_ERR_OOM, "tape_end", "out of memory for back-propagation");
    } else {
      for (int k = 0; k < nd->n_inputs; k++) {
        needp[k] = nd->inputs[k].dtype == SG_F32 && sg_idmap_has(&from_x, nd->inputs[k].id);
        dx[k] = NULL;
      }
      /* The profiler sees each gradient function as a backward call of the node's op, in
         the node's scope, with summing into an existing gradient nested in it. */
      sg_op frame = {.prof = false};
      if (__builtin_expect(sg__profile_on(), 0)) sg__profile_grad_begin(&frame, nd, gy);
      /* An out-of-memory error in the gradient names the node's op. */
      sg_ctx *c = sg__ctx();
      const char *outer = c->op_name;
      c->op_name = nd->op;
      c->op_backward = true;
      st = uniform ? nd->grad_uniform(nd, 1.0f, needp, dx) : nd->grad(nd, gy, needp, dx);
      c->op_name = outer;
      c->op_backward = false;
      if (frame.prof) sg__profile_grad_outputs(&frame, dx, nd->n_inputs);
      for (int k = 0; k < nd->n_inputs; k++) {
        if (!dx[k]) continue;
        if (st != SG_OK || !needp[k]) {
          sg_dispose(dx[k]);
          continue;
        }
        uint64_t id = nd->inputs[k].id;
        sg_tensor *prev = sg_idmap_get(&grad, id);
        sg_op acc = {.prof = false};
        if (frame.prof && prev) {
          sg__profile_work_begin(&acc, "accumulate_grad", "add");
          sg_tensor *both[2] = {prev, dx[k]};
          sg__profile_inputs(&acc, both, 2);
        }
        sg_tensor *sum = accumulate(prev, dx[k]);
        if (acc.prof) sg__profile_op_end(&acc, sum, sum == NULL);
        if (!sum) st = sg_last_status();
        sg_idmap_put(&grad, id, sum);
      }
      if (frame.prof) sg__profile_op_end(&frame, NULL, st != SG_OK);
    }
    if (needp != need) sg__free(needp);
    if (dx != dx_small) sg__free(dx);
  }

  for (int i = 0; i < n && st == SG_OK; i++) {
    sg_tensor *g = sg_idmap_get(&grad, xs[i]->id);
    if (!g && ones_pending && xs[i]->id == y->id) { /* y is x: its gradient is the seed */
      ones_pending = false;
      g = ones_like(y);
      if (!g) {
        st = sg_last_status();
        break;
      }
    }
    if (g) {
      /* Handed over to the caller; a repeated x gets its own copy. */
      sg_idmap_put(&grad, xs[i]->id, NULL);
      grads[i] = g;
    } else {
      bool repeated = false;
      for (int j = 0; j < i; j++) repeated |= xs[j]->id == xs[i]->id && grads[j];
      grads[i] = NULL;
      for (int j = 0; j < i && repeated && !grads[i]; j++)
        if (xs[j]->id == xs[i]->id) grads[i] = sg__copy(grads[j]);
      if (!grads[i]) grads[i] = sg__new_zeros(SG_F32, xs[i]->shape, xs[i]->rank);
    }
    if (!grads[i]) st = sg_last_status();
  }
  /* The rest: gradients that were final from the start or after node 0, and any a node's
     gradient function did not produce until the end. */
  for (int k = 0; t->ready && st == SG_OK && k < n; k++) {
    int i = ready.order[k];
    if (!ready.done[i]) t->ready(t->ready_ctx, i, grads[i]);
  }

done:
  if (t->ready) ready_free(&ready);
  if (grad.keys)
    for (size_t i = 0; i < grad.cap; i++)
      if (grad.keys[i] && grad.vals[i]) sg_dispose(grad.vals[i]);
  if (st != SG_OK)
    for (int i = 0; i < n; i++) {
      sg_dispose(grads[i]);
      grads[i] = NULL;
    }
  sg_idmap_free(&from_x);
  sg_idmap_free(&to_y);
  sg_idmap_free(&grad);
  sg__free(keep);
  return st;
}

sg_status sg_tape_end(sg_tensor *y, sg_tensor *dy, sg_tensor *const *xs, int n, sg_tensor **grads) {
  sg_ctx *c = sg__ctx();
  sg_tape *t = c->tape;
  for (int i = 0; grads && i < n; i++) grads[i] = NULL;
  if (!t) return sg__error(SG_ERR_STATE, "tape_end", "no tape is open on this thread");
  c->tape = NULL; /* back-propagation records nothing */
  sg_fpmode fp;
  sg__fpmode_enter(&fp); /* Note [FP mode]: gradient kernels run outside any op frame too */
  sg_status st = check_tape_args(y, dy, xs, n, grads);
  const char *outer = sg__name_begin(c, "tape_end");
  if (st == SG_OK) st = backprop(t, y, dy, xs, n, grads);
  sg__name_end(c, outer);
  tape_free(t);
  sg__fpmode_leave(&fp);
  return st;
}
