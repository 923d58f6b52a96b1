/* Profiler tests: what each call records (scope, op, kernel, shapes, bytes, thread, forward or
 * backward), the tree's and the flat table's invariants, the Chrome trace (parsed with
 * support_json and checked for nesting), failing ops, sessions and threads. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <simdgrad/profile.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "support.h"
#include "support_json.h"

static const int64_t S23[] = {2, 3}, S34[] = {3, 4}, S4[] = {4}, S24[] = {2, 4};

static sg_profile *end_profile(void) {
  sg_profile *p = sg_profile_end();
  cr_assert_not_null(p, "sg_profile_end: %s", sg_last_error());
  return p;
}

static void expect_shape(const sg_profile_shape *s, int rank, const int64_t *dims) {
  cr_assert_eq(s->rank, rank, "rank %d, want %d", s->rank, rank);
  for (int d = 0; d < rank; d++) cr_assert_eq(s->dims[d], dims[d], "dim %d", d);
}

static int64_t find_call(const sg_profile *p, const char *op, sg_profile_phase phase) {
  for (int64_t i = 0; i < sg_profile_num_calls(p); i++) {
    const sg_profile_call *c = sg_profile_call_at(p, i);
    if (strcmp(c->op, op) == 0 && c->phase == phase) return i;
  }
  cr_assert_fail("no %s call of %s", phase ? "backward" : "forward", op);
  return -1;
}

/* The node reached from the root by names ("name" or "name (backward)" for op nodes). */
static const sg_profile_node *find_node(const sg_profile *p, const char *const *names, int n) {
  int64_t at = 0;
  for (int k = 0; k < n; k++) {
    int64_t c = sg_profile_node_at(p, at)->first_child;
    for (; c >= 0; c = sg_profile_node_at(p, c)->next_sibling) {
      const sg_profile_node *nd = sg_profile_node_at(p, c);
      char label[128];
      snprintf(label, sizeof label, "%s%s", nd->name,
               nd->kind == SG_PROFILE_OP && nd->phase == SG_PROFILE_BACKWARD ? " (backward)" : "");
      if (strcmp(label, names[k]) == 0) break;
    }
    cr_assert(c >= 0, "no node %s at level %d", names[k], k);
    at = c;
  }
  return sg_profile_node_at(p, at);
}

/* A composite op made the way engine ops are: exp(relu(x)) inside one frame. fail_inner makes
   the inner relu fail (NULL input). */
static sg_tensor *composite(sg_tensor *x, bool fail_inner) {
  sg_op op;
  sg__op_begin(&op, "composite");
  sg_tensor *r = sg_relu(fail_inner ? NULL : x);
  if (!r) return sg__op_fail(&op);
  sg_tensor *y = sg_exp(r);
  sg_dispose(r);
  if (!y) return sg__op_fail(&op);
  return sg__op_end(&op, y);
}

/* A small training-like step in nested scopes: a dense layer, a square (whose backward sums
   two gradients of one tensor), the loss, backward, an update, and a composite op. */
static void small_step(void) {
  sg_scope_begin("train");
  sg_tensor *x = sg_random_normal(S23, 2, 0, 1, 1);
  sg_tensor *w = sg_random_normal(S34, 2, 0, 1, 2);
  sg_tensor *b = sg_random_normal(S4, 1, 0, 1, 3);
  sg_tape_begin();
  sg_scope_begin("model");
  sg_scope_begin("dense1");
  sg_tensor *y = sg_relu(sg_add(sg_matmul(x, w, false, false), b));
  sg_scope_end(&y, 1);
  sg_scope_begin("square");
  sg_tensor *z = sg_mul(y, y);
  sg_scope_end(&z, 1);
  sg_scope_end(&z, 1);
  sg_scope_begin("loss");
  sg_tensor *loss = sg_sum(z, NULL, 0, false);
  sg_scope_end(&loss, 1);
  sg_tensor *params[] = {w, b}, *grads[2];
  cr_assert_eq(sg_tape_end(loss, NULL, params, 2, grads), SG_OK, "%s", sg_last_error());
  sg_scope_begin("sgd");
  sg_tensor *lr = sg_scalar(0.1f);
  for (int i = 0; i < 2; i++) cr_assert_not_null(sg_sub(params[i], sg_mul(lr, grads[i])));
  sg_scope_end(NULL, 0);
  sg_scope_begin("metrics");
  cr_assert_not_null(composite(loss, false));
  sg_scope_end(NULL, 0);
  sg_scope_end(NULL, 0);
}

