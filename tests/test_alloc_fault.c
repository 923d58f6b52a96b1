/* Allocation-failure injection: each representative program (every op family forward and
 * backward under a tape, a training step, a profile) runs once for every k with the engine's
 * k-th allocation failing (engine/alloc.h's test probe), until a run makes fewer than k. Each
 * run must either fail with SG_ERR_OOM or, where the engine has a fallback (the gemm's packing
 * buffers, a profiler call it drops and counts, a per-thread cache), give the clean run's
 * result; afterwards the live tensors, their bytes and the engine's allocated blocks must be
 * back at their baseline, and the same program must succeed at once on the same thread.
 *
 * Each run gets a thread of its own, so the per-thread state (context, header cache, packing
 * buffers, profiler record) is made during the run and can fail too, and is freed when the
 * thread exits. One engine thread (sg_set_threads(1)) keeps the allocation order fixed.
 * ALLOC_FAULT_TRACE=1 prints each run's outcome to stderr. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simdgrad/profile.h>

#include "engine/alloc.h"
#include "support.h"

/* A program: SG_OK and a checksum of its results, or the first error's status. */
typedef sg_status (*program_fn)(double *checksum);

#define TRY(x)                                                                                     \
  do {                                                                                             \
    if (!(x)) goto fail;                                                                           \
  } while (0)

static const int64_t k_rows = 6, k_cols = 20;

static sg_tensor *input(uint64_t seed, int rank, const int64_t *shape) {
  return sg_random_normal(shape, rank, 0.0f, 1.0f, seed);
}

static double sum_of(const sg_tensor *t) {
  double s = 0;
  const float *p = sg_data_f32(t);
  for (int64_t i = 0; p && i < sg_numel(t); i++) s += p[i];
  return s;
}

/* Ends what a failed program left open and returns its first error. */
static sg_status failed(void) {
  sg_status st = sg_last_status();
  char why[1024];
  snprintf(why, sizeof why, "%s", sg_last_error());
  if (sg_tape_active()) sg_tape_end(NULL, NULL, NULL, 0, NULL);
  if (sg_profile_active()) sg_profile_free(sg_profile_end());
  while (sg_scope_path()[0]) sg_scope_end(NULL, 0);
  /* The cleanup above may not touch the first error's status. */
  if (sg_last_status() != st) {
    fprintf(stderr, "cleanup changed the error (%s) to: %s\n", why, sg_last_error());
    return SG_ERR_STATE;
  }
  return st == SG_OK ? SG_ERR_STATE : st; /* a NULL without an error is itself a failure */
}

/* y = sum over the graph; the tape's gradients of y for xs; checksum = y + sum of gradients. */
static sg_status backward(sg_tensor *y, sg_tensor *const *xs, int n, double *checksum) {
  sg_tensor *grads[8] = {0};
  if (!y) {
    sg_tape_end(NULL, NULL, NULL, 0, NULL); /* keeps the pending error */
    return sg_last_status();
  }
  sg_status st = sg_tape_end(y, NULL, xs, n, grads);
  if (st != SG_OK) return st;
  *checksum = sum_of(y);
  for (int i = 0; i < n; i++) *checksum += sum_of(grads[i]);
  return SG_OK;
}

/* Runs one op in a scope of its own and keeps its result in the enclosing scope. A tape records
   each op's scope path, and a path other than the last one recorded is an allocation: so every
   op's failure to record runs too, not only the first op's of a tape. */
#define OP(name, expr) own((sg_scope_begin(name), (expr)))
static sg_tensor *own(sg_tensor *t) {
  sg_scope_end(&t, 1);
  return t;
}

static sg_tensor *sum_all(sg_tensor *x) { return OP("sum", sg_sum(x, NULL, 0, false)); }
static sg_tensor *plus(sg_tensor *a, sg_tensor *b) { return OP("add", sg_add(a, b)); }

static sg_status unary_binary(double *checksum) {
  sg_scope_begin("unary_binary");
  sg_tensor *x = input(1, 2, (int64_t[]){k_rows, k_cols});
  sg_tensor *b = input(2, 1, (int64_t[]){k_cols});
  TRY(x && b && sg_tape_begin() == SG_OK);
  sg_tensor *e = OP("exp", sg_exp(OP("tanh", sg_tanh(x))));
  sg_tensor *h = OP("mul", sg_mul(e, plus(x, b)));
  sg_tensor *d = plus(OP("square", sg_square(b)), sg_scalar(1.0f));
  h = OP("div", sg_div(OP("sigmoid", sg_sigmoid(h)), d));
  sg_tensor *g = OP("gelu", sg_gelu(OP("sub", sg_sub(h, x))));
  h = OP("where", sg_where(OP("less", sg_less(x, b)), h, g));
  h = OP("pow", sg_pow(OP("abs", sg_abs(h)), OP("maximum", sg_maximum(b, sg_scalar(0.5f)))));
  TRY(backward(sum_all(h), (sg_tensor *[]){x, b}, 2, checksum) == SG_OK);
  sg_scope_end(NULL, 0);
  return SG_OK;
fail:
  return failed();
}

