/* A C interface to Google Benchmark (1.7), so the benchmarks themselves are plain C. The state
 * is benchmark::State behind an opaque pointer; registration takes a C function and an argument.
 */
#ifndef SIMDGRAD_GBENCH_SHIM_H
#define SIMDGRAD_GBENCH_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_state bench_state; /* opaque: a benchmark::State */
typedef void (*bench_fn)(bench_state *st, void *arg);

/* Registers fn(st, arg) under name; _args adds one instance per value (->Arg(args[i])), which
   gbench appends to the name: "exp/avx2" with 1024 runs as "exp/avx2/1024". */
void bench_register(const char *name, bench_fn fn, void *arg);
void bench_register_args(const char *name, bench_fn fn, void *arg, const int64_t *args, int nargs);

/* The timing loop: while (bench_keep_running(st)) { work }. Each call costs ~2 ns, so for tiny
   work run a batch of n per call with bench_keep_running_batch. */
int bench_keep_running(bench_state *st);
int bench_keep_running_batch(bench_state *st, int64_t n);
int64_t bench_range(bench_state *st, int i);
int64_t bench_iterations(bench_state *st);

void bench_set_items_processed(bench_state *st, int64_t v);
void bench_set_bytes_processed(bench_state *st, int64_t v);
/* counters[name] = v; is_rate divides it by the elapsed time (e.g. FLOP/s). */
void bench_counter(bench_state *st, const char *name, double v, int is_rate);
void bench_set_label(bench_state *st, const char *label);
void bench_pause(bench_state *st);
void bench_resume(bench_state *st);
void bench_skip_with_error(bench_state *st, const char *msg);

/* Runs the registered benchmarks with gbench's command-line flags; 1 on an unknown flag. One
   flag of our own: --table prints a table (op, size, backend, time, GB/s or GFLOP/s, speedup
   over the scalar backend) instead of gbench's console output, for names "<op>/<backend>/<n>". */
int bench_main(int argc, char **argv);

static inline void bench_do_not_optimize(const void *p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}
static inline void bench_clobber_memory(void) { __asm__ volatile("" : : : "memory"); }

#ifdef __cplusplus
}
#endif

#endif /* SIMDGRAD_GBENCH_SHIM_H */
