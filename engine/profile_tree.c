/* The profile's aggregations and tables: the tree by scope path (scope components, then ops,
 * then the ops nested in those), the flat per-op table, and their printing.
 *
 * A call made by the program lands on an op node under the node of its scope path; a call
 * nested in another lands under the node of the enclosing call. Op nodes sum their calls'
 * durations; scope nodes and the root sum their children. So a node's children never add up
 * to more than the node (nested calls run inside their parent), and the root's total equals
 * the flat table's summed self time. */
#include <stdlib.h>
#include <string.h>

#include "engine/profile.h"

typedef struct builder {
  sg_profile *p;
  sg_profile_node *nodes;
  int64_t n, cap;
  int64_t *last_child; /* per node, to append children in order */
  int64_t last_cap;
} builder;

static int64_t new_node(builder *b, int64_t parent, sg_profile_node_kind kind, const char *name,
                        const char *path, sg_profile_phase phase) {
  if (b->n == b->cap) {
    int64_t cap = b->cap ? 2 * b->cap : 64;
    sg_profile_node *grown = sg__realloc(b->nodes, (size_t)cap * sizeof *grown);
    int64_t *last = sg__realloc(b->last_child, (size_t)cap * sizeof *last);
    if (grown) b->nodes = grown;
    if (last) b->last_child = last;
    if (!grown || !last) return -1;
    b->cap = cap;
  }
  int64_t i = b->n++;
  sg_profile_node *nd = &b->nodes[i];
  memset(nd, 0, sizeof *nd);
  nd->name = name;
  nd->path = path;
  nd->kind = kind;
  nd->phase = phase;
  nd->parent = parent;
  nd->first_child = nd->next_sibling = -1;
  nd->depth = parent >= 0 ? b->nodes[parent].depth + 1 : 0;
  b->last_child[i] = -1;
  if (parent >= 0) {
    if (b->last_child[parent] >= 0)
      b->nodes[b->last_child[parent]].next_sibling = i;
    else
      b->nodes[parent].first_child = i;
    b->last_child[parent] = i;
  }
  return i;
}

/* The child of parent with this kind, name and phase, made if missing; -1 on OOM. */
static int64_t child(builder *b, int64_t parent, sg_profile_node_kind kind, const char *name,
                     size_t len, const char *path, size_t path_len, sg_profile_phase phase) {
  for (int64_t c = b->nodes[parent].first_child; c >= 0; c = b->nodes[c].next_sibling) {
    const sg_profile_node *nd = &b->nodes[c];
    if (nd->kind == kind && nd->phase == phase && strncmp(nd->name, name, len) == 0 &&
        nd->name[len] == '\0')
      return c;
  }
  if (kind == SG_PROFILE_SCOPE) { /* scope names are substrings of the path: copy them */
    name = sg__profile_strdup(b->p, name, len);
    path = name ? sg__profile_strdup(b->p, path, path_len) : NULL;
    if (!path) return -1;
  }
  return new_node(b, parent, kind, name, path, phase);
}

static int64_t scope_node(builder *b, const char *path) {
  int64_t at = 0;
  for (const char *s = path; *s;) {
    const char *slash = strchr(s, '/');
    size_t len = slash ? (size_t)(slash - s) : strlen(s);
    size_t path_len = (size_t)(s - path) + len;
    at = child(b, at, SG_PROFILE_SCOPE, s, len, path, path_len, SG_PROFILE_FORWARD);
    if (at < 0) return -1;
    s += len + (slash != NULL);
  }
  return at;
}

/* Children of each node sorted by total time (longest first), nodes renumbered depth first. */
typedef struct kid {
  uint64_t total_ns;
  const char *name;
  int phase;
  int64_t index;
} kid;

static int by_total(const void *x, const void *y) {
  const kid *a = x, *b = y;
  if (a->total_ns != b->total_ns) return a->total_ns < b->total_ns ? 1 : -1;
  int c = strcmp(a->name, b->name);
  return c ? c : a->phase - b->phase;
}

/* Depth-first numbering; the depth is bounded by scope nesting plus op nesting. */
static int64_t number(int64_t i, int64_t next, const kid *kids, const int64_t *start,
                      int64_t *new_index) {
  new_index[i] = next++;
  for (int64_t k = start[i]; k < start[i + 1]; k++)
    next = number(kids[k].index, next, kids, start, new_index);
  return next;
}

