/* Tensor headers: creation, views, reference counting, disposal and the accessors. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

size_t sg__dtype_size(sg_dtype d) { return d == SG_BOOL ? 1 : 4; }

/* Headers are recycled through a small per-thread cache, so a disposed header stays readable
   (magic SG_TENSOR_DEAD) until it is reused: that is what lets an op report a disposed input
   instead of reading freed memory, and it spares malloc on the op path. Ids are handed to each
   thread in blocks, so a new tensor takes no atomic (an atomic add costs ~12 ns here).
   The cache lives on the heap behind one initial-exec TLS pointer: see engine/context.c for
   why both. */
#define HEADER_CACHE_MAX 256
#define ID_BLOCK 1024
typedef struct thread_headers {
  sg_tensor *free[HEADER_CACHE_MAX];
  int n_free;
  uint64_t next_id, end_id;
} thread_headers;

static atomic_ullong g_next_id = 1;
static _Thread_local thread_headers *tls_headers __attribute__((tls_model("initial-exec")));
static pthread_key_t g_cache_key;
static pthread_once_t g_cache_once = PTHREAD_ONCE_INIT;

static void drop_header_cache(void *p) {
  thread_headers *h = p;
  tls_headers = NULL; /* a header freed later in thread exit makes a fresh cache */
  while (h->n_free > 0) sg__free(h->free[--h->n_free]);
  sg__free(h);
}
static void make_cache_key(void) { pthread_key_create(&g_cache_key, drop_header_cache); }

/* NULL only when even this small block cannot be allocated: then headers go to malloc. */
static thread_headers *my_headers(void) {
  thread_headers *h = tls_headers;
  if (__builtin_expect(h != NULL, 1)) return h;
  h = sg__calloc(1, sizeof *h);
  if (!h) return NULL;
  pthread_once(&g_cache_once, make_cache_key);
  pthread_setspecific(g_cache_key, h);
  return tls_headers = h;
}

static uint64_t next_id(thread_headers *h) {
  if (!h) return atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
  if (__builtin_expect(h->next_id == h->end_id, 0)) {
    h->next_id = atomic_fetch_add_explicit(&g_next_id, ID_BLOCK, memory_order_relaxed);
    h->end_id = h->next_id + ID_BLOCK;
  }
  return h->next_id++;
}

static sg_tensor *header_alloc(thread_headers *h) {
  if (h && h->n_free > 0) return h->free[--h->n_free];
  return sg__malloc(sizeof(sg_tensor));
}

static void header_free(sg_tensor *t) {
  thread_headers *h = my_headers();
  if (h && h->n_free < HEADER_CACHE_MAX)
    h->free[h->n_free++] = t;
  else
    sg__free(t);
}

/* A header around storage s (whose reference this call takes over), tracked by the scope. */
static sg_tensor *wrap(sg_storage *s, sg_dtype dtype, const int64_t *shape, int rank,
                       int64_t numel) {
  thread_headers *h = my_headers();
  sg_tensor *t = header_alloc(h);
  if (!t || !sg__count_tensor(1)) {
    if (t) header_free(t);
    sg__storage_release(s);
    sg__oom(NULL, "a tensor header");
    return NULL;
  }
  t->magic = SG_TENSOR_LIVE;
  t->dtype = dtype;
  t->rank = rank;
  atomic_init(&t->refs, 1);
  for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
  for (int i = rank; i < SG_MAX_RANK; i++) t->shape[i] = 1;
  t->numel = numel;
  t->id = next_id(h);
  t->storage = s;
  t->data = s->data;
  t->owner = NULL;
  t->scope_slot = 0;
  if (!sg__scope_track(t)) {
    sg__tensor_free(t);
    return NULL;
  }
  return t;
}

sg_tensor *sg__new(sg_dtype dtype, const int64_t *shape, int rank) {
  /* Whatever op made the shape: an output can combine the large sizes of empty inputs into
     sizes whose product overflows (matmul broadcasting [2^51, 0, k] batches, found by
     tests/fuzz/fuzz_api). */
  int64_t numel = 0;
  if (!sg__check_shape(shape, rank, NULL, &numel)) return NULL;
  sg_storage *s = sg__storage_new((size_t)numel * sg__dtype_size(dtype));
  if (!s) {
    char buf[SG_SHAPE_STR_MAX];
    sg__oom(NULL, "a %s tensor of shape %s", sg__dtype_name(dtype),
            sg__shape_str(shape, rank, buf, sizeof buf));
    return NULL;
  }
  return wrap(s, dtype, shape, rank, numel);
}

sg_tensor *sg__new_zeros(sg_dtype dtype, const int64_t *shape, int rank) {
  sg_tensor *t = sg__new(dtype, shape, rank);
  if (t) memset(t->data, 0, (size_t)t->numel * sg__dtype_size(dtype));
  return t;
}

sg_tensor *sg__view(sg_tensor *src, const int64_t *shape, int rank) {
  atomic_fetch_add_explicit(&src->storage->refs, 1, memory_order_relaxed);
  return wrap(src->storage, src->dtype, shape, rank, src->numel);
}

sg_tensor *sg__copy(const sg_tensor *src) {
  sg_tensor *t = sg__new(src->dtype, src->shape, src->rank);
  if (t) memcpy(t->data, src->data, (size_t)src->numel * sg__dtype_size(src->dtype));
  return t;
}

void sg__tensor_free(sg_tensor *t) {
  t->magic = SG_TENSOR_DEAD;
  sg__storage_release(t->storage);
  sg__count_tensor(-1);
  header_free(t);
}

