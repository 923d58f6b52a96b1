/* Engine tests: tensor creation and validation, scopes and memory accounting, the tape
 * (pruning, accumulation, saved tensors, missing gradients), errors and thread-local state. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "support.h"

static const int64_t S23[] = {2, 3};

Test(tensor, creation_copies_and_zero_fills) {
  float d[] = {1, 2, 3, 4, 5, 6};
  sg_tensor *t = sg_tensor_f32(d, S23, 2);
  d[0] = 99; /* the tensor holds its own copy */
  const float want[] = {1, 2, 3, 4, 5, 6};
  t_expect_f32(t, want, 2, S23, 0, 0);
  cr_assert_eq(sg_numel(t), 6);
  cr_assert_eq((uintptr_t)sg_data_f32(t) % 64, 0, "storage is 64-byte aligned");
  cr_assert_null(sg_data_i32(t), "wrong-dtype accessor gives NULL");
  sg_tensor *z = sg_tensor_f32(NULL, S23, 2);
  const float zero[6] = {0};
  t_expect_f32(z, zero, 2, S23, 0, 0);
  sg_tensor *s = sg_scalar(2.5f);
  cr_assert_eq(sg_rank(s), 0);
  cr_assert_eq(sg_numel(s), 1);
  cr_assert_eq(sg_data_f32(s)[0], 2.5f);
  sg_dispose(t);
  sg_dispose(z);
  sg_dispose(s);
}

Test(tensor, fill_ones_and_dtypes) {
  sg_tensor *o = sg_ones(S23, 2);
  const float ones[6] = {1, 1, 1, 1, 1, 1};
  t_expect_f32(o, ones, 2, S23, 0, 0);
  int32_t iv[] = {1, -2, 3};
  int64_t s3[] = {3};
  sg_tensor *i = sg_tensor_i32(iv, s3, 1);
  cr_assert_eq(sg_dtype_of(i), SG_I32);
  cr_assert_eq(sg_data_i32(i)[1], -2);
  uint8_t bv[] = {0, 7, 1};
  sg_tensor *b = sg_tensor_bool(bv, s3, 1);
  cr_assert_eq(sg_dtype_of(b), SG_BOOL);
  cr_assert_eq(sg_data_bool(b)[1], 1, "bool tensors hold 0 or 1");
  sg_dispose(o);
  sg_dispose(i);
  sg_dispose(b);
}

Test(tensor, random_is_seeded_and_in_range) {
  int64_t s[] = {10000};
  sg_tensor *a = sg_random_uniform(s, 1, -2, 3, 42);
  sg_tensor *b = sg_random_uniform(s, 1, -2, 3, 42);
  sg_tensor *c = sg_random_uniform(s, 1, -2, 3, 43);
  cr_assert(memcmp(sg_data_f32(a), sg_data_f32(b), 10000 * sizeof(float)) == 0);
  cr_assert(memcmp(sg_data_f32(a), sg_data_f32(c), 10000 * sizeof(float)) != 0);
  double mean = 0;
  for (int i = 0; i < 10000; i++) {
    float v = sg_data_f32(a)[i];
    cr_assert(v >= -2 && v <= 3);
    mean += v / 10000.0;
  }
  cr_assert(fabs(mean - 0.5) < 0.05, "uniform mean %g", mean);
  sg_tensor *n = sg_random_normal(s, 1, 1.0f, 2.0f, 7);
  double m = 0, v = 0;
  for (int i = 0; i < 10000; i++) m += sg_data_f32(n)[i] / 10000.0;
  for (int i = 0; i < 10000; i++) v += pow(sg_data_f32(n)[i] - m, 2) / 10000.0;
  cr_assert(fabs(m - 1.0) < 0.06 && fabs(sqrt(v) - 2.0) < 0.06, "normal mean %g sd %g", m, sqrt(v));
  sg_dispose(a);
  sg_dispose(b);
  sg_dispose(c);
  sg_dispose(n);
}