static sg_status reduce_nn(double *checksum) {
  sg_scope_begin("reduce_nn");
  sg_tensor *x = input(3, 2, (int64_t[]){k_rows, k_cols});
  sg_tensor *labels = sg_one_hot(sg_argmax(input(4, 2, (int64_t[]){k_rows, k_cols}), 1), k_cols);
  TRY(x && labels && sg_tape_begin() == SG_OK);
  sg_tensor *l = OP("cross_entropy", sg_softmax_cross_entropy(labels, x));
  l = plus(l, OP("mean", sg_mean(OP("softmax", sg_softmax(x, 1)), NULL, 0, false)));
  l = plus(l, sum_all(OP("log_softmax", sg_log_softmax(x, 0))));
  sg_tensor *lse = OP("logsumexp", sg_logsumexp(x, (int[]){1}, 1, false));
  l = plus(l, OP("max", sg_max(lse, NULL, 0, false)));
  l = plus(l, OP("min", sg_min(x, NULL, 0, false)));
  TRY(backward(l, &x, 1, checksum) == SG_OK);
  sg_scope_end(NULL, 0);
  return SG_OK;
fail:
  return failed();
}

static sg_status shape_ops(double *checksum) {
  sg_scope_begin("shape");
  sg_tensor *x = input(5, 2, (int64_t[]){k_rows, k_cols});
  int32_t idx[3] = {2, 0, 5};
  sg_tensor *indices = sg_tensor_i32(idx, (int64_t[]){3}, 1);
  TRY(x && indices && sg_tape_begin() == SG_OK);
  sg_tensor *r = OP("reshape", sg_reshape(x, (int64_t[]){2, 3, -1}, 3));
  sg_tensor *t = OP("transpose", sg_transpose(r, NULL));
  sg_tensor *s = OP("slice", sg_slice(x, (int64_t[]){1, 2}, (int64_t[]){3, -1}));
  /* Five inputs: more than a tape node holds inline. */
  sg_tensor *c = OP("concat", sg_concat((sg_tensor *[]){s, s, s, s, s}, 5, 0));
  sg_tensor *p =
      OP("pad", sg_pad(OP("tile", sg_tile(s, (int64_t[]){1, 2})), (int64_t[]){1, 0, 0, 2}, 0.5f));
  sg_tensor *g = OP("gather", sg_gather(x, indices, 0));
  sg_tensor *gi = OP("cast", sg_cast(OP("cast", sg_cast(g, SG_I32)), SG_F32));
  sg_tensor *l = plus(sum_all(t), sum_all(OP("square", sg_square(c))));
  l = plus(l, OP("mean", sg_mean(p, NULL, 0, false)));
  l = plus(l, sum_all(OP("mul", sg_mul(g, gi))));
  TRY(backward(l, &x, 1, checksum) == SG_OK);
  sg_scope_end(NULL, 0);
  return SG_OK;
fail:
  return failed();
}

/* Big enough that the gemm packs its operands (and so needs the packing buffers). */
static sg_status matmul(double *checksum) {
  sg_scope_begin("matmul");
  sg_tensor *a = input(6, 2, (int64_t[]){40, 300});
  sg_tensor *b = input(7, 2, (int64_t[]){300, 30});
  sg_tensor *c = input(8, 3, (int64_t[]){2, 20, 300});
  TRY(a && b && c && sg_tape_begin() == SG_OK);
  sg_tensor *y = OP("matmul", sg_matmul(a, b, false, false));
  sg_tensor *z = OP("batched", sg_matmul(c, b, false, false));
  sg_tensor *w = OP("transposed", sg_matmul(a, a, true, false));
  sg_tensor *l = plus(plus(sum_all(y), sum_all(z)), OP("mean", sg_mean(w, NULL, 0, false)));
  TRY(backward(l, (sg_tensor *[]){a, b, c}, 3, checksum) == SG_OK);
  sg_scope_end(NULL, 0);
  return SG_OK;
fail:
  return failed();
}