Test(profile, sessions_do_not_nest) {
  cr_assert_null(sg_profile_end());
  cr_assert_eq(sg_last_status(), SG_ERR_STATE);
  sg_clear_error();
  cr_assert(!sg_profile_active());
  cr_assert_eq(sg_profile_begin(), SG_OK);
  cr_assert(sg_profile_active());
  cr_assert_eq(sg_profile_begin(), SG_ERR_STATE);
  cr_assert(strstr(sg_last_error(), "already running"), "%s", sg_last_error());
  sg_clear_error();
  sg_profile *p = end_profile();
  cr_assert(!sg_profile_active());
  cr_assert_eq(sg_profile_num_calls(p), 0);
  cr_assert_eq(sg_profile_num_nodes(p), 1, "an empty profile is a root alone");
  cr_assert_eq(sg_profile_node_at(p, 0)->total_ns, 0);
  cr_assert_null(sg_profile_call_at(p, 0));
  sg_profile_free(p);
  sg_profile_free(NULL);
}

Test(profile, ops_outside_a_profile_are_not_recorded) {
  sg_tensor *x = sg_ones(S23, 2);
  sg_dispose(sg_exp(x));
  cr_assert_eq(sg_profile_begin(), SG_OK);
  sg_profile *p = end_profile();
  cr_assert_eq(sg_profile_num_calls(p), 0);
  sg_profile_free(p);
  sg_dispose(sg_exp(x));
  sg_dispose(x);
}

Test(profile, forward_calls_carry_scope_kernel_shapes_and_memory) {
  sg_tensor *x = sg_ones(S23, 2), *w = sg_ones(S34, 2), *b = sg_ones(S4, 1);
  int64_t live = t_live_tensors();
  cr_assert_eq(sg_profile_begin(), SG_OK);
  sg_scope_begin("train");
  sg_scope_begin("dense1");
  sg_tensor *y = sg_relu(sg_add(sg_matmul(x, w, false, false), b));
  sg_scope_end(&y, 1);
  sg_scope_end(&y, 1);
  sg_profile *p = end_profile();
  cr_assert_eq(sg_profile_num_calls(p), 3);
  const char *ops[] = {"matmul", "add", "relu"};
  char kernel[64];
  uint64_t last_end = 0;
  for (int i = 0; i < 3; i++) {
    const sg_profile_call *c = sg_profile_call_at(p, i);
    cr_assert_str_eq(c->op, ops[i]);
    cr_assert_str_eq(c->scope, "train/dense1");
    cr_assert_eq(c->phase, SG_PROFILE_FORWARD);
    cr_assert_str_eq(c->backend, sg_backend_name());
    snprintf(kernel, sizeof kernel, "%s/%s", ops[i], sg_backend_name());
    cr_assert_str_eq(c->kernel, kernel);
    cr_assert_eq(c->thread, 0);
    cr_assert_eq(c->depth, 0);
    cr_assert_eq(c->parent, -1);
    cr_assert(!c->failed && !c->unfinished);
    cr_assert_eq(c->n_outputs, 1);
    expect_shape(&c->outputs[0], 2, S24);
    cr_assert_eq(c->bytes, 2 * 4 * (int64_t)sizeof(float), "each call leaves its output");
    cr_assert_eq(c->tensors, 1);
    cr_assert_eq(c->alloc_bytes, c->bytes, "%s allocates only its output", ops[i]);
    cr_assert_eq(c->alloc_tensors, 1);
    cr_assert(c->start_ns >= last_end, "calls on one thread do not overlap");
    last_end = c->start_ns + c->duration_ns;
  }
  cr_assert(last_end <= sg_profile_wall_ns(p));
  const sg_profile_call *mm = sg_profile_call_at(p, 0), *add = sg_profile_call_at(p, 1);
  cr_assert_eq(mm->n_inputs, 2);
  expect_shape(&mm->inputs[0], 2, S23);
  expect_shape(&mm->inputs[1], 2, S34);
  cr_assert_eq(add->n_inputs, 2);
  expect_shape(&add->inputs[1], 1, S4);
  cr_assert_eq(sg_profile_num_threads(p), 1);
  sg_profile_free(p);
  sg_dispose(y);
  cr_assert_eq(t_live_tensors(), live);
  sg_dispose(x);
  sg_dispose(w);
  sg_dispose(b);
}

