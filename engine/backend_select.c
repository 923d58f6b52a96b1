/* Start-up: CPU detection, the backend tables (each ISA starts from the one below it and
 * overrides what it vectorises), the choice of backend and debug mode; the thread count and the
 * memory limit are read here too (engine/parallel.c's sg__threads_init, engine/memory_limit.c's
 * sg__memory_limit_init). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "engine/cpu.h"
#include "kernels_scalar/kernels_scalar.h"

#ifdef SIMDGRAD_HAVE_AVX2
void sg__backend_fill__avx2(sg_backend *b);
void sg__backend_plain_loops__avx2(sg_backend *b);
#endif
#ifdef SIMDGRAD_HAVE_AVX512
void sg__backend_fill__avx512(sg_backend *b);
void sg__backend_plain_loops__avx512(sg_backend *b);
#endif
#ifdef SIMDGRAD_HAVE_NEON
void sg__backend_fill__neon(sg_backend *b);
#endif

enum { BE_SCALAR, BE_AVX2, BE_AVX512, BE_NEON, BE_COUNT };
static const char *const k_names[BE_COUNT] = {"scalar", "avx2", "avx512", "neon"};

static sg_backend g_tables[BE_COUNT];
static bool g_available[BE_COUNT];
static _Atomic(const sg_backend *) g_current;
static int g_best;
static sg_cpu_info g_cpu;
static char g_features[256];
static char g_init_problem[512]; /* environment settings start-up could not use, for sg_init */
static atomic_bool g_debug;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* Plain or staged unary loops where an ISA has both (kernels_simd/simd_unary.inc): what
   SIMDGRAD_UNARY_LOOPS says, else what the CPU prefers (sg__cpu_plain_loops). */
static bool g_plain_loops;

static int backend_index(const char *name) {
  for (int i = 0; i < BE_COUNT; i++)
    if (name && strcmp(name, k_names[i]) == 0) return i;
  return -1;
}

static void build_tables(void) {
  g_tables[BE_SCALAR] = sg__backend_scalar;
  g_available[BE_SCALAR] = true;
  g_best = BE_SCALAR;
#ifdef SIMDGRAD_HAVE_AVX2
  /* The fill functions are compiled with their ISA's flags and may use its instructions
     themselves (gcc copies the table with zmm moves): call them only on a CPU that has it. */
  g_available[BE_AVX2] = sg__cpu_can_avx2(&g_cpu);
  if (g_available[BE_AVX2]) {
    g_tables[BE_AVX2] = g_tables[BE_SCALAR];
    sg__backend_fill__avx2(&g_tables[BE_AVX2]);
    if (g_plain_loops) sg__backend_plain_loops__avx2(&g_tables[BE_AVX2]);
    g_best = BE_AVX2;
  }
#endif
#ifdef SIMDGRAD_HAVE_AVX512
  g_available[BE_AVX512] = g_available[BE_AVX2] && sg__cpu_can_avx512(&g_cpu);
  if (g_available[BE_AVX512]) {
    g_tables[BE_AVX512] = g_tables[BE_AVX2];
    sg__backend_fill__avx512(&g_tables[BE_AVX512]);
    if (g_plain_loops) sg__backend_plain_loops__avx512(&g_tables[BE_AVX512]);
    g_best = BE_AVX512;
  }
#endif
#ifdef SIMDGRAD_HAVE_NEON
  g_tables[BE_NEON] = g_tables[BE_SCALAR];
  sg__backend_fill__neon(&g_tables[BE_NEON]);
  g_available[BE_NEON] = g_cpu.asimd;
  if (g_available[BE_NEON]) g_best = BE_NEON;
#endif
  for (int i = 0; i < BE_COUNT; i++)
    if (g_available[i]) g_tables[i].name = k_names[i];
}

/* SIMDGRAD_UNARY_LOOPS=plain|staged, else the CPU's preference. False, with the problem in
   `problem`, for a value that is neither (reported on stderr and by sg_init, as
   SIMDGRAD_THREADS's). */
static bool choose_unary_loops(char *problem, size_t size) {
  const char *env = getenv("SIMDGRAD_UNARY_LOOPS");
  bool known;
  g_plain_loops = sg__cpu_plain_loops(&g_cpu, env, &known);
  if (!known)
    snprintf(problem, size, "SIMDGRAD_UNARY_LOOPS=%.64s is neither plain nor staged; using %s", env,
             g_plain_loops ? "plain" : "staged");
  return known;
}