static bool sort_tree(builder *b) {
  int64_t n = b->n;
  int64_t *start = sg__calloc((size_t)n + 1, sizeof *start);
  kid *kids = sg__malloc((size_t)n * sizeof *kids);
  int64_t *new_index = sg__malloc((size_t)n * sizeof *new_index);
  sg_profile_node *out = sg__malloc((size_t)n * sizeof *out);
  bool ok = start && kids && new_index && out;
  if (ok) {
    /* Children lists as ranges of one array (counting sort by parent), each sorted. */
    for (int64_t i = 1; i < n; i++) start[b->nodes[i].parent + 1]++;
    for (int64_t i = 0; i < n; i++) start[i + 1] += start[i];
    int64_t *fill = new_index; /* scratch before numbering */
    memcpy(fill, start, (size_t)n * sizeof *fill);
    for (int64_t i = 1; i < n; i++) {
      const sg_profile_node *nd = &b->nodes[i];
      kids[fill[nd->parent]++] = (kid){nd->total_ns, nd->name, (int)nd->phase, i};
    }
    for (int64_t i = 0; i < n; i++)
      qsort(kids + start[i], (size_t)(start[i + 1] - start[i]), sizeof *kids, by_total);
    number(0, 0, kids, start, new_index);
    for (int64_t i = 0; i < n; i++) {
      sg_profile_node nd = b->nodes[i];
      nd.parent = nd.parent >= 0 ? new_index[nd.parent] : -1;
      nd.first_child = start[i + 1] > start[i] ? new_index[kids[start[i]].index] : -1;
      nd.next_sibling = -1;
      out[new_index[i]] = nd;
    }
    for (int64_t i = 0; i < n; i++)
      for (int64_t k = start[i]; k + 1 < start[i + 1]; k++)
        out[new_index[kids[k].index]].next_sibling = new_index[kids[k + 1].index];
    sg__free(b->nodes);
    b->nodes = out;
    out = NULL;
  }
  sg__free(start);
  sg__free(kids);
  sg__free(new_index);
  sg__free(out);
  return ok;
}

static bool build_tree(builder *b, int64_t *node_of) {
  const sg_profile *p = b->p;
  if (new_node(b, -1, SG_PROFILE_ROOT, "", "", SG_PROFILE_FORWARD) < 0) return false;
  const char *last_scope = NULL;
  int64_t last_scope_node = 0;
  for (int64_t i = 0; i < p->n_calls; i++) {
    const sg_profile_call *c = &p->calls[i];
    int64_t at;
    if (c->parent >= 0) {
      at = node_of[c->parent];
    } else {
      if (c->scope != last_scope) { /* scope strings repeat by pointer: skip the walk */
        last_scope_node = scope_node(b, c->scope);
        last_scope = c->scope;
        if (last_scope_node < 0) return false;
      }
      at = last_scope_node;
    }
    int64_t op = child(b, at, SG_PROFILE_OP, c->op, strlen(c->op), c->scope, 0, c->phase);
    if (op < 0) return false;
    node_of[i] = op;
    sg_profile_node *nd = &b->nodes[op];
    nd->calls++;
    nd->total_ns += c->duration_ns;
    nd->bytes += c->bytes;
    nd->tensors += c->tensors;
    nd->alloc_bytes += c->alloc_bytes;
    nd->alloc_tensors += c->alloc_tensors;
  }
  /* Bottom up: children are always made after their parent. */
  int64_t n = b->n;
  uint64_t *child_ns = sg__calloc((size_t)n, sizeof *child_ns);
  int64_t *sub_calls = sg__calloc((size_t)n, sizeof *sub_calls);
  if (!child_ns || !sub_calls) {
    sg__free(child_ns);
    sg__free(sub_calls);
    return false;
  }
  for (int64_t i = n; i-- > 0;) {
    sg_profile_node *nd = &b->nodes[i];
    if (nd->kind == SG_PROFILE_OP) {
      sub_calls[i] += nd->calls;
      nd->self_ns = nd->total_ns > child_ns[i] ? nd->total_ns - child_ns[i] : 0;
    } else {
      nd->total_ns = child_ns[i];
      nd->calls = sub_calls[i];
      nd->self_ns = 0;
    }
    if (nd->parent >= 0) {
      sg_profile_node *up = &b->nodes[nd->parent];
      child_ns[nd->parent] += nd->total_ns;
      sub_calls[nd->parent] += sub_calls[i];
      if (up->kind != SG_PROFILE_OP) {
        up->bytes += nd->bytes;
        up->tensors += nd->tensors;
        up->alloc_bytes += nd->alloc_bytes;
        up->alloc_tensors += nd->alloc_tensors;
      }
    }
  }
  double root = (double)b->nodes[0].total_ns;
  for (int64_t i = 0; i < n; i++)
    b->nodes[i].percent = root > 0 ? 100.0 * (double)b->nodes[i].total_ns / root : 0.0;
  sg__free(child_ns);
  sg__free(sub_calls);
  return sort_tree(b);
}

