/* What the benchmark files share: how a benchmark is named and registered, the work it declares
 * (for the throughput and roofline counters), input buffers, and the bench's parallel-for.
 *
 * Every benchmark is named "<op>/<backend>/<shape>/threads:<T>" and registered on its own (no
 * gbench arguments), in the order the table wants: per op, per shape, per thread count, scalar
 * first (the baseline of "vs scalar"), then OpenBLAS where there is one, then the SIMD backends.
 */
#ifndef SIMDGRAD_BENCH_H
#define SIMDGRAD_BENCH_H

#include <simdgrad/backend.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gbench_shim.h"
#include "roof_model.h"

/* = SG_GRAIN_ELEMENTWISE in engine/engine.h: elements per chunk of the engine's parallel-for.
   The kernel benchmarks split their work the same way, so their threads:N figures are what an
   op gets from the engine. */
#define BENCH_GRAIN ((int64_t)1 << 16)
/* = sg__flat_grain (engine/engine.h, which it calls): the engine's chunks of a flat elementwise
   pass whose kernel streams (a same-shape unary or binary op or where, forward or backward) and
   that reads and writes `bytes` bytes an element: SG_STREAM_CHUNK, which the kernels stream, where
   the footprint outgrows the last-level cache and n is at least 2 x SG_STREAM_CHUNK;
   BENCH_GRAIN otherwise. The cache size comes from the bench's own copy of
   engine/cache_size.c (the library's is hidden), which reads the same sysfs and CPUID figures;
   sg__set_llc_bytes in the bench would not reach the library. */
int64_t bench_flat_grain(int64_t n, int bytes);
/* The engine's rows per chunk for a pass over `rows` rows of `row` floats whose kernel streams
   row by row (sg__rows_stream_grain): whole rows of at least SG_STREAM_CHUNK elements where it
   streams, 0 where it does not. */
int64_t bench_rows_stream_grain(int64_t rows, int64_t row, int bytes);
/* The engine's chunks of a unary kernel's pass (`slot`: "tanh", "tanh_backward", ...): finer
   for the costly kernels of engine/unary_cost.h where they do not stream, bench_flat_grain for
   the rest. Compares names: call it when a case is set up, not in its loop. */
int64_t bench_unary_grain(const char *slot, int64_t n, int bytes);
/* Row length of the [rows, cols] cases (reductions, softmax, cross-entropy, row shape ops). */
#define BENCH_COLS 1024

/* ---- The suite ---- */

/* Element counts (L1, L2, LLC and DRAM sized on the usual CPU; the roofline picks the level from
   the real cache sizes) and the matmul sizes (m = n = k). */
extern const int64_t bench_sizes[];
extern const int bench_n_sizes;
extern const int64_t bench_matmul_sizes[];
extern const int bench_n_matmul_sizes;

/* false: register only the default suite (`make bench`: one to two minutes on 2 cores). */
extern bool bench_all;

/* The backends to measure, scalar first: every one this CPU runs, or scalar plus the one
   SIMDGRAD_BACKEND names. Returns how many (at most 4). */
int bench_backends(const sg_backend **out);
/* The thread counts to measure: 1, and every core (sg_threads() at start-up) when that is more.
   Returns how many (1 or 2). */
int bench_thread_counts(int *out);
/* "1024" or "4096x1024" for n elements in rows of BENCH_COLS. */
void bench_rows_of(int64_t n, int64_t *rows, int64_t *cols);

/* Whether the default suite runs op at size (elements, or N of an N x N matmul); every
   "engine.*" entry is in it. */
bool bench_in_default(const char *op, int64_t size);
/* Registers fn(st, arg) as "<op>/<backend>/<shape>/threads:<threads>" unless the default suite
   is running and in_default is false. arg must live as long as the process. */
void bench_add(const char *op, const char *backend, const char *shape, int threads, bool in_default,
               bench_fn fn, void *arg);

void bench_register_elementwise(void); /* bench_elementwise.c */
void bench_register_rows(void);        /* bench_rows.c: reductions, softmax, batch norm */
void bench_register_matmul(void);      /* bench_matmul.c, OpenBLAS included */
void bench_register_gemm_taps(void);   /* bench_gemm_taps.c: a convolution row's taps */
void bench_register_gemm_mix(void);    /* bench_gemm_mix.c: the GEMM tile's k step alone */
void bench_register_shape(void);       /* bench_shape.c: transpose, scatter_add kernels */

/* The kernels of transpose.pattern, its .reads and .writes, and transpose.copy (bench_shape.c,
   bench/transpose_pattern.inc), x86-64 only: the transpose kernel of that ISA without its
   register transposes, its reads or its writes alone in the kernel's order, and a front-to-back
   copy with its stores. */
