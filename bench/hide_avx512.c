/* libsimdgrad_hide_avx512.so: loaded first into a peer's process (LD_PRELOAD, bench/vs_peers
 * --backend avx2), it makes CPUID say the CPU has no AVX-512, so that a peer with no ISA knob of
 * its own (ONNX Runtime's MLAS) runs the kernels it runs on an AVX2 CPU, and the AVX2 backend is
 * compared with AVX2 kernels.
 *
 * How: Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID, where the CPU and the hypervisor offer
 * it) makes every CPUID in user space raise SIGSEGV. The handler runs the real CPUID with faulting
 * off for that one instruction, clears the AVX-512 bits (and AMX's, AVX10's: they come with
 * it), writes the four registers and steps over the instruction. The setting is per thread and
 * inherited by the threads and processes started after it, so a constructor that runs before
 * the peer's own libraries load covers them all. XGETBV cannot be faulted: the OS still reports
 * the ZMM state enabled, which a dispatcher reads only beside the CPUID bit.
 *
 * Any other SIGSEGV goes to the handler that was there before, or kills the process as it would
 * have. simdgrad_hide_avx512_state() tells the peer's runner whether the mask is on. */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* CPUID.(EAX=7, ECX=0): EBX AVX512F, DQ, IFMA, PF, ER, CD, BW, VL; ECX VBMI, VBMI2, VNNI, BITALG,
   VPOPCNTDQ; EDX 4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, FP16, AMX-TILE, AMX-INT8. */
#define LEAF7_EBX_AVX512 0xdc230000u
#define LEAF7_ECX_AVX512 0x00005842u
#define LEAF7_EDX_AVX512 0x03c0010cu
/* CPUID.(EAX=7, ECX=1): EAX AVX512_BF16, AMX-FP16; EDX AVX10. */
#define LEAF7_1_EAX_AVX512 0x00200020u
#define LEAF7_1_EDX_AVX10 0x00080000u

/* The project builds with hidden symbols; these few are what the test and the runner call. */
#define HIDE_AVX512_API __attribute__((visibility("default")))

static struct sigaction g_previous;
static volatile int g_state;     /* 1: CPUID masked; -1: no CPUID faulting here; 0: not loaded */
static unsigned long g_answered; /* atomically: any thread may fault */

static int cpuid_faulting(int on) { return (int)syscall(SYS_arch_prctl, ARCH_SET_CPUID, !on); }

HIDE_AVX512_API void simdgrad_hide_avx512_mask(uint32_t leaf, uint32_t subleaf, uint32_t r[4]);
void simdgrad_hide_avx512_mask(uint32_t leaf, uint32_t subleaf, uint32_t r[4]) {
  if (leaf == 7 && subleaf == 0) {
    r[1] &= ~LEAF7_EBX_AVX512;
    r[2] &= ~LEAF7_ECX_AVX512;
    r[3] &= ~LEAF7_EDX_AVX512;
  } else if (leaf == 7 && subleaf == 1) {
    r[0] &= ~LEAF7_1_EAX_AVX512;
    r[3] &= ~LEAF7_1_EDX_AVX10;
  } else if (leaf == 0x24) { /* AVX10's own leaf: nothing to report */
    r[0] = r[1] = r[2] = r[3] = 0;
  }
}

static void pass_on(int sig, siginfo_t *info, void *context) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler == SIG_DFL || g_previous.sa_handler == SIG_IGN) {
    /* The fault recurs on return, now with the default action: the process dies as it would
       have (a SIGSEGV from a fault cannot be ignored). */
    signal(sig, SIG_DFL);
  } else {
    g_previous.sa_handler(sig);
  }
}

static void on_segv(int sig, siginfo_t *info, void *context) {
  ucontext_t *uc = context;
  greg_t *regs = uc->uc_mcontext.gregs;
  const unsigned char *ip = (const unsigned char *)regs[REG_RIP];
  /* A faulted CPUID is a general protection fault: si_code SI_KERNEL, the instruction 0F A2. */
  if (info->si_code != SI_KERNEL || ip[0] != 0x0f || ip[1] != 0xa2) {
    pass_on(sig, info, context);
    return;
  }
  uint32_t leaf = (uint32_t)regs[REG_RAX], subleaf = (uint32_t)regs[REG_RCX], r[4];
  cpuid_faulting(0);
  __cpuid_count(leaf, subleaf, r[0], r[1], r[2], r[3]);
  cpuid_faulting(1);
  simdgrad_hide_avx512_mask(leaf, subleaf, r);
  regs[REG_RAX] = r[0]; /* CPUID writes 32 bits and clears the upper half */
  regs[REG_RBX] = r[1];
  regs[REG_RCX] = r[2];
  regs[REG_RDX] = r[3];
  regs[REG_RIP] += 2;
  __atomic_fetch_add(&g_answered, 1, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void hide_avx512(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSEGV, &sa, &g_previous) != 0) {
    g_state = -1;
    return;
  }
  if (cpuid_faulting(1) != 0) { /* no CPUID faulting (CPU or hypervisor): leave all as it was */
    sigaction(SIGSEGV, &g_previous, NULL);
    g_state = -1;
    return;
  }
  g_state = 1;
}

/* 1 when CPUID hides AVX-512 in this process, -1 when this machine cannot fault CPUID. */
HIDE_AVX512_API int simdgrad_hide_avx512_state(void);
int simdgrad_hide_avx512_state(void) { return g_state; }
/* How many CPUIDs the handler answered in this process (the peer's runner reports it). */
HIDE_AVX512_API unsigned long simdgrad_hide_avx512_answered(void);
unsigned long simdgrad_hide_avx512_answered(void) {
  return __atomic_load_n(&g_answered, __ATOMIC_RELAXED);
}
