/* The concurrency stress test (a plain program, so that it also runs under ThreadSanitizer,
 * where Criterion's runner cannot start): 8 host threads, for a bounded time, each run rounds of
 * scopes and tapes over ops of every family (unary, binary, comparisons and where, matmul,
 * softmax and the cross-entropy, reductions, shape ops, convolution, pooling, normalisation,
 * dropout, optimizers) and errors made on purpose, some with a thread count of their own, while
 * another thread changes sg_set_threads and turns the profiler on and off, and the workers also
 * try to. Every round's results must equal, bit for bit, those of a serial run made first, and
 * so must the tensors and bytes the round allocated on its thread. At the end sg_memory() must
 * be back at its baseline, with nothing cached once the caches are released.
 *
 * SIMDGRAD_STRESS_SECONDS sets the time (default 3; each worker runs at least one round, and
 * worker i starts with workload i, so every workload runs however short the time, and under qemu
 * the test stays short). Nothing about speed is checked. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, nanosleep */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <simdgrad/backend.h>
#include <simdgrad/profile.h>
#include <simdgrad/simdgrad.h>

#include "engine/engine.h" /* sg__thread_allocations */

enum { N_WORKERS = 8, MAX_OUT = 8 };

/* ---- Failures: reported with the worker and workload, counted, never fatal at once -------- */

static atomic_int g_failures;
static _Thread_local const char *tls_where = "main";

static void fail(const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (atomic_fetch_add(&g_failures, 1) < 20)
    fprintf(stderr, "stress_threads: %s: %s\n", tls_where, msg);
}

#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) fail(__VA_ARGS__);                                                                \
  } while (0)

/* t, or a failure naming the expression when the op returned NULL. */
#define NEED(t) need_((t), #t, __LINE__)
static sg_tensor *need_(sg_tensor *t, const char *expr, int line) {
  if (!t) fail("line %d: %s failed: %s", line, expr, sg_last_error());
  return t;
}

/* ---- Inputs, shared read-only by every thread --------------------------------------------- */

typedef struct inputs {
  sg_tensor *vec;        /* [N_VEC] in (0.1, 2): every unary op's domain */
  sg_tensor *rows, *row; /* [ROWS, COLS] and [COLS], broadcast together */
  sg_tensor *a, *b;      /* matmul operands [M, K], [K, P] */
  sg_tensor *classes;    /* i32 [M], in [0, P) */
  sg_tensor *cube;       /* [D0, D1, D2] */
  sg_tensor *picks;      /* i32 [N_PICKS], in [0, D1), with repeats */
  sg_tensor *img, *filter, *dw_filter;
} inputs;

/* Sizes that split into several chunks of the parallel-for (2^16 elements for cheap work). */
#define N_VEC ((1 << 17) + 5)
#define ROWS 67
#define COLS 2053
#define M 192
#define K 256
#define P 128
#define D0 24
#define D1 96
#define D2 80
#define N_PICKS 50

enum { N_INPUTS = 11 };
static void input_slots(inputs *in, sg_tensor **slots[N_INPUTS]) {
  sg_tensor **all[N_INPUTS] = {&in->vec, &in->rows,    &in->row,      &in->a,
                               &in->b,   &in->classes, &in->cube,     &in->picks,
                               &in->img, &in->filter,  &in->dw_filter};
  memcpy(slots, all, sizeof all);
}

static void make_inputs(inputs *in) {
  const int64_t n = N_VEC, rc[2] = {ROWS, COLS}, c = COLS, a[2] = {M, K}, b[2] = {K, P};
  const int64_t cube[3] = {D0, D1, D2}, img[4] = {2, 20, 20, 8}, f[4] = {3, 3, 8, 16};
  const int64_t dw[4] = {3, 3, 8, 2}, m = M, picks = N_PICKS;
  in->vec = sg_random_uniform(&n, 1, 0.1f, 2.0f, 1);
  in->rows = sg_random_uniform(rc, 2, 0.1f, 2.0f, 2);
  in->row = sg_random_uniform(&c, 1, 0.1f, 2.0f, 3);
  in->a = sg_random_uniform(a, 2, -1.0f, 1.0f, 4);
  in->b = sg_random_uniform(b, 2, -0.2f, 0.2f, 5);
  in->cube = sg_random_normal(cube, 3, 0.0f, 1.0f, 6);
  in->img = sg_random_normal(img, 4, 0.0f, 1.0f, 7);
  in->filter = sg_random_normal(f, 4, 0.0f, 0.3f, 8);
  in->dw_filter = sg_random_normal(dw, 4, 0.0f, 0.3f, 9);
  int32_t cls[M], pk[N_PICKS];
  for (int i = 0; i < M; i++) cls[i] = (int32_t)((i * 37) % P);
  for (int i = 0; i < N_PICKS; i++) pk[i] = (int32_t)((i * 7) % D1 / 2);
  in->classes = sg_tensor_i32(cls, &m, 1);
  in->picks = sg_tensor_i32(pk, &picks, 1);
  sg_tensor **all[N_INPUTS];
  input_slots(in, all);
  for (int i = 0; i < N_INPUTS; i++) {
    if (!*all[i]) {
      fail("an input could not be made: %s", sg_last_error());
      exit(1);
    }
    sg_keep(*all[i]);
  }
}

