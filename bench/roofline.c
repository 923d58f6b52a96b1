/* The roofline of this machine, measured at start-up (see roofline.h): per ISA and thread
 * count, the FMA peak of a register-only loop and the triad bandwidth of L1, L2, the LLC and
 * DRAM. One OpenMP thread per core runs its own copy of each loop on its own data; a figure is
 * the best of a few samples (the least disturbed by the machine's other work). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, sysconf */
#include "roofline.h"

#include <omp.h>
#include <simdgrad/backend.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "roofline_isa.h"

typedef struct isa_roof {
  const char *name;
  const char *backend; /* the backend whose presence says the CPU runs this ISA; NULL: always */
  double (*fma)(int64_t iters, float c, float b, float *sink);
  void (*triad)(float *restrict a, const float *restrict b, const float *restrict c, size_t n,
                float s);
  bool present;
  double peak[2];            /* FLOP/s, per entry of g_threads */
  double bw[ROOF_LEVELS][2]; /* bytes/s */
} isa_roof;

static isa_roof g_isas[] = {
#if defined(__aarch64__)
    {"neon", NULL, bench_fma_loop__base, bench_triad__base, false, {0}, {{0}}},
#elif defined(__x86_64__)
    {"sse2", NULL, bench_fma_loop__base, bench_triad__base, false, {0}, {{0}}},
#else
    {"base", NULL, bench_fma_loop__base, bench_triad__base, false, {0}, {{0}}},
#endif
#ifdef SIMDGRAD_BENCH_X86_ISAS
    {"avx2", "avx2", bench_fma_loop__avx2, bench_triad__avx2, false, {0}, {{0}}},
    {"avx512", "avx512", bench_fma_loop__avx512, bench_triad__avx512, false, {0}, {{0}}},
#endif
};
#define N_ISAS ((int)(sizeof g_isas / sizeof g_isas[0]))

static int g_threads[2], g_n_threads;
static size_t g_cache[3]; /* bytes: L1d and L2 per core, the LLC in all */
/* The working set the LLC bandwidth was measured on: bigger data counts as DRAM. CPUID's LLC
   size is not to be trusted in a VM (260 MiB reported where about 32 MiB behaves as cache). */
static size_t g_llc_span;
static bool g_measured;
/* Read at run time, so the compiler cannot fold the loops: a = 0.5 a + 0.5 stays near 1. */
static volatile float g_c = 0.5f, g_b = 0.5f, g_sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* sysfs "48K" / "2048K" / "1M" into bytes. */
static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (*end == 'K') v *= 1024;
  if (*end == 'M') v *= 1024 * 1024;
  return v > 0 ? (size_t)v : 0;
}

/* The data (or unified) cache of a level, from glibc's CPUID reading or sysfs; 0 if unknown. */
static size_t cache_size(int level) {
  long v = 0;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  v = sysconf(level == 1   ? _SC_LEVEL1_DCACHE_SIZE
              : level == 2 ? _SC_LEVEL2_CACHE_SIZE
                           : _SC_LEVEL3_CACHE_SIZE);
#endif
  if (v > 0) return (size_t)v;
  size_t found = 0;
  for (int i = 0; i < 8 && !found; i++) {
    char path[96], buf[32], type[32] = "";
    int lvl = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    if (fscanf(f, "%d", &lvl) != 1) lvl = 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if ((f = fopen(path, "r"))) {
      if (fscanf(f, "%31s", type) != 1) type[0] = 0;
      fclose(f);
    }
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (lvl == level && strcmp(type, "Instruction") != 0 && (f = fopen(path, "r"))) {
      if (fscanf(f, "%31s", buf) == 1) found = parse_size(buf);
      fclose(f);
    }
  }
  return found;
}

static int thread_index(int threads) {
  int best = 0;
  for (int i = 0; i < g_n_threads; i++)
    if (g_threads[i] <= threads) best = i;
  return best;
}

