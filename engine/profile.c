/* The profiler's recorder: the session (sg_profile_begin/end), one call record per thread, the
 * hooks the op frame and the tape call, and gathering the threads' records into a profile.
 *
 * Each thread appends to its own record under its own mutex, which only sg_profile_end ever
 * contends for, so threads do not serialise on each other while profiling. A record belongs to
 * one session (gen); a thread's first call in a new session resets it. Every reset bumps the
 * record's epoch, and an op remembers the epoch it opened its call in, so an op still running
 * on another thread when the session ends cannot write into a record that moved on. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime and CLOCK_MONOTONIC under clang -std=c11 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/profile.h"

#define MAX_DEPTH 64    /* calls nested deeper are dropped (counted) */
#define RECENT_SCOPES 8 /* scope strings a thread compares before copying a new one */
#define CHUNK_BYTES 4096
/* Records a thread starts with and keeps between sessions: small enough (about 45 and 180 KB)
   for malloc to serve from its heap, since fresh pages cost 10+ us each to fault in here. */
#define FIRST_RECORDS 64
#define KEEP_RECORDS 256

atomic_bool sg__profiling;

typedef struct rec {
  sg_profile_call c; /* start_ns absolute; bytes and tensors absolute until the call ends;
                        kernel names the kernel family until gathered */
  bool grad;         /* a gradient function: its kernel family gets "_backward" */
} rec;

typedef struct tbuf {
  struct tbuf *next; /* g_bufs */
  pthread_mutex_t lock;
  uint32_t gen;   /* session whose calls this holds; 0 after gathering */
  uint32_t epoch; /* bumped at every reset */
  bool exited;    /* the thread is gone: free after gathering */
  int thread;     /* order of first call in the session */
  rec *recs;
  size_t n, cap;
  int32_t stack[MAX_DEPTH]; /* open calls, innermost last */
  int sp;
  sg__strchunk *strings; /* the scope paths the calls point at */
  const char *recent[RECENT_SCOPES];
  int recent_next;
  int64_t dropped;
} tbuf;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* session changes, g_bufs */
static tbuf *g_bufs;
static atomic_uint g_gen; /* the current (or last) session; 0 before the first */
static atomic_int g_threads;
static uint64_t g_t0; /* session start, under g_lock */
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_key; /* marks a thread's record exited when the thread ends */
static _Thread_local tbuf *tls_buf;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- Strings ------------------------------------------------------------------------------- */

static const char *chunk_strdup(sg__strchunk **head, const char *s, size_t len) {
  sg__strchunk *c = *head;
  if (!c || c->cap - c->used < len + 1) {
    size_t cap = len + 1 > CHUNK_BYTES ? len + 1 : CHUNK_BYTES;
    c = malloc(sizeof *c + cap);
    if (!c) return NULL;
    c->used = 0;
    c->cap = cap;
    c->next = *head;
    *head = c;
  }
  char *out = c->text + c->used;
  memcpy(out, s, len);
  out[len] = '\0';
  c->used += len + 1;
  return out;
}

static void chunks_free(sg__strchunk *c) {
  while (c) {
    sg__strchunk *next = c->next;
    free(c);
    c = next;
  }
}

const char *sg__profile_strdup(sg_profile *p, const char *s, size_t len) {
  return chunk_strdup(&p->strings, s, len);
}

/* The scope path as a string that outlives this call; paths repeat, so recent ones are reused. */
static const char *intern_scope(tbuf *b, const char *path) {
  for (int i = 0; i < RECENT_SCOPES; i++)
    if (b->recent[i] && strcmp(b->recent[i], path) == 0) return b->recent[i];
  const char *s = chunk_strdup(&b->strings, path, strlen(path));
  if (s) {
    b->recent[b->recent_next] = s;
    b->recent_next = (b->recent_next + 1) % RECENT_SCOPES;
  }
  return s;
}

/* ---- Per-thread records ------------------------------------------------------------------ */