static void dispose_inputs(inputs *in) {
  sg_tensor **all[N_INPUTS];
  input_slots(in, all);
  for (int i = 0; i < N_INPUTS; i++) sg_dispose(*all[i]);
}

/* ---- The workloads: each fills out[] with kept tensors and returns their number ------------ */

typedef int (*workload_fn)(const inputs *in, sg_tensor **out);

static sg_tensor *plus(sg_tensor *acc, sg_tensor *t) { return acc ? NEED(sg_add(acc, t)) : t; }
static sg_tensor *total_of(sg_tensor *t) { return NEED(sg_sum(t, NULL, 0, false)); }

/* Ends the tape on y with gradients for xs, keeps y, the gradients and extra[] in out[] and
   ends the scope. */
static int finish(sg_tensor *y, sg_tensor *const *xs, int n, sg_tensor *const *extra, int n_extra,
                  sg_tensor **out) {
  sg_tensor *grads[4] = {0};
  sg_status st = sg_tape_end(y, NULL, xs, n, grads);
  CHECK(st == SG_OK, "sg_tape_end: %s", sg_last_error());
  int k = 0;
  if (y) out[k++] = sg_keep(y);
  for (int i = 0; i < n; i++)
    if (grads[i]) out[k++] = sg_keep(grads[i]);
  for (int i = 0; i < n_extra; i++)
    if (extra[i]) out[k++] = sg_keep(extra[i]);
  sg_scope_end(NULL, 0);
  return k;
}

static int wl_unary(const inputs *in, sg_tensor **out) {
  sg_scope_begin("unary");
  CHECK(sg_tape_begin() == SG_OK, "sg_tape_begin: %s", sg_last_error());
  sg_tensor *x = in->vec, *total = NULL;
#define UNARY_TERM_(name, saved, doc) total = plus(total, total_of(NEED(sg_##name(x))));
  SG_FOR_EACH_UNARY_OP(UNARY_TERM_)
#define STEP_TERM_(name, doc) total = plus(total, total_of(NEED(sg_##name(x))));
  SG_FOR_EACH_STEP_OP_ABI1(STEP_TERM_)
  total = plus(total, total_of(NEED(sg_leaky_relu(x, 0.1f))));
  total = plus(total, total_of(NEED(sg_clip(x, 0.5f, 1.5f))));
  return finish(total, &x, 1, NULL, 0, out);
}

static int wl_binary(const inputs *in, sg_tensor **out) {
  sg_scope_begin("binary");
  CHECK(sg_tape_begin() == SG_OK, "sg_tape_begin: %s", sg_last_error());
  sg_tensor *a = in->rows, *b = in->row, *total = NULL;
#define BINARY_TERM_(name, doc) total = plus(total, total_of(NEED(sg_##name(a, b))));
  SG_FOR_EACH_BINARY_OP(BINARY_TERM_)
  sg_tensor *cmp[6] = {NEED(sg_equal(a, b)),   NEED(sg_not_equal(a, b)),
                       NEED(sg_less(a, b)),    NEED(sg_less_equal(a, b)),
                       NEED(sg_greater(a, b)), NEED(sg_greater_equal(a, b))};
  total = plus(total, total_of(NEED(sg_where(cmp[2], a, NEED(sg_neg(a))))));
  sg_tensor *xs[2] = {a, b};
  return finish(total, xs, 2, cmp + 2, 2, out);
}