/* Allocation is counted gross (temporaries included) beside the net change: the backward of
   a multiply by a broadcast row makes the full-shape gradient and reduces it to the row's
   shape, leaving only the small one. */
Test(profile, allocations_count_temporaries) {
  sg_tensor *x = sg_ones(S24, 2), *b = sg_ones(S4, 1);
  cr_assert_eq(sg_profile_begin(), SG_OK);
  sg_tape_begin();
  sg_tensor *y = sg_mul(x, b), *grad[1];
  cr_assert_eq(sg_tape_end(y, NULL, &b, 1, grad), SG_OK, "%s", sg_last_error());
  sg_profile *p = end_profile();
  const sg_profile_call *c = sg_profile_call_at(p, find_call(p, "mul", SG_PROFILE_BACKWARD));
  cr_assert_eq(c->bytes, 4 * (int64_t)sizeof(float), "it leaves the bias gradient");
  cr_assert(c->alloc_bytes > c->bytes, "and made a bigger temporary: alloc %lld, net %lld",
            (long long)c->alloc_bytes, (long long)c->bytes);
  cr_assert(c->alloc_tensors > c->tensors);
  int64_t sum = 0;
  for (int64_t i = 0; i < sg_profile_num_ops(p); i++)
    if (sg_profile_op_at(p, i)->phase == SG_PROFILE_BACKWARD)
      sum += sg_profile_op_at(p, i)->alloc_bytes;
  cr_assert_geq(sum, c->alloc_bytes, "the flat table carries the figure");
  sg_profile_free(p);
  sg_dispose(y);
  sg_dispose(grad[0]);
  sg_dispose(x);
  sg_dispose(b);
}

Test(profile, backward_calls_are_named_by_the_node_op_and_scope) {
  sg_tensor *x = sg_ones(S23, 2), *w = sg_ones(S34, 2);
  cr_assert_eq(sg_profile_begin(), SG_OK);
  sg_scope_begin("step");
  sg_tape_begin();
  sg_scope_begin("dense1");
  sg_tensor *y = sg_matmul(x, w, false, false);
  sg_scope_end(&y, 1);
  sg_tensor *loss = sg_sum(y, NULL, 0, false);
  sg_tensor *grads[1];
  sg_scope_begin("backward"); /* the backward calls keep the forward op's scope, not this one */
  cr_assert_eq(sg_tape_end(loss, NULL, &w, 1, grads), SG_OK, "%s", sg_last_error());
  sg_scope_end(grads, 1);
  sg_scope_end(NULL, 0);
  sg_profile *p = end_profile();
  int64_t i = find_call(p, "matmul", SG_PROFILE_BACKWARD);
  const sg_profile_call *c = sg_profile_call_at(p, i);
  cr_assert_str_eq(c->scope, "step/dense1");
  char kernel[64];
  snprintf(kernel, sizeof kernel, "matmul_backward/%s", sg_backend_name());
  cr_assert_str_eq(c->kernel, kernel);
  cr_assert_eq(c->n_inputs, 1, "the input of a backward call is dy");
  expect_shape(&c->inputs[0], 2, S24);
  cr_assert_eq(c->n_outputs, 1, "only dW was needed");
  expect_shape(&c->outputs[0], 2, S34);
  cr_assert(i > find_call(p, "sum", SG_PROFILE_BACKWARD), "backward runs newest first");
  cr_assert_str_eq(sg_profile_call_at(p, find_call(p, "sum", SG_PROFILE_BACKWARD))->scope, "step");
  cr_assert(find_call(p, "matmul", SG_PROFILE_FORWARD) < find_call(p, "sum", SG_PROFILE_FORWARD));

  const char *bwd[] = {"step", "dense1", "matmul (backward)"};
  const char *fwd[] = {"step", "dense1", "matmul"};
  cr_assert_eq(find_node(p, bwd, 3)->calls, 1);
  cr_assert_eq(find_node(p, fwd, 3)->calls, 1);
  cr_assert_eq(find_node(p, bwd, 3)->total_ns, c->duration_ns);
  sg_profile_free(p);
  sg_dispose(x);
  sg_dispose(w);
}