Test(tensor, bad_shapes_are_errors_without_leaks) {
  int64_t live = t_live_tensors();
  int64_t neg[] = {2, -1};
  t_expect_error(sg_zeros(neg, 2), SG_ERR_SHAPE, "zeros", "negative dimension -1", "[2,-1]", NULL);
  int64_t huge[] = {INT64_C(1) << 40, INT64_C(1) << 40};
  t_expect_error(sg_tensor_f32(NULL, huge, 2), SG_ERR_SHAPE, "tensor_f32", "more elements", NULL);
  /* Empty, but its other sizes overflow the strides and row lengths ops compute (concat and
     log_softmax did, found by tests/fuzz/fuzz_api). */
  int64_t empty_huge[] = {0, INT64_C(1) << 62, 4};
  t_expect_error(sg_zeros(empty_huge, 3), SG_ERR_SHAPE, "zeros", "nonzero sizes", NULL);
  /* Empty inputs whose output is not: [2^30, 2^29, 0] x [1, 0, 2^29] is [2^30, 2^29, 2^29]. */
  int64_t ea[] = {INT64_C(1) << 30, INT64_C(1) << 29, 0}, eb[] = {1, 0, INT64_C(1) << 29};
  sg_tensor *a = sg_zeros(ea, 3), *b = sg_zeros(eb, 3);
  cr_assert(a && b, "%s", sg_last_error());
  t_expect_error(sg_matmul(a, b, false, false), SG_ERR_SHAPE, "more elements", NULL);
  sg_dispose(a);
  sg_dispose(b);
  int64_t deep[SG_MAX_RANK + 1] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  t_expect_error(sg_ones(deep, SG_MAX_RANK + 1), SG_ERR_SHAPE, "rank 9", NULL);
  t_expect_error(sg_ones(NULL, 2), SG_ERR_ARG, "shape is NULL", NULL);
  int64_t s[] = {4};
  t_expect_error(sg_random_uniform(s, 1, 3, 1, 0), SG_ERR_ARG, "random_uniform", NULL);
  cr_assert_eq(t_live_tensors(), live);
}

Test(tensor, empty_tensor) {
  int64_t s[] = {0, 3};
  sg_tensor *t = sg_zeros(s, 2);
  cr_assert_not_null(t);
  cr_assert_eq(sg_numel(t), 0);
  sg_dispose(t);
}

Test(tensor, disposed_tensor_is_detected) {
  int64_t s[] = {3};
  sg_tensor *t = sg_ones(s, 1);
  sg_dispose(t);
  /* The header is recycled lazily: an op on it now reports the misuse instead of reading
     freed storage. */
  t_expect_error(sg_exp(t), SG_ERR_STATE, "exp", "disposed", NULL);
  sg_dispose(t);
  cr_assert_eq(sg_last_status(), SG_ERR_STATE, "double dispose is reported");
  cr_assert(strstr(sg_last_error(), "already disposed"));
  sg_clear_error();
}

Test(tensor, retain_needs_two_disposes) {
  int64_t live = t_live_tensors();
  sg_tensor *t = sg_scalar(1);
  cr_assert_eq(sg_retain(t), t);
  sg_dispose(t);
  cr_assert_eq(t_live_tensors(), live + 1);
  sg_dispose(t);
  cr_assert_eq(t_live_tensors(), live);
}

Test(memory, bytes_and_peak_track_live_tensors) {
  sg_memory_info m0 = sg_memory();
  int64_t s[] = {1000};
  sg_tensor *t = sg_zeros(s, 1);
  sg_memory_info m1 = sg_memory();
  cr_assert_eq(m1.num_tensors, m0.num_tensors + 1);
  cr_assert_eq(m1.num_bytes, m0.num_bytes + 4000);
  cr_assert_geq(m1.peak_bytes, m1.num_bytes);
  int64_t s2[] = {10, 100};
  sg_tensor *v = sg_reshape(t, s2, 2); /* a view: no new bytes */
  cr_assert_not_null(v, "%s", sg_last_error());
  cr_assert_eq(sg_memory().num_bytes, m1.num_bytes);
  sg_dispose(t);
  sg_dispose(v);
  sg_memory_info m2 = sg_memory();
  cr_assert_eq(m2.num_tensors, m0.num_tensors);
  cr_assert_eq(m2.num_bytes, m0.num_bytes);
}

