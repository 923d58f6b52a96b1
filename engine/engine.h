/* The engine's internal interface: tensor layout, thread context, errors, the op frame and
 * the tape. Every op file includes this; nothing outside the library does.
 *
 * How an op is written (see engine/op_unary.c for the pattern):
 *
 *   sg_tensor *sg_exp(sg_tensor *x) {
 *     sg_op op;
 *     if (!sg__op_begin(&op, "exp") || !sg__check_f32(x, "exp", "x")) return sg__op_fail(&op);
 *     sg_tensor *y = sg__new(SG_F32, x->shape, x->rank);      // tracked by the scope
 *     if (!y) return sg__op_fail(&op);
 *     ... sg__backend()->exp(x->data, y->data, n) through sg__parallel_for ...
 *     sg_node *node = sg__record(&op, exp_grad, &x, 1, y);   // NULL unless a tape records
 *     if (node) sg__save(node, y);                           // what the backward needs
 *     return sg__op_end(&op, y);                              // debug log + NaN scan
 *   }
 */
#ifndef SIMDGRAD_ENGINE_H
#define SIMDGRAD_ENGINE_H

#include <simdgrad/backend.h>
#include <simdgrad/simdgrad.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "engine/alloc.h"
#include "engine/cache_size.h"
#include "engine/unary_cost.h"

#define SG_TENSOR_LIVE 0x5347544eu /* "SGTN" */
#define SG_TENSOR_DEAD 0xdeadbeefu
#define SG_ALIGN 64

/* Shared, reference-counted storage: a reshape is a new tensor on the same storage. Engine
   storage sits in the first SG_ALIGN bytes of its own block; wrapped storage (the caller's
   buffer, sg_tensor_wrap_f32) is a separate header whose deleter runs with the last reference. */
typedef struct sg_storage {
  atomic_long refs;
  size_t bytes; /* capacity of the block (its allocator size class); 0 when wrapped */
  size_t used;  /* bytes the tensor asked for: what sg_memory() counts (not when wrapped) */
  void *data;
  sg_deleter deleter; /* wrapped only: called as deleter(data, deleter_ctx); may be NULL */
  void *deleter_ctx;
  bool wrapped;   /* data is the caller's memory, not the allocator's */
  bool read_only; /* wrapped only: its producer forbids writes (sg_data_f32_mut refuses) */
} sg_storage;
_Static_assert(sizeof(sg_storage) <= SG_ALIGN, "a storage header must fit before its data");

struct sg_ctx;

struct sg_tensor {
  uint32_t magic; /* SG_TENSOR_LIVE while any reference is held */
  sg_dtype dtype;
  int rank;
  atomic_int refs;
  int64_t shape[SG_MAX_RANK];
  int64_t numel;
  uint64_t id; /* unique for the process lifetime: the tape's name for this tensor */
  sg_storage *storage;
  void *data;           /* storage->data */
  struct sg_ctx *owner; /* thread whose scope tracks this tensor, NULL if untracked */
  size_t scope_slot;    /* index in owner's tracked list */
};

/* ---- Errors ---------------------------------------------------------------------------------- */

/* Sets the thread's error: "<op>: <message> in scope \"<path>\"" and returns NULL-friendly
   status. op may be NULL for engine-level errors. Always returns st. */
