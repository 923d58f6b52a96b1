/* NumPy broadcasting, the one place it lives: the broadcast shape of 2 or 3 operands, and a walk
 * over the output in contiguous runs that hands each operand to a kernel as (pointer, step)
 * with step 0 (a repeated element) or 1 (contiguous), the ABI of backend.h.
 *
 * Adjacent dimensions that broadcast the same way for every operand are merged, so a
 * same-shape or scalar operand gives one run per chunk, a row b[cols] against a[rows, cols]
 * gives runs of cols with b stepping 1, and a column b[rows, 1] gives runs of cols with b
 * stepping 0. */
#ifndef SIMDGRAD_BROADCAST_H
#define SIMDGRAD_BROADCAST_H

#include "engine.h"

#define SG_BCAST_MAX_OPERANDS 3

/* Computes the broadcast shape of n (2 or 3) operands into out_shape / out_rank. On failure sets
   SG_ERR_SHAPE naming op and every shape, e.g. "add: shapes [2,3] and [4,3] do not broadcast
   (dimension 0: 2 vs 4)", and returns false. */
bool sg__broadcast_shape(const char *op, int n, const int64_t *const *shapes, const int *ranks,
                         int64_t *out_shape, int *out_rank);

/* The walk plan: the output viewed as `rank` merged dimensions (rank >= 1), and each operand's
   element stride along them (0 where it broadcasts). */
typedef struct sg_bcast {
  int n_operands;
  int rank;
  int64_t dims[SG_MAX_RANK];
  int64_t strides[SG_BCAST_MAX_OPERANDS][SG_MAX_RANK];
  int64_t numel; /* output elements */
} sg_bcast;

/* Builds the plan for operands that broadcast to out_shape (as sg__broadcast_shape gave). */
void sg__bcast_plan(sg_bcast *bc, int n, const int64_t *const *shapes, const int *ranks,
                    const int64_t *out_shape, int out_rank);

/* One contiguous run: output elements [out, out + n); operand k starts at element off[k] and
   moves by step[k] (0 or 1) per output element. */
typedef struct sg_bcast_run {
  int64_t out;
  int64_t n;
  int64_t off[SG_BCAST_MAX_OPERANDS];
  size_t step[SG_BCAST_MAX_OPERANDS];
} sg_bcast_run;

typedef void (*sg_bcast_fn)(const sg_bcast_run *run, void *arg);

/* Calls fn on the runs that cover output elements [lo, hi), in order. */
void sg__bcast_walk(const sg_bcast *bc, int64_t lo, int64_t hi, sg_bcast_fn fn, void *arg);
/* Covers the whole output through sg__parallel_for (SG_GRAIN_ELEMENTWISE chunks): fn may run on
   several threads at once, on disjoint output ranges. Run boundaries depend on the plan and
   the chunking only, never on the thread count. */
void sg__bcast_for_each(const sg_bcast *bc, sg_bcast_fn fn, void *arg);
/* As sg__bcast_for_each for a pass whose kernel streams a large output and that touches `bytes`
   bytes an element: a plan of one contiguous run (every operand the output's shape) is split as
   sg__flat_grain says, so that past the last-level cache each kernel call gets enough of the
   output to stream it; any other plan in SG_GRAIN_ELEMENTWISE chunks. */
void sg__bcast_for_each_streamed(const sg_bcast *bc, int bytes, sg_bcast_fn fn, void *arg);

#endif /* SIMDGRAD_BROADCAST_H */