Test(profile, composite_ops_nest_their_inner_calls) {
  sg_tensor *x = sg_ones(S23, 2);
  cr_assert_eq(sg_profile_begin(), SG_OK);
  sg_scope_begin("m");
  sg_tensor *y = composite(x, false);
  cr_assert_not_null(y);
  sg_scope_end(NULL, 0);
  sg_profile *p = end_profile();
  cr_assert_eq(sg_profile_num_calls(p), 3);
  const sg_profile_call *outer = sg_profile_call_at(p, 0);
  cr_assert_str_eq(outer->op, "composite");
  for (int i = 1; i < 3; i++) {
    const sg_profile_call *c = sg_profile_call_at(p, i);
    cr_assert_eq(c->depth, 1);
    cr_assert_eq(c->parent, 0);
    cr_assert_str_eq(c->scope, "m");
    cr_assert(c->start_ns >= outer->start_ns &&
              c->start_ns + c->duration_ns <= outer->start_ns + outer->duration_ns);
  }
  cr_assert_eq(outer->tensors, 1, "relu's result was disposed inside: the op left one tensor");
  const char *path[] = {"m", "composite", "relu"};
  const sg_profile_node *relu = find_node(p, path, 3);
  cr_assert_eq(relu->kind, SG_PROFILE_OP);
  const sg_profile_node *comp = find_node(p, path, 2);
  cr_assert_eq(comp->self_ns, comp->total_ns - sg_profile_call_at(p, 1)->duration_ns -
                                  sg_profile_call_at(p, 2)->duration_ns);
  sg_profile_free(p);
  sg_dispose(x);
}

/* Every node: children within their parent, self = total - children, siblings sorted, stored
   depth first; the root covers every call. NULL when all holds, else what does not. */
static const char *tree_problem(const sg_profile *p) {
  static char msg[256];
  int64_t n = sg_profile_num_nodes(p);
  if (n < 1) return "no root";
  const sg_profile_node *root = sg_profile_node_at(p, 0);
  if (root->kind != SG_PROFILE_ROOT) return "node 0 is not the root";
  if (root->calls != sg_profile_num_calls(p)) return "the root does not count every call";
  uint64_t top = 0;
  for (int64_t i = 0; i < sg_profile_num_calls(p); i++)
    if (sg_profile_call_at(p, i)->parent < 0) top += sg_profile_call_at(p, i)->duration_ns;
  if (root->total_ns != top) return "the root is not the time of the program's own calls";
  for (int64_t i = 0; i < n; i++) {
    const sg_profile_node *nd = sg_profile_node_at(p, i);
    uint64_t kids = 0, prev = UINT64_MAX;
    for (int64_t c = nd->first_child; c >= 0; c = sg_profile_node_at(p, c)->next_sibling) {
      const sg_profile_node *k = sg_profile_node_at(p, c);
      if (c <= i || k->parent != i || k->depth != nd->depth + 1) return "not depth first";
      if (k->total_ns > prev) return "siblings not sorted by time";
      prev = k->total_ns;
      kids += k->total_ns;
    }
    if (kids > nd->total_ns) {
      snprintf(msg, sizeof msg, "node %s: children %llu ns exceed its total %llu ns", nd->name,
               (unsigned long long)kids, (unsigned long long)nd->total_ns);
      return msg;
    }
    if (nd->self_ns != nd->total_ns - kids) return "self is not total minus children";
    if (nd->kind != SG_PROFILE_OP && nd->total_ns != kids) return "a scope is not its children";
    double pct = root->total_ns ? 100.0 * (double)nd->total_ns / (double)root->total_ns : 0;
    if (nd->percent < pct - 1e-9 || nd->percent > pct + 1e-9) return "wrong percentage";
  }
  return NULL;
}

static void check_tree(const sg_profile *p) {
  const char *problem = tree_problem(p);
  cr_assert_null(problem, "%s", problem);
}