static sg_status conv_pool_norm(double *checksum) {
  sg_scope_begin("conv");
  sg_tensor *x = input(9, 4, (int64_t[]){2, 7, 7, 3});
  sg_tensor *f = input(10, 4, (int64_t[]){3, 3, 3, 4});
  sg_tensor *d = input(11, 4, (int64_t[]){3, 3, 4, 2});
  sg_tensor *off = input(12, 1, (int64_t[]){8}), *scale = input(13, 1, (int64_t[]){8});
  TRY(x && f && d && off && scale && sg_tape_begin() == SG_OK);
  sg_tensor *h = OP("conv2d", sg_conv2d(x, f, NULL, SG_PADDING_SAME, NULL, NULL));
  h = OP("depthwise", sg_depthwise_conv2d(h, d, (int64_t[]){2, 2}, SG_PADDING_SAME, NULL, NULL));
  sg_tensor *mean = NULL, *var = NULL;
  sg_scope_begin("moments");
  sg_status st = sg_moments(h, (int[]){0, 1, 2}, 3, false, &mean, &var);
  sg_scope_end((sg_tensor *[]){mean, var}, 2);
  TRY(st == SG_OK);
  h = OP("relu", sg_relu(OP("batch_norm", sg_batch_norm(h, mean, var, off, scale, 1e-3f))));
  sg_tensor *m = OP("max_pool", sg_max_pool(h, (int64_t[]){2, 2}, NULL, SG_PADDING_SAME, NULL));
  sg_tensor *a =
      OP("avg_pool", sg_avg_pool(h, (int64_t[]){3, 3}, (int64_t[]){1, 1}, SG_PADDING_VALID, NULL));
  sg_tensor *l = plus(sum_all(m), sum_all(OP("dropout", sg_dropout(a, 0.25f, 7))));
  TRY(backward(l, (sg_tensor *[]){x, f, d, off, scale}, 5, checksum) == SG_OK);
  sg_scope_end(NULL, 0);
  return SG_OK;
fail:
  return failed();
}

/* A tensor on the caller's buffer: its deleter must run exactly once, whatever fails. */
static void count_deletes(void *data, void *ctx) {
  (void)data;
  ++*(int *)ctx;
}

static sg_status wrapped(double *checksum) {
  static float buf[6 * 20];
  for (int i = 0; i < 6 * 20; i++) buf[i] = (float)(i % 7) * 0.25f - 0.5f;
  int deletes = 0;
  sg_status st = SG_OK;
  sg_scope_begin("wrapped");
  sg_tensor *w = sg_tensor_wrap_f32(buf, (int64_t[]){k_rows, k_cols}, 2, count_deletes, &deletes);
  TRY(w && sg_tape_begin() == SG_OK);
  sg_tensor *v = OP("reshape", sg_reshape(w, (int64_t[]){-1}, 1));
  sg_tensor *l = sum_all(OP("mul", sg_mul(v, OP("exp", sg_exp(v)))));
  TRY(backward(l, &w, 1, checksum) == SG_OK);
  sg_scope_end(NULL, 0);
  goto done;
fail:
  st = failed();
done:
  if (deletes != 1) {
    fprintf(stderr, "the deleter ran %d times\n", deletes);
    return SG_ERR_STATE;
  }
  return st;
}

/* Two steps of a two-layer model with Adam (its state is made on the first step). */
static sg_status train_step(double *checksum) {
  sg_optimizer *opt = sg_adam(0.01f, 0.9f, 0.999f, 1e-8f);
  sg_tensor *vars[2] = {NULL, NULL};
  sg_scope_begin("train");
  TRY(opt);
  vars[0] = sg_variable(input(14, 2, (int64_t[]){k_cols, 16}));
  vars[1] = sg_variable(input(15, 2, (int64_t[]){16, 4}));
  sg_tensor *x = input(16, 2, (int64_t[]){k_rows, k_cols});
  sg_tensor *labels = sg_one_hot(sg_argmax(input(17, 2, (int64_t[]){k_rows, 4}), 1), 4);
  TRY(vars[0] && vars[1] && x && labels);
  *checksum = 0;
  for (int step = 0; step < 2; step++) {
    sg_scope_begin("step");
    TRY(sg_tape_begin() == SG_OK);
    sg_tensor *h = sg_relu(sg_matmul(x, vars[0], false, false));
    sg_tensor *l = sg_softmax_cross_entropy(labels, sg_matmul(h, vars[1], false, false));
    sg_tensor *grads[2] = {NULL, NULL};
    TRY(l && sg_tape_end(l, NULL, vars, 2, grads) == SG_OK);
    TRY(sg_optimizer_step(opt, vars, grads, 2) == SG_OK);
    *checksum += sum_of(l);
    sg_scope_end(NULL, 0);
  }
  *checksum += sum_of(vars[0]) + sum_of(vars[1]);
  sg_scope_end(NULL, 0);
  sg_dispose(vars[0]);
  sg_dispose(vars[1]);
  sg_optimizer_free(opt);
  return SG_OK;
fail:;
  sg_status st = failed();
  sg_dispose(vars[0]);
  sg_dispose(vars[1]);
  sg_optimizer_free(opt);
  return st;
}

