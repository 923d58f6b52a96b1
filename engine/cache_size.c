/* Cache sizes from sysfs and CPUID (cache_size.h). */
#include "engine/cache_size.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t sg__parse_cache_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (end == s) return 0;
  if (*end == 'K' || *end == 'k') v *= 1024;
  if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return v > 0 ? (size_t)v : 0;
}

size_t sg__cache_sysfs(int level) {
  size_t found = 0;
  for (int i = 0; i < 8 && !found; i++) {
    char path[96], buf[32], type[32] = "";
    int lvl = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (fscanf(f, "%d", &lvl) != 1) lvl = 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if ((f = fopen(path, "r"))) {
      if (fscanf(f, "%31s", type) != 1) type[0] = 0;
      fclose(f);
    }
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (lvl == level && strcmp(type, "Instruction") != 0 && (f = fopen(path, "r"))) {
      if (fscanf(f, "%31s", buf) == 1) found = sg__parse_cache_size(buf);
      fclose(f);
    }
  }
  return found;
}

size_t sg__cache_cpuid(int level) {
  long v = 0;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  v = sysconf(level == 1   ? _SC_LEVEL1_DCACHE_SIZE
              : level == 2 ? _SC_LEVEL2_CACHE_SIZE
                           : _SC_LEVEL3_CACHE_SIZE);
#else
  (void)level;
#endif
  return v > 0 ? (size_t)v : 0;
}

/* Read once (pthread_once orders the first store before every caller's load); the setter runs
   the read first, so that a first read cannot come after it and overwrite the set value. Relaxed
   loads suffice: the figure only picks a chunk size, and any value gives the same results. */
static atomic_size_t g_llc;
static pthread_once_t g_llc_once = PTHREAD_ONCE_INIT;

size_t sg__llc_share(size_t llc, long cpus) {
  if (cpus < 1 || (size_t)cpus > SIZE_MAX / SG_LLC_PER_CPU_MAX) return llc;
  size_t most = (size_t)cpus * SG_LLC_PER_CPU_MAX;
  return llc < most ? llc : most;
}

static void llc_read(void) {
  size_t llc = sg__cache_sysfs(3);
  llc = sg__llc_share(llc ? llc : sg__cache_cpuid(3), sysconf(_SC_NPROCESSORS_ONLN));
  atomic_store_explicit(&g_llc, llc, memory_order_relaxed);
}

size_t sg__llc_bytes(void) {
  pthread_once(&g_llc_once, llc_read);
  return atomic_load_explicit(&g_llc, memory_order_relaxed);
}

void sg__set_llc_bytes(size_t bytes) {
  pthread_once(&g_llc_once, llc_read);
  atomic_store_explicit(&g_llc, bytes, memory_order_relaxed);
}