static double fma_peak(const isa_roof *isa, int threads, bool quick) {
  int64_t iters = quick ? 1 << 18 : 1 << 20;
  double best = 0;
  for (int trial = 0; trial < (quick ? 2 : 5); trial++) {
    double flops = 0, t0 = now();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    {
      float sink;
      flops += isa->fma(iters, g_c, g_b, &sink);
      if (sink == 0.0f) g_sink = sink; /* never true: keeps the result live */
    }
    double t = now() - t0;
    if (flops / t > best) best = flops / t;
  }
  return best;
}

/* Triad bandwidth with n floats per array per thread, each thread on its own slice of buf
   (3 * n * threads + 2 * PAD floats, zero-filled); bytes per trial about `traffic`. The arrays
   start PAD floats apart modulo 4 KiB, as STREAM offsets its arrays: a load at the same low 12
   address bits as an earlier store waits for it (4K aliasing), which would halve L1 figures. */
#define PAD 64
static double triad_bw(const isa_roof *isa, float *buf, int threads, size_t n, double traffic,
                       int trials) {
  n = n / 64 * 64;
  if (n == 0) n = 64;
  size_t total = n * (size_t)threads;
  int reps = (int)(traffic / (12.0 * (double)total));
  if (reps < 1) reps = 1;
  double best = 0;
  for (int trial = 0; trial < trials; trial++) {
    double t0 = now();
#pragma omp parallel num_threads(threads)
    {
      size_t off = (size_t)omp_get_thread_num() * n;
      for (int r = 0; r < reps; r++)
        isa->triad(buf + off, buf + total + PAD + off, buf + 2 * (total + PAD) + off, n, g_c);
    }
    double t = now() - t0;
    double bw = 12.0 * (double)total * reps / t;
    if (bw > best) best = bw;
  }
  return best;
}

/* What the hardware guarantees, applied to disturbed samples: a cache level is at least as fast
   as the one behind it, and all the cores at least as fast as one. A figure below that bound
   was measured while something else ran, so the bound replaces it. */
static void monotonic(isa_roof *r) {
  for (int t = 0; t < g_n_threads; t++) {
    if (t > 0 && r->peak[t] < r->peak[t - 1]) r->peak[t] = r->peak[t - 1];
    for (int l = ROOF_LEVELS - 1; l >= 0; l--) {
      if (t > 0 && r->bw[l][t] < r->bw[l][t - 1]) r->bw[l][t] = r->bw[l][t - 1];
      if (l < ROOF_LEVELS - 1 && r->bw[l][t] < r->bw[l + 1][t]) r->bw[l][t] = r->bw[l + 1][t];
    }
  }
  /* Fewer threads get at least their share of what more threads got: a neighbour that shared
     a core during the 1-thread samples only (a VM's sibling hyperthread) halves them. */
  for (int t = g_n_threads - 1; t > 0; t--) {
    double share = (double)g_threads[t - 1] / g_threads[t];
    if (r->peak[t - 1] < share * r->peak[t]) r->peak[t - 1] = share * r->peak[t];
    for (int l = 0; l < ROOF_LEVELS; l++)
      if (r->bw[l][t - 1] < share * r->bw[l][t]) r->bw[l][t - 1] = share * r->bw[l][t];
  }
}

