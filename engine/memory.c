/* Tensor storage: 64-byte aligned buffers with shared reference counts, and the process-wide
 * figures behind sg_memory(). */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

static atomic_llong g_num_tensors;
static atomic_llong g_num_bytes;
static atomic_llong g_peak_bytes;

void sg__count_tensor(int delta) { atomic_fetch_add_explicit(&g_num_tensors, delta, memory_order_relaxed); }

static void count_bytes(long long delta) {
  long long now = atomic_fetch_add_explicit(&g_num_bytes, delta, memory_order_relaxed) + delta;
  long long peak = atomic_load_explicit(&g_peak_bytes, memory_order_relaxed);
  while (now > peak && !atomic_compare_exchange_weak_explicit(&g_peak_bytes, &peak, now,
                                                              memory_order_relaxed,
                                                              memory_order_relaxed)) {
  }
}

sg_storage *sg__storage_new(size_t bytes) {
  /* The header sits in the first cache line so the data stays 64-byte aligned. */
  size_t rounded = (bytes + SG_ALIGN - 1) / SG_ALIGN * SG_ALIGN;
  if (rounded < bytes || rounded > SIZE_MAX - SG_ALIGN) return NULL;
  void *block = aligned_alloc(SG_ALIGN, SG_ALIGN + rounded);
  if (!block) return NULL;
  sg_storage *s = block;
  atomic_init(&s->refs, 1);
  s->bytes = bytes;
  s->data = (char *)block + SG_ALIGN;
  count_bytes((long long)bytes);
  return s;
}

void sg__storage_release(sg_storage *s) {
  if (!s) return;
  if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
  count_bytes(-(long long)s->bytes);
  free(s);
}

sg_memory_info sg_memory(void) {
  sg_memory_info m;
  m.num_tensors = atomic_load(&g_num_tensors);
  m.num_bytes = atomic_load(&g_num_bytes);
  m.num_bytes_cached = 0;
  m.peak_bytes = atomic_load(&g_peak_bytes);
  return m;
}
