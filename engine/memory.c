/* Tensor storage and the caching allocator behind it, plus the figures behind sg_memory().
 *
 * Why a cache: on this class of machine a fresh 4 KiB page costs 11-16 us to fault in, so an
 * op that writes a new 64 MiB result spends far longer in page faults than in its kernel.
 * Freed blocks are kept by size class and handed to the next request of that class:
 * - small blocks (< 1 MiB) in a per-thread cache: no lock on the op path;
 * - large blocks in one process-wide cache under a mutex (its cost is nothing next to
 *   touching a megabyte), 2 MiB aligned and advised MADV_HUGEPAGE.
 * sg_memory_release_cache() returns the calling thread's and the shared cache to the system.
 * The memory limit (engine/memory_limit.c) is enforced where storage is made, sg__storage_new.
 * Wrapped storage (the caller's buffer, sg_tensor_wrap_f32) bypasses all of this: a malloc'd
 * header, no bytes counted, the caller's deleter instead of the cache on release.
 *
 * Why per-thread figures: an atomic read-modify-write costs ~12 ns here (measured), and a
 * 1-element op used to do nine of them (live tensors, bytes, cached bytes, each up and down).
 * Each thread now counts in a block of its own with plain loads and stores; sg_memory() sums
 * the blocks. Blocks are never freed: a thread that exits gives its block (and the counts in
 * it) to the next thread that needs one, so a tensor freed on another thread than the one
 * that made it just leaves one count high and another low. */
#define _DEFAULT_SOURCE /* madvise and MADV_HUGEPAGE: Linux's, hidden by strict C11 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine.h"

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

/* A cached block keeps its class in the storage header; the free list links through data. */
typedef struct free_block {
  struct free_block *next;
} free_block;

typedef struct block_cache {
  sg_storage *lists[N_CLASSES];
  long long bytes;
  atomic_llong *figure; /* where sg_memory() reads `bytes` */
} block_cache;

/* ---- Per-thread figures ---------------------------------------------------------------------- */

/* A thread's figures and its cache of small blocks. */
typedef struct stats_block {
  /* Written only by the owning thread, as a load and a store; read by sg_memory() anywhere. */
  atomic_llong tensors, bytes, cached;
  long long made, allocated; /* owner only: tensors and bytes handed out so far (never drop) */
  block_cache cache;         /* owner only; empty whenever no thread owns the block */
  long long high;            /* owner only: the largest `bytes` this block has held */
  atomic_bool busy;          /* owned by a live thread (taken and given back under g_stats_lock) */
  struct stats_block *next;  /* set before the block is published, never changed */
} stats_block;

static _Atomic(stats_block *) g_stats; /* every block ever made, newest first */
static pthread_mutex_t g_stats_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_llong g_peak_bytes;
/* Initial-exec: in the shared library a plain _Thread_local access calls __tls_get_addr. */
static _Thread_local stats_block *tls_stats __attribute__((tls_model("initial-exec")));

static pthread_key_t g_exit_key;
static pthread_once_t g_exit_once = PTHREAD_ONCE_INIT;
static void thread_exit(void *block);
static void make_exit_key(void) { pthread_key_create(&g_exit_key, thread_exit); }

static void bump(atomic_llong *v, long long delta) {
  atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + delta,
                        memory_order_relaxed);
}

/* The calling thread's block: adopts a free one or makes one, and arms the thread-exit hook.
   NULL only if malloc fails: storage and tensors are then refused (sg__storage_new,
   sg__count_tensor), and only a count going down can be lost (a tensor made on another thread
   and dropped here). */
static stats_block *stats_attach(void) {
  pthread_once(&g_exit_once, make_exit_key);
  pthread_mutex_lock(&g_stats_lock);
  stats_block *b = atomic_load_explicit(&g_stats, memory_order_relaxed);
  while (b && atomic_load_explicit(&b->busy, memory_order_relaxed)) b = b->next;
  if (!b) {
    b = sg__calloc(1, sizeof *b);
    if (b) {
      b->next = atomic_load_explicit(&g_stats, memory_order_relaxed);
      atomic_store_explicit(&g_stats, b, memory_order_release);
    }
  }
  if (b) {
    atomic_store_explicit(&b->busy, true, memory_order_relaxed);
    b->cache.figure = &b->cached;
  }
  pthread_mutex_unlock(&g_stats_lock);
  if (b) pthread_setspecific(g_exit_key, b);
  tls_stats = b;
  return b;
}

static inline stats_block *my_stats(void) {
  stats_block *b = tls_stats;
  return __builtin_expect(b != NULL, 1) ? b : stats_attach();
}

