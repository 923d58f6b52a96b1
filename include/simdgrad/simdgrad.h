/* simdgrad: tensors, named scopes, tape-based gradients and ops on a SIMD CPU backend.
 *
 * Conventions (see docs/ for the long form):
 * - Every op returns a NEW tensor reference, or NULL on error. An op given a NULL input returns
 *   NULL and keeps the pending error, so a chain of ops can be checked once at the end.
 * - Errors never abort: sg_last_error() names the op, the shapes or values at fault and the
 *   innermost scope path. Error state, scopes and the tape are per thread.
 * - Shapes are (const int64_t *shape, int rank); rank 0 is a scalar. Data is row-major and
 *   contiguous. Binary elementwise ops broadcast like NumPy.
 */
#ifndef SIMDGRAD_SIMDGRAD_H
#define SIMDGRAD_SIMDGRAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define SG_API
#else
#define SG_API __attribute__((visibility("default")))
#endif

/* The version of these headers. CMakeLists.txt reads its project version from these three
   lines (one source of truth); sg_version() gives the library's, which differs when a program
   runs against another build than the one it was compiled with. The shared library's SONAME
   follows the ABI, not this version: docs/embedding.md, "ABI policy". */
#define SG_VERSION_MAJOR 0
#define SG_VERSION_MINOR 2
#define SG_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH, comparable with sg_version(). */
#define SG_VERSION (SG_VERSION_MAJOR * 10000 + SG_VERSION_MINOR * 100 + SG_VERSION_PATCH)

#define SG_MAX_RANK 8

typedef enum sg_dtype { SG_F32 = 0, SG_I32 = 1, SG_BOOL = 2 } sg_dtype;

typedef enum sg_status {
  SG_OK = 0,
  SG_ERR_ARG,         /* NULL pointer, bad axis, bad parameter */
  SG_ERR_SHAPE,       /* shapes that do not fit together, negative or overflowing sizes */
  SG_ERR_DTYPE,       /* an operand of the wrong element type */
  SG_ERR_OOM,         /* an allocation failed */
  SG_ERR_NO_GRADIENT, /* back-propagation met an op that has no gradient */
  SG_ERR_UNSUPPORTED, /* backend not available on this CPU or build */
  SG_ERR_STATE        /* call out of order: disposed tensor, unbalanced scope or tape */
} sg_status;

/* ---- Engine, backends, threads ------------------------------------------------------------ */

/* The library's version, MAJOR * 10000 + MINOR * 100 + PATCH (0.2.0 is 200), and as text,
   "0.2.0". Neither needs sg_init. */
SG_API int sg_version(void);
SG_API const char *sg_version_string(void);
/* Idempotent; every other call runs it implicitly. Picks the best backend the CPU (CPUID) and
   the OS (XGETBV) support, unless SIMDGRAD_BACKEND names a lower one. */
SG_API sg_status sg_init(void);
/* "avx512", "avx2", "neon" or "scalar". */
SG_API const char *sg_backend_name(void);
/* Switches this process to the named backend; SG_ERR_UNSUPPORTED if this CPU or build lacks it. */
SG_API sg_status sg_use_backend(const char *name);
SG_API bool sg_backend_available(const char *name);
/* Space-separated CPU features the detector found, e.g. "sse4.2 avx avx2 fma avx512f ...". */
SG_API const char *sg_cpu_features(void);
/* The process's thread count; n <= 0: one thread per core. At start-up SIMDGRAD_THREADS=N sets
   it (0: one per core; a value that is not an integer is reported on stderr and by sg_init),
   else the first count of OMP_NUM_THREADS, else one per core. See "Embedding" below for what
   runs where. */
SG_API void sg_set_threads(int n);
/* The threads an op called on this thread will really use: 1 inside a host's OpenMP region or
   a chunk of the engine's work, else sg_set_thread_local_threads's count when set, else the
   process's, capped by OMP_THREAD_LIMIT. */
SG_API int sg_threads(void);
/* Denormals are kept by default. true sets flush-to-zero and denormals-are-zero (MXCSR FTZ/DAZ,
   FPCR.FZ on aarch64) for the engine's own work, on every thread that runs it, and gives each
   thread its own mode back when that work returns: the caller's MXCSR is the same after any
   simdgrad call as before it. Kernels called directly through backend.h run in the caller's
   mode. */