/* Tensors made on one thread and disposed on another, while other threads allocate, and
   threads that exit holding counts: the totals come out exact (the counters are per thread,
   summed by sg_memory). */
typedef struct churn_arg {
  sg_tensor **made; /* 64 tensors for the main thread to dispose */
  int seed;
} churn_arg;

static void *churn(void *p) {
  churn_arg *a = p;
  for (int round = 0; round < 200; round++) {
    int64_t s[1] = {1 + (round * 37 + a->seed) % 5000};
    sg_tensor *t = sg_fill(s, 1, 1.0f);
    sg_tensor *u = sg_exp(t);
    sg_dispose(t);
    sg_dispose(u);
  }
  for (int i = 0; i < 64; i++) {
    int64_t s[1] = {100 + i};
    a->made[i] = sg_zeros(s, 1);
  }
  return NULL;
}

Test(memory, counts_are_exact_across_threads) {
  sg_memory_info m0 = sg_memory();
  enum { THREADS = 4 };
  pthread_t th[THREADS];
  sg_tensor *made[THREADS][64];
  churn_arg args[THREADS];
  for (int i = 0; i < THREADS; i++) {
    args[i] = (churn_arg){made[i], i};
    cr_assert_eq(pthread_create(&th[i], NULL, churn, &args[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  int64_t bytes = 0;
  for (int i = 0; i < 64; i++) bytes += (100 + i) * 4;
  sg_memory_info m1 = sg_memory();
  cr_assert_eq(m1.num_tensors, m0.num_tensors + THREADS * 64, "tensors: %lld, want %lld",
               (long long)m1.num_tensors, (long long)(m0.num_tensors + THREADS * 64));
  cr_assert_eq(m1.num_bytes, m0.num_bytes + THREADS * bytes);
  for (int i = 0; i < THREADS; i++)
    for (int k = 0; k < 64; k++) sg_dispose(made[i][k]);
  sg_memory_info m2 = sg_memory();
  cr_assert_eq(m2.num_tensors, m0.num_tensors);
  cr_assert_eq(m2.num_bytes, m0.num_bytes);
}

/* ---- Scopes ---- */

Test(scope, end_disposes_everything_but_keep) {
  sg_memory_info m0 = sg_memory();
  sg_tensor *kept, *returned;
  sg_scope_begin("outer");
  sg_tensor *a = sg_ones(S23, 2);
  kept = sg_keep(sg_exp(a));
  sg_scope_begin("inner");
  sg_tensor *b = sg_add(a, a);
  returned = sg_mul(b, b);
  cr_assert_str_eq(sg_scope_path(), "outer/inner");
  sg_scope_end(&returned, 1); /* returned moves to "outer" */
  cr_assert_str_eq(sg_scope_path(), "outer");
  cr_assert_eq(sg_data_f32(returned)[0], 4.0f);
  sg_scope_end(&returned, 1);
  cr_assert_str_eq(sg_scope_path(), "");
  cr_assert_eq(sg_memory().num_tensors, m0.num_tensors + 2);
  cr_assert_float_eq(sg_data_f32(kept)[0], expf(1), 1e-6);
  sg_dispose(kept);
  sg_dispose(returned);
  cr_assert_eq(sg_memory().num_tensors, m0.num_tensors);
  cr_assert_eq(sg_memory().num_bytes, m0.num_bytes);
}

Test(scope, inner_dispose_then_end_is_safe) {
  int64_t live = t_live_tensors();
  sg_scope_begin("s");
  sg_tensor *a = sg_ones(S23, 2);
  sg_tensor *b = sg_neg(a);
  sg_dispose(a); /* disposed by hand: the scope must not dispose it again */
  sg_dispose(b);
  sg_tensor *c = sg_ones(S23, 2);
  (void)c;
  sg_scope_end(NULL, 0);
  cr_assert_eq(t_live_tensors(), live);
  cr_assert_eq(sg_last_status(), SG_OK, "%s", sg_last_error());
}

Test(scope, unbalanced_end_is_an_error) {
  sg_scope_end(NULL, 0);
  cr_assert_eq(sg_last_status(), SG_ERR_STATE);
  sg_clear_error();
}

Test(scope, errors_name_the_scope_path) {
  sg_scope_begin("model");
  sg_scope_begin("dense1");
  int64_t s1[] = {2, 3}, s2[] = {4, 5};
  sg_tensor *a = sg_ones(s1, 2), *b = sg_ones(s2, 2);
  t_expect_error(sg_matmul(a, b, false, false), SG_ERR_SHAPE, "matmul", "[2,3]", "[4,5]",
                 "in scope \"model/dense1\"", NULL);
  sg_scope_end(NULL, 0);
  sg_scope_end(NULL, 0);
}

/* ---- Errors ---- */

Test(errors, null_input_keeps_the_first_error) {
  int64_t live = t_live_tensors();
  int64_t s1[] = {2, 3}, s2[] = {4, 3};
  sg_tensor *a = sg_ones(s1, 2), *b = sg_ones(s2, 2);
  sg_tensor *y = sg_relu(sg_exp(sg_add(a, b)));
  cr_assert_null(y);
  cr_assert_eq(sg_last_status(), SG_ERR_SHAPE);
  cr_assert(strstr(sg_last_error(), "add"), "first error kept: %s", sg_last_error());
  sg_clear_error();
  t_expect_error(sg_exp(NULL), SG_ERR_ARG, "exp", "NULL", NULL);
  cr_assert_str_eq(sg_last_error(), "");
  sg_dispose(a);
  sg_dispose(b);
  cr_assert_eq(t_live_tensors(), live);
}

Test(errors, wrong_dtype) {
  int32_t iv[] = {1, 2};
  int64_t s[] = {2};
  sg_tensor *i = sg_tensor_i32(iv, s, 1);
  t_expect_error(sg_exp(i), SG_ERR_DTYPE, "exp", "f32", "i32", NULL);
  sg_dispose(i);
}

static void *other_thread(void *arg) {
  (void)arg;
  /* A fresh thread sees no error, no scope and no tape of the main thread. */
  bool clean = sg_last_status() == SG_OK && sg_scope_path()[0] == '\0' && !sg_tape_active();
  sg_scope_begin("worker");
  int64_t s[] = {4};
  sg_tensor *a = sg_ones(s, 1);
  sg_tensor *b = sg_add(a, a);
  clean = clean && b && sg_data_f32(b)[3] == 2.0f;
  sg_scope_end(NULL, 0);
  return clean ? (void *)1 : NULL;
}

Test(errors, state_is_per_thread) {
  sg_exp(NULL);
  sg_scope_begin("main");
  cr_assert_eq(sg_tape_begin(), SG_OK);
  pthread_t th;
  void *res = NULL;
  pthread_create(&th, NULL, other_thread, NULL);
  pthread_join(th, &res);
  cr_assert_not_null(res, "the worker saw the main thread's state");
  cr_assert_eq(sg_last_status(), SG_ERR_ARG);
  sg_tensor *g = NULL;
  sg_tape_end(NULL, NULL, NULL, 0, &g);
  sg_scope_end(NULL, 0);
  sg_clear_error();
}

/* ---- Backends ---- */

Test(backend, choice_and_override) {
  cr_assert_eq(sg_init(), SG_OK);
  cr_assert_not_null(sg_backend_current());
  cr_assert_str_eq(sg_backend_name(), sg_backend_current()->name);
  cr_assert(sg_backend_available("scalar"));
  cr_assert_not_null(sg_cpu_features());
  cr_assert_eq(sg_use_backend("nonsense"), SG_ERR_ARG);
  cr_assert(strstr(sg_last_error(), "nonsense"));
  const char *before = sg_backend_name();
  cr_assert_eq(sg_use_backend("scalar"), SG_OK);
  cr_assert_str_eq(sg_backend_name(), "scalar");
#if defined(__x86_64__)
  cr_assert_not(sg_backend_available("neon"));
  cr_assert_eq(sg_use_backend("neon"), SG_ERR_UNSUPPORTED);
#elif defined(__aarch64__)
  /* Every aarch64 CPU has Advanced SIMD (getauxval(AT_HWCAP) & HWCAP_ASIMD, qemu-user too);
     the x86 folders are not even built. */
  cr_assert(sg_backend_available("neon"));
  cr_assert_not(sg_backend_available("avx2"));
  cr_assert_not(sg_backend_available("avx512"));
  cr_assert_eq(sg_use_backend("avx2"), SG_ERR_UNSUPPORTED);
  cr_assert_eq(sg_use_backend("avx512"), SG_ERR_UNSUPPORTED);
  if (!getenv("SIMDGRAD_BACKEND")) cr_assert_str_eq(before, "neon");
#endif
  sg_clear_error();
  cr_assert_eq(sg_use_backend(before), SG_OK);
}

Test(backend, every_slot_is_filled) {
  const char *names[] = {"scalar", "avx2", "avx512", "neon"};
  for (int k = 0; k < 4; k++) {
    const sg_backend *be = sg_backend_get(names[k]);
    if (!be) continue;
    /* The struct is a name followed by function pointers only. */
    const char *base = (const char *)be;
    for (size_t off = sizeof(const char *); off < sizeof *be; off += sizeof(void (*)(void))) {
      void (*fp)(void);
      memcpy(&fp, base + off, sizeof fp);
      cr_assert_not_null(fp, "%s: slot at offset %zu is empty", names[k], off);
    }
  }
}

Test(threads, set_and_get) {
  int before = sg_threads();
  sg_set_threads(1);
  cr_assert_eq(sg_threads(), 1);
  sg_set_threads(0);
  cr_assert_geq(sg_threads(), 1);
  sg_set_threads(before);
}

/* ---- Debug mode ---- */

Test(debug, non_finite_output_becomes_an_error) {
  int64_t live = t_live_tensors();
  sg_set_debug(true);
  cr_assert(sg_debug());
  float v[] = {1, 0, 4};
  int64_t s[] = {3};
  sg_tensor *x = sg_tensor_f32(v, s, 1);
  sg_scope_begin("model");
  sg_tensor *ok = sg_sqrt(x);
  cr_assert_not_null(ok, "finite output passes: %s", sg_last_error());
  t_expect_error(sg_log(x), SG_ERR_ARG, "log", "element 1", "Inf", "in scope \"model\"", NULL);
  sg_scope_end(NULL, 0);
  sg_set_debug(false);
  sg_tensor *l = sg_log(x);
  cr_assert_not_null(l, "without debug mode -inf is an ordinary value");
  sg_clear_error();
  sg_dispose(l);
  sg_dispose(x);
  cr_assert_eq(t_live_tensors(), live);
}

Test(memory, cache_reuses_and_releases) {
  int64_t s[] = {1 << 18}; /* 1 MiB: the shared large-block cache */
  sg_tensor *a = sg_zeros(s, 1);
  const void *first = sg_data_f32(a);
  sg_dispose(a);
  sg_memory_info m = sg_memory();
#if !defined(__SANITIZE_ADDRESS__)
  cr_assert_geq(m.num_bytes_cached, (int64_t)4 << 18, "the freed block is cached");
  sg_tensor *b = sg_zeros(s, 1);
  cr_assert_eq(sg_data_f32(b), first, "the next request of that size reuses it");
  sg_dispose(b);
#else
  (void)first;
#endif
  sg_memory_release_cache();
  cr_assert_eq(sg_memory().num_bytes_cached, 0);
  (void)m;
}

/* The VmFlags of the mapping that holds p, from /proc/self/smaps, into flags; false when there
   is no such file (not Linux) or no mapping holds p. */
static bool mapping_flags(const void *p, char *flags, size_t size) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return false;
  char line[512];
  bool inside = false, found = false;
  uintptr_t a = (uintptr_t)p;
  while (!found && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
      inside = lo <= a && a < hi;
    else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
      size_t n = strlen(line + 8) < size ? strlen(line + 8) : size - 1;
      memcpy(flags, line + 8, n);
      flags[n] = '\0';
      found = true;
    }
  }
  fclose(f);
  return found;
}

/* Under an emulator (qemu-user) the advice never reaches the kernel, so it is not checked. */
Test(memory, large_blocks_are_advised_huge_pages) {
  int64_t s[] = {1 << 20}; /* 4 MiB */
  sg_tensor *a = sg_zeros(s, 1);
  char flags[256];
  bool emulated = false;
#if defined(SIMDGRAD_TEST_EMULATED)
  emulated = true;
#endif
  bool seen = !emulated && mapping_flags(sg_data_f32(a), flags, sizeof flags);
  sg_dispose(a);
  if (!seen) cr_skip_test("huge-page advice not checked here (emulated, or no /proc/self/smaps)");
  cr_assert(strstr(flags, " hg") != NULL, "MADV_HUGEPAGE sets the mapping's hg flag: %s", flags);
}

Test(threads, flush_denormals_is_a_setting) {
  cr_assert_not(sg_flush_denormals(), "denormals are kept by default");
  int64_t s[] = {1};
  float tiny = 1e-40f; /* a denormal */
  sg_tensor *x = sg_tensor_f32(&tiny, s, 1);
  sg_tensor *y = sg_mul(x, x);
  sg_tensor *z = sg_add(x, x);
  cr_assert_eq(sg_data_f32(z)[0], tiny + tiny, "kept: %g", sg_data_f32(z)[0]);
  sg_set_flush_denormals(true);
  cr_assert(sg_flush_denormals());
  sg_tensor *z2 = sg_add(x, x);
  cr_assert_eq(sg_data_f32(z2)[0], 0.0f, "flushed: %g", sg_data_f32(z2)[0]);
  sg_set_flush_denormals(false);
  sg_tensor *z3 = sg_add(x, x);
  cr_assert_eq(sg_data_f32(z3)[0], tiny + tiny);
  sg_tensor *all[] = {x, y, z, z2, z3};
  for (int i = 0; i < 5; i++) sg_dispose(all[i]);
}

/* The setting reaches the worker threads: an add split across 2 threads flushes (or keeps) the
   denormals in every chunk, the ones the workers ran included. */
Test(threads, flush_denormals_reaches_every_worker) {
  int saved = sg_threads();
  sg_set_threads(2);
  const int64_t n = 1 << 20; /* many chunks of the parallel-for */
  sg_tensor *x = sg_fill(&n, 1, 1e-40f);
  for (int flush = 1; flush >= 0; flush--) {
    sg_set_flush_denormals(flush);
    sg_tensor *y = sg_add(x, x);
    cr_assert_not_null(y, "%s", sg_last_error());
    const float want = flush ? 0.0f : 1e-40f + 1e-40f;
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < n; i++)
      if (sg_data_f32(y)[i] != want && wrong++ == 0) first = i;
    cr_assert_eq(wrong, 0, "flush %d: %lld elements differ, the first at %lld (a chunk of %s)",
                 flush, (long long)wrong, (long long)first,
                 first < n / 2 ? "the first half" : "the second half");
    sg_dispose(y);
  }
  sg_dispose(x);
  sg_set_threads(saved);
}
