/* CPU feature detection. Why XGETBV as well as CPUID: a CPU may support AVX-512 while the OS
 * does not save ZMM state on context switches; running AVX-512 code there corrupts registers. */
#include "engine/cpu.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>

static unsigned long long xgetbv0(void) {
  unsigned lo, hi;
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((unsigned long long)hi << 32) | lo;
}

sg_cpu_info sg__cpu_detect(void) {
  sg_cpu_info c;
  memset(&c, 0, sizeof c);
  unsigned a, b, cx, d;
  if (!__get_cpuid(0, &a, &b, &cx, &d)) return c;
  /* The vendor string is EBX, EDX, ECX: "Genu" "ineI" "ntel". */
  c.intel = b == 0x756e6547u && d == 0x49656e69u && cx == 0x6c65746eu;
  if (!__get_cpuid(1, &a, &b, &cx, &d)) return c;
  c.sse42 = cx & (1u << 20);
  c.fma = cx & (1u << 12);
  c.f16c = cx & (1u << 29);
  bool osxsave = cx & (1u << 27);
  c.avx = cx & (1u << 28);
  if (osxsave) {
    unsigned long long xcr0 = xgetbv0();
    c.os_ymm = (xcr0 & 0x6) == 0x6;               /* XMM and YMM state */
    c.os_zmm = c.os_ymm && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM0-15 upper, ZMM16-31 */
  }
  if (__get_cpuid_max(0, NULL) >= 7) {
    __cpuid_count(7, 0, a, b, cx, d);
    c.avx2 = b & (1u << 5);
    c.avx512f = b & (1u << 16);
    c.avx512dq = b & (1u << 17);
    c.avx512bw = b & (1u << 30);
    c.avx512vl = b & (1u << 31);
  }
  return c;
}

#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif

sg_cpu_info sg__cpu_detect(void) {
  sg_cpu_info c;
  memset(&c, 0, sizeof c);
  unsigned long hw = getauxval(AT_HWCAP);
  c.asimd = hw & HWCAP_ASIMD;
  c.neon = c.asimd;
  return c;
}

#else
sg_cpu_info sg__cpu_detect(void) {
  sg_cpu_info c;
  memset(&c, 0, sizeof c);
  return c;
}
#endif

bool sg__cpu_can_avx2(const sg_cpu_info *c) { return c->avx && c->avx2 && c->fma && c->os_ymm; }

bool sg__cpu_can_avx512(const sg_cpu_info *c) {
  return sg__cpu_can_avx2(c) && c->avx512f && c->avx512bw && c->avx512dq && c->avx512vl &&
         c->os_zmm;
}

bool sg__cpu_prefers_plain_loops(const sg_cpu_info *c) { return c->intel; }

bool sg__cpu_plain_loops(const sg_cpu_info *c, const char *env, bool *known) {
  *known = !env || !*env || strcmp(env, "plain") == 0 || strcmp(env, "staged") == 0;
  if (env && *known && *env) return env[0] == 'p';
  return sg__cpu_prefers_plain_loops(c);
}

void sg__cpu_describe(const sg_cpu_info *c, char *buf, unsigned size) {
  struct {
    bool on;
    const char *name;
  } f[] = {{c->sse42, "sse4.2"},      {c->avx, "avx"},           {c->avx2, "avx2"},
           {c->fma, "fma"},           {c->f16c, "f16c"},         {c->avx512f, "avx512f"},
           {c->avx512bw, "avx512bw"}, {c->avx512dq, "avx512dq"}, {c->avx512vl, "avx512vl"},
           {c->os_ymm, "os-ymm"},     {c->os_zmm, "os-zmm"},     {c->asimd, "asimd"}};
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
    if (!f[i].on || used >= size) continue;
    used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? " " : "", f[i].name);
  }
}