static int wl_matmul(const inputs *in, sg_tensor **out) {
  sg_scope_begin("matmul");
  CHECK(sg_tape_begin() == SG_OK, "sg_tape_begin: %s", sg_last_error());
  sg_tensor *logits = NEED(sg_matmul(in->a, in->b, false, false));
  sg_tensor *h = NEED(sg_tanh(logits));
  sg_tensor *s = NEED(sg_softmax(h, 1)), *ls = NEED(sg_log_softmax(h, 0));
  sg_tensor *labels = NEED(sg_one_hot(in->classes, P));
  sg_tensor *total = NEED(sg_softmax_cross_entropy(labels, logits));
  total = plus(total, total_of(NEED(sg_mul(s, ls))));
  total = plus(total, total_of(NEED(sg_matmul(in->b, in->a, true, true))));
  sg_tensor *xs[2] = {in->a, in->b};
  return finish(total, xs, 2, &s, 1, out);
}

static int wl_reduce(const inputs *in, sg_tensor **out) {
  sg_scope_begin("reduce");
  CHECK(sg_tape_begin() == SG_OK, "sg_tape_begin: %s", sg_last_error());
  sg_tensor *x = in->cube, *total = NULL;
  static const int axes[4][2] = {{0}, {1}, {2}, {0, 2}};
  static const int n_axes[4] = {1, 1, 1, 2};
  for (int i = 0; i < 4; i++) {
    total = plus(total, total_of(NEED(sg_sum(x, axes[i], n_axes[i], false))));
    total = plus(total, total_of(NEED(sg_mean(x, axes[i], n_axes[i], true))));
    total = plus(total, total_of(NEED(sg_max(x, axes[i], n_axes[i], false))));
    total = plus(total, total_of(NEED(sg_min(x, axes[i], n_axes[i], false))));
    total = plus(total, total_of(NEED(sg_logsumexp(x, axes[i], n_axes[i], false))));
  }
  sg_tensor *args[2] = {NEED(sg_argmax(x, 1)), NEED(sg_argmin(x, 2))};
  return finish(total, &x, 1, args, 2, out);
}

static int wl_shape(const inputs *in, sg_tensor **out) {
  sg_scope_begin("shape");
  CHECK(sg_tape_begin() == SG_OK, "sg_tape_begin: %s", sg_last_error());
  sg_tensor *x = in->cube;
  static const int perm[3] = {2, 0, 1};
  static const int64_t begin[3] = {1, 3, 0}, size[3] = {20, -1, 50};
  static const int64_t pads[6] = {1, 0, 0, 2, 3, 3}, reps[3] = {1, 2, 1}, flat[2] = {-1, D2};
  sg_tensor *t = NEED(sg_transpose(x, perm));
  sg_tensor *s = NEED(sg_slice(x, begin, size));
  sg_tensor *pair[2] = {s, s};
  sg_tensor *total = total_of(NEED(sg_mul(t, t)));
  total = plus(total, total_of(NEED(sg_concat(pair, 2, 0))));
  total = plus(total, total_of(NEED(sg_square(NEED(sg_pad(s, pads, 0.5f))))));
  total = plus(total, total_of(NEED(sg_tile(s, reps))));
  total = plus(total, total_of(NEED(sg_exp(NEED(sg_gather(x, in->picks, 1))))));
  total = plus(total, total_of(NEED(sg_square(NEED(sg_reshape(x, flat, 2))))));
  sg_tensor *ints = NEED(sg_cast(x, SG_I32));
  return finish(total, &x, 1, &ints, 1, out);
}

static int wl_conv(const inputs *in, sg_tensor **out) {
  sg_scope_begin("conv");
  CHECK(sg_tape_begin() == SG_OK, "sg_tape_begin: %s", sg_last_error());
  static const int64_t two[2] = {2, 2}, three[2] = {3, 3}, one[2] = {1, 1}, ch = 16;
  static const int spatial[3] = {0, 1, 2};
  sg_tensor *c = NEED(sg_conv2d(in->img, in->filter, NULL, SG_PADDING_SAME, NULL, NULL));
  sg_tensor *d =
      NEED(sg_depthwise_conv2d(in->img, in->dw_filter, two, SG_PADDING_VALID, NULL, NULL));
  sg_tensor *mp = NEED(sg_max_pool(c, two, NULL, SG_PADDING_VALID, NULL));
  sg_tensor *ap = NEED(sg_avg_pool(d, three, one, SG_PADDING_SAME, NULL));
  sg_tensor *mean = NULL, *var = NULL;
  CHECK(sg_moments(c, spatial, 3, false, &mean, &var) == SG_OK, "sg_moments: %s", sg_last_error());
  sg_tensor *offset = NEED(sg_fill(&ch, 1, 0.1f)), *scale = NEED(sg_fill(&ch, 1, 1.5f));
  sg_tensor *bn = NEED(sg_batch_norm(c, mean, var, offset, scale, 1e-3f));
  sg_tensor *dr = NEED(sg_dropout(bn, 0.25f, 42));
  sg_tensor *total = plus(total_of(mp), total_of(ap));
  total = plus(total, total_of(NEED(sg_mul(dr, dr))));
  sg_tensor *xs[3] = {in->img, in->filter, in->dw_filter};
  return finish(total, xs, 3, NULL, 0, out);
}