/* The flat table against the tree: per op, the same calls, time and bytes. */
static void check_flat_matches_tree(const sg_profile *p) {
  uint64_t self_sum = 0;
  int64_t calls = 0;
  for (int64_t r = 0; r < sg_profile_num_ops(p); r++) {
    const sg_profile_op_stats *s = sg_profile_op_at(p, r);
    self_sum += s->self_ns;
    calls += s->calls;
    int64_t node_calls = 0, node_bytes = 0;
    uint64_t node_total = 0, node_self = 0;
    for (int64_t i = 0; i < sg_profile_num_nodes(p); i++) {
      const sg_profile_node *nd = sg_profile_node_at(p, i);
      if (nd->kind != SG_PROFILE_OP || nd->phase != s->phase || strcmp(nd->name, s->op) != 0)
        continue;
      node_calls += nd->calls;
      node_total += nd->total_ns;
      node_self += nd->self_ns;
      node_bytes += nd->bytes;
    }
    cr_assert_eq(node_calls, s->calls, "calls of %s", s->op);
    cr_assert_eq(node_total, s->total_ns, "total time of %s", s->op);
    cr_assert_eq(node_self, s->self_ns, "self time of %s", s->op);
    cr_assert_eq(node_bytes, s->bytes, "bytes of %s", s->op);
    if (r > 0) cr_assert(s->self_ns <= sg_profile_op_at(p, r - 1)->self_ns, "sorted by self");
  }
  cr_assert_eq(calls, sg_profile_num_calls(p));
  cr_assert_eq(self_sum, sg_profile_node_at(p, 0)->total_ns, "flat self times add up to the root");
}

Test(profile, tree_and_flat_table_agree) {
  int64_t live = t_live_tensors();
  cr_assert_eq(sg_profile_begin(), SG_OK);
  for (int i = 0; i < 3; i++) small_step();
  sg_profile *p = end_profile();
  cr_assert_eq(t_live_tensors(), live);
  cr_assert(sg_profile_num_calls(p) > 20);
  check_tree(p);
  check_flat_matches_tree(p);
  const char *path[] = {"train", "model", "dense1", "matmul"};
  const sg_profile_node *mm = find_node(p, path, 4);
  cr_assert_eq(mm->calls, 3);
  cr_assert_str_eq(mm->path, "train/model/dense1");
  cr_assert_str_eq(find_node(p, path, 3)->path, "train/model/dense1");
  const char *sgd[] = {"train", "sgd", "sub"};
  cr_assert_eq(find_node(p, sgd, 3)->calls, 6);
  const char *acc[] = {"train", "model", "square", "mul (backward)", "accumulate_grad (backward)"};
  cr_assert_eq(find_node(p, acc, 5)->calls, 3, "summing y's two gradients, nested in mul's");
  const char *inner[] = {"train", "metrics", "composite", "exp"};
  cr_assert_eq(find_node(p, inner, 4)->calls, 3);
  sg_profile_free(p);
}

Test(profile, the_checks_catch_a_broken_tree) {
  cr_assert_eq(sg_profile_begin(), SG_OK);
  small_step();
  sg_profile *p = end_profile();
  check_tree(p);
  /* Break the invariants the way a bad aggregation would, and see the check notice. */
  sg_profile_node *nd = (sg_profile_node *)sg_profile_node_at(p, 1);
  uint64_t saved = nd->total_ns;
  nd->total_ns = 2 * sg_profile_node_at(p, 0)->total_ns + 1;
  cr_assert_not_null(tree_problem(p), "a child longer than its parent");
  nd->total_ns = saved;
  nd->self_ns += 1;
  cr_assert_not_null(tree_problem(p), "a wrong self time");
  nd->self_ns -= 1;
  cr_assert_null(tree_problem(p));
  sg_profile_free(p);
}

static const char *trace_path(char *buf, size_t size, const char *tag) {
  snprintf(buf, size, "/tmp/simdgrad_profile_%s_%ld.json", tag, (long)getpid());
  return buf;
}

typedef struct xev {
  double ts, dur;
  int tid;
  const char *name, *cat;
  const char *scope; /* a call's args.scope, a scope slice's args.path */
} xev;

static int by_start(const void *a, const void *b) {
  const xev *x = a, *y = b;
  if (x->tid != y->tid) return x->tid - y->tid;
  if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
  return x->dur > y->dur ? -1 : x->dur < y->dur;
}

/* Slices on each thread either nest or do not overlap. Returns the first offending pair's index
   (or -1), with a tolerance of half a nanosecond for decimal parsing. */
static int64_t first_bad_nesting(xev *v, size_t n) {
  qsort(v, n, sizeof *v, by_start);
  size_t *stack = malloc((n + 1) * sizeof *stack), sp = 0;
  int64_t bad = -1;
  for (size_t i = 0; i < n && bad < 0; i++) {
    while (sp && (v[stack[sp - 1]].tid != v[i].tid ||
                  v[stack[sp - 1]].ts + v[stack[sp - 1]].dur <= v[i].ts + 0.0005))
      sp--;
    if (sp && v[i].ts + v[i].dur > v[stack[sp - 1]].ts + v[stack[sp - 1]].dur + 0.0005)
      bad = (int64_t)i;
    stack[sp++] = i;
  }
  free(stack);
  return bad;
}