void sg__release(sg_tensor *t) {
  /* Holding the only reference, no other thread can touch the count: skip the atomic. */
  if (atomic_load_explicit(&t->refs, memory_order_acquire) == 1 ||
      atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1)
    sg__tensor_free(t);
}

void sg_dispose(sg_tensor *t) {
  if (!t) return;
  if (t->magic != SG_TENSOR_LIVE) {
    sg__error(SG_ERR_STATE, "dispose", "tensor was already disposed");
    return;
  }
  if (t->owner && !sg__scope_untrack(t)) return;
  sg__release(t);
}

sg_tensor *sg_keep(sg_tensor *t) {
  if (!sg__check(t, "keep", "t")) return NULL;
  if (t->owner) sg__scope_untrack(t);
  return t;
}

sg_tensor *sg_retain(sg_tensor *t) {
  if (!sg__check(t, "retain", "t")) return NULL;
  atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
  return t;
}

/* ---- The caller's memory ---- */

/* Once the arguments are in, the deleter runs exactly once whatever happens: here on failure,
   else with the last reference (wrap() releases the storage if the header fails). */
sg_tensor *sg__wrap_user(void *data, sg_dtype dtype, const int64_t *shape, int rank,
                         sg_deleter deleter, void *ctx, const char *op) {
  sg__ensure_init();
  int64_t numel = 0;
  size_t size = sg__dtype_size(dtype);
  bool ok = sg__check_shape(shape, rank, op, &numel);
  if (ok && !data && numel > 0) {
    sg__error(SG_ERR_ARG, op, "data is NULL for %lld elements", (long long)numel);
    ok = false;
  }
  if (ok && (uintptr_t)data % size != 0) {
    sg__error(SG_ERR_ARG, op, "data %p is not aligned to its %zu-byte %s elements", data, size,
              sg__dtype_name(dtype));
    ok = false;
  }
  sg_storage *s = ok ? sg__storage_wrap(data, (size_t)numel * size, deleter, ctx) : NULL;
  if (ok && !s) sg__error(SG_ERR_OOM, op, "out of memory for a tensor header");
  if (!s) {
    if (deleter) deleter(data, ctx);
    return NULL;
  }
  return wrap(s, dtype, shape, rank, numel);
}

sg_tensor *sg_tensor_wrap_f32(float *data, const int64_t *shape, int rank, sg_deleter deleter,
                              void *ctx) {
  return sg__wrap_user(data, SG_F32, shape, rank, deleter, ctx, "tensor_wrap_f32");
}

sg_tensor *sg_tensor_wrap_i32(int32_t *data, const int64_t *shape, int rank, sg_deleter deleter,
                              void *ctx) {
  return sg__wrap_user(data, SG_I32, shape, rank, deleter, ctx, "tensor_wrap_i32");
}

/* Writable only when no one else can see a change: the one reference (so no tape saved it and
   no one retained it) on storage no other tensor shares (no view of it, nor it of another). */
float *sg_data_f32_mut(sg_tensor *t) {
  const char *op = "data_f32_mut";
  if (!sg__check(t, op, "t")) return NULL;
  if (t->dtype != SG_F32) {
    sg__error(SG_ERR_DTYPE, op, "t is %s, not f32", sg__dtype_name(t->dtype));
    return NULL;
  }
  if (t->storage->read_only) {
    sg__error(SG_ERR_STATE, op,
              "t wraps a buffer its DLPack producer marked read-only; copy its data into a "
              "tensor of your own (sg_tensor_f32) to write");
    return NULL;
  }
  int refs = atomic_load_explicit(&t->refs, memory_order_acquire);
  long shared = atomic_load_explicit(&t->storage->refs, memory_order_acquire) - 1;
  if (refs == 1 && shared == 0) return t->data;
  int on_t, on_s;
  sg__tape_holds(t, &on_t, &on_s);
  if (on_t > 0)
    sg__error(SG_ERR_STATE, op,
              "t is saved by the open tape for the backward pass; it may change only after "
              "sg_tape_end");
  else if (refs > 1)
    sg__error(SG_ERR_STATE, op,
              "t has %d references (sg_retain, or a tape on another thread that saved it); it "
              "may change only while it has one",
              refs);
  else if (on_s > 0)
    sg__error(SG_ERR_STATE, op,
              "t shares its storage with a tensor the open tape saved for the backward pass");
  else
    sg__error(SG_ERR_STATE, op,
              "t shares its storage with %ld other live tensor%s (a view such as sg_reshape "
              "makes, or the tensor t is a view of)",
              shared, shared == 1 ? "" : "s");
  return NULL;
}

/* ---- Accessors ---- */

int sg_rank(const sg_tensor *t) { return sg__check(t, "rank", "t") ? t->rank : -1; }
const int64_t *sg_shape(const sg_tensor *t) { return sg__check(t, "shape", "t") ? t->shape : NULL; }
int64_t sg_numel(const sg_tensor *t) { return sg__check(t, "numel", "t") ? t->numel : -1; }
sg_dtype sg_dtype_of(const sg_tensor *t) {
  return sg__check(t, "dtype_of", "t") ? t->dtype : SG_F32;
}
const float *sg_data_f32(const sg_tensor *t) {
  return sg__check(t, "data_f32", "t") && t->dtype == SG_F32 ? t->data : NULL;
}
const int32_t *sg_data_i32(const sg_tensor *t) {
  return sg__check(t, "data_i32", "t") && t->dtype == SG_I32 ? t->data : NULL;
}
const uint8_t *sg_data_bool(const sg_tensor *t) {
  return sg__check(t, "data_bool", "t") && t->dtype == SG_BOOL ? t->data : NULL;
}
