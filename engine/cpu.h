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
} sg_cpu_info;

/* Queries the CPU (CPUID + XGETBV on x86-64, getauxval on aarch64). */
sg_cpu_info sg__cpu_detect(void);
/* Whether the CPU and OS can run each ISA level's kernels. */
bool sg__cpu_can_avx2(const sg_cpu_info *c);
bool sg__cpu_can_avx512(const sg_cpu_info *c);
/* "sse4.2 avx avx2 fma ..." */
void sg__cpu_describe(const sg_cpu_info *c, char *buf, unsigned size);

#endif
