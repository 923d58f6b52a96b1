/* OpenBLAS's sgemm as the reference for matmul, when CMake found libopenblas
 * (SIMDGRAD_BENCH_OPENBLAS is its path). It is opened with dlopen at start-up, not linked:
 * OpenBLAS picks its kernel once, in a constructor, from the CPU model and OPENBLAS_CORETYPE.
 * Some environments set OPENBLAS_CORETYPE=Haswell, which halves it on an AVX-512 CPU, and
 * OpenBLAS 0.3.21 falls back to its pre-AVX Prescott kernel on CPU models newer than it (an
 * Emerald Rapids Xeon). So the bench unsets OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, asks a
 * child process which kernel OpenBLAS then picks, and if that is a pre-AVX one on an AVX2 CPU
 * sets the newest kernel the CPU runs (Cooperlake, SkylakeX or Haswell); it says what it did on
 * stderr and in the JSON context. SIMDGRAD_BENCH_OPENBLAS_CORETYPE=<kernel> forces a kernel, =keep
 * leaves the environment alone. The binary also runs where OpenBLAS is not installed. */
#define _POSIX_C_SOURCE 200809L /* setenv, fork */
#include <simdgrad/backend.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#ifdef SIMDGRAD_BENCH_OPENBLAS
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

/* The CBLAS ABI (LP64 OpenBLAS: 32-bit ints), values from cblas.h. */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111 };
typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha,
                         const float *a, int lda, const float *b, int ldb, float beta, float *c,
                         int ldc);
typedef void (*set_threads_fn)(int);
typedef char *(*string_fn)(void);

static sgemm_fn g_sgemm;
static set_threads_fn g_set_threads;

static void *symbol(void *lib, const char *name) { return lib ? dlsym(lib, name) : NULL; }

static void *open_lib(void) {
  void *lib = dlopen(SIMDGRAD_BENCH_OPENBLAS, RTLD_NOW | RTLD_LOCAL);
  return lib ? lib : dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
}

/* openblas_get_corename() of lib into buf ("" if it has none). */
static void corename(void *lib, char *buf, size_t size) {
  void *p = symbol(lib, "openblas_get_corename");
  string_fn f;
  memcpy(&f, &p, sizeof p); /* ISO C has no object-to-function pointer cast */
  snprintf(buf, size, "%s", p ? f() : "");
}

/* The kernel OpenBLAS picks with OPENBLAS_CORETYPE = coretype (NULL: unset), asked in a child
   process (its choice is made once, at load). Called before this process has any threads. */
static bool probe(const char *coretype, char *core, size_t size) {
  int fd[2];
  if (pipe(fd) != 0) return false;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    if (coretype)
      setenv("OPENBLAS_CORETYPE", coretype, 1);
    else
      unsetenv("OPENBLAS_CORETYPE");
    char name[64];
    corename(open_lib(), name, sizeof name);
    ssize_t w = write(fd[1], name, strlen(name));
    _exit(w > 0 ? 0 : 1);
  }
  close(fd[1]);
  size_t got = 0;
  ssize_t r;
  while (pid > 0 && got + 1 < size && (r = read(fd[0], core + got, size - 1 - got)) > 0)
    got += (size_t)r;
  core[got] = 0;
  close(fd[0]);
  if (pid > 0) waitpid(pid, NULL, 0);
  return got > 0;
}

/* OpenBLAS's kernels from before AVX: what 0.3.21 falls back to on a CPU model it does not know
   (an Emerald Rapids Xeon gets Prescott). */
static bool pre_avx(const char *core) {
  static const char *const old[] = {"Prescott", "Core2",  "Penryn",    "Dunnington", "Nehalem",
                                    "Atom",     "Katmai", "Northwood", "Banias",     "Unknown"};
  for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
    if (strcmp(core, old[i]) == 0) return true;
  return false;
}

