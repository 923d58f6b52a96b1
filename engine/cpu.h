/* CPU feature detection, compiled for the baseline ISA: it decides which kernels may run. */
#ifndef SIMDGRAD_CPU_H
#define SIMDGRAD_CPU_H

#include <stdbool.h>

typedef struct sg_cpu_info {
  bool sse42, avx, avx2, fma, f16c;
  bool avx512f, avx512bw, avx512dq, avx512vl;
  bool os_ymm; /* XGETBV: the OS saves YMM state */
  bool os_zmm; /* XGETBV: the OS saves opmask and ZMM state */
  bool neon, asimd;
  bool intel; /* CPUID's vendor string is GenuineIntel: picks the plain unary loops (below) */
} sg_cpu_info;

/* Queries the CPU (CPUID + XGETBV on x86-64, getauxval on aarch64). */
sg_cpu_info sg__cpu_detect(void);
/* Whether the CPU and OS can run each ISA level's kernels. */
bool sg__cpu_can_avx2(const sg_cpu_info *c);
bool sg__cpu_can_avx512(const sg_cpu_info *c);
/* Whether this CPU's staged unary loops (kernels_simd/simd_unary.inc) should give way to the
   plain ones where an ISA has both: measured so on an Intel Xeon, the other way on AMD Zen 4 and
   Zen 5 (docs/kernels.md, "Plain loops on Intel"). */
bool sg__cpu_prefers_plain_loops(const sg_cpu_info *c);
/* Plain loops or staged ones: as `env` (SIMDGRAD_UNARY_LOOPS's value) says, "plain" or
   "staged", else as the CPU prefers; *known is false where env is set to anything else. The
   engine and the bench (which reports and models what the engine runs) both ask here. */
bool sg__cpu_plain_loops(const sg_cpu_info *c, const char *env, bool *known);
/* "sse4.2 avx avx2 fma ..." */
void sg__cpu_describe(const sg_cpu_info *c, char *buf, unsigned size);

#endif
