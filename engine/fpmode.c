/* Denormal handling: kept by default (IEEE); sg_set_flush_denormals(true) sets flush-to-zero and
 * denormals-are-zero for the engine's own work only, on whichever thread runs it, and gives each
 * thread its own mode back afterwards (Note [FP mode] in engine/fpmode.h). */
#include "engine/fpmode.h"
#include "engine.h"

atomic_bool sg__flush_setting;

void sg_set_flush_denormals(bool on) { atomic_store(&sg__flush_setting, on); }

bool sg_flush_denormals(void) { return atomic_load(&sg__flush_setting); }

/* The caller's mode on this thread while the engine runs in its own: set by the outermost enter
   that changed the mode, cleared by its leave. Touched only when the modes differ. */
static _Thread_local uint64_t tls_outer;
static _Thread_local bool tls_outer_set;

void sg__fpmode_claim(sg_fpmode *m) {
  if (tls_outer_set) return;
  tls_outer = m->saved;
  tls_outer_set = true;
  m->outermost = true;
}

void sg__fpmode_unclaim(void) { tls_outer_set = false; }

void sg__fpmode_suspend(sg_fpmode *s) {
  s->changed = tls_outer_set;
  s->outermost = false;
  if (!s->changed) return;
  s->saved = sg__fp_read();
  sg__fp_write(tls_outer);
  tls_outer_set = false; /* this thread's share of the work claims it again */
}

void sg__fpmode_resume(const sg_fpmode *s) {
  if (!s->changed) return;
  tls_outer = sg__fp_read(); /* the caller's, given back by this thread's share */
  tls_outer_set = true;
  sg__fp_write(s->saved);
}
