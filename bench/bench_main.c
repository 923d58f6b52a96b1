/* simdgrad_bench: measures the roofline, records the context, registers every suite, then hands
 * over to Google Benchmark (gbench_shim.h for --table).
 *
 * Flags of our own (the rest go to Google Benchmark): k_usage below, what --help prints.
 */
#include <simdgrad/simdgrad.h>
#include <sleef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "roofline.h"

const int64_t bench_sizes[] = {1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 24};
const int bench_n_sizes = sizeof bench_sizes / sizeof bench_sizes[0];
const int64_t bench_matmul_sizes[] = {64, 128, 256, 512, 1024, 2048};
const int bench_n_matmul_sizes = sizeof bench_matmul_sizes / sizeof bench_matmul_sizes[0];
bool bench_all;

/* The default suite: a few ops of each family at an L2-sized and an LLC/DRAM-sized shape (add
   and exp at all four levels; exp, tanh, sigmoid and gelu also at 2^16 and 2^20, where their
   speed over scalar is judged), on every backend and thread count. */
typedef struct default_entry {
  const char *op;
  int64_t sizes[6]; /* unused ones are 0 */
} default_entry;
#define TINY (1 << 10)
#define SMALL (1 << 14)
#define LARGE (1 << 22)
#define BIG (1 << 24)
static const default_entry k_default[] = {
    {"add", {TINY, SMALL, LARGE, BIG}},
    {"mul", {SMALL, LARGE}},
    {"exp", {TINY, SMALL, 1 << 16, 1 << 20, LARGE, BIG}},
    {"tanh", {SMALL, 1 << 16, 1 << 20, LARGE}},
    {"gelu", {SMALL, 1 << 16, 1 << 20, LARGE}},
    {"sigmoid", {1 << 16, 1 << 20}},
    {"relu", {SMALL, LARGE}},
    {"exp_backward", {SMALL, LARGE}},
    {"add_backward", {SMALL, LARGE}},
    {"gelu_backward", {SMALL, LARGE}},
    {"less", {SMALL, LARGE}},
    {"where", {SMALL, LARGE}},
    {"reduce_sum", {SMALL, LARGE}},
    {"reduce_sum.axis0", {SMALL, LARGE}},
    {"reduce_max", {LARGE}},
    {"argmax", {LARGE}},
    {"softmax", {SMALL, LARGE}},
    {"softmax_backward", {LARGE}},
    {"log_softmax", {LARGE}},
    {"softmax_cross_entropy", {LARGE}},
    {"matmul", {128, 512, 1024}},
    {"matmul_backward", {512}},
    {"gemm_taps", {24, 64}},
    {"transpose", {LARGE}},
    {"tape.exp", {SMALL, LARGE}},
    {"tape.add", {LARGE}},
    {"tape.sum", {LARGE}},
    {"tape.softmax", {LARGE}},
    {"tape.matmul", {512}},
    {"tape.transpose", {LARGE}},
    {"tape.conv2d", {1 << 18}},
    {"tape_dy.relu", {1 << 20}},
    {"tape_dy.sigmoid", {1 << 20}},
    {"api.adam_step", {LARGE}},
    {"train.mlp", {0}},
    {"train.mlp.profiled", {0}},
    {"train.cnn", {0}},
    {"conv2d.3x3", {0}},
    {"tape.conv2d.3x3", {0}},
};

bool bench_in_default(const char *op, int64_t size) {
  if (strncmp(op, "engine.", 7) == 0) return true;
  for (size_t i = 0; i < sizeof k_default / sizeof k_default[0]; i++) {
    if (strcmp(k_default[i].op, op) != 0) continue;
    for (int s = 0; s < 6; s++)
      if (k_default[i].sizes[s] == size) return true;
  }
  return false;
}

void bench_add(const char *op, const char *backend, const char *shape, int threads,
               bool in_default_suite, bench_fn fn, void *arg) {
  if (!bench_all && !in_default_suite) return;
  char name[160];
  snprintf(name, sizeof name, "%s/%s/%s/threads:%d", op, backend, shape, threads);
  bench_register(name, fn, arg);
}