static int by_self(const void *x, const void *y) {
  const sg_profile_op_stats *a = x, *b = y;
  if (a->self_ns != b->self_ns) return a->self_ns < b->self_ns ? 1 : -1;
  int c = strcmp(a->op, b->op);
  return c ? c : (int)a->phase - (int)b->phase;
}

static bool build_ops(sg_profile *p) {
  int64_t n = p->n_calls, cap = 16;
  uint64_t *child_ns = sg__calloc((size_t)n + 1, sizeof *child_ns);
  p->ops = sg__malloc((size_t)cap * sizeof *p->ops);
  if (!child_ns || !p->ops) {
    sg__free(child_ns);
    return false;
  }
  for (int64_t i = 0; i < n; i++)
    if (p->calls[i].parent >= 0) child_ns[p->calls[i].parent] += p->calls[i].duration_ns;
  uint64_t root = 0;
  for (int64_t i = 0; i < n; i++) {
    const sg_profile_call *c = &p->calls[i];
    if (c->parent < 0) root += c->duration_ns;
    int64_t r = 0;
    while (r < p->n_ops && !(p->ops[r].phase == c->phase &&
                             (p->ops[r].op == c->op || strcmp(p->ops[r].op, c->op) == 0)))
      r++;
    if (r == p->n_ops) {
      if (p->n_ops == cap) {
        cap *= 2;
        sg_profile_op_stats *grown = sg__realloc(p->ops, (size_t)cap * sizeof *grown);
        if (!grown) {
          sg__free(child_ns);
          return false;
        }
        p->ops = grown;
      }
      p->ops[p->n_ops++] = (sg_profile_op_stats){.op = c->op, .phase = c->phase};
    }
    sg_profile_op_stats *s = &p->ops[r];
    s->calls++;
    s->total_ns += c->duration_ns;
    s->self_ns += c->duration_ns > child_ns[i] ? c->duration_ns - child_ns[i] : 0;
    s->bytes += c->bytes;
    s->tensors += c->tensors;
    s->alloc_bytes += c->alloc_bytes;
    s->alloc_tensors += c->alloc_tensors;
  }
  for (int64_t r = 0; r < p->n_ops; r++)
    p->ops[r].percent = root ? 100.0 * (double)p->ops[r].self_ns / (double)root : 0.0;
  qsort(p->ops, (size_t)p->n_ops, sizeof *p->ops, by_self);
  sg__free(child_ns);
  return true;
}

bool sg__profile_aggregate(sg_profile *p) {
  builder b = {.p = p};
  int64_t *node_of = sg__malloc(((size_t)p->n_calls + 1) * sizeof *node_of);
  bool ok = node_of && build_tree(&b, node_of) && build_ops(p);
  sg__free(node_of);
  sg__free(b.last_child);
  if (!ok) {
    sg__free(b.nodes);
    return false;
  }
  p->nodes = b.nodes;
  p->n_nodes = b.n;
  return true;
}

/* ---- Printing ---------------------------------------------------------------------------- */

/* Bytes as KiB, without a "-0.0" for a few freed bytes. */
static double kib(int64_t bytes) {
  double k = (double)bytes / 1024.0;
  return k > -0.05 && k < 0.05 ? 0.0 : k;
}

static const char *phase_tag(sg_profile_phase ph) {
  return ph == SG_PROFILE_BACKWARD ? " (backward)" : "";
}