/* Calls in a scope that lie inside no slice of that scope (tolerance as above). */
static size_t calls_outside_their_scope(const xev *v, size_t n) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(v[i].cat, "scope") == 0 || !v[i].scope[0]) continue;
    bool inside = false;
    for (size_t j = 0; j < n && !inside; j++)
      inside = strcmp(v[j].cat, "scope") == 0 && v[j].tid == v[i].tid &&
               strcmp(v[j].scope, v[i].scope) == 0 && v[j].ts <= v[i].ts + 0.0005 &&
               v[i].ts + v[i].dur <= v[j].ts + v[j].dur + 0.0005;
    bad += !inside;
  }
  return bad;
}

/* The X events of a parsed trace. */
static xev *trace_events(const json *doc, size_t *n) {
  const json *evs = json_get(doc, "traceEvents");
  cr_assert(evs && evs->kind == JSON_ARRAY, "traceEvents is an array");
  xev *v = calloc(evs->n + 1, sizeof *v);
  *n = 0;
  for (size_t i = 0; i < evs->n; i++) {
    const json *e = &evs->items[i];
    const json *ph = json_get(e, "ph");
    cr_assert(ph && ph->kind == JSON_STRING);
    cr_assert(json_get(e, "pid") && json_get(e, "tid"), "every event names pid and tid");
    if (strcmp(ph->string, "M") == 0) continue;
    cr_assert_str_eq(ph->string, "X");
    const json *ts = json_get(e, "ts"), *dur = json_get(e, "dur"), *name = json_get(e, "name");
    const json *cat = json_get(e, "cat");
    cr_assert(ts && ts->kind == JSON_NUMBER && dur && dur->kind == JSON_NUMBER && dur->number >= 0);
    cr_assert(name && name->kind == JSON_STRING && cat && cat->kind == JSON_STRING);
    const json *args = json_get(e, "args");
    const json *scope = json_get(args, "scope") ? json_get(args, "scope") : json_get(args, "path");
    cr_assert(scope && scope->kind == JSON_STRING, "every slice names its scope");
    v[*n] = (xev){ts->number,   dur->number, (int)json_get(e, "tid")->number,
                  name->string, cat->string, scope->string};
    (*n)++;
  }
  return v;
}

Test(profile, trace_is_json_and_nests) {
  cr_assert_eq(sg_profile_begin(), SG_OK);
  small_step();
  sg_scope_begin("odd \"name\"\\\t"); /* escaping */
  sg_tensor *x = sg_ones(S23, 2);
  sg_dispose(sg_exp(x));
  sg_scope_end(NULL, 0);
  sg_dispose(sg_exp(x)); /* no scope */
  sg_dispose(x);
  small_step();
  sg_profile *p = end_profile();
  char path[128], err[256];
  cr_assert_eq(sg_profile_write_trace(p, trace_path(path, sizeof path, "nest")), SG_OK, "%s",
               sg_last_error());
  json *doc = json_parse_file(path, err, sizeof err);
  cr_assert_not_null(doc, "%s", err);
  size_t n;
  xev *v = trace_events(doc, &n);
  size_t calls = 0, scopes = 0, train = 0, dense1 = 0, odd = 0;
  for (size_t i = 0; i < n; i++) {
    calls += strcmp(v[i].cat, "forward") == 0 || strcmp(v[i].cat, "backward") == 0;
    scopes += strcmp(v[i].cat, "scope") == 0;
    train += strcmp(v[i].cat, "scope") == 0 && strcmp(v[i].name, "train") == 0;
    dense1 += strcmp(v[i].cat, "scope") == 0 && strcmp(v[i].name, "dense1") == 0;
    odd += strcmp(v[i].name, "odd \"name\"\\\t") == 0;
  }
  cr_assert_eq((int64_t)calls, sg_profile_num_calls(p), "one slice per call");
  cr_assert(scopes > 0);
  cr_assert_eq(train, 2, "one train slice per step: its calls are consecutive");
  cr_assert(dense1 >= 4, "dense1 forward and backward, per step");
  cr_assert_eq(odd, 1, "names are escaped and read back");
  cr_assert_eq(first_bad_nesting(v, n), -1, "slices nest");
  cr_assert_eq(calls_outside_their_scope(v, n), 0, "calls lie inside their scope's slice");
  free(v);
  json_free(doc);
  remove(path);
  sg_profile_free(p);
}