int bench_backends(const sg_backend **out) {
  static const char *const names[] = {"scalar", "avx2", "avx512", "neon"};
  const char *only = getenv("SIMDGRAD_BACKEND");
  int n = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    const sg_backend *be = sg_backend_get(names[i]);
    if (!be) continue;
    if (i > 0 && only && *only && strcmp(only, names[i]) != 0) continue;
    out[n++] = be;
  }
  return n;
}

static int g_all_threads;

int bench_thread_counts(int *out) {
  out[0] = 1;
  if (g_all_threads <= 1) return 1;
  out[1] = g_all_threads;
  return 2;
}

/* Removes argv[i] when it is --<name>=<value>; returns the value or NULL. */
static const char *take_flag(int *argc, char **argv, const char *name) {
  size_t len = strlen(name);
  for (int i = 1; i < *argc; i++) {
    if (strncmp(argv[i], name, len) != 0 || argv[i][len] != '=') continue;
    const char *v = argv[i] + len + 1;
    for (int j = i; j < *argc - 1; j++) argv[j] = argv[j + 1];
    (*argc)--;
    return v;
  }
  return NULL;
}

static bool has_arg(int argc, char **argv, const char *prefix) {
  for (int i = 1; i < argc; i++)
    if (strncmp(argv[i], prefix, strlen(prefix)) == 0) return true;
  return false;
}

static void publish_context(const char *suite, const char *input_range, const int *threads,
                            int n_threads) {
  const sg_backend *backends[4];
  int nb = bench_backends(backends);
  char buf[256] = "";
  for (int i = 0; i < nb; i++)
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? " " : "", backends[i]->name);
  bench_add_context("simdgrad_backends", buf);
  bench_add_context("simdgrad_engine_backend", sg_backend_name());
  bench_add_context("cpu_features", sg_cpu_features());
  /* Plain or staged loops for AVX-512's exp and selu_backward and AVX2's staged forward ops
     (docs/kernels.md, "Plain loops on Intel"). */
  bench_add_context("unary_loops", bench_unary_loops());
  FILE *f = fopen("/proc/cpuinfo", "r"); /* the model name, for people and the plot's title */
  while (f && fgets(buf, sizeof buf, f)) {
    char *colon = strchr(buf, ':');
    if (strncmp(buf, "model name", 10) != 0 || !colon) continue;
    colon[strcspn(colon, "\n")] = 0;
    bench_add_context("cpu_model", colon + 1 + strspn(colon + 1, " \t"));
    break;
  }
  if (f) fclose(f);
  buf[0] = 0;
  for (int i = 0; i < n_threads; i++)
    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%d", i ? " " : "", threads[i]);
  bench_add_context("threads", buf);
  snprintf(buf, sizeof buf, "%d.%d.%d", SLEEF_VERSION_MAJOR, SLEEF_VERSION_MINOR,
           SLEEF_VERSION_PATCHLEVEL);
  bench_add_context("sleef_version", buf);
  bench_add_context("denormals", sg_flush_denormals() ? "flushed (FTZ/DAZ)" : "kept (IEEE)");
#if defined(__clang__)
  bench_add_context("compiler", "clang " __clang_version__);
#elif defined(__GNUC__)
  bench_add_context("compiler", "gcc " __VERSION__);
#endif
  bench_add_context("suite", suite);
  if (input_range) bench_add_context("input_range", input_range);
}