/* A profiled forward and backward, printed and written as a trace; the checksum counts its calls
   (a call the profiler could not record is counted as dropped, so recorded + dropped is
   fixed). */
static sg_status profile(double *checksum) {
  TRY(sg_profile_begin() == SG_OK);
  sg_status st = unary_binary(checksum); /* ends the profile itself if it fails */
  if (st != SG_OK) return st;
  sg_profile *p = sg_profile_end();
  TRY(p);
  *checksum += 1000.0 * (double)(sg_profile_num_calls(p) + sg_profile_dropped(p));
  FILE *devnull = fopen("/dev/null", "w");
  if (devnull) {
    sg_profile_print(p, devnull);
    fclose(devnull);
  }
  st = sg_profile_write_trace(p, "/dev/null");
  sg_profile_free(p);
  return st;
fail:
  return failed();
}

/* ---- The harness ------------------------------------------------------------------------ */

typedef struct run {
  program_fn fn;
  int64_t fail_at; /* 0: no failure planned */
  bool fired;      /* the planned failure happened */
  sg_status first, second;
  double sum_first, sum_second;
  char error[1024], second_error[1024];
} run;

static void *run_thread(void *arg) {
  run *r = arg;
  sg_set_thread_local_threads(1);
  sg__alloc_fail_at(r->fail_at);
  r->sum_first = NAN;
  r->first = r->fn(&r->sum_first);
  r->fired = sg__alloc_fault_fired();
  sg__alloc_fail_at(0);
  snprintf(r->error, sizeof r->error, "%s", sg_last_error());
  sg_clear_error();
  r->sum_second = NAN;
  r->second = r->fn(&r->sum_second);
  snprintf(r->second_error, sizeof r->second_error, "%s", sg_last_error());
  return NULL;
}

typedef struct snapshot {
  int64_t tensors, bytes, blocks;
} snapshot;

/* Settles what outlives a run's thread until the engine's next call of its kind (the shared
   block cache, the profiler records of exited threads), then reads the figures. */
static snapshot settle(void) {
  sg_profile_begin();
  sg_profile_free(sg_profile_end());
  sg_memory_release_cache();
  sg_memory_info m = sg_memory();
  return (snapshot){m.num_tensors, m.num_bytes, sg__alloc_live()};
}

static bool close_to(double a, double b) { return fabs(a - b) <= 1e-4 * (1.0 + fabs(b)); }

/* Runs fn once cleanly and then with each allocation failing in turn. Returns the number of
   problems, the first described in why. */
