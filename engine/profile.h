/* The profiler's hooks into the op frame and the tape, and the profile object shared by
 * engine/profile.c (recording), engine/profile_tree.c (aggregation, tables) and
 * engine/profile_trace.c (Chrome trace).
 *
 * Note [profiler cost]: with the profiler off an op pays for it a relaxed load of
 * sg__profiling and one predictable branch in sg__op_begin (shared with debug mode's), and a
 * store of op->prof = false. sg__record (which takes the input shapes) tests op->prof in the
 * branch it has anyway for the tape (record | prof); sg__op_end shares debug mode's branch
 * (op->t0 != 0 for either); sg__op_fail tests op->prof on the error path. Everything else runs
 * only while profiling. */
#ifndef SIMDGRAD_ENGINE_PROFILE_H
#define SIMDGRAD_ENGINE_PROFILE_H

#include <simdgrad/profile.h>

#include "engine/engine.h"

/* True while a profile runs (sg_profile_begin .. sg_profile_end). */
extern atomic_bool sg__profiling;
static inline bool sg__profile_on(void) {
  return atomic_load_explicit(&sg__profiling, memory_order_relaxed);
}

/* Called by sg__op_begin when sg__profile_on(): opens a forward call for op->name in the
   current scope on this thread and sets op->prof. Never fails (a call it cannot record is
   counted as dropped). */
void sg__profile_op_begin(sg_op *op);
/* Closes the call that op opened (op->prof): duration, memory change, output shape. out may be
   NULL; failed marks an op that returned an error. */
void sg__profile_op_end(sg_op *op, const sg_tensor *out, bool failed);
/* Records the input shapes of op's call (op->prof); sg__record calls it. */
void sg__profile_inputs(sg_op *op, sg_tensor *const *inputs, int n);

/* Backward: sg_tape_end wraps each node's gradient function in a call named by the node's op
   and scope, phase backward, with dy as its input. frame is a fresh sg_op; close it with
   sg__profile_op_end(frame, NULL, failed). */
void sg__profile_grad_begin(sg_op *frame, const sg_node *node, const sg_tensor *dy);
/* Records the gradients a gradient function made (NULL entries are skipped) as outputs. */
void sg__profile_grad_outputs(sg_op *frame, sg_tensor *const *dx, int n);
/* A call nested in the current one for engine work that is not an op (the tape summing two
   gradients of one tensor): op names it, kernel is the backend slot it runs. */
void sg__profile_work_begin(sg_op *frame, const char *op, const char *kernel);

/* ---- The profile object (engine/profile*.c only) ------------------------------------------ */

typedef struct sg__strchunk {
  struct sg__strchunk *next;
  size_t used, cap;
  char text[];
} sg__strchunk;

struct sg_profile {
  sg_profile_call *calls;
  int64_t n_calls;
  sg_profile_node *nodes;
  int64_t n_nodes;
  sg_profile_op_stats *ops;
  int64_t n_ops;
  int n_threads;
  uint64_t wall_ns;
  int64_t dropped;
  sg__strchunk *strings; /* every string the calls and nodes point at */
};

/* Copies s into the profile's strings; NULL on OOM. */
const char *sg__profile_strdup(sg_profile *p, const char *s, size_t len);
/* Builds nodes and ops from calls (profile_tree.c). false on OOM. */
bool sg__profile_aggregate(sg_profile *p);

#endif /* SIMDGRAD_ENGINE_PROFILE_H */