/* The sum of every block's bytes, read without the lock (blocks are never freed). */
static long long total_bytes(void) {
  long long sum = 0;
  for (stats_block *b = atomic_load_explicit(&g_stats, memory_order_acquire); b; b = b->next)
    sum += atomic_load_explicit(&b->bytes, memory_order_relaxed);
  return sum;
}

static void note_peak(long long now) {
  long long peak = atomic_load_explicit(&g_peak_bytes, memory_order_relaxed);
  while (now > peak && !atomic_compare_exchange_weak_explicit(
                           &g_peak_bytes, &peak, now, memory_order_relaxed, memory_order_relaxed)) {
  }
}

bool sg__count_tensor(int delta) {
  stats_block *b = my_stats();
  if (!b) return false;
  bump(&b->tensors, delta);
  if (delta > 0) b->made += delta;
  return true;
}

void sg__thread_allocations(int64_t *tensors, int64_t *bytes) {
  stats_block *b = my_stats();
  *tensors = b ? b->made : 0;
  *bytes = b ? b->allocated : 0;
}

/* The peak is sampled when this thread's own bytes pass their high-water mark (and by
   sg_memory()): exact while one thread allocates at a time, which is how the engine is used;
   with several threads allocating at once a short-lived peak between samples can be missed. */
static void count_bytes(long long delta) {
  stats_block *b = my_stats();
  if (!b) return;
  long long now = atomic_load_explicit(&b->bytes, memory_order_relaxed) + delta;
  atomic_store_explicit(&b->bytes, now, memory_order_relaxed);
  if (delta > 0) b->allocated += delta;
  if (__builtin_expect(now > b->high, 0)) {
    b->high = now;
    note_peak(total_bytes());
  }
}

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

static atomic_llong g_shared_bytes;
static block_cache g_shared = {.figure = &g_shared_bytes};
static pthread_mutex_t g_shared_lock = PTHREAD_MUTEX_INITIALIZER;

static void publish_cached(block_cache *c) {
  atomic_store_explicit(c->figure, c->bytes, memory_order_relaxed);
}

/* Storage headers reuse `refs` as the class index while cached, and `data` as the link. */
static sg_storage *cache_pop(block_cache *c, int cls) {
  sg_storage *s = c->lists[cls];
  if (!s) return NULL;
  c->lists[cls] = (sg_storage *)((free_block *)s->data)->next;
  c->bytes -= (long long)s->bytes;
  publish_cached(c);
  return s;
}

static void cache_push(block_cache *c, int cls, sg_storage *s) {
  ((free_block *)s->data)->next = (free_block *)c->lists[cls];
  c->lists[cls] = s;
  c->bytes += (long long)s->bytes;
  publish_cached(c);
}

static void cache_drain(block_cache *c) {
  for (int i = 0; i < N_CLASSES; i++) {
    sg_storage *s;
    while ((s = cache_pop(c, i)) != NULL) sg__free(s);
  }
}

/* Thread exit: the cache goes back to the system and the block to the next thread. Work done
   later in thread exit (another key's destructor freeing a tensor) attaches a block again and
   re-arms this. */
static void thread_exit(void *block) {
  stats_block *b = block;
  cache_drain(&b->cache);
  tls_stats = NULL;
  pthread_mutex_lock(&g_stats_lock);
  atomic_store_explicit(&b->busy, false, memory_order_relaxed);
  pthread_mutex_unlock(&g_stats_lock);
}

/* `bytes` of a storage block is its class capacity; the tensor's own size is in the tensor. */
static sg_storage *block_new(size_t capacity) {
  size_t align = capacity >= HUGE_ALIGN ? HUGE_ALIGN : SG_ALIGN;
  size_t total = SG_ALIGN + capacity;
  total = (total + align - 1) / align * align;
  void *block = sg__aligned_alloc(align, total);
  if (!block) return NULL;
#ifdef MADV_HUGEPAGE
  if (align == HUGE_ALIGN) madvise(block, total, MADV_HUGEPAGE);
#endif
  sg_storage *s = block;
  s->bytes = capacity;
  s->data = (char *)block + SG_ALIGN;
  return s;
}

/* The bytes every thread's cache and the shared one keep. */
static long long total_cached(void) {
  long long sum = atomic_load_explicit(&g_shared_bytes, memory_order_relaxed);
  for (stats_block *b = atomic_load_explicit(&g_stats, memory_order_acquire); b; b = b->next)
    sum += atomic_load_explicit(&b->cached, memory_order_relaxed);
  return sum;
}

