/* A small open-addressing map from tensor ids to pointers, for the tape's back-propagation:
 * which tensors depend on xs, which lead to y, and the gradient accumulated for each. */
#ifndef SIMDGRAD_IDMAP_H
#define SIMDGRAD_IDMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/alloc.h"

typedef struct sg_idmap {
  uint64_t *keys; /* 0 = empty (ids start at 1) */
  void **vals;
  size_t cap, len;
} sg_idmap;

static inline size_t sg_idmap_slot(const sg_idmap *m, uint64_t key) {
  size_t i = (size_t)(key * 0x9E3779B97F4A7C15ull) & (m->cap - 1);
  while (m->keys[i] != 0 && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  return i;
}

static inline bool sg_idmap_init(sg_idmap *m, size_t expected) {
  size_t cap = 16;
  while (cap < expected * 2) cap *= 2;
  m->keys = sg__calloc(cap, sizeof *m->keys);
  m->vals = sg__calloc(cap, sizeof *m->vals);
  m->cap = cap;
  m->len = 0;
  return m->keys && m->vals;
}

static inline void sg_idmap_free(sg_idmap *m) {
  sg__free(m->keys);
  sg__free(m->vals);
  m->keys = NULL;
  m->vals = NULL;
}

static inline bool sg_idmap_has(const sg_idmap *m, uint64_t key) {
  return m->keys[sg_idmap_slot(m, key)] == key;
}

static inline void *sg_idmap_get(const sg_idmap *m, uint64_t key) {
  size_t i = sg_idmap_slot(m, key);
  return m->keys[i] == key ? m->vals[i] : NULL;
}

/* The map was sized for every key it can receive, so it never grows. */
static inline void sg_idmap_put(sg_idmap *m, uint64_t key, void *val) {
  size_t i = sg_idmap_slot(m, key);
  if (m->keys[i] != key) {
    m->keys[i] = key;
    m->len++;
  }
  m->vals[i] = val;
}

#endif
