/* The per-thread engine context and error reporting. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* The context lives on the heap, reached through one initial-exec TLS pointer. Initial-exec
   because in the shared library a plain _Thread_local access is a call to __tls_get_addr (about
   15 of them per op before); on the heap because with any initial-exec variable the library's
   whole TLS block must fit the few hundred bytes glibc keeps for libraries loaded by dlopen
   (Python's ctypes after torch, say), and a context is 4 KiB. */
static _Thread_local sg_ctx *tls_ctx __attribute__((tls_model("initial-exec")));
static pthread_key_t g_ctx_key;
static pthread_once_t g_ctx_once = PTHREAD_ONCE_INIT;
/* Only when a context cannot be allocated: the thread keeps it for good (a context made later
   would not know the scopes or tape opened on this one), and threads in that state share it
   (their errors and scopes may mix), which beats crashing a program that is out of memory
   anyway. It keeps no spare tape block (sg__ctx_keeps_spares), so that nothing of a thread
   that used it outlives the thread. */
static sg_ctx g_oom_ctx;

bool sg__ctx_keeps_spares(const sg_ctx *c) { return c != &g_oom_ctx; }

static void ctx_free(void *p) {
  sg_ctx *c = p;
  tls_ctx = NULL; /* work later in thread exit makes a fresh one */
  sg__free(c->tracked);
  sg__free(c->spare_nodes);
  sg__free(c);
}
static void make_ctx_key(void) { pthread_key_create(&g_ctx_key, ctx_free); }

static sg_ctx *ctx_attach(void) {
  sg_ctx *c = sg__calloc(1, sizeof *c);
  if (!c) return tls_ctx = &g_oom_ctx;
  pthread_once(&g_ctx_once, make_ctx_key);
  pthread_setspecific(g_ctx_key, c);
  tls_ctx = c;
  return c;
}

sg_ctx *sg__ctx(void) {
  sg_ctx *c = tls_ctx;
  return __builtin_expect(c != NULL, 1) ? c : ctx_attach();
}

static sg_status set_error(sg_status st, const char *op, const char *scope, const char *fmt,
                           va_list ap) {
  sg_ctx *c = sg__ctx();
  char msg[768];
  vsnprintf(msg, sizeof msg, fmt, ap);
  const char *sep = op ? ": " : "";
  if (scope && scope[0])
    snprintf(c->error, sizeof c->error, "%s%s%s in scope \"%s\"", op ? op : "", sep, msg, scope);
  else
    snprintf(c->error, sizeof c->error, "%s%s%s", op ? op : "", sep, msg);
  c->status = st;
  return st;
}

sg_status sg__error(sg_status st, const char *op, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error(st, op, sg__ctx()->path, fmt, ap);
  va_end(ap);
  return st;
}

sg_status sg__error_at(sg_status st, const char *op, const char *scope, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error(st, op, scope, fmt, ap);
  va_end(ap);
  return st;
}

sg_status sg_set_error(sg_status st, const char *where, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  set_error(st, where, sg__ctx()->path, fmt ? fmt : "", ap);
  va_end(ap);
  return st;
}

sg_status sg_last_status(void) { return sg__ctx()->status; }
const char *sg_last_error(void) { return sg__ctx()->error; }
void sg_clear_error(void) {
  sg_ctx *c = sg__ctx();
  c->status = SG_OK;
  c->error[0] = '\0';
}

char *sg__shape_str(const int64_t *shape, int rank, char *buf, size_t size) {
  size_t used = 0;
  used += (size_t)snprintf(buf, size, "[");
  for (int i = 0; i < rank && used < size; i++)
    used += (size_t)snprintf(buf + used, size - used, i ? ",%lld" : "%lld", (long long)shape[i]);
  if (used < size) snprintf(buf + used, size - used, "]");
  return buf;
}

const char *sg__dtype_name(sg_dtype d) {
  switch (d) {
  case SG_F32:
    return "f32";
  case SG_I32:
    return "i32";
  case SG_BOOL:
    return "bool";
  }
  return "unknown";
}

bool sg__check(const sg_tensor *t, const char *op, const char *arg) {
  if (!t) {
    if (sg__ctx()->status == SG_OK) sg__error(SG_ERR_ARG, op, "argument '%s' is NULL", arg);
    return false;
  }
  if (t->magic != SG_TENSOR_LIVE) {
    sg__error(SG_ERR_STATE, op, "argument '%s' is a disposed tensor", arg);
    return false;
  }
  return true;
}

bool sg__check_f32(const sg_tensor *t, const char *op, const char *arg) {
  if (!sg__check(t, op, arg)) return false;
  if (t->dtype != SG_F32) {
    sg__error(SG_ERR_DTYPE, op, "argument '%s' must be f32, got %s", arg, sg__dtype_name(t->dtype));
    return false;
  }
  return true;
}

bool sg__check_shape(const int64_t *shape, int rank, const char *op, int64_t *numel) {
  if (rank < 0 || rank > SG_MAX_RANK) {
    sg__error(SG_ERR_SHAPE, op, "rank %d is outside [0, %d]", rank, SG_MAX_RANK);
    return false;
  }
  if (rank > 0 && !shape) {
    sg__error(SG_ERR_ARG, op, "shape is NULL for rank %d", rank);
    return false;
  }
  /* Byte sizes must fit in int64 with room for the largest element (4 bytes). So must the
     product of the nonzero sizes: the ops compute strides and row lengths of an empty tensor
     too, and a [0, 2^62, 4] tensor overflowed them (tests/fuzz found it in concat). */
  const int64_t limit = INT64_MAX / 8;
  int64_t n = 1, nonzero = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) {
      char s[SG_SHAPE_STR_MAX];
      sg__error(SG_ERR_SHAPE, op, "negative dimension %lld at axis %d of shape %s",
                (long long)shape[i], i, sg__shape_str(shape, rank, s, sizeof s));
      return false;
    }
    if (shape[i] != 0 && nonzero > limit / shape[i]) {
      char s[SG_SHAPE_STR_MAX];
      sg__error(SG_ERR_SHAPE, op, "shape %s has %s than fit in memory",
                sg__shape_str(shape, rank, s, sizeof s),
                n == 0 ? "nonzero sizes whose product is more elements" : "more elements");
      return false;
    }
    if (shape[i] != 0) nonzero *= shape[i];
    n *= shape[i];
  }
  if (numel) *numel = n;
  return true;
}

bool sg__norm_axis(int axis, const sg_tensor *t, const char *op, const char *arg, int *out) {
  int a = axis < 0 ? axis + t->rank : axis;
  if (a < 0 || a >= t->rank) {
    char buf[SG_SHAPE_STR_MAX];
    sg__error(SG_ERR_ARG, op, "axis %d is out of range for %s of shape %s", axis, arg,
              sg__shape_str(t->shape, t->rank, buf, sizeof buf));
    return false;
  }
  *out = a;
  return true;
}