/* The memory limit: false (and the refusal noted for the error) when `bytes` more would take
   live tensors above it; else, when the caches would take the total above it, releases this
   thread's and the shared cache first. Threads allocating at the same time each see the
   others' bytes only once made, so together they can overshoot by what they ask at once. */
static bool within_limit(size_t bytes, long long limit) {
  long long live = total_bytes();
  if ((long long)bytes > limit - live) {
    sg__ctx()->refusal = (sg_refusal){true, (int64_t)bytes, live, limit};
    return false;
  }
  if ((long long)bytes + total_cached() > limit - live) sg_memory_release_cache();
  return true;
}

sg_storage *sg__storage_new(size_t bytes) {
  sg__ctx()->refusal.refused = false;
  /* Bytes this thread could not count would leave sg_memory() off for good. */
  if (bytes > SIZE_MAX / 2 || !my_stats()) return NULL;
  long long limit = sg__memory_limit_now();
  if (limit > 0 && !within_limit(bytes, limit)) return NULL;
  size_t capacity;
  int cls = size_class(bytes, &capacity);
  sg_storage *s = NULL;
  if (cls >= 0 && capacity < SMALL_LIMIT) {
    stats_block *b = my_stats();
    if (b) s = cache_pop(&b->cache, cls);
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
  s->wrapped = false;
  s->read_only = false;
  atomic_init(&s->refs, 1);
  s->used = bytes;
  count_bytes((long long)bytes);
  return s;
}

/* The caller's buffer: a header of its own (malloc'd, never cached), no bytes counted, since
   the engine neither holds nor can give back that memory. */
sg_storage *sg__storage_wrap(void *data, size_t bytes, sg_deleter deleter, void *ctx) {
  sg_storage *s = sg__malloc(sizeof *s);
  if (!s) return NULL;
  atomic_init(&s->refs, 1);
  s->bytes = 0;
  s->used = bytes;
  s->data = data;
  s->deleter = deleter;
  s->deleter_ctx = ctx;
  s->wrapped = true;
  s->read_only = false;
  return s;
}

/* The last reference to wrapped storage: the caller's deleter gets its buffer back. */
static void release_wrapped(sg_storage *s) {
  sg_deleter deleter = s->deleter;
  void *data = s->data, *ctx = s->deleter_ctx;
  sg__free(s);
  if (deleter) deleter(data, ctx);
}

void sg__storage_release(sg_storage *s) {
  if (!s) return;
  /* Holding the only reference, no other thread can touch the count: skip the atomic. */
  if (atomic_load_explicit(&s->refs, memory_order_acquire) != 1 &&
      atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
    return;
  if (__builtin_expect(s->wrapped, 0)) {
    release_wrapped(s);
    return;
  }
  count_bytes(-(long long)s->used);
  size_t capacity;
  int cls = size_class(s->bytes, &capacity);
  if (!CACHE_ENABLED || cls < 0 || capacity != s->bytes) {
    sg__free(s);
    return;
  }
  if (capacity < SMALL_LIMIT) {
    stats_block *b = tls_stats; /* count_bytes above attached it (NULL only on OOM) */
    if (!b || b->cache.bytes + (long long)capacity > THREAD_CACHE_MAX) {
      sg__free(s);
      return;
    }
    cache_push(&b->cache, cls, s);
    return;
  }
  pthread_mutex_lock(&g_shared_lock);
  if (g_shared.bytes + (long long)capacity > SHARED_CACHE_MAX) {
    pthread_mutex_unlock(&g_shared_lock);
    sg__free(s);
    return;
  }
  cache_push(&g_shared, cls, s);
  pthread_mutex_unlock(&g_shared_lock);
}

void sg_memory_release_cache(void) {
  if (tls_stats) cache_drain(&tls_stats->cache);
  pthread_mutex_lock(&g_shared_lock);
  cache_drain(&g_shared);
  pthread_mutex_unlock(&g_shared_lock);
}

sg_memory_info sg_memory(void) {
  sg_memory_info m = {0, 0, 0, 0};
  for (stats_block *b = atomic_load_explicit(&g_stats, memory_order_acquire); b; b = b->next) {
    m.num_tensors += atomic_load_explicit(&b->tensors, memory_order_relaxed);
    m.num_bytes += atomic_load_explicit(&b->bytes, memory_order_relaxed);
    m.num_bytes_cached += atomic_load_explicit(&b->cached, memory_order_relaxed);
  }
  m.num_bytes_cached += atomic_load_explicit(&g_shared_bytes, memory_order_relaxed);
  note_peak(m.num_bytes);
  m.peak_bytes = atomic_load_explicit(&g_peak_bytes, memory_order_relaxed);
  return m;
}