static void thread_exit(void *arg) {
  tbuf *b = arg;
  pthread_mutex_lock(&b->lock);
  b->exited = true;
  pthread_mutex_unlock(&b->lock);
}

static void make_key(void) { pthread_key_create(&g_key, thread_exit); }

static void reset(tbuf *b, uint32_t gen) {
  b->gen = gen;
  b->epoch++;
  b->n = 0;
  b->sp = 0;
  chunks_free(b->strings);
  b->strings = NULL;
  memset(b->recent, 0, sizeof b->recent);
  b->recent_next = 0;
  b->dropped = 0;
  b->thread = atomic_fetch_add(&g_threads, 1);
}

/* This thread's record, locked and set for the current session; NULL if it cannot be made. */
static tbuf *lock_current(void) {
  tbuf *b = tls_buf;
  if (!b) {
    b = calloc(1, sizeof *b);
    if (!b) return NULL;
    pthread_mutex_init(&b->lock, NULL);
    pthread_once(&g_key_once, make_key);
    pthread_setspecific(g_key, b);
    pthread_mutex_lock(&g_lock);
    b->next = g_bufs;
    g_bufs = b;
    pthread_mutex_unlock(&g_lock);
    tls_buf = b;
  }
  pthread_mutex_lock(&b->lock);
  uint32_t gen = atomic_load_explicit(&g_gen, memory_order_acquire);
  if (b->gen != gen) reset(b, gen);
  return b;
}

/* The open call of op in this thread's record, with the record locked; NULL (unlocked) when the
   call was dropped or its record moved on to another session. */
static rec *lock_call(const sg_op *op, tbuf **out) {
  tbuf *b = tls_buf;
  if (!b || op->prof_call < 0) return NULL;
  pthread_mutex_lock(&b->lock);
  if (b->epoch != op->prof_gen || (size_t)op->prof_call >= b->n) {
    pthread_mutex_unlock(&b->lock);
    return NULL;
  }
  *out = b;
  return &b->recs[op->prof_call];
}

static void set_shape(sg_profile_shape *s, const int64_t *dims, int rank) {
  s->rank = rank;
  memcpy(s->dims, dims, (size_t)rank * sizeof *dims);
}

/* Opens a call on this thread. scope NULL: the current scope path. A call nested in another
   takes its scope, and its phase when that one is backward. */
static void open_call(sg_op *op, const char *name, const char *kernel, const char *scope,
                      sg_profile_phase phase, bool grad) {
  sg_memory_info m = sg_memory();
  const char *backend = sg__backend()->name;
  op->prof = false;
  tbuf *b = lock_current();
  if (!b) return;
  op->prof = true;
  op->prof_gen = b->epoch;
  op->prof_call = -1;
  if (b->sp >= MAX_DEPTH) goto drop;
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : FIRST_RECORDS;
    rec *grown = realloc(b->recs, cap * sizeof *grown);
    if (!grown) goto drop;
    b->recs = grown;
    b->cap = cap;
  }
  int32_t parent = b->sp ? b->stack[b->sp - 1] : -1;
  rec *r = &b->recs[b->n];
  memset(r, 0, sizeof *r);
  if (parent >= 0) {
    r->c.scope = b->recs[parent].c.scope;
    if (b->recs[parent].c.phase == SG_PROFILE_BACKWARD) phase = SG_PROFILE_BACKWARD;
  } else {
    r->c.scope = intern_scope(b, scope ? scope : sg__ctx()->path);
    if (!r->c.scope) goto drop;
  }
  r->c.op = name;
  r->c.kernel = kernel;
  r->c.backend = backend;
  r->c.phase = phase;
  r->c.thread = b->thread;
  r->c.depth = b->sp;
  r->c.parent = parent;
  r->c.n_inputs = -1;
  r->c.bytes = m.num_bytes;
  r->c.tensors = m.num_tensors;
  sg__thread_allocations(&r->c.alloc_tensors, &r->c.alloc_bytes);
  r->grad = grad;
  op->prof_call = (int32_t)b->n;
  b->stack[b->sp++] = (int32_t)b->n;
  b->n++;
  r->c.start_ns = now_ns(); /* last, so the bookkeeping above is not timed */
  pthread_mutex_unlock(&b->lock);
  return;