SG_API void sg_set_flush_denormals(bool on);
SG_API bool sg_flush_denormals(void);
/* Debug mode (also SIMDGRAD_DEBUG=1): each op logs scope path, op, shapes and time to stderr,
   and an output holding NaN or Inf becomes an SG_ERR_ARG error naming the op and scope. */
SG_API void sg_set_debug(bool on);
SG_API bool sg_debug(void);

/* ---- Errors -------------------------------------------------------------------------------- */

SG_API sg_status sg_last_status(void);
SG_API const char *sg_last_error(void); /* "" when none */
SG_API void sg_clear_error(void);
/* Sets this thread's error as the engine's own are set: st, then "where: message" with the
   innermost scope path, read back with sg_last_status and sg_last_error. For libraries built on
   simdgrad (simdgrad_mpi) so that their errors read like the engine's. Returns st. */
SG_API sg_status sg_set_error(sg_status st, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- Tensors ------------------------------------------------------------------------------- */

typedef struct sg_tensor sg_tensor; /* opaque, reference counted */

SG_API sg_tensor *sg_tensor_f32(const float *data, const int64_t *shape,
                                int rank); /* copies; NULL = 0 */
SG_API sg_tensor *sg_tensor_i32(const int32_t *data, const int64_t *shape, int rank);
SG_API sg_tensor *sg_tensor_bool(const uint8_t *data, const int64_t *shape, int rank); /* 0 or 1 */
SG_API sg_tensor *sg_scalar(float v);
SG_API sg_tensor *sg_zeros(const int64_t *shape, int rank);
SG_API sg_tensor *sg_ones(const int64_t *shape, int rank);
SG_API sg_tensor *sg_fill(const int64_t *shape, int rank, float v);
/* Deterministic for a given seed on every backend and thread count. */
SG_API sg_tensor *sg_random_uniform(const int64_t *shape, int rank, float lo, float hi,
                                    uint64_t seed);
SG_API sg_tensor *sg_random_normal(const int64_t *shape, int rank, float mean, float stddev,
                                   uint64_t seed);

SG_API int sg_rank(const sg_tensor *t);
SG_API const int64_t *sg_shape(const sg_tensor *t);
SG_API int64_t sg_numel(const sg_tensor *t);
SG_API sg_dtype sg_dtype_of(const sg_tensor *t);
SG_API const float *sg_data_f32(const sg_tensor *t); /* NULL if not f32 */
SG_API const int32_t *sg_data_i32(const sg_tensor *t);
SG_API const uint8_t *sg_data_bool(const sg_tensor *t);

/* Drops this reference; NULL is a no-op. A disposed tensor passed to an op is reported as
   SG_ERR_STATE while the engine can still tell. */
SG_API void sg_dispose(sg_tensor *t);
/* Takes t out of scope tracking: it survives the end of every enclosing scope. Returns t. */
SG_API sg_tensor *sg_keep(sg_tensor *t);
/* A second reference to t (dispose each one). */
SG_API sg_tensor *sg_retain(sg_tensor *t);

/* ---- Scopes -------------------------------------------------------------------------------- */

SG_API void sg_scope_begin(const char *name);
/* Disposes every tensor made since the matching begin, except keep[] (handed to the enclosing
   scope) and kept tensors. */
SG_API void sg_scope_end(sg_tensor *const *keep, int n_keep);
/* The innermost scope path, "train/model/dense1", or "" outside any scope. */
SG_API const char *sg_scope_path(void);

typedef struct sg_memory_info {
  int64_t num_tensors;      /* live tensors */
  int64_t num_bytes;        /* bytes held by live tensors */
  int64_t num_bytes_cached; /* bytes the allocator keeps for reuse (0 until it caches) */
  int64_t peak_bytes;       /* high-water mark of num_bytes since start-up */
} sg_memory_info;
SG_API sg_memory_info sg_memory(void);
/* Returns the blocks the allocator keeps for reuse (this thread's and the shared large-block
   cache) to the system. */
SG_API void sg_memory_release_cache(void);
/* A budget for the bytes live tensors hold (num_bytes above), for a host that must not be killed
   by the system's out-of-memory handling: a request that would take num_bytes above it fails
   with SG_ERR_OOM, naming the op, the shape and the limit, and leaves the engine as it was. The
   allocator's cache counts too, and is released first when it alone would take the total over.
   0 = no limit (the default); a negative value is refused with SG_ERR_ARG. At start-up
   SIMDGRAD_MEMORY_LIMIT sets it: bytes, or with K, M, G or T (powers of 1024), e.g. 512M; a
   value that is not one is reported on stderr and by sg_init, and no limit is set. Threads
   allocating at once can each pass the check before the others' bytes count. */
SG_API void sg_set_memory_limit(int64_t bytes);
SG_API int64_t sg_memory_limit(void);

/* ---- Embedding: the host's threads -------------------------------------------------------- */
/* For a host framework that calls simdgrad from its own threads. An op cuts its work into
   chunks whose boundaries depend on the sizes alone, never on the thread count or on who runs
   them, so results are bit-identical on every path below. With n = sg_threads() on the calling
   thread:
   - n == 1 (inside a host OpenMP parallel region at any level, on a thread the host marked with
     sg_set_thread_local_threads(1), or sg_set_threads(1)): the calling thread runs every chunk,
     in order; no other thread is woken, not even the host's parallel-for;
   - n > 1 and a host parallel-for is set: the host's parallel-for runs the chunks (its pool
     decides how many threads);
   - n > 1 otherwise: an OpenMP team of min(n, chunks) threads, the caller among them.
   A chunk never starts nested parallel work: an op a chunk might call runs serially. */

/* A host-supplied parallel-for: run body(chunk, arg) for every chunk in [0, n_chunks), each
   exactly once, on any threads, in any order, and return when all are done. */
typedef void (*sg_parallel_for_fn)(void *host_ctx, int64_t n_chunks,
                                   void (*body)(int64_t chunk, void *arg), void *arg);
/* Lends the host's pool to the engine for every op with more than one chunk and more than one
   thread (above), from every thread; NULL restores the engine's OpenMP. fn may be called from
   several threads at once (each calling an op) and must not wait for work of the caller's own
   that is queued behind it. The engine reads (fn, host_ctx) as one pair; replace them while
   no op runs, or keep the old pool alive until the ops in flight return. */
SG_API void sg_set_parallel_for(sg_parallel_for_fn fn, void *host_ctx);
/* This thread's own count, over the process's (sg_set_threads): 1 marks the thread as one
   whose ops stay on it; n > 1 lets its ops use up to n threads; 0 (or less) = the process
   setting again. Inside a host OpenMP region the engine uses the calling thread alone
   whatever this says. */
SG_API void sg_set_thread_local_threads(int n);

/* ---- Embedding: memory the caller owns ------------------------------------------------------ */
/* A wrapped tensor reads and writes the caller's buffer in place (no copy). It is an ordinary
   tensor otherwise: every op takes it, scopes track it, a tape saves it by reference, views of it
   (sg_reshape) share the buffer and keep it alive. The buffer is the caller's memory, not the
   engine's: sg_memory() counts the tensor in num_tensors but not its bytes in num_bytes or
   peak_bytes. */

/* Gives a wrapped buffer back: called once, with the data and ctx given to the wrap, on the
   thread that drops the tensor's last reference (sg_dispose, sg_scope_end, sg_tape_end
   releasing a saved tensor, the end of a view). It runs inside those calls, so it must not make
   or dispose tensors; freeing memory or releasing a host object is what it is for. */
typedef void (*sg_deleter)(void *data, void *ctx);
/* A tensor over data (row-major, sg_numel elements) without copying it. deleter may be NULL: the
   caller then keeps the buffer and must keep it alive as long as the tensor or any view of it
   lives. Any address aligned to the element (4 bytes) is accepted; 64-byte alignment is
   fastest. The buffer must not be written behind the engine's back while ops may read it, nor
   while a tape holds the tensor: change it through sg_data_f32_mut, which says when that is
   safe. Once called, the deleter runs exactly once: on failure (NULL: bad shape, NULL data for
   a non-empty shape, misaligned data, no memory) before this returns. */
SG_API sg_tensor *sg_tensor_wrap_f32(float *data, const int64_t *shape, int rank,
                                     sg_deleter deleter, void *ctx);
SG_API sg_tensor *sg_tensor_wrap_i32(int32_t *data, const int64_t *shape, int rank,
                                     sg_deleter deleter, void *ctx);
/* Writable access to an f32 tensor the caller owns outright: this is its only reference (no
   sg_retain, no tape saved it) and no other live tensor shares its storage (no view of it, and
   it is no view). Otherwise NULL with SG_ERR_STATE and a message saying which (SG_ERR_DTYPE if
   it is not f32). Works on any tensor, wrapped or made by the engine. */
SG_API float *sg_data_f32_mut(sg_tensor *t);

/* ---- Gradients (tape) ---------------------------------------------------------------------- */

/* Opens a tape on this thread; SG_ERR_STATE if one is already open (tapes do not nest). */
SG_API sg_status sg_tape_begin(void);
/* Ends the tape: back-propagates from y (seeded with dy, or ones when dy is NULL) to each xs[i],
   writing a new tensor to grads[i] (zeros if y does not depend on xs[i]); releases every tensor
   the tape saved. Always closes the tape, also when y is NULL because the forward failed. */
SG_API sg_status sg_tape_end(sg_tensor *y, sg_tensor *dy, sg_tensor *const *xs, int n,
                             sg_tensor **grads);
/* True while a tape is open on this thread. */
SG_API bool sg_tape_active(void);
/* Called by sg_tape_end once the gradient of xs[index] is final: no node left on the pruned
   tape adds to it. grad holds that gradient (the values grads[index] will have) and may be read
   during the call only. Gradients become final in reverse recording order, while
   back-propagation goes on; one that y does not reach becomes final at the end (zeros). The call
   comes once per index in [0, n), on sg_tape_end's thread, for every index unless
   back-propagation fails first. It must not call ops or touch the tape. */
typedef void (*sg_grad_ready_fn)(void *ctx, int index, const sg_tensor *grad);
/* Registers fn (with ctx) with the tape open on this thread, for its sg_tape_end; one per tape,
   a second call replaces the first, NULL removes it. SG_ERR_STATE when no tape is open. Without
   one, back-propagation pays a single untaken branch per node. */
SG_API sg_status sg_tape_on_grad_ready(sg_grad_ready_fn fn, void *ctx);

/* ---- Unary ops (f32) ----------------------------------------------------------------------- */

SG_API sg_tensor *sg_neg(sg_tensor *x);
SG_API sg_tensor *sg_abs(sg_tensor *x);
SG_API sg_tensor *sg_exp(sg_tensor *x);
SG_API sg_tensor *sg_expm1(sg_tensor *x);
SG_API sg_tensor *sg_log(sg_tensor *x);
SG_API sg_tensor *sg_log1p(sg_tensor *x);
SG_API sg_tensor *sg_sqrt(sg_tensor *x);
SG_API sg_tensor *sg_rsqrt(sg_tensor *x);
SG_API sg_tensor *sg_square(sg_tensor *x);
SG_API sg_tensor *sg_reciprocal(sg_tensor *x);
SG_API sg_tensor *sg_relu(sg_tensor *x);
SG_API sg_tensor *sg_relu6(sg_tensor *x);
SG_API sg_tensor *sg_elu(sg_tensor *x);
SG_API sg_tensor *sg_selu(sg_tensor *x);
SG_API sg_tensor *sg_sigmoid(sg_tensor *x);
SG_API sg_tensor *sg_tanh(sg_tensor *x);
SG_API sg_tensor *sg_softplus(sg_tensor *x);
SG_API sg_tensor *sg_gelu(sg_tensor *x); /* exact erf form */
SG_API sg_tensor *sg_sin(sg_tensor *x);
SG_API sg_tensor *sg_cos(sg_tensor *x);
SG_API sg_tensor *sg_floor(sg_tensor *x);
SG_API sg_tensor *sg_ceil(sg_tensor *x);
SG_API sg_tensor *sg_round(sg_tensor *x); /* half to even */
SG_API sg_tensor *sg_sign(sg_tensor *x);
SG_API sg_tensor *sg_leaky_relu(sg_tensor *x, float alpha);
SG_API sg_tensor *sg_clip(sg_tensor *x, float lo, float hi);

/* ---- Binary ops (broadcasting) ------------------------------------------------------------- */

SG_API sg_tensor *sg_add(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_sub(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_mul(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_div(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_pow(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_maximum(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_minimum(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_squared_difference(sg_tensor *a, sg_tensor *b);
/* Comparisons return SG_BOOL. */
SG_API sg_tensor *sg_equal(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_not_equal(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_less(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_less_equal(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_greater(sg_tensor *a, sg_tensor *b);
SG_API sg_tensor *sg_greater_equal(sg_tensor *a, sg_tensor *b);
/* cond is SG_BOOL; cond, a and b broadcast together. */
SG_API sg_tensor *sg_where(sg_tensor *cond, sg_tensor *a, sg_tensor *b);

/* ---- Linear algebra ------------------------------------------------------------------------ */

/* Rank 2, or batched rank >= 3 with broadcast batch dimensions. */
SG_API sg_tensor *sg_matmul(sg_tensor *a, sg_tensor *b, bool transpose_a, bool transpose_b);

/* ---- Reductions ---------------------------------------------------------------------------- */
/* axes NULL or n_axes 0 = all axes; negative axes count from the end. */

SG_API sg_tensor *sg_sum(sg_tensor *x, const int *axes, int n_axes, bool keep_dims);
SG_API sg_tensor *sg_mean(sg_tensor *x, const int *axes, int n_axes, bool keep_dims);
SG_API sg_tensor *sg_max(sg_tensor *x, const int *axes, int n_axes, bool keep_dims);
SG_API sg_tensor *sg_min(sg_tensor *x, const int *axes, int n_axes, bool keep_dims);
SG_API sg_tensor *sg_logsumexp(sg_tensor *x, const int *axes, int n_axes, bool keep_dims);
SG_API sg_tensor *sg_argmax(sg_tensor *x, int axis); /* SG_I32 */
SG_API sg_tensor *sg_argmin(sg_tensor *x, int axis); /* SG_I32 */

/* ---- Neural-net ---------------------------------------------------------------------------- */

SG_API sg_tensor *sg_softmax(sg_tensor *x, int axis);
SG_API sg_tensor *sg_log_softmax(sg_tensor *x, int axis);
/* Mean over the batch of -sum(labels * log_softmax(logits)); last axis = classes. */
SG_API sg_tensor *sg_softmax_cross_entropy(sg_tensor *labels, sg_tensor *logits);

/* ---- Shape --------------------------------------------------------------------------------- */

SG_API sg_tensor *sg_reshape(sg_tensor *x, const int64_t *shape, int rank); /* one -1 allowed */
SG_API sg_tensor *sg_transpose(sg_tensor *x, const int *perm);              /* NULL = reverse */
SG_API sg_tensor *sg_slice(sg_tensor *x, const int64_t *begin,
                           const int64_t *size); /* -1 = to end */
SG_API sg_tensor *sg_concat(sg_tensor *const *xs, int n, int axis);
SG_API sg_tensor *sg_pad(sg_tensor *x, const int64_t *paddings, float value); /* rank pairs */
SG_API sg_tensor *sg_tile(sg_tensor *x, const int64_t *reps);
SG_API sg_tensor *sg_gather(sg_tensor *x, sg_tensor *indices, int axis); /* indices SG_I32 */
SG_API sg_tensor *sg_one_hot(sg_tensor *indices, int depth);             /* SG_F32 */
SG_API sg_tensor *sg_cast(sg_tensor *x, sg_dtype dtype); /* f32 to i32 truncates toward zero */

/* ---- Convolution, pooling, normalisation (images are NHWC) ---------------------------------- */

/* How a window op pads its input. SAME is TensorFlow's: out = ceil(in / stride), the total
   padding max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0) split with the odd one at
   the bottom / right. VALID: no padding, out = (in - (k - 1) * dilation - 1) / stride + 1.
   EXPLICIT: pads = {top, bottom, left, right}. A window, strides, dilations or pads whose
   sizes overflow 64-bit arithmetic are SG_ERR_ARG; an output with more elements than fit,
   SG_ERR_SHAPE. */
typedef enum sg_padding {
  SG_PADDING_VALID = 0,
  SG_PADDING_SAME = 1,
  SG_PADDING_EXPLICIT = 2
} sg_padding;

/* 2-D convolution (cross-correlation, as in TensorFlow): x [N, H, W, C], filter [KH, KW, C, O],
   result [N, OH, OW, O]. strides and dilations are {h, w} (NULL = {1, 1}); pads is read only
   for SG_PADDING_EXPLICIT (else may be NULL). Differentiable in x and filter. */
SG_API sg_tensor *sg_conv2d(sg_tensor *x, sg_tensor *filter, const int64_t *strides,
                            sg_padding padding, const int64_t *pads, const int64_t *dilations);
/* Depthwise convolution: filter [KH, KW, C, M]; result channel c * M + m convolves input
   channel c with filter[.., c, m]. Same arguments as sg_conv2d. */
SG_API sg_tensor *sg_depthwise_conv2d(sg_tensor *x, sg_tensor *filter, const int64_t *strides,
                                      sg_padding padding, const int64_t *pads,
                                      const int64_t *dilations);
/* Pooling over ksize = {h, w} windows of x [N, H, W, C] (strides NULL = ksize). Padded taps are
   ignored: max_pool takes the max of the taps inside the image (NaN propagates; its gradient
   goes to the first maximal tap), avg_pool divides by their number. */
SG_API sg_tensor *sg_max_pool(sg_tensor *x, const int64_t *ksize, const int64_t *strides,
                              sg_padding padding, const int64_t *pads);
SG_API sg_tensor *sg_avg_pool(sg_tensor *x, const int64_t *ksize, const int64_t *strides,
                              sg_padding padding, const int64_t *pads);
/* (x - mean) * scale / sqrt(variance + epsilon) + offset, per channel (x's last axis): mean,
   variance, offset and scale each hold one value per channel (shape [C], or [1, .., 1, C] as
   sg_moments makes with keep_dims). Differentiable in all five tensors, so batch statistics from
   sg_moments train through it. epsilon > 0. */
SG_API sg_tensor *sg_batch_norm(sg_tensor *x, sg_tensor *mean, sg_tensor *variance,
                                sg_tensor *offset, sg_tensor *scale, float epsilon);
/* Mean and (biased) variance of x over axes (NULL / 0 = all), like sg_mean: two new tensors in
 *mean and *variance (both NULL on error). Built from recorded ops, so it is differentiable. */
SG_API sg_status sg_moments(sg_tensor *x, const int *axes, int n_axes, bool keep_dims,
                            sg_tensor **mean, sg_tensor **variance);
/* Inverted dropout: each element is kept with probability 1 - rate and scaled by 1 / (1 - rate),
   else 0. The mask depends only on seed and the element's index (same on every backend and
   thread count); pass a new seed each step. 0 <= rate < 1. */
SG_API sg_tensor *sg_dropout(sg_tensor *x, float rate, uint64_t seed);

/* ---- Variables and optimizers ---------------------------------------------------------------- */

/* A variable: a kept (untracked) f32 copy of init, the one kind of tensor meant to change in
   place, through sg_assign and sg_optimizer_step. Dispose it when done. Views of it (sg_reshape)
   see the updates. */
SG_API sg_tensor *sg_variable(sg_tensor *init);
/* Copies value (same shape) into var. SG_ERR_STATE while a tape is open on this thread: the tape
   may hold var by reference for a backward pass. */
SG_API sg_status sg_assign(sg_tensor *var, sg_tensor *value);

typedef struct sg_optimizer sg_optimizer;
/* w -= lr * g. */
SG_API sg_optimizer *sg_sgd(float lr);
/* v = momentum * v + g; w -= lr * v (nesterov: w -= lr * (g + momentum * v)). */
SG_API sg_optimizer *sg_momentum(float lr, float momentum, bool nesterov);
/* Adam (Kingma & Ba) with bias correction, as PyTorch: m and v start at 0;
   w -= lr / (1 - beta1^t) * m / (sqrt(v / (1 - beta2^t)) + epsilon). */
SG_API sg_optimizer *sg_adam(float lr, float beta1, float beta2, float epsilon);
/* One update of vars[i] (variables) from grads[i] (same shapes), in place, each by one fused
   pass of the backend's update kernel. The optimizer's state is made on the first step for these
   n variables, by position: later steps must pass the same n and shapes. SG_ERR_STATE while a
   tape is open on this thread; SG_ERR_ARG when a gradient shares memory with any of the vars. */
SG_API sg_status sg_optimizer_step(sg_optimizer *opt, sg_tensor *const *vars,
                                   sg_tensor *const *grads, int n);
SG_API void sg_optimizer_set_lr(sg_optimizer *opt, float lr);
/* Frees the optimizer and its state; NULL is a no-op. */
SG_API void sg_optimizer_free(sg_optimizer *opt);

#ifdef __cplusplus
}
#endif

#endif /* SIMDGRAD_SIMDGRAD_H */
