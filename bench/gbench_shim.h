/* A C interface to Google Benchmark (1.7), so the benchmarks themselves are plain C. A
 * bench_state wraps benchmark::State and also times the loop on the wall clock, so every rate
 * (bytes/s, FLOP/s, % of roofline) is per wall second, also for the multi-threaded runs.
 */
#ifndef SIMDGRAD_GBENCH_SHIM_H
#define SIMDGRAD_GBENCH_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bench_state bench_state; /* opaque: a benchmark::State and the loop's wall time */
typedef void (*bench_fn)(bench_state *st, void *arg);

/* Registers fn(st, arg) under name; benchmarks run in registration order. */
void bench_register(const char *name, bench_fn fn, void *arg);

/* The timing loop: while (bench_keep_running(st)) { work }. Each call costs ~2 ns, so for tiny
   work run a batch of n per call with bench_keep_running_batch. */
int bench_keep_running(bench_state *st);
int bench_keep_running_batch(bench_state *st, int64_t n);
int64_t bench_iterations(bench_state *st);
/* Before the loop: bench_keep_running also times each call (one clock read per call, for work
   of microseconds and more), and bench_best_call gives the fastest (seconds; 0 when no call
   ran). On a shared machine a neighbour slows some calls; the fastest call is measured
   the way the roofline's peaks are (the best of short samples), so the two compare. */
void bench_time_each_call(bench_state *st);
double bench_best_call(bench_state *st);
/* Wall seconds from the first bench_keep_running call to the one that returned 0. */
double bench_elapsed(bench_state *st);

/* counters[name] = v, reported as is. */
void bench_counter(bench_state *st, const char *name, double v);
void bench_set_label(bench_state *st, const char *label);
void bench_skip_with_error(bench_state *st, const char *msg);

/* A key and value for the JSON "context" (benchmark::AddCustomContext). */
void bench_add_context(const char *key, const char *value);
/* Lines printed above the --table table (the machine's roofline, the backends). */
void bench_set_table_header(const char *text);

/* How many registered benchmarks the --benchmark_filter in argv (if any) selects. */
int64_t bench_count_selected(int argc, char **argv);

/* Runs the registered benchmarks with gbench's command-line flags. One flag of our own: --table
   prints the table (op, shape, backend, threads, time, GB/s, GFLOP/s, % of roofline, speedup
   over scalar and over OpenBLAS) instead of gbench's console output, unless --benchmark_format
   asks for a format; its footer explains the flags of %roof (bench_report's roof_flags) and
   why a "vs scalar" cell is empty. A progress line goes to stderr. Returns 0, 1 on an unknown
   flag, 2 when a benchmark reported an error, 3 when the filter selects none. */
int bench_main(int argc, char **argv);

static inline void bench_do_not_optimize(const void *p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}
static inline void bench_clobber_memory(void) { __asm__ volatile("" : : : "memory"); }

#ifdef __cplusplus
}
#endif

#endif /* SIMDGRAD_GBENCH_SHIM_H */
