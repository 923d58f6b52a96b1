/* The machine's roofline, measured at start-up in the bench's own process: per instruction set
 * and thread count, the FMA peak and the read-only and triad bandwidth at a dozen footprints
 * from half an L1 to 4 x the LLC. A row is judged by roof_judge (roof_model.h, the model without
 * a clock) at its own footprint and read/write mix; pct_roofline is 100 x that bound over its
 * time (docs/bench.md).
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
/* The verdict on w run on isa with that many threads (roof_judge); its seconds are 0 when the
   roofline was not measured. The level is filled in either way. */
roof_verdict roofline_judge(const char *isa, int threads, const roof_work *w);
/* Adds the measured figures to the JSON context and to the table's header. */
void roofline_publish(void);

#endif /* SIMDGRAD_BENCH_ROOFLINE_H */