void roofline_measure(const int *threads, int n, bool quick) {
  double t0 = now();
  g_n_threads = n > 2 ? 2 : n;
  for (int i = 0; i < g_n_threads; i++) g_threads[i] = threads[i];
  g_cache[0] = cache_size(1);
  g_cache[1] = cache_size(2);
  g_cache[2] = cache_size(3);
  if (!g_cache[0]) g_cache[0] = 32 << 10;
  if (!g_cache[1]) g_cache[1] = 1 << 20;
  if (!g_cache[2]) g_cache[2] = g_cache[1] * 4;
  int max_threads = g_threads[g_n_threads - 1];

  /* DRAM: twice the LLC at least, 256 MiB to 1 GiB, within an eighth of the memory. */
  size_t dram = g_cache[2] * 2;
  if (dram < ((size_t)256 << 20)) dram = (size_t)256 << 20;
  if (dram > ((size_t)1 << 30)) dram = (size_t)1 << 30;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && dram > (size_t)pages * (size_t)page / 8)
    dram = (size_t)pages * (size_t)page / 8;
  /* LLC: beyond every core's L2, within the LLC. */
  size_t llc = g_cache[2] / 4 < ((size_t)32 << 20) ? g_cache[2] / 4 : (size_t)32 << 20;
  if (llc < 4 * g_cache[1] * (size_t)max_threads) llc = 4 * g_cache[1] * (size_t)max_threads;
  if (llc > g_cache[2] / 2) llc = g_cache[2] / 2;
  g_llc_span = llc;

  /* One buffer for every level, first touched (zeroed) once, by all the threads. */
  size_t floats = dram / sizeof(float);
  float *buf = bench_alloc((floats + 2 * PAD) * sizeof(float));
#pragma omp parallel for num_threads(max_threads) schedule(static)
  for (size_t i = 0; i < floats + 2 * PAD; i++) buf[i] = 0;

  /* Many short samples: on a busy machine some of them run undisturbed. Bytes per sample: this
     for L1, half for L2, a quarter for the LLC. */
  double traffic = quick ? 32e6 : 256e6;
  int trials = quick ? 3 : 7;
  isa_roof *best = NULL;
  for (int k = 0; k < N_ISAS; k++) {
    isa_roof *isa = &g_isas[k];
    isa->present = !isa->backend || sg_backend_get(isa->backend) != NULL;
    if (!isa->present) continue;
    best = isa;
    for (int t = 0; t < g_n_threads; t++) {
      int th = g_threads[t];
      isa->peak[t] = fma_peak(isa, th, quick);
      isa->bw[ROOF_L1][t] = triad_bw(isa, buf, th, g_cache[0] / 2 / 12, traffic, trials);
      isa->bw[ROOF_L2][t] = triad_bw(isa, buf, th, g_cache[1] / 2 / 12, traffic / 2, trials);
      isa->bw[ROOF_LLC][t] = triad_bw(isa, buf, th, llc / 12 / (size_t)th, traffic / 4, trials);
    }
  }
  /* DRAM bandwidth does not depend on the vector width: measured once, with the widest. */
  for (int t = 0; t < g_n_threads && best; t++) {
    int th = g_threads[t];
    double bw = triad_bw(best, buf, th, floats / 3 / (size_t)th, 0, quick ? 2 : 4);
    for (int k = 0; k < N_ISAS; k++) g_isas[k].bw[ROOF_DRAM][t] = bw;
  }
  /* The FMA peak again, a second later: a burst from a neighbour rarely covers both. */
  for (int k = 0; k < N_ISAS; k++)
    for (int t = 0; t < g_n_threads && g_isas[k].present; t++) {
      double again = fma_peak(&g_isas[k], g_threads[t], quick);
      if (again > g_isas[k].peak[t]) g_isas[k].peak[t] = again;
    }
  free(buf);
  for (int k = 0; k < N_ISAS; k++) monotonic(&g_isas[k]);
  g_measured = true;
  fprintf(stderr, "simdgrad_bench: measured the roofline in %.1f s (DRAM triad over %zu MiB)\n",
          now() - t0, dram >> 20);
}

const char *roofline_isa_of(const char *backend) {
  if (strcmp(backend, "scalar") == 0) return g_isas[0].name;
  for (int k = 0; k < N_ISAS; k++)
    if (strcmp(g_isas[k].name, backend) == 0) return backend;
  const char *best = g_isas[0].name; /* OpenBLAS and any other peer: the best ISA present */
  for (int k = 0; k < N_ISAS; k++)
    if (g_isas[k].present) best = g_isas[k].name;
  return best;
}

