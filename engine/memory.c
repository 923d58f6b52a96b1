/* Tensor storage and the caching allocator behind it, plus the figures behind sg_memory().
 *
 * Why a cache: on this class of machine a fresh 4 KiB page costs 11-16 us to fault in, so an
 * op that writes a new 64 MiB result spends far longer in page faults than in its kernel.
 * Freed blocks are kept by size class and handed to the next request of that class:
 * - small blocks (< 1 MiB) in a per-thread cache: no lock on the op path;
 * - large blocks in one process-wide cache under a mutex (its cost is nothing next to
 *   touching a megabyte), 2 MiB aligned and advised MADV_HUGEPAGE.
 * sg_memory_release_cache() returns the calling thread's and the shared cache to the system. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine.h"

static atomic_llong g_num_tensors;
static atomic_llong g_num_bytes;
static atomic_llong g_peak_bytes;
static atomic_llong g_cached_bytes;

void sg__count_tensor(int delta) {
  atomic_fetch_add_explicit(&g_num_tensors, delta, memory_order_relaxed);
}

static void count_bytes(long long delta) {
  long long now = atomic_fetch_add_explicit(&g_num_bytes, delta, memory_order_relaxed) + delta;
  long long peak = atomic_load_explicit(&g_peak_bytes, memory_order_relaxed);
  while (now > peak && !atomic_compare_exchange_weak_explicit(
                           &g_peak_bytes, &peak, now, memory_order_relaxed, memory_order_relaxed)) {
  }
}

/* ---- Size classes: 4 per power of two above 256 bytes, so at most 25% is wasted. ---- */

/* Under AddressSanitizer blocks go straight back to the system, so it can see misuse. */
#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ENABLED 0
#else
#define CACHE_ENABLED 1
#endif

#define SMALL_LIMIT (1u << 20)
#define HUGE_ALIGN (2u << 20)
#define N_CLASSES 160
#define THREAD_CACHE_MAX (64ll << 20)
#define SHARED_CACHE_MAX (4ll << 30)

static int size_class(size_t bytes, size_t *class_bytes) {
  if (bytes <= 256) {
    *class_bytes = 256;
    return 0;
  }
  int log2 = 63 - __builtin_clzll((unsigned long long)(bytes - 1)); /* 2^log2 < bytes */
  size_t quarter = (size_t)1 << (log2 - 2);
  size_t steps = (bytes - ((size_t)1 << log2) + quarter - 1) / quarter; /* 1..4 */
  *class_bytes = ((size_t)1 << log2) + steps * quarter;
  int c = (log2 - 8) * 4 + (int)steps;
  return c < N_CLASSES ? c : -1;
}

/* A cached block keeps its class in the storage header; the free list links through data. */
typedef struct free_block {
  struct free_block *next;
} free_block;

typedef struct block_cache {
  sg_storage *lists[N_CLASSES];
  long long bytes;
} block_cache;

static _Thread_local block_cache tls_cache;
static block_cache g_shared;
static pthread_mutex_t g_shared_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t g_cache_key;
static pthread_once_t g_cache_once = PTHREAD_ONCE_INIT;

/* Storage headers reuse `refs` as the class index while cached, and `data` as the link. */
static sg_storage *cache_pop(block_cache *c, int cls) {
  sg_storage *s = c->lists[cls];
  if (!s) return NULL;
  c->lists[cls] = (sg_storage *)((free_block *)s->data)->next;
  c->bytes -= (long long)s->bytes;
  atomic_fetch_sub_explicit(&g_cached_bytes, (long long)s->bytes, memory_order_relaxed);
  return s;
}

static void cache_push(block_cache *c, int cls, sg_storage *s) {
  ((free_block *)s->data)->next = (free_block *)c->lists[cls];
  c->lists[cls] = s;
  c->bytes += (long long)s->bytes;
  atomic_fetch_add_explicit(&g_cached_bytes, (long long)s->bytes, memory_order_relaxed);
}

static void cache_drain(block_cache *c) {
  for (int i = 0; i < N_CLASSES; i++) {
    sg_storage *s;
    while ((s = cache_pop(c, i)) != NULL) free(s);
  }
}

static void drop_thread_cache(void *unused) {
  (void)unused;
  cache_drain(&tls_cache);
}
static void make_cache_key(void) { pthread_key_create(&g_cache_key, drop_thread_cache); }

/* `bytes` of a storage block is its class capacity; the tensor's own size is in the tensor. */
static sg_storage *block_new(size_t capacity) {
  size_t align = capacity >= HUGE_ALIGN ? HUGE_ALIGN : SG_ALIGN;
  size_t total = SG_ALIGN + capacity;
  total = (total + align - 1) / align * align;
  void *block = aligned_alloc(align, total);
  if (!block) return NULL;
#ifdef MADV_HUGEPAGE
  if (align == HUGE_ALIGN) madvise(block, total, MADV_HUGEPAGE);
#endif
  sg_storage *s = block;
  s->bytes = capacity;
  s->data = (char *)block + SG_ALIGN;
  return s;
}

sg_storage *sg__storage_new(size_t bytes) {
  if (bytes > SIZE_MAX / 2) return NULL;
  size_t capacity;
  int cls = size_class(bytes, &capacity);
  sg_storage *s = NULL;
  if (cls >= 0 && capacity < SMALL_LIMIT) {
    s = cache_pop(&tls_cache, cls);
  } else if (cls >= 0) {
    pthread_mutex_lock(&g_shared_lock);
    s = cache_pop(&g_shared, cls);
    pthread_mutex_unlock(&g_shared_lock);
  } else {
    capacity = bytes;
  }
  if (!s) s = block_new(capacity);
  if (!s) return NULL;
  s->data = (char *)s + SG_ALIGN;
  atomic_init(&s->refs, 1);
  s->used = bytes;
  count_bytes((long long)bytes);
  return s;
}

void sg__storage_release(sg_storage *s) {
  if (!s) return;
  if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
  count_bytes(-(long long)s->used);
  size_t capacity;
  int cls = size_class(s->bytes, &capacity);
  if (!CACHE_ENABLED || cls < 0 || capacity != s->bytes) {
    free(s);
    return;
  }
  if (capacity < SMALL_LIMIT) {
    if (tls_cache.bytes + (long long)capacity > THREAD_CACHE_MAX) {
      free(s);
      return;
    }
    if (tls_cache.bytes == 0) {
      pthread_once(&g_cache_once, make_cache_key);
      pthread_setspecific(g_cache_key, (void *)1); /* arms the thread-exit drain */
    }
    cache_push(&tls_cache, cls, s);
    return;
  }
  pthread_mutex_lock(&g_shared_lock);
  if (g_shared.bytes + (long long)capacity > SHARED_CACHE_MAX) {
    pthread_mutex_unlock(&g_shared_lock);
    free(s);
    return;
  }
  cache_push(&g_shared, cls, s);
  pthread_mutex_unlock(&g_shared_lock);
}

void sg_memory_release_cache(void) {
  cache_drain(&tls_cache);
  pthread_mutex_lock(&g_shared_lock);
  cache_drain(&g_shared);
  pthread_mutex_unlock(&g_shared_lock);
}

sg_memory_info sg_memory(void) {
  sg_memory_info m;
  m.num_tensors = atomic_load(&g_num_tensors);
  m.num_bytes = atomic_load(&g_num_bytes);
  m.num_bytes_cached = atomic_load(&g_cached_bytes);
  m.peak_bytes = atomic_load(&g_peak_bytes);
  return m;
}