sg_status sg__error(sg_status st, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "[2,3]" into buf (at least 160 bytes is always enough). Returns buf. */
/* Like sg__error, but names the given scope path instead of the current one. */
sg_status sg__error_at(sg_status st, const char *op, const char *scope, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
char *sg__shape_str(const int64_t *shape, int rank, char *buf, size_t size);
#define SG_SHAPE_STR_MAX 160
const char *sg__dtype_name(sg_dtype d);

/* Input checks: each sets the error (keeping a pending one for NULL input) and returns false.
   sg__check: non-NULL and not disposed. _f32 also requires SG_F32. */
bool sg__check(const sg_tensor *t, const char *op, const char *arg);
bool sg__check_f32(const sg_tensor *t, const char *op, const char *arg);
/* Validates a user shape (rank range, non-negative dims, no overflow of the element count or
   byte size); on success writes the element count. */
bool sg__check_shape(const int64_t *shape, int rank, const char *op, int64_t *numel);
/* Normalises an axis of t (negative counts from the end) into [0, t's rank); false + an error
   naming arg and its shape if out of range. */
bool sg__norm_axis(int axis, const sg_tensor *t, const char *op, const char *arg, int *out);

/* ---- Tensors --------------------------------------------------------------------------------- */

size_t sg__dtype_size(sg_dtype d);
/* A new tensor with uninitialised storage, tracked by the innermost scope. Shape must already
   be valid (use sg__check_shape on user input). NULL + SG_ERR_OOM on failure. */
sg_tensor *sg__new(sg_dtype dtype, const int64_t *shape, int rank);
/* Same, zero-filled. */
sg_tensor *sg__new_zeros(sg_dtype dtype, const int64_t *shape, int rank);
/* A new tensor sharing src's storage with another shape of the same element count. */
sg_tensor *sg__view(sg_tensor *src, const int64_t *shape, int rank);
/* A deep copy (same shape and dtype). */
sg_tensor *sg__copy(const sg_tensor *src);
/* Drops one reference (no scope bookkeeping: for references the engine itself holds). */
void sg__release(sg_tensor *t);
/* Frees a header whose last reference is gone. */
void sg__tensor_free(sg_tensor *t);
/* Counts tensors made (+1) or freed (-1) on this thread; false when the thread's figures cannot
   be allocated (a new tensor must then fail). */
bool sg__count_tensor(int delta);
/* The calling thread's running totals of tensors made and storage bytes handed out (reuses of
   cached blocks included), for the profiler's per-call allocation figures. */
void sg__thread_allocations(int64_t *tensors, int64_t *bytes);
/* Scope tracking of a new tensor (false + SG_ERR_OOM if the list cannot grow), and removal
   (false + SG_ERR_STATE if t belongs to another thread's scope). */
bool sg__scope_track(sg_tensor *t);
bool sg__scope_untrack(sg_tensor *t);
static inline float *sg__f32(const sg_tensor *t) { return (float *)t->data; }
static inline bool sg__same_shape(const sg_tensor *a, const sg_tensor *b) {
  if (a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

/* ---- Backend, threads -------------------------------------------------------------------- */

/* The current backend; never NULL (initialises on first use). */
const sg_backend *sg__backend(void);
void sg__ensure_init(void);
/* "plain" or "staged": the loops the unary ops that have both run on (SIMDGRAD_UNARY_LOOPS, else
   the CPU's preference; kernels_simd/simd_unary.inc): AVX-512's exp and selu_backward, and
   AVX2's staged forward ops (SG_FOR_EACH_PLAIN_LOOP_OP, SG_FOR_EACH_PLAIN_BACKWARD_OP). */
const char *sg__unary_loops(void);

/* Splits [0, n) into chunks of `grain` (the last may be shorter) and calls fn(lo, hi, arg) on
   each, across threads when there is more than one chunk. Chunk boundaries depend on n and
   grain only, never on the thread count, so per-chunk partial results are reproducible. */
typedef void (*sg_range_fn)(int64_t lo, int64_t hi, void *arg);
void sg__parallel_for(int64_t n, int64_t grain, sg_range_fn fn, void *arg);
/* Items per parallel chunk so that one chunk holds about `target` units of work when each item
   costs `per_item` (at least 1). */
static inline int64_t sg__grain_for(double per_item, double target) {
  return per_item >= target ? 1 : (int64_t)(target / (per_item > 1 ? per_item : 1));
}
/* ceil(a / b) for b >= 1, 0 for a <= 0; no a + b - 1, which overflows for a stride near
   INT64_MAX (the window ops take any stride). */
static inline int64_t sg__ceil_div(int64_t a, int64_t b) { return a > 0 ? (a - 1) / b + 1 : 0; }
/* The calling thread's floating-point mode as sg__fpmode_enter found it (engine/fpmode.h). */
typedef struct sg_fpmode {
  uint64_t saved;
  bool changed;   /* the engine changed the mode: leave writes `saved` back */
  bool outermost; /* this change holds the thread's note of its caller's mode */
} sg_fpmode;
/* Reads SIMDGRAD_THREADS, else OMP_NUM_THREADS, and OMP_THREAD_LIMIT, at start-up. Returns false
   with problem[] describing a SIMDGRAD_THREADS it could not use (the engine then uses one
   thread per core). */
bool sg__threads_init(char *problem, size_t size);
/* Test-only (tests/test_host.c): hook(ctx) runs on the thread that runs each chunk of every
   sg__parallel_for, just before the chunk, whatever path it takes (one chunk on the caller,
   the serial loop, the OpenMP region or a host's parallel-for); NULL removes it. Lets a test
   see which threads did the work without timing anything. */
void sg__set_chunk_hook(void (*hook)(void *ctx), void *ctx);
/* Elements of cheap elementwise work below which a region stays serial (fork/join ~3 us). */
#define SG_GRAIN_ELEMENTWISE (1 << 16)
/* Chunks for a flat elementwise pass whose kernel streams a large output (a same-shape unary or
   binary op or where, forward or backward with a given dy) and that touches `bytes` bytes an
   element (each array it reads or writes once: 8 for y = f(x), 12 for y = a + b, 13 for where's
   byte of condition and three floats; a pass whose kernel
   never streams keeps SG_GRAIN_ELEMENTWISE at any size). Where the pass's footprint, n x bytes,
   outgrows the last-level cache (sg__llc_bytes; an unknown size counts as outgrown) and n is at
   least twice SG_STREAM_CHUNK: chunks of SG_STREAM_CHUNK, so that each kernel call sees enough
   of the output to stream it past the cache (SG_STREAM_MIN in kernels_simd/simd_decls.inc).
   Otherwise the usual grain, whose calls store normally and leave the output in the cache: a
   footprint the cache holds stays there from one op to the next, where streamed stores send
   every line to memory (docs/kernels.md, "Streamed stores only past the last-level cache").
   Like every chunking in the engine it depends on n and the machine alone, never on the
   thread count. */
#define SG_STREAM_CHUNK ((int64_t)2 << 20)
static inline bool sg__flat_streams(int64_t n, int bytes) {
  if (n < 2 * SG_STREAM_CHUNK) return false;
  size_t llc = sg__llc_bytes();
  return llc == 0 || (double)n * bytes > (double)llc;
}
static inline int64_t sg__flat_grain(int64_t n, int bytes) {
  return sg__flat_streams(n, bytes) ? SG_STREAM_CHUNK : SG_GRAIN_ELEMENTWISE;
}
/* Rows per chunk for a pass over `rows` rows of `row` floats whose kernel streams its output
   row by row (the softmax gradients, the cross-entropy and its gradient) and that touches
   `bytes` bytes an element: whole rows of at least SG_STREAM_CHUNK elements where the pass
   outgrows the last-level cache, as sg__flat_grain; 0 where it does not, and the caller keeps
   its usual grain. */
static inline int64_t sg__rows_stream_grain(int64_t rows, int64_t row, int bytes) {
  return sg__flat_streams(rows * row, bytes) ? (SG_STREAM_CHUNK + row - 1) / row : 0;
}
/* sg__flat_grain for a unary kernel of engine/unary_cost.h's class `cost`: a costly one is split
   finer where it does not stream. */
static inline int64_t sg__unary_grain_of_cost(int cost, int64_t n, int bytes) {
  if (cost == SG_COST_CHEAP) return sg__flat_grain(n, bytes);
  return sg__flat_streams(n, bytes) ? SG_STREAM_CHUNK : SG_GRAIN_COSTLY;
}
/* y[0, n) = v, through the backend's fill over the engine's threads. */
void sg__fill(float *y, int64_t n, float v);

/* ---- Thread context, scopes ----------------------------------------------------------------- */

typedef struct sg_tape sg_tape;

typedef struct sg_scope_frame {
  size_t path_len;   /* length of the path before this scope's name was appended */
  size_t first_slot; /* first tracked-list index of this scope */
} sg_scope_frame;

/* Why the last storage request of a thread failed, for its error (engine/memory_limit.c). */
typedef struct sg_refusal {
  bool refused; /* the memory limit said no, not the system */
  int64_t bytes, live, limit;
} sg_refusal;

typedef struct sg_ctx {
  sg_status status;
  char error[1024];
  char path[1024];            /* "a/b/c" */
  sg_scope_frame frames[128]; /* deeper scopes are counted but not named */
  int depth;
  int overflow_depth;
  sg_tensor **tracked; /* tensors made inside scopes; disposed slots are NULL */
  size_t n_tracked, cap_tracked;
  sg_tape *tape;     /* the open tape, NULL if none */
  void *spare_nodes; /* a tape's first node block, kept for the next tape (tape.c) */
  int op_depth;      /* >1 inside a composite op: inner ops do not record */
  /* The public function under way, outermost first (an op, a creation function, tape_end's
     gradient of op_name when op_backward): what an out-of-memory error names. */
  const char *op_name;
  bool op_backward;
  sg_refusal refusal;
} sg_ctx;

sg_ctx *sg__ctx(void);
/* False for the shared context of threads whose own could not be allocated (engine/context.c). */
bool sg__ctx_keeps_spares(const sg_ctx *c);
/* Names op, a public function that allocates outside an op frame (creation, sg_tape_end), in
   the out-of-memory errors of what it allocates, unless an outer one is named already. Returns
   the name to put back with sg__name_end. */
static inline const char *sg__name_begin(sg_ctx *c, const char *op) {
  const char *outer = c->op_name;
  if (!outer) c->op_name = op;
  return outer;
}
static inline void sg__name_end(sg_ctx *c, const char *outer) { c->op_name = outer; }

/* ---- Ops and the tape ----------------------------------------------------------------------- */

typedef struct sg_op {
  const char *name;
  bool record; /* this op is outermost and a tape is open */
  uint64_t t0; /* debug mode: start time in ns */
  /* The profiler (engine/profile.h): sg__op_begin clears prof; sg__profile_op_begin sets it
     when it opens a call, which sg__op_end / sg__op_fail must then close. */
  bool prof;
  uint32_t prof_gen; /* epoch of this thread's profile record when the call opened */
  int32_t prof_call; /* the call's index in this thread's record, -1 when dropped */
  sg_fpmode fp;      /* the caller's FP mode, given back when the op leaves */
  bool named;        /* this op set the context's op_name */
} sg_op;

/* Enters an op. Returns false (with the error set) only if the engine cannot start. */
bool sg__op_begin(sg_op *op, const char *name);
/* Leaves an op successfully: in debug mode logs it and scans out for NaN/Inf (then disposes out
   and returns NULL). Returns out. */
sg_tensor *sg__op_end(sg_op *op, sg_tensor *out);
/* Leaves an op that failed (the error is already set). Returns NULL. */
sg_tensor *sg__op_fail(sg_op *op);

#define SG_NODE_MAX_SAVED 4
#define SG_NODE_INLINE_INPUTS 4

typedef struct sg_node_input {
  uint64_t id;
  sg_dtype dtype;
  int rank;
  int64_t shape[SG_MAX_RANK];
} sg_node_input;

typedef struct sg_node sg_node;
/* Computes dx[i] (a new tensor of input i's shape, or NULL to mean zero) for each input with
   need[i]; dy has the output's shape. Runs with recording off. Returns SG_OK or an error
   status (with the error set). */
typedef sg_status (*sg_grad_fn)(const sg_node *node, sg_tensor *dy, const bool *need,
                                sg_tensor **dx);

/* The same for a dy whose every element is g, which is not in memory: the tape's seed of ones
   when sg_tape_end gets no dy (Note [the seed] in engine/tape.c). Optional: ops whose gradient
   is elementwise in dy set it, so a large output's seed is never written out. */
typedef sg_status (*sg_grad_uniform_fn)(const sg_node *node, float g, const bool *need,
                                        sg_tensor **dx);
/* A uniform dy is fed to the backward kernels from a block of this many copies of g on the
   stack (in L1), one kernel call per block. */
#define SG_UNIFORM_BLOCK 2048

struct sg_node {
  const char *op;                  /* user-level op name */
  char *scope;                     /* scope path when the op ran (owned) */
  sg_grad_fn grad;                 /* NULL: the op has no gradient */
  sg_grad_uniform_fn grad_uniform; /* NULL unless the op sets it after sg__record */
  int n_inputs;
  sg_node_input *inputs; /* points at inline_inputs or a heap array */
  sg_node_input inline_inputs[SG_NODE_INLINE_INPUTS];
  uint64_t output_id;
  int64_t out_shape[SG_MAX_RANK];
  int out_rank;
  sg_tensor *saved[SG_NODE_MAX_SAVED]; /* references held until the tape ends */
  int n_saved;
  float fparam[4]; /* op parameters the gradient needs */
  int64_t iparam[2 * SG_MAX_RANK + 2];
};

/* Records op on the open tape when op->record. Returns the node (for sg__save and params) or
   NULL when not recording or on OOM (then the error is set and the caller should fail). Check
   op->record to tell these apart. */
sg_node *sg__record(sg_op *op, sg_grad_fn grad, sg_tensor *const *inputs, int n_inputs,
                    sg_tensor *out);
/* Keeps a reference to t until the tape ends; returns false on overflow of SG_NODE_MAX_SAVED. */
bool sg__save(sg_node *node, sg_tensor *t);
/* References the calling thread's open tape holds on t itself (*on_tensor) and on other tensors
   sharing t's storage (*on_storage); both 0 without a tape. Walks the whole tape: for error
   messages only. */
void sg__tape_holds(const sg_tensor *t, int *on_tensor, int *on_storage);

/* Helpers for gradient functions. */
/* Sums g (a broadcast result) down to shape/rank: a new tensor (a view of g when the shapes
   already match). NULL with the error set on failure. */
sg_tensor *sg__reduce_to_shape(sg_tensor *g, const int64_t *shape, int rank);

/* ---- Storage --------------------------------------------------------------------------------- */

/* 64-byte aligned storage; accounted in sg_memory(). NULL when the system has no memory or the
   memory limit refuses it: report that with sg__oom. */
sg_storage *sg__storage_new(size_t bytes);
/* Sets SG_ERR_OOM for an allocation that failed: "<op>: out of memory for <what>", or, after
   sg__storage_new refused it for the memory limit, the bytes asked, held and allowed. op NULL:
   the public function under way (ctx->op_name). Returns SG_ERR_OOM. */
sg_status sg__oom(const char *op, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The memory limit in bytes (0: none), without start-up. */
int64_t sg__memory_limit_now(void);
/* Reads SIMDGRAD_MEMORY_LIMIT at start-up; false with problem[] describing a value it could not
   use (the engine then has no limit). */
bool sg__memory_limit_init(char *problem, size_t size);
/* Storage on the caller's buffer (its bytes are not counted by sg_memory()); deleter(data, ctx)
   runs when the last reference goes. NULL on OOM, without calling the deleter. */
sg_storage *sg__storage_wrap(void *data, size_t bytes, sg_deleter deleter, void *ctx);
void sg__storage_release(sg_storage *s);
/* sg_tensor_wrap_f32 / _i32 for any dtype (bool included: sg_from_dlpack): a tensor over the
   caller's data, whose deleter runs exactly once, before this returns if it fails. */
sg_tensor *sg__wrap_user(void *data, sg_dtype dtype, const int64_t *shape, int rank,
                         sg_deleter deleter, void *ctx, const char *op);

#endif /* SIMDGRAD_ENGINE_H */