/* Two optimizers, two steps each, on variables of the round's own; an update tried while the
   tape is open must fail. */
static int wl_optim(const inputs *in, sg_tensor **out) {
  sg_tensor *w[2] = {NEED(sg_variable(in->b)), NEED(sg_variable(in->b))};
  sg_optimizer *opt[2] = {sg_adam(0.01f, 0.9f, 0.999f, 1e-7f), sg_momentum(0.05f, 0.9f, true)};
  for (int step = 0; step < 2; step++) {
    for (int o = 0; o < 2; o++) {
      sg_scope_begin("optim");
      CHECK(sg_tape_begin() == SG_OK, "sg_tape_begin: %s", sg_last_error());
      sg_tensor *loss = total_of(NEED(sg_square(NEED(sg_matmul(in->a, w[o], false, false)))));
      sg_tensor *g = NULL;
      CHECK(sg_optimizer_step(opt[o], &w[o], &w[o], 1) == SG_ERR_STATE,
            "an optimizer step with the tape open did not fail");
      sg_clear_error();
      CHECK(sg_tape_end(loss, NULL, &w[o], 1, &g) == SG_OK, "sg_tape_end: %s", sg_last_error());
      CHECK(sg_optimizer_step(opt[o], &w[o], &g, 1) == SG_OK, "sg_optimizer_step: %s",
            sg_last_error());
      sg_scope_end(NULL, 0);
    }
  }
  sg_optimizer_free(opt[0]);
  sg_optimizer_free(opt[1]);
  out[0] = w[0];
  out[1] = w[1];
  return 2;
}

static void expect_error(sg_status want, const char *what) {
  sg_status got = sg_last_status();
  CHECK(got == want, "%s: status %d, expected %d", what, (int)got, (int)want);
  CHECK(*sg_last_error() != '\0', "%s: no message", what);
  sg_clear_error();
  CHECK(sg_last_status() == SG_OK && *sg_last_error() == '\0', "%s: not cleared", what);
}

/* Errors on purpose, each cleared, then a result to show the thread still works. */
static int wl_errors(const inputs *in, sg_tensor **out) {
  sg_scope_begin("errors");
  CHECK(sg_add(in->vec, in->rows) == NULL, "adding [N] to [R, C] worked");
  expect_error(SG_ERR_SHAPE, "sg_add of shapes that do not broadcast");
  CHECK(sg_softmax(in->cube, 5) == NULL, "softmax over axis 5 of a rank-3 tensor worked");
  expect_error(SG_ERR_ARG, "sg_softmax over a bad axis");
  static const int64_t bad[2] = {7, -1};
  CHECK(sg_reshape(in->vec, bad, 2) == NULL, "a reshape that does not divide worked");
  sg_clear_error();
  /* A tape whose forward fails: sg_tape_end still closes it. */
  CHECK(sg_tape_begin() == SG_OK, "sg_tape_begin: %s", sg_last_error());
  CHECK(sg_tape_begin() == SG_ERR_STATE, "a second sg_tape_begin worked");
  sg_clear_error();
  sg_tensor *y = sg_matmul(in->a, in->a, false, false); /* [M, K] x [M, K] */
  CHECK(y == NULL, "a matmul of mismatched shapes worked");
  sg_tensor *x = in->a, *g = NULL;
  CHECK(sg_tape_end(y, NULL, &x, 1, &g) != SG_OK, "sg_tape_end of a failed forward succeeded");
  CHECK(!sg_tape_active(), "the tape is still open after sg_tape_end");
  sg_clear_error();
  sg_dispose(g);
  sg_tensor *ok = total_of(NEED(sg_sqrt(in->vec)));
  out[0] = sg_keep(ok);
  sg_scope_end(NULL, 0);
  return 1;
}

