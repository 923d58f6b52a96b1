/* The CPU's cache sizes as the OS and CPUID give them, read at the baseline ISA: the engine's
 * choice of streamed stores (sg__flat_grain, engine.h) and the bench's roofline read them here,
 * so that both see the same last-level cache. */
#ifndef SIMDGRAD_CACHE_SIZE_H
#define SIMDGRAD_CACHE_SIZE_H

#include <stddef.h>

/* "48K", "2048K", "32M" (sysfs's form) in bytes; 0 if unreadable. */
size_t sg__parse_cache_size(const char *s);
/* The data or unified cache of `level` (1-3) of cpu0 in sysfs; 0 where there is none (some VMs
   publish no cache information there). */
size_t sg__cache_sysfs(int level);
/* The same from glibc's sysconf, which reads CPUID; 0 if unknown. A VM's CPUID may describe the
   host's cache (320 MiB of L3 where the VM's is 32), so sysfs comes first where it has a figure. */
size_t sg__cache_cpuid(int level);
/* The part of a last-level cache of `llc` bytes that `cpus` CPUs can count on: all of it, up to
   SG_LLC_PER_CPU_MAX a CPU (0 stays unknown; cpus < 1 leaves llc as it is). A socket's cache
   serves all its cores, and a VM's few vCPUs see the whole of it: 480 MiB of L3 on a 2-vCPU
   Intel Xeon VM, whose bandwidth fell past 48-96 MiB and whose flat passes of 128 MiB ran in
   0.45-0.80x the time streamed (docs/kernels.md, "Twenty-sixth landing"). No machine whose cache
   is its own has anywhere near 32 MiB a CPU (a 32 MiB L3 for 2 vCPUs of a Zen 4 VM, 105 MB for
   56 cores), so there the figure is unchanged. */
#define SG_LLC_PER_CPU_MAX ((size_t)32 << 20)
size_t sg__llc_share(size_t llc, long cpus);
/* The last-level cache in bytes that the engine streams by: sysfs's L3 of cpu0 (the instance
   cpu0 shares: one CCX or socket, not always the whole machine's, which errs toward streaming),
   else CPUID's, as sg__llc_share counts it for the online CPUs; 0 if neither knows. Read once,
   on the first call; sg__set_llc_bytes replaces it. */
size_t sg__llc_bytes(void);
/* Test-only: the figure sg__llc_bytes returns from now on (0: unknown). */
void sg__set_llc_bytes(size_t bytes);

#endif /* SIMDGRAD_CACHE_SIZE_H */
