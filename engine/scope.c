/* Named scopes: a per-thread stack of names forming the scope path, and the list of tensors
 * made inside them, disposed when their scope ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

bool sg__scope_track(sg_tensor *t) {
  sg_ctx *c = sg__ctx();
  if (c->depth == 0) return true;
  if (c->n_tracked == c->cap_tracked) {
    size_t cap = c->cap_tracked ? c->cap_tracked * 2 : 256;
    sg_tensor **grown = sg__realloc(c->tracked, cap * sizeof *grown);
    if (!grown) {
      sg__oom(NULL, "the scope's list of tensors");
      return false;
    }
    c->tracked = grown;
    c->cap_tracked = cap;
  }
  t->owner = c;
  t->scope_slot = c->n_tracked;
  c->tracked[c->n_tracked++] = t;
  return true;
}

bool sg__scope_untrack(sg_tensor *t) {
  sg_ctx *c = sg__ctx();
  if (t->owner != c) {
    sg__error(SG_ERR_STATE, NULL,
              "a tensor made inside a scope on one thread was disposed or kept on another");
    return false;
  }
  c->tracked[t->scope_slot] = NULL;
  /* The newest tensor of the innermost scope (an op's output disposed at once): give its slot
     back, so a loop of op + dispose inside one scope does not grow the list. */
  int d = c->depth - c->overflow_depth;
  if (t->scope_slot + 1 == c->n_tracked && d > 0 && t->scope_slot >= c->frames[d - 1].first_slot)
    c->n_tracked--;
  t->owner = NULL;
  return true;
}

void sg_scope_begin(const char *name) {
  sg__ensure_init();
  sg_ctx *c = sg__ctx();
  int d = c->depth - c->overflow_depth;
  if (d >= (int)(sizeof c->frames / sizeof c->frames[0])) {
    c->overflow_depth++;
    c->depth++;
    return;
  }
  sg_scope_frame *f = &c->frames[d];
  f->path_len = strlen(c->path);
  f->first_slot = c->n_tracked;
  if (!name || !*name) name = "(unnamed)";
  size_t room = sizeof c->path - f->path_len;
  snprintf(c->path + f->path_len, room, "%s%s", f->path_len ? "/" : "", name);
  c->depth++;
}

static bool is_kept(sg_tensor *t, sg_tensor *const *keep, int n_keep) {
  for (int i = 0; i < n_keep; i++)
    if (keep[i] == t) return true;
  return false;
}

void sg_scope_end(sg_tensor *const *keep, int n_keep) {
  sg_ctx *c = sg__ctx();
  if (c->depth == 0) {
    sg__error(SG_ERR_STATE, "scope_end", "no scope is open");
    return;
  }
  if (c->overflow_depth > 0) {
    c->overflow_depth--;
    c->depth--;
    return;
  }
  sg_scope_frame *f = &c->frames[c->depth - 1];
  /* Disposing may not shrink the list (tracked slots only go NULL), so walk it by index. */
  size_t first = f->first_slot, end = c->n_tracked;
  for (size_t i = first; i < end; i++) {
    sg_tensor *t = c->tracked[i];
    if (!t || is_kept(t, keep, n_keep)) continue;
    c->tracked[i] = NULL;
    t->owner = NULL;
    sg__release(t);
  }
  /* Survivors move to the enclosing scope (or become untracked at the outermost level). */
  size_t out = first;
  c->depth--;
  c->path[f->path_len] = '\0';
  for (size_t i = first; i < end; i++) {
    sg_tensor *t = c->tracked[i];
    if (!t) continue;
    if (c->depth == 0) {
      t->owner = NULL;
      continue;
    }
    t->scope_slot = out;
    c->tracked[out++] = t;
  }
  c->n_tracked = out;
  if (c->depth == 0 && c->tracked) {
    sg__free(c->tracked);
    c->tracked = NULL;
    c->cap_tracked = 0;
  }
}

const char *sg_scope_path(void) { return sg__ctx()->path; }
