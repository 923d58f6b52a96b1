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
/* The last-level cache in bytes: sysfs's L3 of cpu0 (the instance cpu0 shares: one CCX or
   socket, not always the whole machine's, which errs toward streaming), else CPUID's; 0 if
   neither knows. Read once, on the first call; sg__set_llc_bytes replaces it. */
size_t sg__llc_bytes(void);
/* Test-only: the figure sg__llc_bytes returns from now on (0: unknown). */
void sg__set_llc_bytes(size_t bytes);

#endif /* SIMDGRAD_CACHE_SIZE_H */