Test(profile, nesting_check_and_parser_can_fail) {
  char err[256];
  const char *bad[] = {"{\"a\":1,}", "[1 2]",   "{\"a\":01}", "\"\\x\"",
                       "[1]x",       "{\"a\"}", "[\"\t\"]"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    json *v = json_parse(bad[i], err, sizeof err);
    cr_assert_null(v, "accepted %s", bad[i]);
  }
  json *ok =
      json_parse(" {\"a\": [1, -2.5e3, true, null, \"\\u00e9\\ud83d\\ude00\"]} ", err, sizeof err);
  cr_assert_not_null(ok, "%s", err);
  const json *a = json_get(ok, "a");
  cr_assert_eq(a->n, 5);
  cr_assert_float_eq(a->items[1].number, -2500.0, 0);
  cr_assert_str_eq(a->items[4].string, "\xc3\xa9\xf0\x9f\x98\x80");
  json_free(ok);
  xev overlap[] = {{0, 10, 0, "a", "x", ""}, {5, 10, 0, "b", "x", ""}};
  cr_assert_neq(first_bad_nesting(overlap, 2), -1, "partial overlap is caught");
  xev nested[] = {{0, 10, 0, "s", "scope", "s"},
                  {2, 3, 0, "b", "forward", "s"},
                  {5, 5, 0, "c", "forward", "s"},
                  {3, 9, 1, "d", "forward", "s"}};
  cr_assert_eq(first_bad_nesting(nested, 4), -1);
  cr_assert_eq(calls_outside_their_scope(nested, 4), 1, "d is on another thread");
}

Test(profile, failing_ops_leave_no_dangling_state) {
  int64_t live = t_live_tensors();
  sg_tensor *x = sg_ones(S23, 2);
  cr_assert_eq(sg_profile_begin(), SG_OK);
  sg_scope_begin("s");
  t_expect_error(sg_matmul(x, x, false, false), SG_ERR_SHAPE, "matmul", NULL);
  t_expect_error(sg_relu(NULL), SG_ERR_ARG, "relu", NULL);
  t_expect_error(composite(x, true), SG_ERR_ARG, "relu", NULL);
  sg_tensor *ok = sg_exp(x);
  cr_assert_not_null(ok);
  sg_scope_end(NULL, 0);
  sg_profile *p = end_profile();
  cr_assert_eq(sg_profile_num_calls(p), 5);
  const sg_profile_call *c = sg_profile_call_at(p, 0);
  cr_assert(c->failed && c->n_inputs == -1 && c->n_outputs == 0);
  cr_assert(sg_profile_call_at(p, 1)->failed);
  cr_assert(sg_profile_call_at(p, 2)->failed, "composite");
  cr_assert(sg_profile_call_at(p, 3)->failed && sg_profile_call_at(p, 3)->parent == 2);
  const sg_profile_call *last = sg_profile_call_at(p, 4);
  cr_assert_str_eq(last->op, "exp");
  cr_assert(!last->failed);
  cr_assert_eq(last->depth, 0, "the failures left nothing open");
  cr_assert_eq(last->parent, -1);
  check_tree(p);
  check_flat_matches_tree(p);
  sg_profile_free(p);
  cr_assert_eq(t_live_tensors(), live + 1);
  sg_dispose(x);
  /* A new session starts clean. */
  cr_assert_eq(sg_profile_begin(), SG_OK);
  x = sg_ones(S23, 2);
  sg_dispose(sg_exp(x));
  sg_dispose(x);
  p = end_profile();
  cr_assert_eq(sg_profile_num_calls(p), 1);
  cr_assert_eq(sg_profile_call_at(p, 0)->depth, 0);
  sg_profile_free(p);
  cr_assert_eq(t_live_tensors(), live);
  cr_assert_eq(sg_last_status(), SG_OK);
}

