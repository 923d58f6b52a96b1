/* The peers' AVX-512 mask (hide_avx512.c), linked in as vs_peers preloads it: CPUID through
 * the mask against the real CPUID (faulting switched off around it), in this thread and in one
 * started later, and a fault that is not a CPUID still killing the process. Skipped where the
 * machine cannot fault CPUID (the mask is then off, and vs_peers says so). */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

int simdgrad_hide_avx512_state(void);
unsigned long simdgrad_hide_avx512_answered(void);

#define AVX512F (1u << 16)
#define AVX512VL (1u << 31)
#define AVX2 (1u << 5)
#define BMI2 (1u << 8)

typedef struct {
  uint32_t r[4];
} regs4;

static regs4 cpuid(uint32_t leaf, uint32_t subleaf) {
  regs4 v;
  __cpuid_count(leaf, subleaf, v.r[0], v.r[1], v.r[2], v.r[3]);
  return v;
}

/* The CPU's own answer: faulting off for this thread, then on again. */
static regs4 real_cpuid(uint32_t leaf, uint32_t subleaf) {
  cr_assert_eq(syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1), 0);
  regs4 v = cpuid(leaf, subleaf);
  cr_assert_eq(syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0), 0);
  return v;
}

static void need_mask(void) {
  if (simdgrad_hide_avx512_state() != 1) cr_skip_test("this machine cannot fault CPUID");
}

Test(hide_avx512, leaf7_loses_avx512_keeps_the_rest) {
  need_mask();
  regs4 real = real_cpuid(7, 0);
  unsigned long before = simdgrad_hide_avx512_answered();
  regs4 seen = cpuid(7, 0);
  cr_assert_eq(simdgrad_hide_avx512_answered(), before + 1, "the handler answered the CPUID");
  cr_assert_eq(seen.r[1] & (AVX512F | AVX512VL), 0, "AVX-512 still visible: ebx %#x", seen.r[1]);
  cr_assert_eq(seen.r[1] & (AVX2 | BMI2), real.r[1] & (AVX2 | BMI2), "AVX2 and BMI2 as the CPU");
  cr_assert_eq(seen.r[0], real.r[0], "the subleaf count as the CPU");
  /* only bits the CPU has, fewer of them */
  for (int i = 1; i < 4; i++) cr_assert_eq(seen.r[i] & ~real.r[i], 0);
}

Test(hide_avx512, other_leaves_unchanged) {
  need_mask();
  const uint32_t leaves[] = {0, 1, 0x80000000u, 0x80000001u};
  for (unsigned i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
    regs4 real = real_cpuid(leaves[i], 0), seen = cpuid(leaves[i], 0);
    if (leaves[i] == 1) { /* leaf 1's EBX holds the APIC ID of the core that ran it */
      real.r[1] &= 0x00ffffffu;
      seen.r[1] &= 0x00ffffffu;
    }
    for (int k = 0; k < 4; k++)
      cr_assert_eq(seen.r[k], real.r[k], "leaf %#x register %d: %#x, the CPU %#x", leaves[i], k,
                   seen.r[k], real.r[k]);
  }
}

static void *leaf7_ebx(void *out) {
  *(uint32_t *)out = cpuid(7, 0).r[1];
  return NULL;
}

Test(hide_avx512, a_later_thread_sees_the_mask) {
  need_mask();
  uint32_t ebx = AVX512F;
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, leaf7_ebx, &ebx), 0);
  cr_assert_eq(pthread_join(t, NULL), 0);
  cr_assert_eq(ebx & AVX512F, 0, "a thread started after the mask sees AVX-512");
}

/* With the mask or without (the constructor then put the old handler back). */
Test(hide_avx512, other_faults_still_kill, .signal = SIGSEGV) {
  volatile int *nowhere = NULL;
  *nowhere = 1;
}
