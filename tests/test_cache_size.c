/* The cache sizes the engine streams by (engine/cache_size.h): sysfs's size strings, and the
 * last-level cache taken from sysfs where it has one. */
#include <criterion/criterion.h>

#include "engine/cache_size.h"

#include <unistd.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

Test(cache_size, parses_sysfs_sizes) {
  cr_expect_eq(sg__parse_cache_size("48K"), 48 * KIB);
  cr_expect_eq(sg__parse_cache_size("32768K"), 32 * MIB);
  cr_expect_eq(sg__parse_cache_size("1M"), 1 * MIB);
  cr_expect_eq(sg__parse_cache_size("512"), 512);
  cr_expect_eq(sg__parse_cache_size("junk"), 0);
  cr_expect_eq(sg__parse_cache_size(""), 0);
}

/* A VM's few CPUs count at most 32 MiB each of the socket's cache; a machine's own cache is
   counted whole. */
Test(cache_size, share_of_a_shared_cache) {
  cr_expect_eq(sg__llc_share(480 * MIB, 2), 64 * MIB);
  cr_expect_eq(sg__llc_share(32 * MIB, 2), 32 * MIB);
  cr_expect_eq(sg__llc_share(105000000, 112), 105000000);
  cr_expect_eq(sg__llc_share(64 * MIB, 1), 32 * MIB);
  cr_expect_eq(sg__llc_share(0, 2), 0, "an unknown cache stays unknown");
  cr_expect_eq(sg__llc_share(480 * MIB, 0), 480 * MIB, "no CPU count: the figure as read");
  cr_expect_eq(sg__llc_share(480 * MIB, -1), 480 * MIB);
}

Test(cache_size, last_level_from_sysfs_first) {
  size_t sysfs = sg__cache_sysfs(3), cpuid = sg__cache_cpuid(3);
  size_t want = sg__llc_share(sysfs ? sysfs : cpuid, sysconf(_SC_NPROCESSORS_ONLN));
  cr_expect_eq(sg__llc_bytes(), want, "llc %zu, sysfs %zu, CPUID %zu", sg__llc_bytes(), sysfs,
               cpuid);
  sg__set_llc_bytes(5 * MIB);
  cr_expect_eq(sg__llc_bytes(), 5 * MIB);
  sg__set_llc_bytes(want);
}
