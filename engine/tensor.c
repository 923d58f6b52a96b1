/* Tensor headers: creation, views, reference counting, disposal and the accessors. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

static atomic_ullong g_next_id = 1;

size_t sg__dtype_size(sg_dtype d) { return d == SG_BOOL ? 1 : 4; }

/* Headers are recycled through a small per-thread cache, so a disposed header stays readable
   (magic SG_TENSOR_DEAD) until it is reused: that is what lets an op report a disposed input
   instead of reading freed memory, and it spares malloc on the op path. */
#define HEADER_CACHE_MAX 256
static _Thread_local sg_tensor *tls_free_headers[HEADER_CACHE_MAX];
static _Thread_local int tls_n_free_headers;
static pthread_key_t g_cache_key;
static pthread_once_t g_cache_once = PTHREAD_ONCE_INIT;

static void drop_header_cache(void *unused) {
  (void)unused;
  while (tls_n_free_headers > 0) free(tls_free_headers[--tls_n_free_headers]);
}
static void make_cache_key(void) { pthread_key_create(&g_cache_key, drop_header_cache); }

static sg_tensor *header_alloc(void) {
  if (tls_n_free_headers > 0) return tls_free_headers[--tls_n_free_headers];
  return malloc(sizeof(sg_tensor));
}

static void header_free(sg_tensor *t) {
  if (tls_n_free_headers < HEADER_CACHE_MAX) {
    if (tls_n_free_headers == 0) {
      /* Arm the thread-exit hook that empties this thread's cache. */
      pthread_once(&g_cache_once, make_cache_key);
      pthread_setspecific(g_cache_key, (void *)1);
    }
    tls_free_headers[tls_n_free_headers++] = t;
  } else {
    free(t);
  }
}

/* A header around storage s (whose reference this call takes over), tracked by the scope. */
static sg_tensor *wrap(sg_storage *s, sg_dtype dtype, const int64_t *shape, int rank,
                       int64_t numel) {
  sg_tensor *t = header_alloc();
  if (!t) {
    sg__storage_release(s);
    sg__error(SG_ERR_OOM, NULL, "out of memory for a tensor header");
    return NULL;
  }
  t->magic = SG_TENSOR_LIVE;
  t->dtype = dtype;
  t->rank = rank;
  atomic_init(&t->refs, 1);
  for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
  for (int i = rank; i < SG_MAX_RANK; i++) t->shape[i] = 1;
  t->numel = numel;
  t->id = atomic_fetch_add_explicit(&g_next_id, 1, memory_order_relaxed);
  t->storage = s;
  t->data = s->data;
  t->owner = NULL;
  t->scope_slot = 0;
  sg__count_tensor(1);
  if (!sg__scope_track(t)) {
    sg__tensor_free(t);
    return NULL;
  }
  return t;
}

sg_tensor *sg__new(sg_dtype dtype, const int64_t *shape, int rank) {
  int64_t numel = 1;
  for (int i = 0; i < rank; i++) numel *= shape[i];
  sg_storage *s = sg__storage_new((size_t)numel * sg__dtype_size(dtype));
  if (!s) {
    char buf[SG_SHAPE_STR_MAX];
    sg__error(SG_ERR_OOM, NULL, "out of memory for a %s tensor of shape %s", sg__dtype_name(dtype),
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
  if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) == 1) sg__tensor_free(t);
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