static const struct {
  const char *name;
  workload_fn fn;
} g_workloads[] = {{"unary", wl_unary},   {"binary", wl_binary}, {"matmul", wl_matmul},
                   {"reduce", wl_reduce}, {"shape", wl_shape},   {"conv", wl_conv},
                   {"optim", wl_optim},   {"errors", wl_errors}};
enum { N_WORKLOADS = sizeof g_workloads / sizeof g_workloads[0] };
_Static_assert((int)N_WORKERS >= (int)N_WORKLOADS,
               "every workload runs at least once, however short the time");

/* ---- One round: the workload, its outputs and its allocations ------------------------------ */

typedef struct result {
  int n;
  sg_tensor *out[MAX_OUT];
  int64_t tensors, bytes; /* made on this thread during the round */
} result;

static void run_workload(int w, const inputs *in, result *r) {
  int64_t t0, b0, t1, b1;
  sg__thread_allocations(&t0, &b0);
  r->n = g_workloads[w].fn(in, r->out);
  sg__thread_allocations(&t1, &b1);
  r->tensors = t1 - t0;
  r->bytes = b1 - b0;
}

static void dispose_result(result *r) {
  for (int i = 0; i < r->n; i++) sg_dispose(r->out[i]);
  r->n = 0;
}

static size_t byte_size(const sg_tensor *t, const void **data) {
  switch (sg_dtype_of(t)) {
  case SG_F32:
    *data = sg_data_f32(t);
    return (size_t)sg_numel(t) * 4;
  case SG_I32:
    *data = sg_data_i32(t);
    return (size_t)sg_numel(t) * 4;
  default:
    *data = sg_data_bool(t);
    return (size_t)sg_numel(t);
  }
}

static void compare(const char *name, const result *want, const result *got) {
  CHECK(got->n == want->n, "%s: %d results, the serial run had %d", name, got->n, want->n);
  for (int i = 0; i < got->n && i < want->n; i++) {
    const sg_tensor *a = want->out[i], *b = got->out[i];
    const void *da, *db;
    size_t na = byte_size(a, &da), nb = byte_size(b, &db);
    CHECK(sg_dtype_of(a) == sg_dtype_of(b) && sg_rank(a) == sg_rank(b) && na == nb &&
              memcmp(sg_shape(a), sg_shape(b), (size_t)sg_rank(a) * sizeof(int64_t)) == 0 &&
              memcmp(da, db, na) == 0,
          "%s: result %d differs from the serial run's bits", name, i);
  }
  CHECK(got->tensors == want->tensors && got->bytes == want->bytes,
        "%s: made %lld tensors and %lld bytes on its thread, the serial run %lld and %lld", name,
        (long long)got->tensors, (long long)got->bytes, (long long)want->tensors,
        (long long)want->bytes);
}

/* ---- The threads --------------------------------------------------------------------------- */

static inputs g_in;
static result g_want[N_WORKLOADS];
static double g_deadline;
static atomic_int g_workers_left;
static atomic_llong g_rounds, g_profiles;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

/* Reads a whole profile, as a user would, and frees it. */
static void read_profile(sg_profile *p) {
  int64_t calls = sg_profile_num_calls(p), ops = sg_profile_num_ops(p);
  for (int64_t i = 0; i < ops; i++)
    CHECK(sg_profile_op_at(p, i)->calls > 0, "a profile row with no call");
  CHECK(calls >= 0 && sg_profile_num_threads(p) >= 0, "a profile with negative counts");
  sg_profile_free(p);
  atomic_fetch_add(&g_profiles, 1);
}

/* Ends a profile this thread started; another thread may have ended it already. */
static void end_profile(void) {
  sg_profile *p = sg_profile_end();
  if (p) {
    read_profile(p);
  } else {
    CHECK(sg_last_status() == SG_ERR_STATE, "sg_profile_end: %s", sg_last_error());
    sg_clear_error();
  }
}