Test(profile, a_session_ending_inside_an_op_is_harmless) {
  sg_tensor *x = sg_ones(S23, 2);
  cr_assert_eq(sg_profile_begin(), SG_OK);
  sg_op op;
  sg__op_begin(&op, "outer"); /* an op still running when the profile ends */
  sg_profile *p = end_profile();
  cr_assert_eq(sg_profile_num_calls(p), 1);
  cr_assert(sg_profile_call_at(p, 0)->unfinished);
  sg_profile_free(p);
  cr_assert_eq(sg_profile_begin(), SG_OK); /* and a new one begins before it ends */
  sg_dispose(sg_exp(x));
  sg__op_end(&op, NULL);
  sg_dispose(sg_exp(x));
  p = end_profile();
  cr_assert_eq(sg_profile_num_calls(p), 2, "the old op's end is not recorded");
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(sg_profile_call_at(p, i)->depth, 0);
    cr_assert(!sg_profile_call_at(p, i)->unfinished);
  }
  sg_profile_free(p);
  sg_dispose(x);
}

static void *thread_ops(void *arg) {
  sg_scope_begin((const char *)arg);
  sg_tensor *x = sg_ones(S23, 2);
  for (int i = 0; i < 50; i++) sg_dispose(sg_exp(x));
  sg_scope_end(NULL, 0);
  return NULL;
}

Test(profile, calls_are_tagged_by_thread) {
  cr_assert_eq(sg_profile_begin(), SG_OK);
  pthread_t t[2];
  char *names[] = {"worker_a", "worker_b"};
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, thread_ops, names[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  sg_profile *p = end_profile();
  cr_assert_eq(sg_profile_num_threads(p), 2);
  cr_assert_eq(sg_profile_num_calls(p), 2 * 50);
  for (int64_t i = 0; i < sg_profile_num_calls(p); i++) {
    const sg_profile_call *c = sg_profile_call_at(p, i);
    cr_assert_eq(c->thread, i < 50 ? 0 : 1, "grouped by thread");
    cr_assert_str_eq(c->scope, sg_profile_call_at(p, i < 50 ? 0 : 50)->scope);
  }
  check_tree(p);
  check_flat_matches_tree(p);
  char path[128], err[256];
  cr_assert_eq(sg_profile_write_trace(p, trace_path(path, sizeof path, "threads")), SG_OK);
  json *doc = json_parse_file(path, err, sizeof err);
  cr_assert_not_null(doc, "%s", err);
  size_t n;
  xev *v = trace_events(doc, &n);
  cr_assert_eq(first_bad_nesting(v, n), -1);
  cr_assert_eq(calls_outside_their_scope(v, n), 0);
  free(v);
  json_free(doc);
  remove(path);
  sg_profile_free(p);
  /* The threads have exited: the next session frees their records and works as before. */
  cr_assert_eq(sg_profile_begin(), SG_OK);
  pthread_create(&t[0], NULL, thread_ops, names[0]);
  pthread_join(t[0], NULL);
  p = end_profile();
  cr_assert_eq(sg_profile_num_calls(p), 50);
  cr_assert_eq(sg_profile_call_at(p, 0)->thread, 0);
  sg_profile_free(p);
}

Test(profile, print_shows_the_tree_and_the_flat_table) {
  cr_assert_eq(sg_profile_begin(), SG_OK);
  small_step();
  sg_profile *p = end_profile();
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  sg_profile_print(p, f);
  sg_profile_print_calls(p, f);
  fclose(f);
  const char *want[] = {"simdgrad profile:",
                        "(all)",
                        "train/",
                        "    dense1/",
                        "      matmul\n",
                        "matmul (backward)",
                        "% self",
                        "accumulate_grad (backward)",
                        "[2,3] [3,4] -> [2,4]"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    cr_assert(strstr(text, want[i]), "no \"%s\" in:\n%s", want[i], text);
  free(text);
  sg_profile_free(p);
}

Test(profile, trace_to_a_bad_path_is_an_error) {
  cr_assert_eq(sg_profile_begin(), SG_OK);
  sg_profile *p = end_profile();
  cr_assert_eq(sg_profile_write_trace(p, "/nonexistent-dir/x.json"), SG_ERR_ARG);
  cr_assert(strstr(sg_last_error(), "/nonexistent-dir/x.json"), "%s", sg_last_error());
  sg_clear_error();
  cr_assert_eq(sg_profile_write_trace(NULL, "x.json"), SG_ERR_ARG);
  sg_clear_error();
  sg_profile_free(p);
}
