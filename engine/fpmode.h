/* The engine's floating-point mode on the thread that does its work: Note [FP mode].
 *
 * Note [FP mode]
 * sg_set_flush_denormals is the engine's setting, not the host's: it applies to the engine's own
 * work and to nothing else. Each place where engine work starts on a thread (the op frame,
 * sg_tape_end, each thread of a parallel region, each chunk a host's parallel-for runs) brackets
 * it with sg__fpmode_enter / sg__fpmode_leave: enter reads the thread's MXCSR (FPCR on aarch64),
 * and only when its FTZ/DAZ bits differ from the setting writes them; leave writes the saved
 * value back when enter changed it. So the caller's MXCSR is the same after every call as before
 * it, an OpenMP pool the host shares with the engine keeps its own mode, and the engine's results
 * do not depend on the mode of the thread that happens to run them. Nested brackets cost one read
 * each (the mode already matches). Threads that start during the engine's work copy the mode of
 * the thread that starts them, so the engine hands work to other threads with the caller's mode
 * in place (sg__fpmode_suspend). Kernels called directly through backend.h run in the caller's
 * mode: there is no engine work around them. */
#ifndef SIMDGRAD_ENGINE_FPMODE_H
#define SIMDGRAD_ENGINE_FPMODE_H

#include "engine.h"

extern atomic_bool sg__flush_setting; /* sg_set_flush_denormals (engine/fpmode.c) */

#if defined(__x86_64__)
#include <xmmintrin.h>
#define SG_FP_FLUSH_BITS 0x8040u /* MXCSR FTZ (bit 15) | DAZ (bit 6) */
static inline uint64_t sg__fp_read(void) { return _mm_getcsr(); }
static inline void sg__fp_write(uint64_t v) { _mm_setcsr((unsigned)v); }
#elif defined(__aarch64__)
#define SG_FP_FLUSH_BITS (1ull << 24) /* FPCR.FZ */
static inline uint64_t sg__fp_read(void) {
  uint64_t v;
  __asm__ volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
static inline void sg__fp_write(uint64_t v) { __asm__ volatile("msr fpcr, %0" : : "r"(v)); }
#else
#define SG_FP_FLUSH_BITS 0u
static inline uint64_t sg__fp_read(void) { return 0; }
static inline void sg__fp_write(uint64_t v) { (void)v; }
#endif

/* The slow paths (engine/fpmode.c): the outermost change on a thread notes the caller's mode,
   which sg__fpmode_suspend needs. */
void sg__fpmode_claim(sg_fpmode *m);
void sg__fpmode_unclaim(void);

/* Sets this thread's flush bits to the engine's setting, remembering the caller's mode in *m. */
static inline void sg__fpmode_enter(sg_fpmode *m) {
  uint64_t want = atomic_load_explicit(&sg__flush_setting, memory_order_relaxed)
                      ? (uint64_t)SG_FP_FLUSH_BITS
                      : 0;
  uint64_t mode = sg__fp_read();
  m->saved = mode;
  m->changed = (mode & SG_FP_FLUSH_BITS) != want;
  m->outermost = false;
  if (__builtin_expect(m->changed, 0)) {
    sg__fp_write((mode & ~(uint64_t)SG_FP_FLUSH_BITS) | want);
    sg__fpmode_claim(m);
  }
}

/* Gives the thread back the mode sg__fpmode_enter found. */
static inline void sg__fpmode_leave(const sg_fpmode *m) {
  if (__builtin_expect(m->changed, 0)) {
    sg__fp_write(m->saved);
    if (m->outermost) sg__fpmode_unclaim();
  }
}

/* Around handing work to other threads (an OpenMP region, a host's parallel-for): a thread
   started meanwhile copies its creator's mode, and must copy the caller's, not the engine's,
   or it would keep the engine's mode after the work. suspend gives this thread its caller's
   mode back for the while (when the engine changed it), resume takes the engine's again. Each
   thread of the work brackets its own part with enter / leave. */
void sg__fpmode_suspend(sg_fpmode *s);
void sg__fpmode_resume(const sg_fpmode *s);

#endif /* SIMDGRAD_ENGINE_FPMODE_H */