static int check_program(program_fn fn, char *why, size_t size) {
  sg__alloc_probe(true); /* before the first call into the engine: each test is a process */
  sg_set_threads(1);
  snapshot base = settle();
  run clean = {.fn = fn};
  pthread_t th;
  pthread_create(&th, NULL, run_thread, &clean);
  pthread_join(th, NULL);
  if (clean.first != SG_OK) {
    snprintf(why, size, "the clean run failed: %s", clean.error);
    return 1;
  }
  base = settle(); /* the first run made the process-wide state (stats blocks, keys) */
  int problems = 0;
  int64_t k = 1;
  for (;; k++) {
    run r = {.fn = fn, .fail_at = k};
    pthread_create(&th, NULL, run_thread, &r);
    pthread_join(th, NULL);
    snapshot now = settle();
    const char *problem = NULL;
    if (getenv("ALLOC_FAULT_TRACE"))
      fprintf(stderr, "k=%lld fired=%d first=%d tensors=%lld blocks=%lld: %s\n", (long long)k,
              r.fired, (int)r.first, (long long)now.tensors, (long long)now.blocks, r.error);
    char detail[1200] = "";
    if (r.first == SG_OK && !close_to(r.sum_first, clean.sum_first))
      snprintf(detail, sizeof detail, "succeeded with %.9g instead of %.9g", r.sum_first,
               clean.sum_first),
          problem = detail;
    else if (r.first != SG_OK && r.first != SG_ERR_OOM)
      snprintf(detail, sizeof detail, "failed with status %d, not SG_ERR_OOM: %s", (int)r.first,
               r.error),
          problem = detail;
    else if (r.first != SG_OK && !strstr(r.error, "out of memory"))
      snprintf(detail, sizeof detail, "error does not say out of memory: %s", r.error),
          problem = detail;
    else if (r.second != SG_OK || !close_to(r.sum_second, clean.sum_first))
      snprintf(detail, sizeof detail, "the next run on the thread failed (%d) or differs: %s",
               (int)r.second, r.second_error),
          problem = detail;
    else if (now.tensors != base.tensors || now.bytes != base.bytes)
      snprintf(detail, sizeof detail, "live tensors %lld (%lld bytes), baseline %lld (%lld bytes)",
               (long long)now.tensors, (long long)now.bytes, (long long)base.tensors,
               (long long)base.bytes),
          problem = detail;
    else if (now.blocks != base.blocks)
      snprintf(detail, sizeof detail, "%lld allocated blocks, baseline %lld", (long long)now.blocks,
               (long long)base.blocks),
          problem = detail;
    if (problem) {
      if (problems++ == 0)
        snprintf(why, size, "allocation %lld failing: %s", (long long)k, problem);
      base = now; /* report each leak once */
    }
    if (!r.fired) break;
  }
  if (k < 10 && problems == 0) {
    snprintf(why, size, "only %lld allocations: is the probe on?", (long long)k);
    return 1;
  }
  return problems;
}

static void check(program_fn fn, const char *name) {
  char why[2048] = "";
  int problems = check_program(fn, why, sizeof why);
  cr_assert_eq(problems, 0, "%s: %d problem(s); the first: %s", name, problems, why);
}

Test(alloc_fault, unary_and_binary_ops) { check(unary_binary, "unary_binary"); }
Test(alloc_fault, reductions_and_nn_ops) { check(reduce_nn, "reduce_nn"); }
Test(alloc_fault, shape_ops) { check(shape_ops, "shape_ops"); }
Test(alloc_fault, matmul_and_its_packing_buffers) { check(matmul, "matmul"); }
Test(alloc_fault, conv_pool_and_norm) { check(conv_pool_norm, "conv_pool_norm"); }
Test(alloc_fault, training_step) { check(train_step, "train_step"); }
Test(alloc_fault, wrapped_tensor) { check(wrapped, "wrapped"); }
Test(alloc_fault, profile) { check(profile, "profile"); }

/* ---- The harness must be able to fail ---------------------------------------------------- */

/* The planted leaks stay reachable from here, so LeakSanitizer (make test-asan) does not
   report them at exit: only the harness is meant to notice them. */
static void *g_planted[4096];
static int g_n_planted;

static void plant(void *p) {
  if (p && g_n_planted < 4096) g_planted[g_n_planted++] = p;
}

/* Keeps a tensor that it never disposes when the program fails. */
static sg_status leaks_a_tensor(double *checksum) {
  sg_status st = unary_binary(checksum);
  if (st != SG_OK) plant(sg_keep(sg_zeros((int64_t[]){4}, 1)));
  return st;
}

/* Leaks one of the engine's blocks when the program fails. */
static sg_status leaks_a_block(double *checksum) {
  sg_status st = unary_binary(checksum);
  if (st != SG_OK) plant(sg__malloc(16));
  return st;
}

/* Reports success with a wrong result when something failed. */
static sg_status swallows_the_error(double *checksum) {
  if (unary_binary(checksum) != SG_OK) *checksum = 0;
  sg_clear_error();
  return SG_OK;
}

Test(alloc_fault, harness_catches_a_leaked_tensor) {
  char why[2048] = "";
  cr_assert_gt(check_program(leaks_a_tensor, why, sizeof why), 0);
  cr_assert(strstr(why, "live tensors"), "%s", why);
}

Test(alloc_fault, harness_catches_a_leaked_block) {
  char why[2048] = "";
  cr_assert_gt(check_program(leaks_a_block, why, sizeof why), 0);
  cr_assert(strstr(why, "allocated blocks"), "%s", why);
}

Test(alloc_fault, harness_catches_a_swallowed_error) {
  char why[2048] = "";
  cr_assert_gt(check_program(swallows_the_error, why, sizeof why), 0);
  cr_assert(strstr(why, "succeeded with"), "%s", why);
}
