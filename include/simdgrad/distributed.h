/* simdgrad_mpi: data-parallel training over MPI (docs/distributed.md). Every rank runs the same
 * model on its own shard of the data; sg_dist_broadcast makes the replicas start equal and a
 * reducer averages the gradients of a list of variables across the ranks at every step, each
 * bucket's MPI_Iallreduce starting while back-propagation is still producing the others.
 *
 * An optional library (libsimdgrad_mpi, CMake target simdgrad::simdgrad_mpi, pkg-config module
 * simdgrad_mpi), built when CMake finds MPI; libsimdgrad itself never links MPI. The caller
 * initialises MPI (MPI_Init or MPI_Init_thread: every MPI call here comes from the thread that
 * calls these functions, so MPI_THREAD_FUNNELED is enough with simdgrad's own threads).
 *
 * Errors are reported as the engine's are (sg_last_status, sg_last_error). Every function here
 * except sg_dist_rank and sg_dist_size is collective: all ranks call it, in the same order.
 * A check that fails on one rank fails on every rank with the same message, never leaves a rank
 * waiting. */
#ifndef SIMDGRAD_DISTRIBUTED_H
#define SIMDGRAD_DISTRIBUTED_H

#include <mpi.h>
#include <stddef.h>

#include "simdgrad.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Uses comm (MPI_COMM_WORLD, or any communicator of the caller's) for what follows; MPI must be
   initialised. SG_ERR_STATE when it is not, SG_ERR_ARG for MPI_COMM_NULL. Calling it again
   switches to another communicator (reducers made before keep their own). */
SG_API sg_status sg_dist_init(MPI_Comm comm);
/* This process's rank in the communicator and their number; -1 before sg_dist_init. */
SG_API int sg_dist_rank(void);
SG_API int sg_dist_size(void);

/* Copies the values of vars[0..n) (variables, sg_variable) on rank root into the same variables
   on every other rank, so that the replicas start equal. Every rank must pass the same number of
   f32 variables with the same shapes, else every rank gets an error naming the first mismatch.
   SG_ERR_STATE before sg_dist_init or while a tape is open on this thread. */
SG_API sg_status sg_dist_broadcast(sg_tensor *const *vars, int n, int root);

/* Averages the gradients of a list of variables over the ranks. */
typedef struct sg_reducer sg_reducer;

/* A reducer for vars[0..n) (f32; the list is copied, the tensors are not retained). Their
   gradients are packed into buckets of about bucket_bytes (0: SG_REDUCER_DEFAULT_BUCKET_BYTES),
   filled from the last variable back, the order back-propagation finishes them in. Checks that
   every rank registered the same variables in the same order with the same shapes and fails on
   every rank with an error naming the first mismatch (NULL then). NULL with SG_ERR_STATE before
   sg_dist_init. */
#define SG_REDUCER_DEFAULT_BUCKET_BYTES ((size_t)4 << 20)
SG_API sg_reducer *sg_reducer_new(sg_tensor *const *vars, int n, size_t bucket_bytes);

/* Registers the reducer with the tape open on this thread (sg_tape_on_grad_ready): the next
   sg_tape_end must take the reducer's variables as its first n xs, in the same order. Each
   bucket's allreduce starts as soon as its gradients are final and every bucket before it has
   started (so that all ranks start them in the same order). Not collective. SG_ERR_STATE without
   an open tape, or while the previous step has not been waited for. */
SG_API sg_status sg_reducer_attach(sg_reducer *r);

/* After sg_tape_end (also when it failed, or when attach was not called this step: the other
   ranks are waiting for this one's buckets): starts what has not started, waits for every
   bucket and writes the averaged gradients, new tensors, to grads[0..n). They are bit-identical
   on every rank. When a gradient is missing on some rank (sg_tape_end failed there, did not
   take the variable, or the reducer was not attached) every rank gets SG_ERR_STATE naming the
   first such variable and a rank that lacked it, and grads[] is all NULL; the reducer can be
   used for the next step. MPI failures (a peer that died, with an error handler that returns)
   come back as SG_ERR_STATE with MPI's message. */
SG_API sg_status sg_reducer_wait(sg_reducer *r, sg_tensor **grads);

/* Frees the reducer (collective: it frees the reducer's duplicate of the communicator). NULL is
   a no-op. */
SG_API void sg_reducer_free(sg_reducer *r);

/* The reducer's buckets: their number, and the bytes each step reduces (gradients and one
   float of bookkeeping per bucket). For tests and benchmarks. */
SG_API int sg_reducer_buckets(const sg_reducer *r);
SG_API size_t sg_reducer_bytes(const sg_reducer *r);

#ifdef __cplusplus
}
#endif

#endif /* SIMDGRAD_DISTRIBUTED_H */