static void *worker_main(void *arg) {
  int id = (int)(intptr_t)arg;
  char where[32];
  snprintf(where, sizeof where, "worker %d", id);
  tls_where = where;
  /* Workers 1 and 5 keep their ops to themselves; 2 and 6 ask for 3 threads on odd rounds. */
  if (id % 4 == 1) sg_set_thread_local_threads(1);
  for (long round = 0;; round++) {
    int w = (int)((round + id) % N_WORKLOADS);
    if (round > 0 && now_s() > g_deadline) break; /* worker i starts with workload i */
    if (id % 4 == 2) sg_set_thread_local_threads(round % 2 ? 3 : 0);
    CHECK(sg_last_status() == SG_OK, "an error left over before round %ld: %s", round,
          sg_last_error());
    bool profiling = round % 5 == 3 && sg_profile_begin() == SG_OK;
    sg_clear_error(); /* SG_ERR_STATE when another thread's profile runs */
    result r;
    run_workload(w, &g_in, &r);
    if (profiling) end_profile();
    compare(g_workloads[w].name, &g_want[w], &r);
    dispose_result(&r);
    CHECK(*sg_scope_path() == '\0', "round %ld left a scope open: %s", round, sg_scope_path());
    CHECK(!sg_tape_active(), "round %ld left a tape open", round);
    atomic_fetch_add(&g_rounds, 1);
    if (atomic_load(&g_failures)) break;
  }
  atomic_fetch_sub(&g_workers_left, 1);
  return NULL;
}

/* Changes the process's thread count and turns the profiler on and off while workers run. */
static void *controller_main(void *arg) {
  (void)arg;
  tls_where = "controller";
  static const int counts[] = {2, 1, 3, 2, 4, 1};
  for (int i = 0; atomic_load(&g_workers_left) > 0; i++) {
    sg_set_threads(counts[i % 6]);
    if (i % 3 == 0) {
      if (sg_profile_begin() != SG_OK) sg_clear_error();
    } else if (i % 3 == 2 && sg_profile_active()) {
      end_profile();
    }
    sleep_ms(3);
  }
  if (sg_profile_active()) end_profile();
  return NULL;
}

int main(void) {
  if (sg_init() != SG_OK) {
    fprintf(stderr, "stress_threads: sg_init: %s\n", sg_last_error());
    return 1;
  }
  const char *env = getenv("SIMDGRAD_STRESS_SECONDS");
  double seconds = env && *env ? atof(env) : 3.0;
  sg_memory_info base = sg_memory();

  make_inputs(&g_in);
  /* The serial run, first: one thread, no profiler. */
  int saved = sg_threads();
  sg_set_threads(1);
  for (int w = 0; w < N_WORKLOADS; w++) {
    tls_where = g_workloads[w].name;
    run_workload(w, &g_in, &g_want[w]);
    CHECK(g_want[w].n > 0, "no results");
  }
  tls_where = "main";
  if (atomic_load(&g_failures)) return 1;

  double start = now_s();
  g_deadline = start + seconds;
  atomic_store(&g_workers_left, N_WORKERS);
  pthread_t workers[N_WORKERS], controller;
  for (int i = 0; i < N_WORKERS; i++)
    if (pthread_create(&workers[i], NULL, worker_main, (void *)(intptr_t)i) != 0) {
      fprintf(stderr, "stress_threads: pthread_create failed\n");
      return 1;
    }
  pthread_create(&controller, NULL, controller_main, NULL);
  for (int i = 0; i < N_WORKERS; i++) pthread_join(workers[i], NULL);
  pthread_join(controller, NULL);
  sg_set_threads(saved);

  for (int w = 0; w < N_WORKLOADS; w++) dispose_result(&g_want[w]);
  dispose_inputs(&g_in);
  sg_memory_info end = sg_memory();
  CHECK(end.num_tensors == base.num_tensors, "%lld tensors live at the end, %lld at the start",
        (long long)end.num_tensors, (long long)base.num_tensors);
  CHECK(end.num_bytes == base.num_bytes, "%lld bytes live at the end, %lld at the start",
        (long long)end.num_bytes, (long long)base.num_bytes);
  CHECK(end.peak_bytes >= end.num_bytes, "peak %lld below the live bytes %lld",
        (long long)end.peak_bytes, (long long)end.num_bytes);
  sg_memory_release_cache();
  end = sg_memory();
  CHECK(end.num_bytes_cached == 0, "%lld bytes still cached after sg_memory_release_cache",
        (long long)end.num_bytes_cached);

  int failures = atomic_load(&g_failures);
  printf("stress_threads: %d threads, %lld rounds, %lld profiles in %.1f s: %s\n", N_WORKERS,
         (long long)atomic_load(&g_rounds), (long long)atomic_load(&g_profiles), now_s() - start,
         failures ? "FAILED" : "all results bit-identical to the serial run");
  return failures ? 1 : 0;
}