sg_transpose_fn bench_transpose_pattern__avx2, bench_transpose_pattern__avx512;
sg_transpose_fn bench_transpose_copy__avx2, bench_transpose_copy__avx512;
sg_transpose_fn bench_transpose_reads__avx2, bench_transpose_reads__avx512;
sg_transpose_fn bench_transpose_writes__avx2, bench_transpose_writes__avx512;
void bench_register_api(void);    /* bench_api.c: whole ops through the tape */
void bench_register_engine(void); /* bench_engine.c: engine overhead */
void bench_register_train(void);  /* bench_train.c: training steps, conv 3x3, profiler */

/* ---- Running on a backend ---- */

/* The engine's backend and threads before bench_enter, for bench_leave. */
typedef struct bench_engine_state {
  char backend[16];
  int threads;
} bench_engine_state;
/* Switches the engine to backend `be` and `threads` threads and opens a scope for what the
   benchmark makes; bench_leave closes it and restores the engine. */
void bench_enter(const sg_backend *be, int threads, bench_engine_state *saved);
void bench_leave(const bench_engine_state *saved);

/* ---- Work and counters ---- */

typedef struct bench_work {
  double flops;   /* per iteration, as the kernels execute them (bench_kernel_flops); 0 for pure
                     data movement */
  double bytes;   /* read + written per iteration by the kernels that run (each buffer once per
                     pass, no write-allocate: roof_model.h) */
  double written; /* of which written */
  double written_in_place; /* of which stored over data the same pass read (roof_model.h) */
  double footprint;        /* distinct bytes one iteration touches; 0: bytes */
  double items;            /* per iteration: elements of the output, or ops for engine overhead */
  /* Kernels that call a library function (bench_kernel_opaque): their least time, from their
     own rate with the data in cache (bench_kernel_rate), and the nominal FLOPs of theirs that
     `flops` holds, which the roof leaves out for that time (roof_model.h, kernel_s). */
  double kernel_s, kernel_flops;
  /* Vector instructions the kernels issue per iteration, in all and per class
     (bench_kernel_issued), all threads: the issue bound; 0 where not counted. */
  double insns, cls[ROOF_N_CLASSES];
  /* The kernels whose own mixes bound their time on the vector pipes (roofline_kernel_mix):
     bench/kernel_issued.inc's slots, NULL for none, each run on mix_n elements. */
  const char *mix_slots[2];
  double mix_n;
  const char *isa; /* the roofline to measure against: roofline_isa_of(backend) */
  int threads;
  const char *desc; /* the label's start, e.g. "[4096,1024] over axis 1"; NULL for none */
} bench_work;

/* ---- Kernels whose arithmetic is not counted ---- */

/* True when slot's FLOPs on backend are nominal: its kernel calls a library function charged
   OPINFO_TRANSC (SLEEF in the SIMD kernels, libm in the scalar ones) whose work the tables do not
   count. Such a row's compute bound is the kernel's own rate with its data in cache. */
bool bench_kernel_opaque(const char *slot, const char *backend);

/* "plain" or "staged": the loops the library runs for the unary kernels that have both
   (engine/cpu.h's sg__cpu_plain_loops, from SIMDGRAD_UNARY_LOOPS and the CPU, as the engine
   decides). */
const char *bench_unary_loops(void);
/* The name of slot's kernel on backend in bench/kernel_issued.inc and the mix probes: slot, or
   "<slot>_plain" where the library runs that plain loop (bench_unary_loops). */
const char *bench_issued_slot(const char *slot, const char *backend);

/* Adds n times the vector instructions per element that slot's kernel issues on backend, in all
   to *insns and per class to cls[], from bench/kernel_issued.inc (generated from the objects by
   docs/kernel_loops.py --issued); false (adding nothing) for a kernel it does not count: the
   scalar backend, NEON, other templates, or kernels that call SLEEF, whose rows keep the
   in-cache rate. */
bool bench_kernel_issued(const char *slot, const char *backend, double n, double *insns,
                         double cls[ROOF_N_CLASSES]);

/* Elements per measurement of a kernel's rate: inputs and outputs stay in L1 or L2. */
#define BENCH_RATE_N 4096
/* The least seconds one fn(0, n, ctx) takes, over enough calls to see the best (the data in
   cache after the first). */
double bench_kernel_seconds(void (*fn)(int64_t lo, int64_t hi, void *ctx), int64_t n, void *ctx);
/* Seconds per element of slot's kernel on be with its data in cache, measured once per process
   (bench_elementwise.c, bench_rows.c): for rows whose op runs the kernel (bench_api.c). 0 when
   the slot has no such measurement. */