const char *roofline_level_name(roof_level l) {
  static const char *const names[] = {"L1", "L2", "LLC", "DRAM"};
  return l < ROOF_LEVELS ? names[l] : "?";
}

double roofline_seconds(const char *isa, int threads, double flops, double bytes,
                        roof_level *level) {
  roof_level l = ROOF_DRAM;
  double per_thread = bytes / (threads > 0 ? threads : 1);
  if (per_thread <= (double)g_cache[0])
    l = ROOF_L1;
  else if (per_thread <= (double)g_cache[1])
    l = ROOF_L2;
  else if (bytes <= (double)(g_llc_span ? g_llc_span : g_cache[2]))
    l = ROOF_LLC;
  if (level) *level = l;
  if (!g_measured || !isa) return 0;
  for (int k = 0; k < N_ISAS; k++) {
    const isa_roof *r = &g_isas[k];
    if (!r->present || strcmp(r->name, isa) != 0) continue;
    int t = thread_index(threads);
    if (r->peak[t] <= 0 || r->bw[l][t] <= 0) return 0;
    double tc = flops / r->peak[t], tm = bytes / r->bw[l][t];
    return tc > tm ? tc : tm;
  }
  return 0;
}

static void add_context_f(const char *key, const char *fmt, double v) {
  char buf[64];
  snprintf(buf, sizeof buf, fmt, v);
  bench_add_context(key, buf);
}

void roofline_publish(void) {
  if (!g_measured) {
    bench_set_table_header("roofline not measured (--roofline=off): no %roof\n");
    return;
  }
  static const char *const keys[] = {"l1", "l2", "llc", "dram"};
  char key[96], header[4096];
  int len = snprintf(header, sizeof header,
                     "roofline measured at start-up: L1d %zu KiB and L2 %zu KiB per core, LLC "
                     "%zu MiB (its bandwidth measured on %zu MiB; more data counts as DRAM)\n"
                     "  %-7s %3s %13s %8s %8s %9s %9s\n",
                     g_cache[0] >> 10, g_cache[1] >> 10, g_cache[2] >> 20, g_llc_span >> 20, "isa",
                     "thr", "peak GFLOP/s", "L1 GB/s", "L2 GB/s", "LLC GB/s", "DRAM GB/s");
  add_context_f("cache_l1d_bytes", "%.0f", (double)g_cache[0]);
  add_context_f("cache_l2_bytes", "%.0f", (double)g_cache[1]);
  add_context_f("cache_llc_bytes", "%.0f", (double)g_cache[2]);
  for (int k = 0; k < N_ISAS; k++) {
    const isa_roof *r = &g_isas[k];
    if (!r->present) continue;
    for (int t = 0; t < g_n_threads; t++) {
      snprintf(key, sizeof key, "peak_gflops_%s_t%d", r->name, g_threads[t]);
      add_context_f(key, "%.1f", r->peak[t] / 1e9);
      for (int l = 0; l < ROOF_LEVELS; l++) {
        snprintf(key, sizeof key, "bw_gbs_%s_%s_t%d", keys[l], r->name, g_threads[t]);
        add_context_f(key, "%.1f", r->bw[l][t] / 1e9);
      }
      if (len < (int)sizeof header)
        len += snprintf(header + len, sizeof header - (size_t)len,
                        "  %-7s %3d %13.1f %8.1f %8.1f %9.1f %9.1f\n", r->name, g_threads[t],
                        r->peak[t] / 1e9, r->bw[ROOF_L1][t] / 1e9, r->bw[ROOF_L2][t] / 1e9,
                        r->bw[ROOF_LLC][t] / 1e9, r->bw[ROOF_DRAM][t] / 1e9);
    }
  }
  bench_set_table_header(header);
}