drop:
  b->dropped++;
  pthread_mutex_unlock(&b->lock);
}

void sg__profile_op_begin(sg_op *op) {
  open_call(op, op->name, op->name, NULL, SG_PROFILE_FORWARD, false);
}

void sg__profile_grad_begin(sg_op *frame, const sg_node *node, const sg_tensor *dy) {
  frame->name = node->op;
  frame->record = false;
  frame->t0 = 0;
  open_call(frame, node->op, node->op, node->scope, SG_PROFILE_BACKWARD, true);
  if (frame->prof && dy) sg__profile_inputs(frame, (sg_tensor *const *)&dy, 1);
}

void sg__profile_work_begin(sg_op *frame, const char *op, const char *kernel) {
  frame->name = op;
  frame->record = false;
  frame->t0 = 0;
  open_call(frame, op, kernel, NULL, SG_PROFILE_FORWARD, false);
}

void sg__profile_inputs(sg_op *op, sg_tensor *const *inputs, int n) {
  tbuf *b;
  rec *r = lock_call(op, &b);
  if (!r) return;
  r->c.n_inputs = n;
  for (int i = 0; i < n && i < SG_PROFILE_MAX_SHAPES; i++)
    if (inputs[i]) set_shape(&r->c.inputs[i], inputs[i]->shape, inputs[i]->rank);
  pthread_mutex_unlock(&b->lock);
}

void sg__profile_grad_outputs(sg_op *frame, sg_tensor *const *dx, int n) {
  tbuf *b;
  rec *r = lock_call(frame, &b);
  if (!r) return;
  for (int i = 0; i < n; i++) {
    if (!dx[i]) continue;
    if (r->c.n_outputs < SG_PROFILE_MAX_SHAPES)
      set_shape(&r->c.outputs[r->c.n_outputs], dx[i]->shape, dx[i]->rank);
    r->c.n_outputs++;
  }
  pthread_mutex_unlock(&b->lock);
}

static void close_open(tbuf *b, int32_t idx, uint64_t t, const sg_memory_info *m) {
  rec *r = &b->recs[idx];
  r->c.duration_ns = t - r->c.start_ns;
  r->c.bytes = m->num_bytes - r->c.bytes;
  r->c.tensors = m->num_tensors - r->c.tensors;
  int64_t tensors, bytes;
  sg__thread_allocations(&tensors, &bytes);
  r->c.alloc_tensors = tensors - r->c.alloc_tensors;
  r->c.alloc_bytes = bytes - r->c.alloc_bytes;
}

void sg__profile_op_end(sg_op *op, const sg_tensor *out, bool failed) {
  uint64_t t = now_ns(); /* first, so the bookkeeping below is not timed */
  sg_memory_info m = sg_memory();
  op->prof = false;
  tbuf *b;
  rec *r = lock_call(op, &b);
  if (!r) return;
  close_open(b, op->prof_call, t, &m);
  r->c.failed = failed;
  if (out && r->c.n_outputs == 0) {
    r->c.n_outputs = 1;
    set_shape(&r->c.outputs[0], out->shape, out->rank);
  }
  /* Pop this call, and any call nested in it that was left open (none should be). */
  while (b->sp > 0 && b->stack[--b->sp] != op->prof_call) {
  }
  pthread_mutex_unlock(&b->lock);
}

/* ---- Sessions --------------------------------------------------------------------------- */

/* Frees the records of threads that have ended. Under g_lock, with no session running (or
   after gathering it), so none holds calls still wanted. */
