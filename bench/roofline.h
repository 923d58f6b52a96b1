/* The machine's roofline, measured at start-up in the bench's own process: the FMA peak of each
 * instruction set and the triad bandwidth of each cache level and of DRAM, for each thread count
 * the bench runs. A benchmark's pct_roofline is 100 * max(flops / peak, bytes / bandwidth) / time,
 * i.e. its FLOP rate over min(peak, AI x bandwidth), with the bandwidth of the level its working
 * set fits in (docs/bench.md).
 */
#ifndef SIMDGRAD_BENCH_ROOFLINE_H
#define SIMDGRAD_BENCH_ROOFLINE_H

#include <stdbool.h>

typedef enum roof_level { ROOF_L1, ROOF_L2, ROOF_LLC, ROOF_DRAM, ROOF_LEVELS } roof_level;

/* Measures every ISA this CPU runs for each of the n thread counts (at most 2); quick takes
   fewer and shorter samples (--roofline=quick). Prints a summary to stderr. */
void roofline_measure(const int *threads, int n, bool quick);
/* The ISA whose roofline applies to a backend: scalar -> the baseline ("sse2" on x86-64, "neon"
   on aarch64), avx2, avx512, neon, and for OpenBLAS the best this CPU has. */
const char *roofline_isa_of(const char *backend);
/* The least time the roofline allows for flops and bytes on isa with that many threads:
   max(flops / peak, bytes / bandwidth of *level), where *level is where `bytes` fit (per thread
   for L1 and L2). 0 when not measured. */
double roofline_seconds(const char *isa, int threads, double flops, double bytes,
                        roof_level *level);
const char *roofline_level_name(roof_level l);
/* Adds the measured figures to the JSON context and to the table's header. */
void roofline_publish(void);

#endif /* SIMDGRAD_BENCH_ROOFLINE_H */