static const char k_usage[] =
    "simdgrad_bench: every op of simdgrad on every backend, judged against this machine's\n"
    "roofline measured at start-up (docs/bench.md)\n"
    "\n"
    "simdgrad's flags:\n"
    "  --table                      a table (op, shape, backend, threads, time, GB/s, GFLOP/s,\n"
    "                               %roof, vs scalar, vs openblas) instead of Google Benchmark's\n"
    "                               console output (a --benchmark_format wins over it)\n"
    "  --suite=default|all          default: the `make bench` selection (one to two minutes on\n"
    "                               2 cores); all: every op x backend x size x threads. Without\n"
    "                               the flag: default, unless --benchmark_filter selects from all\n"
    "  --roofline=full|quick|off    how carefully to measure the peaks and the bandwidth curves\n"
    "                               (full: 2-15 s, longer the larger the LLC, whose curves run\n"
    "                               to 4x its size; quick: fewer footprints, shorter samples;\n"
    "                               off: no pct_roofline)\n"
    "  --input-range=LO,HI          draw the first operand of every op from [LO, HI) instead\n"
    "                               of the op's own range (a kernel whose speed depends on\n"
    "                               its data: AVX-512's gelu past -5.5)\n"
    "  --help                       this, then Google Benchmark's flags\n"
    "environment: SIMDGRAD_BACKEND=<name> measures scalar and that backend only;\n"
    "  SIMDGRAD_BENCH_OPENBLAS_CORETYPE=<kernel>|keep chooses OpenBLAS's kernel\n"
    "A filter that selects no benchmark exits with status 3.\n"
    "\n"
    "Google Benchmark's flags:\n";

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      /* At once: nothing measured, nothing registered; gbench prints its flags and exits. */
      char *help[] = {argv[0], (char *)"--help", NULL};
      fputs(k_usage, stdout);
      fflush(stdout);
      return bench_main(2, help);
    }
  const char *suite = take_flag(&argc, argv, "--suite");
  const char *roof = take_flag(&argc, argv, "--roofline");
  if (!suite) suite = has_arg(argc, argv, "--benchmark_filter=") ? "all" : "default";
  if (strcmp(suite, "all") != 0 && strcmp(suite, "default") != 0) {
    fprintf(stderr, "simdgrad_bench: --suite=%s: expected default or all\n", suite);
    return 1;
  }
  if (!roof) roof = "full";
  if (strcmp(roof, "full") != 0 && strcmp(roof, "quick") != 0 && strcmp(roof, "off") != 0) {
    fprintf(stderr, "simdgrad_bench: --roofline=%s: expected full, quick or off\n", roof);
    return 1;
  }
  bench_all = strcmp(suite, "all") == 0;
  const char *range = take_flag(&argc, argv, "--input-range");
  if (range && !bench_set_input_range(range)) {
    fprintf(stderr,
            "simdgrad_bench: --input-range=%s: expected LO,HI, two finite numbers, LO < HI, HI - "
            "LO finite\n",
            range);
    return 1;
  }

  sg_init();
  g_all_threads = sg_threads();
  int threads[2], n_threads = bench_thread_counts(threads);
  fprintf(stderr, "simdgrad_bench: CPU features: %s\nsimdgrad_bench: engine backend %s, %s suite\n",
          sg_cpu_features(), sg_backend_name(), suite);
  bool listing = has_arg(argc, argv, "--benchmark_list_tests") &&
                 !has_arg(argc, argv, "--benchmark_list_tests=false");
  if (!listing) bench_openblas_load(); /* first: it forks, best before any thread exists */

  bench_register_elementwise();
  bench_register_rows();
  bench_register_matmul();
  bench_register_gemm_taps();
  bench_register_gemm_mix();
  bench_register_shape();
  bench_register_api();
  bench_register_engine();
  bench_register_train();
  /* A filter that selects nothing says so before two seconds of roofline. */
  if (bench_count_selected(argc, argv) == 0) return bench_main(argc, argv);

  if (!listing && strcmp(roof, "off") != 0)
    roofline_measure(threads, n_threads, strcmp(roof, "quick") == 0);
  publish_context(suite, range, threads, n_threads);
  roofline_publish();
  /* After JSON or CSV on stdout a line of prose would break the parse: it goes to stderr. Read
     before bench_main, whose Google Benchmark takes the flags it knows out of argv. */
  FILE *note = has_arg(argc, argv, "--benchmark_format=json") ||
                       has_arg(argc, argv, "--benchmark_format=csv")
                   ? stderr
                   : stdout;
  int status = bench_main(argc, argv);
  if (roofline_raised())
    fprintf(note,
            "%d roof figure(s) rose when measured again after a row beat them by more than 5%% "
            "(the header shows the start-up figures; those rows carry roof_rechecked in the "
            "JSON)\n",
            roofline_raised());
  /* A start-up second on a busy machine lowers every compute bound, and the rows judged on it
     read high without beating it (docs/bench.md, "The issue bound"): say so. */
  double drift = listing ? 0 : roofline_compute_drift();
  if (drift > ROOF_DRIFT_NOTE)
    fprintf(note,
            "the FMA peak and issue rates measured again after the rows were up to %.0f%% above "
            "the start-up figures: the compute- and issue-bound rows may read up to that much "
            "high; run again on a quieter machine\n",
            100 * drift);
  return status;
}