/* Sets the environment OpenBLAS will read: SIMDGRAD_BENCH_OPENBLAS_CORETYPE's kernel if set
   ("keep": the environment as it is); else OpenBLAS's own choice for this CPU, OPENBLAS_CORETYPE
   and OPENBLAS_L2_SIZE unset; and when that choice is a kernel from before AVX on a CPU with
   AVX2, the newest kernel the CPU runs. Writes what it did to note. */
static void choose_kernel(char *note, size_t size) {
  const char *want = getenv("SIMDGRAD_BENCH_OPENBLAS_CORETYPE");
  if (want && strcmp(want, "keep") == 0) return;
  if (want && *want) {
    setenv("OPENBLAS_CORETYPE", want, 1);
    snprintf(note, size, "OPENBLAS_CORETYPE=%s from SIMDGRAD_BENCH_OPENBLAS_CORETYPE", want);
    return;
  }
  const char *vars[] = {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"};
  for (size_t i = 0; i < 2; i++) {
    const char *v = getenv(vars[i]);
    if (!v) continue;
    snprintf(note + strlen(note), size - strlen(note), "%sunset %s=%s", note[0] ? ", " : "",
             vars[i], v);
    unsetenv(vars[i]);
  }
  char core[64];
  if (!probe(NULL, core, sizeof core) || !pre_avx(core) || !sg_backend_get("avx2")) return;
  /* Cooperlake is SkylakeX plus BF16; OpenBLAS's own detection picks it on such CPUs. */
  __builtin_cpu_init();
  const char *better = !sg_backend_get("avx512")              ? "Haswell"
                       : __builtin_cpu_supports("avx512bf16") ? "Cooperlake"
                                                              : "SkylakeX";
  char got[64];
  if (!probe(better, got, sizeof got) || pre_avx(got)) return;
  setenv("OPENBLAS_CORETYPE", better, 1);
  snprintf(note + strlen(note), size - strlen(note),
           "%sOPENBLAS_CORETYPE=%s: OpenBLAS does not know this CPU and would run its %s kernel",
           note[0] ? "; " : "", better, core);
}

bool bench_openblas_load(void) {
  static int loaded = -1;
  if (loaded >= 0) return loaded;
  loaded = 0;
  char note[256] = "";
  choose_kernel(note, sizeof note);
  if (note[0]) fprintf(stderr, "simdgrad_bench: OpenBLAS: %s\n", note);
  void *lib = open_lib();
  void *f = symbol(lib, "cblas_sgemm"), *t = symbol(lib, "openblas_set_num_threads");
  if (!f || !t) {
    fprintf(stderr, "simdgrad_bench: no OpenBLAS reference: %s\n",
            lib ? "cblas_sgemm or openblas_set_num_threads missing" : dlerror());
    return false;
  }
  memcpy(&g_sgemm, &f, sizeof f);
  memcpy(&g_set_threads, &t, sizeof t);
  char info[512] = "", core[64];
  void *cfg = symbol(lib, "openblas_get_config");
  string_fn get_cfg;
  memcpy(&get_cfg, &cfg, sizeof cfg);
  corename(lib, core, sizeof core);
  snprintf(info, sizeof info, "%s; kernel %s%s%s", cfg ? get_cfg() : "OpenBLAS", core,
           note[0] ? "; " : "", note);
  bench_add_context("openblas", info);
  fprintf(stderr, "simdgrad_bench: OpenBLAS reference: %s\n", info);
  loaded = 1;
  return true;
}

void bench_openblas_set_threads(int threads) { g_set_threads(threads); }

void bench_openblas_sgemm(int n, const float *a, const float *b, float *c) {
  g_sgemm(CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
}

#else

bool bench_openblas_load(void) { return false; }
/* Never called: nothing is registered without OpenBLAS. */
void bench_openblas_set_threads(int threads) {
  (void)threads;
  abort();
}
void bench_openblas_sgemm(int n, const float *a, const float *b, float *c) {
  (void)n, (void)a, (void)b, (void)c;
  abort();
}

#endif
