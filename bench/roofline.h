/* The machine's roofline, measured at start-up in the bench's own process: per instruction set
 * and thread count, the FMA peak and the read-only, triad, scale (a copy's mix) and fill
 * bandwidth at a dozen footprints from half an L1 to 4 x the LLC. A row is judged by roof_judge
 * (roof_model.h, the model without a clock) at its own footprint and read/write mix; pct_roofline
 * is 100 x that bound over its time (docs/bench.md).
 */
#ifndef SIMDGRAD_BENCH_ROOFLINE_H
#define SIMDGRAD_BENCH_ROOFLINE_H

#include <stdbool.h>

#include "roof_model.h"

/* Measures every ISA this CPU runs for each of the n thread counts (at most 2); quick takes
   fewer footprints and shorter samples (--roofline=quick). Prints a summary to stderr. */
void roofline_measure(const int *threads, int n, bool quick);
/* The ISA whose roofline applies to a backend: scalar -> the baseline ("sse2" on x86-64, "neon"
   on aarch64), avx2, avx512, neon, and for OpenBLAS the best this CPU has. */
const char *roofline_isa_of(const char *backend);
/* The ISA just below isa in the roofline's list (the ones whose curves isa's take too), where it
   has issue loops of its own and the CPU runs it: AVX-512's AVX2, whose kernels an AVX-512
   backend may run (and hands some calls to: SG_VEC_NARROW_IN_L2, kernels_simd/simd_decls.inc).
   NULL: none (the baseline, AVX2 above it). */
const char *roofline_narrower_isa(const char *isa);
/* The verdict on w run on isa with that many threads (roof_judge); its seconds are 0 when the
   roofline was not measured. The level is filled in either way. */
roof_verdict roofline_judge(const char *isa, int threads, const roof_work *w);
/* The least time n elements of a kernel (`slot`, as bench/kernel_issued.inc names it) take on
   isa's vector pipes with `threads` threads: its main loop's vector instructions, each
   independent of the others, measured on the spot the first time a row asks (the mix probe,
   roofline_isa.h), at the thread count whose figures serve `threads`, and kept: roof_work.mix_s.
   0 where not measured (a kernel or ISA the table does not count, the roofline off). */
double roofline_kernel_mix(const char *slot, const char *isa, int threads, double n);
/* A row beat its kernel's mix by more than ROOF_MODEL_ERROR_PCT: measures that mix again, once per
   run, keeping the better; returns whether it rose (counted by roofline_raised). */
bool roofline_recheck_mix(const char *slot, const char *isa, int threads);
/* A row beat its bound by more than ROOF_MODEL_ERROR_PCT: the figures it was judged on may have
   been measured low (on a shared machine, the start-up second can be a bad one). Measures the
   peak (compute) or the curve points the row's bound came from (the two around footprint, or the
   one above it past a cache) of isa at `threads` again, with isa's loops and those of each ISA it
   includes that supplied a figure there, each at most once per run, keeping the better; returns
   whether a figure rose, after which the row is judged again. roofline_raised() counts the figures
   raised so. */
bool roofline_recheck(const char *isa, int threads, double footprint, bool compute);
int roofline_raised(void);
/* After the rows: the FMA peak and the issue rates of every ISA and thread count, and every
   kernel's mix a row asked for, measured once more, and how far the best new figure lies above the
   one the rows were judged on (0.1: 10% above; 0 when none rose or nothing was measured). The rows'
   compute- and issue-bound percentages read that much high at most: the start-up samples ran on a
   busier machine. */
double roofline_compute_drift(void);
/* Adds the measured figures to the JSON context and to the table's header. */
void roofline_publish(void);

#endif /* SIMDGRAD_BENCH_ROOFLINE_H */
