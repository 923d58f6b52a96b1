/* Denormal handling: kept by default (IEEE); sg_set_flush_denormals(true) sets flush-to-zero
 * and denormals-are-zero on the calling thread at once and on each worker thread when it next
 * runs a parallel region (see sg__fpmode_sync in engine/parallel.c). */
#include <stdatomic.h>

#include "engine.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#define FTZ_DAZ_BITS 0x8040u /* MXCSR FTZ (bit 15) | DAZ (bit 6) */
static void apply(bool on) {
  unsigned csr = _mm_getcsr();
  _mm_setcsr(on ? csr | FTZ_DAZ_BITS : csr & ~FTZ_DAZ_BITS);
}
#elif defined(__aarch64__)
static void apply(bool on) {
  uint64_t fpcr;
  __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
  fpcr = on ? fpcr | (1ull << 24) : fpcr & ~(1ull << 24); /* FPCR.FZ */
  __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
}
#else
static void apply(bool on) { (void)on; }
#endif

static atomic_int g_generation = 1; /* bumped on every change */
static atomic_bool g_flush;
static _Thread_local int tls_generation; /* 0: this thread still has the default */

void sg_set_flush_denormals(bool on) {
  atomic_store(&g_flush, on);
  atomic_fetch_add(&g_generation, 1);
  sg__fpmode_sync();
}

bool sg_flush_denormals(void) { return atomic_load(&g_flush); }

void sg__fpmode_sync(void) {
  int gen = atomic_load_explicit(&g_generation, memory_order_relaxed);
  if (__builtin_expect(gen == tls_generation || (tls_generation == 0 && gen == 1), 1)) return;
  apply(atomic_load(&g_flush));
  tls_generation = gen;
}