static void prune_exited(void) {
  for (tbuf **pb = &g_bufs; *pb;) {
    tbuf *b = *pb;
    pthread_mutex_lock(&b->lock);
    bool gone = b->exited;
    pthread_mutex_unlock(&b->lock);
    if (!gone) {
      pb = &b->next;
      continue;
    }
    *pb = b->next;
    pthread_mutex_destroy(&b->lock);
    chunks_free(b->strings);
    free(b->recs);
    free(b);
  }
}

sg_status sg_profile_begin(void) {
  sg__ensure_init();
  pthread_mutex_lock(&g_lock);
  if (sg__profile_on()) {
    pthread_mutex_unlock(&g_lock);
    return sg__error(SG_ERR_STATE, "profile_begin",
                     "a profile is already running (profiles do not nest)");
  }
  prune_exited();
  atomic_store(&g_threads, 0);
  g_t0 = now_ns();
  atomic_fetch_add_explicit(&g_gen, 1, memory_order_release);
  atomic_store(&sg__profiling, true);
  pthread_mutex_unlock(&g_lock);
  return SG_OK;
}

bool sg_profile_active(void) { return sg__profile_on(); }

/* "matmul_backward/avx512": one string per distinct kernel, backend and direction. */
typedef struct kernel_name {
  const char *family, *backend, *text;
  bool grad;
} kernel_name;

static const char *kernel_string(sg_profile *p, kernel_name **names, size_t *n, size_t *cap,
                                 const rec *r) {
  for (size_t i = 0; i < *n; i++) {
    kernel_name *k = &(*names)[i];
    if (k->family == r->c.kernel && k->backend == r->c.backend && k->grad == r->grad)
      return k->text;
  }
  char buf[256];
  int len =
      snprintf(buf, sizeof buf, "%s%s/%s", r->c.kernel, r->grad ? "_backward" : "", r->c.backend);
  if (len < 0) return NULL;
  const char *text = sg__profile_strdup(p, buf, (size_t)len < sizeof buf ? (size_t)len : 255);
  if (!text) return NULL;
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 16;
    kernel_name *grown = realloc(*names, c * sizeof *grown);
    if (!grown) return text;
    *names = grown;
    *cap = c;
  }
  (*names)[(*n)++] = (kernel_name){r->c.kernel, r->c.backend, text, r->grad};
  return text;
}

static int by_thread(const void *a, const void *b) {
  int ta = (*(tbuf *const *)a)->thread, tb = (*(tbuf *const *)b)->thread;
  return (ta > tb) - (ta < tb);
}

/* Moves the session's calls from the threads' records into p (p NULL: just discards them).
   Under g_lock. Returns false on OOM. */
