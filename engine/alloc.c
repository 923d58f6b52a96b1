/* The counted allocation path (engine/alloc.h) and its test probe. Off, a call pays one relaxed
 * load and a predictable branch; the probe's counters are atomics because the engine's threads
 * (the gemm's packing buffers, conv scratch) allocate too. */
#include <stdatomic.h>
#include <stdlib.h>

#include "engine/alloc.h"

static atomic_bool g_probe;
static atomic_llong g_calls, g_live;
static atomic_llong g_fail_in; /* calls left before the planned failure; 0: none planned */
static atomic_bool g_fired;

/* Counts one allocation call; false when it is the one planned to fail. */
static bool probe_call(void) {
  atomic_fetch_add_explicit(&g_calls, 1, memory_order_relaxed);
  long long left = atomic_load_explicit(&g_fail_in, memory_order_relaxed);
  while (left > 0 && !atomic_compare_exchange_weak_explicit(
                         &g_fail_in, &left, left - 1, memory_order_relaxed, memory_order_relaxed)) {
  }
  if (left != 1) return true;
  atomic_store_explicit(&g_fired, true, memory_order_relaxed);
  return false;
}

static void *counted(void *p) {
  if (p) atomic_fetch_add_explicit(&g_live, 1, memory_order_relaxed);
  return p;
}

static inline bool probing(void) {
  return __builtin_expect(atomic_load_explicit(&g_probe, memory_order_relaxed), 0);
}

void *sg__malloc(size_t bytes) {
  if (!probing()) return malloc(bytes);
  return probe_call() ? counted(malloc(bytes)) : NULL;
}

void *sg__calloc(size_t n, size_t size) {
  if (!probing()) return calloc(n, size);
  return probe_call() ? counted(calloc(n, size)) : NULL;
}

void *sg__realloc(void *p, size_t bytes) {
  if (!probing()) return realloc(p, bytes);
  if (!probe_call()) return NULL;
  void *q = realloc(p, bytes);
  return p ? q : counted(q); /* a grown block is still one block */
}

void *sg__aligned_alloc(size_t align, size_t bytes) {
  if (!probing()) return aligned_alloc(align, bytes);
  return probe_call() ? counted(aligned_alloc(align, bytes)) : NULL;
}

void sg__free(void *p) {
  if (p && probing()) atomic_fetch_sub_explicit(&g_live, 1, memory_order_relaxed);
  free(p);
}

void sg__alloc_probe(bool on) { atomic_store(&g_probe, on); }

void sg__alloc_fail_at(int64_t k) {
  atomic_store(&g_fired, false);
  atomic_store(&g_fail_in, k > 0 ? k : 0);
}

bool sg__alloc_fault_fired(void) { return atomic_load(&g_fired); }
int64_t sg__alloc_calls(void) { return atomic_load(&g_calls); }
int64_t sg__alloc_live(void) { return atomic_load(&g_live); }