static void print_header(const sg_profile *p, FILE *f) {
  int64_t fwd = 0, failed = 0;
  for (int64_t i = 0; i < p->n_calls; i++) {
    fwd += p->calls[i].phase == SG_PROFILE_FORWARD;
    failed += p->calls[i].failed;
  }
  double in_ops = p->n_nodes ? (double)p->nodes[0].total_ns : 0.0;
  fprintf(f, "simdgrad profile: %lld calls (%lld forward, %lld backward", (long long)p->n_calls,
          (long long)fwd, (long long)(p->n_calls - fwd));
  if (failed) fprintf(f, ", %lld failed", (long long)failed);
  fprintf(f, ") on %d thread%s, backend %s\n", p->n_threads, p->n_threads == 1 ? "" : "s",
          p->n_calls ? p->calls[0].backend : sg_backend_name());
  fprintf(f, "wall %.3f ms, in ops %.3f ms", (double)p->wall_ns / 1e6, in_ops / 1e6);
  if (p->dropped) fprintf(f, ", %lld calls not recorded", (long long)p->dropped);
  fprintf(f, "\n");
}

void sg_profile_print(const sg_profile *p, FILE *f) {
  if (!p || !f) return;
  print_header(p, f);
  fprintf(f, "\n%8s %11s %11s %7s %11s %8s %11s  %s\n", "calls", "total ms", "self ms", "%", "KiB",
          "tensors", "alloc KiB", "scope / op");
  for (int64_t i = 0; i < p->n_nodes; i++) {
    const sg_profile_node *nd = &p->nodes[i];
    fprintf(f, "%8lld %11.3f %11.3f %7.1f %11.1f %8lld %11.1f  %*s", (long long)nd->calls,
            (double)nd->total_ns / 1e6, (double)nd->self_ns / 1e6, nd->percent, kib(nd->bytes),
            (long long)nd->tensors, kib(nd->alloc_bytes), 2 * (nd->depth ? nd->depth - 1 : 0), "");
    if (nd->kind == SG_PROFILE_ROOT)
      fprintf(f, "(all)\n");
    else if (nd->kind == SG_PROFILE_SCOPE)
      fprintf(f, "%s/\n", nd->name);
    else
      fprintf(f, "%s%s\n", nd->name, phase_tag(nd->phase));
  }
  fprintf(f, "\n%8s %11s %11s %7s %11s %8s %11s  %s\n", "calls", "self ms", "total ms", "% self",
          "KiB", "tensors", "alloc KiB", "op");
  for (int64_t r = 0; r < p->n_ops; r++) {
    const sg_profile_op_stats *s = &p->ops[r];
    fprintf(f, "%8lld %11.3f %11.3f %7.1f %11.1f %8lld %11.1f  %s%s\n", (long long)s->calls,
            (double)s->self_ns / 1e6, (double)s->total_ns / 1e6, s->percent, kib(s->bytes),
            (long long)s->tensors, kib(s->alloc_bytes), s->op, phase_tag(s->phase));
  }
}

static void print_shapes(FILE *f, const sg_profile_shape *s, int n) {
  for (int i = 0; i < n && i < SG_PROFILE_MAX_SHAPES; i++) {
    fprintf(f, i ? " [" : "[");
    for (int d = 0; d < s[i].rank; d++) fprintf(f, d ? ",%lld" : "%lld", (long long)s[i].dims[d]);
    fprintf(f, "]");
  }
  if (n > SG_PROFILE_MAX_SHAPES) fprintf(f, " ...");
}

void sg_profile_print_calls(const sg_profile *p, FILE *f) {
  if (!p || !f) return;
  fprintf(f, "%3s %12s %11s  %-4s %-24s %s\n", "thr", "start ms", "us", "dir", "scope",
          "op  kernel  inputs -> outputs  KiB tensors (alloc KiB)");
  for (int64_t i = 0; i < p->n_calls; i++) {
    const sg_profile_call *c = &p->calls[i];
    fprintf(f, "%3d %12.3f %11.3f  %-4s %-24s %*s%s  %s  ", c->thread, (double)c->start_ns / 1e6,
            (double)c->duration_ns / 1e3, c->phase == SG_PROFILE_BACKWARD ? "bwd" : "fwd",
            c->scope[0] ? c->scope : "-", 2 * c->depth, "", c->op, c->kernel);
    if (c->n_inputs >= 0)
      print_shapes(f, c->inputs, c->n_inputs);
    else
      fprintf(f, "?");
    fprintf(f, " -> ");
    print_shapes(f, c->outputs, c->n_outputs);
    fprintf(f, "  %+.1f %+lld (alloc %.1f)%s%s\n", kib(c->bytes), (long long)c->tensors,
            kib(c->alloc_bytes), c->failed ? "  FAILED" : "", c->unfinished ? "  unfinished" : "");
  }
}