static bool gather(sg_profile *p, uint32_t gen, uint64_t t_end) {
  sg_memory_info m = sg_memory();
  size_t n_bufs = 0, total = 0;
  for (tbuf *b = g_bufs; b; b = b->next) n_bufs++;
  tbuf **bufs = malloc((n_bufs ? n_bufs : 1) * sizeof *bufs);
  bool ok = bufs != NULL && p != NULL;
  size_t n_mine = 0;
  for (tbuf *b = g_bufs; b; b = b->next) {
    pthread_mutex_lock(&b->lock); /* held until the calls are moved out */
    if (b->gen == gen && bufs) {
      bufs[n_mine++] = b;
      total += b->n;
    } else {
      pthread_mutex_unlock(&b->lock);
    }
  }
  if (ok) {
    qsort(bufs, n_mine, sizeof *bufs, by_thread);
    p->calls = malloc((total ? total : 1) * sizeof *p->calls);
    ok = p->calls != NULL;
  }
  kernel_name *names = NULL;
  size_t n_names = 0, cap_names = 0;
  int64_t off = 0;
  for (size_t k = 0; k < n_mine; k++) {
    tbuf *b = bufs[k];
    for (int s = 0; s < b->sp; s++) { /* still running on that thread: end them here */
      close_open(b, b->stack[s], t_end, &m);
      b->recs[b->stack[s]].c.unfinished = true;
      /* another thread's allocation counters cannot be read from here */
      b->recs[b->stack[s]].c.alloc_bytes = b->recs[b->stack[s]].c.alloc_tensors = 0;
    }
    for (size_t i = 0; ok && i < b->n; i++) {
      sg_profile_call *c = &p->calls[off + (int64_t)i];
      *c = b->recs[i].c;
      c->thread = p->n_threads;
      if (c->parent >= 0) c->parent += off;
      c->start_ns -= g_t0;
      c->kernel = kernel_string(p, &names, &n_names, &cap_names, &b->recs[i]);
      ok = c->kernel != NULL;
    }
    if (ok) {
      off += (int64_t)b->n;
      p->n_threads += b->n > 0;
      p->dropped += b->dropped;
      /* The calls point at these scope strings: the profile takes them. */
      sg__strchunk **tail = &b->strings;
      while (*tail) tail = &(*tail)->next;
      *tail = p->strings;
      p->strings = b->strings;
      b->strings = NULL;
    }
    b->gen = 0;
    b->epoch++;
    b->n = 0;
    b->sp = 0;
    memset(b->recent, 0, sizeof b->recent);
    if (b->cap > KEEP_RECORDS) { /* a long profile's worth is not kept for the next one */
      free(b->recs);
      b->recs = NULL;
      b->cap = 0;
    }
    pthread_mutex_unlock(&b->lock);
  }
  free(names);
  free(bufs);
  if (ok) p->n_calls = off;
  return ok;
}

sg_profile *sg_profile_end(void) {
  pthread_mutex_lock(&g_lock);
  if (!sg__profile_on()) {
    pthread_mutex_unlock(&g_lock);
    sg__error(SG_ERR_STATE, "profile_end", "no profile is running");
    return NULL;
  }
  uint64_t t_end = now_ns();
  atomic_store(&sg__profiling, false);
  sg_profile *p = calloc(1, sizeof *p);
  if (p) p->wall_ns = t_end - g_t0;
  bool ok = gather(p, atomic_load(&g_gen), t_end);
  prune_exited();
  pthread_mutex_unlock(&g_lock);
  if (ok) ok = sg__profile_aggregate(p);
  if (!ok) {
    sg_profile_free(p);
    sg__error(SG_ERR_OOM, "profile_end", "out of memory building the profile");
    return NULL;
  }
  return p;
}

void sg_profile_free(sg_profile *p) {
  if (!p) return;
  free(p->calls);
  free(p->nodes);
  free(p->ops);
  chunks_free(p->strings);
  free(p);
}

/* ---- Accessors ------------------------------------------------------------------------- */

int64_t sg_profile_num_calls(const sg_profile *p) { return p ? p->n_calls : 0; }
const sg_profile_call *sg_profile_call_at(const sg_profile *p, int64_t i) {
  return p && i >= 0 && i < p->n_calls ? &p->calls[i] : NULL;
}
int64_t sg_profile_num_nodes(const sg_profile *p) { return p ? p->n_nodes : 0; }
const sg_profile_node *sg_profile_node_at(const sg_profile *p, int64_t i) {
  return p && i >= 0 && i < p->n_nodes ? &p->nodes[i] : NULL;
}
int64_t sg_profile_num_ops(const sg_profile *p) { return p ? p->n_ops : 0; }
const sg_profile_op_stats *sg_profile_op_at(const sg_profile *p, int64_t i) {
  return p && i >= 0 && i < p->n_ops ? &p->ops[i] : NULL;
}
int sg_profile_num_threads(const sg_profile *p) { return p ? p->n_threads : 0; }
uint64_t sg_profile_wall_ns(const sg_profile *p) { return p ? p->wall_ns : 0; }
int64_t sg_profile_dropped(const sg_profile *p) { return p ? p->dropped : 0; }