double bench_ew_rate(const sg_backend *be, const char *slot);
double bench_rows_rate(const sg_backend *be, const char *slot);

/* After the timing loop: sets items_per_second, bytes_per_second, FLOPS (when flops > 0), AI
   (FLOP per byte), pct_roofline with the roof it used (footprint_bytes, roof_gbs, roof_flags),
   and simdgrad_threads, all from the wall time the loop took (bench_elapsed). */
void bench_report(bench_state *st, const bench_work *w);

/* ---- Buffers ---- */

/* bytes of memory, 2 MiB aligned, on huge pages where the kernel allows (madvise); free() it.
   abort()s when out of memory. */
void *bench_alloc(size_t bytes);
/* Buffer i (0 <= i < BENCH_BUFFERS) with room for n floats, 2 MiB aligned and backed by huge
   pages where the kernel allows, reused across benchmarks (a fresh 64 MiB buffer costs more in
   page faults than the kernel it feeds). Holds uniform values in [lo, hi) from a fixed seed; it
   is refilled only when its last use asked for something else. abort()s when out of memory: a
   benchmark cannot go on without its buffers. */
#define BENCH_BUFFERS 8
float *bench_buffer(int i, size_t n, float lo, float hi);
/* Buffer i as room for n floats a benchmark writes (an output): not filled. */
float *bench_output(int i, size_t n);
/* Buffer i as n bytes of 0 and 1 (a where condition). */
uint8_t *bench_buffer_bool(int i, size_t n);
/* Buffer i as n int32 indices uniform in [0, bound). */
int32_t *bench_buffer_index(int i, size_t n, int32_t bound);
/* How many distinct values those n indices take (drawn with repeats: n = bound gives about 63%
   of bound): the rows a gather reads, or a scatter reads and writes. */
size_t bench_index_distinct(size_t n, int32_t bound);
/* Buffer i as [rows, cols] soft labels: positive, each row summing to 1. */
float *bench_buffer_labels(int i, size_t rows, size_t cols);

/* ---- The bench's parallel-for ---- */

typedef void (*bench_range_fn)(int64_t lo, int64_t hi, void *ctx);
/* sg__parallel_for's split, with `threads` OpenMP threads: chunks of grain items, serial when
   there is one chunk or one thread. */
void bench_parallel_for(int64_t n, int64_t grain, int threads, bench_range_fn fn, void *ctx);
/* Seconds on the monotonic clock, for the rows that time calls themselves. */
double bench_now(void);
/* How many chunks that makes: a threads:N benchmark is registered only when it is more than 1
   (the engine runs a single chunk on the calling thread). */
int64_t bench_chunks(int64_t n, int64_t grain);
/* The grain, in rows, of an op over rows of `row` elements: the engine's rows_grain. */
int64_t bench_rows_grain(int64_t row);

/* ---- OpenBLAS, the matmul reference (bench_openblas.c) ---- */

/* Opens the OpenBLAS CMake found, with the kernel bench_openblas.c chooses, and records its
   build in the context; false when there is none. Call it before any thread starts (it forks
   to ask OpenBLAS which kernel it would pick). Idempotent. */
bool bench_openblas_load(void);
void bench_openblas_set_threads(int threads);
/* C = A B, all n x n row-major: cblas_sgemm. */
void bench_openblas_sgemm(int n, const float *a, const float *b, float *c);

/* ---- Per-op figures (bench_opinfo.c) ---- */

/* Input range of operand i (0 or 1) of an op, by op name ("exp", "pow"): its op-info row's
   bench range; [-4, 4) for an op with no elementwise row (reshape, matmul, ...). */
void bench_op_range(const char *op, int i, float *lo, float *hi);
/* --input-range=LO,HI: operand 0 of every op drawn from [lo, hi) instead (a kernel whose speed
   depends on its data, as AVX-512's gelu on its far lanes, measured on other data). False, with
   nothing changed, unless the text is two finite numbers lo < hi, with no blank before either,
   whose difference is finite too. */
bool bench_set_input_range(const char *text);
/* Nominal FLOPs per element of a slot ("exp", "exp_backward", "reduce_max", ...): see
   docs/bench.md. A slot without a row in the op-info tables ends the program. */
double bench_op_flops(const char *slot);
/* FLOPs per element a slot's kernel on `backend` executes (bench_opinfo.c): for the SIMD
   backends' polynomial functions (exp, tanh, sigmoid, gelu, softmax, ...) the lanes of their
   FMAs (2 each) and multiplies (2 each: a slot of an FMA pipe), the simd_fwd / simd_bwd of their
   op-info rows; otherwise bench_op_flops. */
double bench_kernel_flops(const char *slot, const char *backend);

#endif /* SIMDGRAD_BENCH_H */