const char *sg__unary_loops(void) {
  sg__ensure_init();
  return g_plain_loops ? "plain" : "staged";
}

static void init_once(void) {
  g_cpu = sg__cpu_detect();
  sg__cpu_describe(&g_cpu, g_features, sizeof g_features);
  char loops[sizeof g_init_problem / 4];
  bool loops_ok = choose_unary_loops(loops, sizeof loops);
  build_tables();
  int chosen = g_best;
  const char *env = getenv("SIMDGRAD_BACKEND");
  if (env && *env) {
    int want = backend_index(env);
    if (want < 0)
      fprintf(stderr,
              "simdgrad: SIMDGRAD_BACKEND=%s is not a backend (scalar, avx2, avx512, "
              "neon); using %s\n",
              env, k_names[g_best]);
    else if (!g_available[want])
      fprintf(stderr,
              "simdgrad: SIMDGRAD_BACKEND=%s is not available on this CPU or build; "
              "using %s\n",
              env, k_names[g_best]);
    else
      chosen = want;
  }
  if (!sg__threads_init(g_init_problem, sizeof g_init_problem))
    fprintf(stderr, "simdgrad: %s\n", g_init_problem);
  char memory[sizeof g_init_problem / 2];
  if (!sg__memory_limit_init(memory, sizeof memory)) {
    fprintf(stderr, "simdgrad: %s\n", memory);
    size_t used = strlen(g_init_problem);
    snprintf(g_init_problem + used, sizeof g_init_problem - used, "%s%s", used ? "; " : "", memory);
  }
  if (!loops_ok) {
    fprintf(stderr, "simdgrad: %s\n", loops);
    size_t used = strlen(g_init_problem);
    snprintf(g_init_problem + used, sizeof g_init_problem - used, "%s%s", used ? "; " : "", loops);
  }
  const char *denv = getenv("SIMDGRAD_DEBUG");
  atomic_store(&g_debug, denv && *denv && strcmp(denv, "0") != 0);
  /* Last: a thread that sees g_current set skips pthread_once, so everything else must be
     in place before it (the store releases the writes above). */
  atomic_store(&g_current, &g_tables[chosen]);
}

/* Every entry point calls this: after start-up it is one load, not a call into pthread_once. */
void sg__ensure_init(void) {
  if (__builtin_expect(atomic_load_explicit(&g_current, memory_order_acquire) != NULL, 1)) return;
  pthread_once(&g_once, init_once);
}

sg_status sg_init(void) {
  sg__ensure_init();
  if (g_init_problem[0]) return sg__error(SG_ERR_ARG, "init", "%s", g_init_problem);
  return SG_OK;
}

const sg_backend *sg__backend(void) {
  const sg_backend *b = atomic_load_explicit(&g_current, memory_order_acquire);
  if (__builtin_expect(b != NULL, 1)) return b;
  sg__ensure_init();
  return atomic_load(&g_current);
}

const sg_backend *sg_backend_current(void) { return sg__backend(); }

const sg_backend *sg_backend_get(const char *name) {
  sg__ensure_init();
  int i = backend_index(name);
  return i >= 0 && g_available[i] ? &g_tables[i] : NULL;
}

const char *sg_backend_name(void) { return sg__backend()->name; }

bool sg_backend_available(const char *name) { return sg_backend_get(name) != NULL; }

sg_status sg_use_backend(const char *name) {
  sg__ensure_init();
  int i = backend_index(name);
  if (i < 0)
    return sg__error(SG_ERR_ARG, "use_backend",
                     "unknown backend \"%s\" (expected scalar, avx2, avx512 or neon)",
                     name ? name : "(null)");
  if (!g_available[i])
    return sg__error(SG_ERR_UNSUPPORTED, "use_backend",
                     "backend \"%s\" is not available on this CPU or build (best is %s)", name,
                     k_names[g_best]);
  atomic_store(&g_current, &g_tables[i]);
  return SG_OK;
}

const char *sg_cpu_features(void) {
  sg__ensure_init();
  return g_features;
}

void sg_set_debug(bool on) {
  sg__ensure_init();
  atomic_store(&g_debug, on);
}

/* On every op's path: the start-up check (one load of g_current, which init_once stores after
   the flag) and a relaxed load of the flag. */
bool sg_debug(void) {
  sg__ensure_init();
  return atomic_load_explicit(&g_debug, memory_order_relaxed);
}
