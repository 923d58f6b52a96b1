/* simdgrad profiler: a record of every op call (forward and backward) between sg_profile_begin
 * and sg_profile_end, aggregated by scope path into a tree and per op into a flat table, printed
 * as indented tables or written as a Chrome trace (Perfetto, chrome://tracing).
 *
 *   sg_profile_begin();
 *   ... ops, scopes, sg_tape_end ...
 *   sg_profile *p = sg_profile_end();
 *   sg_profile_print(p, stdout);                  // tree by scope path, then the per-op table
 *   sg_profile_write_trace(p, "step.json");       // scopes as nested slices, ops inside them
 *   sg_profile_free(p);
 *
 * Profiling is process-wide: every thread's ops are recorded, each call tagged with its thread.
 * With the profiler off, an op pays a relaxed load and a predictable branch for it on entry, and
 * the same where it records (engine/profile.h, Note [profiler cost]). */
#ifndef SIMDGRAD_PROFILE_H
#define SIMDGRAD_PROFILE_H

#include <simdgrad/simdgrad.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Input and output shapes kept per call; a call with more keeps the first ones (n_* says how
   many there were). */
#define SG_PROFILE_MAX_SHAPES 4

typedef enum sg_profile_phase {
  SG_PROFILE_FORWARD = 0, /* an op called by the program (or by another op) */
  SG_PROFILE_BACKWARD = 1 /* a gradient function run by sg_tape_end, and what it calls */
} sg_profile_phase;

typedef struct sg_profile_shape {
  int rank;
  int64_t dims[SG_MAX_RANK];
} sg_profile_shape;

/* One op call. Strings live as long as the profile. */
typedef struct sg_profile_call {
  const char *scope;   /* scope path when the op ran, "train/model/dense1"; "" outside scopes.
                          A backward call carries the scope of the forward op it differentiates */
  const char *op;      /* user-level op name: "matmul" */
  const char *backend; /* backend (instruction set) whose kernels ran: "avx512", "scalar" */
  const char *kernel;  /* kernel family and backend: "matmul/avx512", "matmul_backward/avx512" */
  sg_profile_phase phase;
  int thread;            /* 0, 1, ...: threads numbered in the order they first ran an op */
  int depth;             /* 0 for a call made by the program; 1 inside a composite op or gradient */
  int64_t parent;        /* index of the enclosing call, -1 at depth 0 */
  uint64_t start_ns;     /* since sg_profile_begin */
  uint64_t duration_ns;  /* wall time, including the calls nested in it */
  int64_t bytes;         /* change of sg_memory().num_bytes over the call: what it left allocated */
  int64_t tensors;       /* change of sg_memory().num_tensors over the call */
  int64_t alloc_bytes;   /* storage bytes allocated during the call on its thread, including
                            what it freed again (temporaries) and nested calls */
  int64_t alloc_tensors; /* tensors made during the call on its thread, the same way */
  bool failed;           /* the op returned an error */
  bool unfinished;       /* still running on another thread at sg_profile_end (ends there) */
  int n_inputs;          /* -1: not known (an op that failed before reading its inputs, or one that
                            does not report them) */
  sg_profile_shape inputs[SG_PROFILE_MAX_SHAPES]; /* backward: the output gradient dy */
  int n_outputs;
  sg_profile_shape outputs[SG_PROFILE_MAX_SHAPES]; /* backward: the input gradients made */
} sg_profile_call;

typedef enum sg_profile_node_kind {
  SG_PROFILE_ROOT = 0, /* everything */
  SG_PROFILE_SCOPE,    /* one component of a scope path */
  SG_PROFILE_OP        /* calls of one op in one phase, under their scope or enclosing op */
} sg_profile_node_kind;

/* A node of the aggregation tree. Nodes are stored in depth-first order, children sorted by
   total time, longest first; node 0 is the root. */
typedef struct sg_profile_node {
  const char *name; /* scope name or op name; "" for the root */
  const char *path; /* scope nodes: the scope path down to this one; op nodes: their scope */
  sg_profile_node_kind kind;
  sg_profile_phase phase; /* op nodes */
  int depth;              /* 0 for the root */
  int64_t parent;         /* -1 for the root */
  int64_t first_child;    /* -1 when none */
  int64_t next_sibling;   /* -1 when none */
  int64_t calls;          /* op nodes: calls; others: calls of the ops below */
  uint64_t total_ns;      /* op nodes: summed durations; others: sum of the children */
  uint64_t self_ns;       /* total minus the children's totals */
  double percent;         /* total_ns as a percentage of the root's */
  int64_t bytes, tensors; /* summed like total_ns */
  int64_t alloc_bytes, alloc_tensors;
} sg_profile_node;

/* A row of the flat per-op table (one per op and phase), sorted by self time, longest first. */
typedef struct sg_profile_op_stats {
  const char *op;
  sg_profile_phase phase;
  int64_t calls;
  uint64_t total_ns; /* summed durations, nested calls included */
  uint64_t self_ns;  /* the same without the time of calls nested inside these */
  double percent;    /* self_ns as a percentage of the tree root's total */
  int64_t bytes, tensors;
  int64_t alloc_bytes, alloc_tensors; /* nested calls included, like total_ns */
} sg_profile_op_stats;

typedef struct sg_profile sg_profile; /* opaque */

/* Starts recording every op on every thread. SG_ERR_STATE if a profile is already running. */
SG_API sg_status sg_profile_begin(void);
SG_API bool sg_profile_active(void);
/* Stops recording and returns what was recorded (free it with sg_profile_free). NULL with
   SG_ERR_STATE when no profile runs, SG_ERR_OOM when it cannot be built. */
SG_API sg_profile *sg_profile_end(void);
SG_API void sg_profile_free(sg_profile *p); /* NULL is a no-op */

/* Calls, grouped by thread and in start order within a thread (a call precedes the calls
   nested in it). */
SG_API int64_t sg_profile_num_calls(const sg_profile *p);
SG_API const sg_profile_call *sg_profile_call_at(const sg_profile *p, int64_t i);
SG_API int64_t sg_profile_num_nodes(const sg_profile *p);
SG_API const sg_profile_node *sg_profile_node_at(const sg_profile *p, int64_t i);
SG_API int64_t sg_profile_num_ops(const sg_profile *p);
SG_API const sg_profile_op_stats *sg_profile_op_at(const sg_profile *p, int64_t i);
SG_API int sg_profile_num_threads(const sg_profile *p);
/* Wall time from sg_profile_begin to sg_profile_end. */
SG_API uint64_t sg_profile_wall_ns(const sg_profile *p);
/* Calls not recorded: nested deeper than the recorder keeps, or no memory to record them. */
SG_API int64_t sg_profile_dropped(const sg_profile *p);

/* The tree as an indented table (calls, total and self time, percentage, bytes, tensors), then
   the flat per-op table. */
SG_API void sg_profile_print(const sg_profile *p, FILE *f);
/* One line per call: thread, start, duration, scope, op, phase, kernel, shapes, bytes. */
SG_API void sg_profile_print_calls(const sg_profile *p, FILE *f);
/* Chrome trace event JSON: one slice per call, and one per stretch of consecutive calls in a
   scope, nested as the scope path is (a scope's slice spans its calls; time between them on
   that thread counts in the slice). SG_ERR_ARG if the file cannot be written. */
SG_API sg_status sg_profile_write_trace(const sg_profile *p, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* SIMDGRAD_PROFILE_H */
