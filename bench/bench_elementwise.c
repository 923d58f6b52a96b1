/* Elementwise kernel benchmarks, forward and backward, straight from backend.h's op lists (so a
 * new op in a list is benchmarked with no edit here) plus the slots outside them: leaky_relu,
 * clip, fill, the casts, where, dropout and the optimizer updates (sgd, momentum, adam, in place).
 * Named
 * "<slot>/<backend>/<n>/threads:<T>"; with T > 1 the n elements are cut into the engine's chunks
 * and run on T OpenMP threads, as the engine runs the op. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "roofline.h"

typedef enum ew_kind {
  EW_UNARY,      /* y = f(x) */
  EW_UNARY_BWD,  /* dx from dy and the saved x or y */
  EW_BINARY,     /* y = a op b, both contiguous */
  EW_BINARY_BWD, /* da and db */
  EW_COMPARE,    /* uint8 y = a cmp b */
  EW_FILL,       /* y = 1 */
  EW_CAST_F32_I32,
  EW_CAST_I32_F32, /* x's floats read as integers: their bits */
  EW_WHERE,        /* y = c ? a : b */
  EW_WHERE_BWD,    /* da, db from dy and c */
  EW_LEAKY,
  EW_LEAKY_BWD,
  EW_CLIP,
  EW_CLIP_BWD,
  EW_DROPOUT, /* y = keep ? x * scale : 0, rate 0.5 */
  EW_SGD,     /* the optimizer updates, in place on w (and their state) */
  EW_MOMENTUM,
  EW_ADAM
} ew_kind;

typedef struct ew_op {
  const char *slot; /* "exp_backward" */
  const char *op;   /* "exp": input ranges, and the forward that makes a saved y */
  ew_kind kind;
  size_t offset;     /* of the slot in sg_backend */
  size_t fwd_offset; /* backward kinds: of the forward slot */
  const char *saved; /* unary backward: "X", "Y" or "NONE" */
} ew_op;

#define UNARY_(name, saved, doc)                                                                   \
  {#name, #name, EW_UNARY, offsetof(sg_backend, name), 0, NULL},                                   \
      {#name "_backward",          #name, EW_UNARY_BWD, offsetof(sg_backend, name##_backward),     \
       offsetof(sg_backend, name), #saved},
#define STEP_(name, doc) {#name, #name, EW_UNARY, offsetof(sg_backend, name), 0, NULL},
#define BINARY_(name, doc)                                                                         \
  {#name, #name, EW_BINARY, offsetof(sg_backend, name), 0, NULL},                                  \
      {#name "_backward",          #name, EW_BINARY_BWD, offsetof(sg_backend, name##_backward),    \
       offsetof(sg_backend, name), NULL},
#define COMPARE_(name, doc) {#name, #name, EW_COMPARE, offsetof(sg_backend, name), 0, NULL},

static const ew_op k_ops[] = {
    SG_FOR_EACH_UNARY_OP(UNARY_) SG_FOR_EACH_STEP_OP(STEP_){
        "leaky_relu", "leaky_relu", EW_LEAKY, offsetof(sg_backend, leaky_relu), 0, NULL},
    {"leaky_relu_backward", "leaky_relu", EW_LEAKY_BWD, offsetof(sg_backend, leaky_relu_backward),
     0, NULL},
    {"clip", "clip", EW_CLIP, offsetof(sg_backend, clip), 0, NULL},
    {"clip_backward", "clip", EW_CLIP_BWD, offsetof(sg_backend, clip_backward), 0, NULL},
    {"fill", "fill", EW_FILL, offsetof(sg_backend, fill), 0, NULL},
    {"cast_f32_i32", "cast_f32_i32", EW_CAST_F32_I32, offsetof(sg_backend, cast_f32_i32), 0, NULL},
    {"cast_i32_f32", "cast_i32_f32", EW_CAST_I32_F32, offsetof(sg_backend, cast_i32_f32), 0, NULL},
    SG_FOR_EACH_BINARY_OP(BINARY_) SG_FOR_EACH_COMPARE_OP(COMPARE_){
        "where", "where", EW_WHERE, offsetof(sg_backend, where), 0, NULL},
    {"where_backward", "where", EW_WHERE_BWD, offsetof(sg_backend, where_backward), 0, NULL},
    {"dropout", "dropout", EW_DROPOUT, offsetof(sg_backend, dropout), 0, NULL},
    {"sgd_update", "sgd_update", EW_SGD, offsetof(sg_backend, sgd_update), 0, NULL},
    {"momentum_update", "momentum_update", EW_MOMENTUM, offsetof(sg_backend, momentum_update), 0,
     NULL},
    {"adam_update", "adam_update", EW_ADAM, offsetof(sg_backend, adam_update), 0, NULL},
};
#define N_OPS (sizeof k_ops / sizeof k_ops[0])

/* Every kernel type a slot here can have; the case's kind says which member is live. */
typedef union ew_fn {
  sg_unary_kernel unary;
  sg_unary_backward_kernel unary_bwd;
  sg_binary_kernel binary;
  sg_binary_backward_kernel binary_bwd;
  sg_compare_kernel compare;
  void (*where)(const uint8_t *, size_t, const float *, size_t, const float *, size_t, float *,
                size_t);
  void (*where_bwd)(const float *, const uint8_t *, size_t, float *, float *, size_t);
  void (*leaky)(const float *, float *, size_t, float);
  void (*leaky_bwd)(const float *, const float *, float *, size_t, float);
  void (*clip)(const float *, float *, size_t, float, float);
  void (*clip_bwd)(const float *, const float *, float *, size_t, float, float);
  void (*fill)(float *, size_t, float);
  sg_cast_f32_i32_fn *cast_f32_i32;
  sg_cast_i32_f32_fn *cast_i32_f32;
  void (*dropout)(const float *, float *, size_t, uint64_t, uint64_t, uint64_t, float);
  void (*sgd)(float *, const float *, size_t, float);
  void (*momentum)(float *, float *, const float *, size_t, float, float, bool);
  void (*adam)(float *, float *, float *, const float *, size_t, float, float, float, float, float);
} ew_fn;

static ew_fn slot_fn(const sg_backend *be, size_t offset) {
  ew_fn f;
  memcpy(&f, (const char *)be + offset, sizeof f.unary); /* all function pointers: one size */
  return f;
}

typedef struct ew_case {
  const ew_op *op;
  const sg_backend *be;
  int64_t n;
  int threads;
} ew_case;

typedef struct ew_job {
  ew_kind kind;
  ew_fn f;
  const float *a, *b, *saved_x, *saved_y, *dy;
  const uint8_t *cond;
  float *y, *y2, *state; /* outputs; the optimizers: w, first and second state */
  uint8_t *ybool;
} ew_job;

#define ALPHA 0.1f
#define CLIP_LO -1.0f
#define CLIP_HI 1.0f

static void ew_range(int64_t lo, int64_t hi, void *ctx) {
  const ew_job *j = ctx;
  size_t n = (size_t)(hi - lo), o = (size_t)lo;
  switch (j->kind) {
  case EW_UNARY:
    j->f.unary(j->a + o, j->y + o, n);
    break;
  case EW_UNARY_BWD:
    j->f.unary_bwd(j->dy + o, j->saved_x ? j->saved_x + o : NULL,
                   j->saved_y ? j->saved_y + o : NULL, j->y + o, n);
    break;
  case EW_BINARY:
    j->f.binary(j->a + o, 1, j->b + o, 1, j->y + o, n);
    break;
  case EW_BINARY_BWD:
    j->f.binary_bwd(j->dy + o, j->a + o, 1, j->b + o, 1, j->saved_y + o, j->y + o, j->y2 + o, n);
    break;
  case EW_COMPARE:
    j->f.compare(j->a + o, 1, j->b + o, 1, j->ybool + o, n);
    break;
  case EW_WHERE:
    j->f.where(j->cond + o, 1, j->a + o, 1, j->b + o, 1, j->y + o, n);
    break;
  case EW_WHERE_BWD:
    j->f.where_bwd(j->dy + o, j->cond + o, 1, j->y + o, j->y2 + o, n);
    break;
  case EW_LEAKY:
    j->f.leaky(j->a + o, j->y + o, n, ALPHA);
    break;
  case EW_LEAKY_BWD:
    j->f.leaky_bwd(j->dy + o, j->a + o, j->y + o, n, ALPHA);
    break;
  case EW_CLIP:
    j->f.clip(j->a + o, j->y + o, n, CLIP_LO, CLIP_HI);
    break;
  case EW_CLIP_BWD:
    j->f.clip_bwd(j->dy + o, j->a + o, j->y + o, n, CLIP_LO, CLIP_HI);
    break;
  case EW_FILL:
    j->f.fill(j->y + o, n, 1.0f);
    break;
  case EW_CAST_F32_I32:
    j->f.cast_f32_i32(j->a + o, (int32_t *)(void *)(j->y + o), n);
    break;
  case EW_CAST_I32_F32:
    j->f.cast_i32_f32((const int32_t *)(const void *)(j->a + o), j->y + o, n);
    break;
  case EW_DROPOUT: /* the mask hashes the element index: the chunk passes its offset */
    j->f.dropout(j->a + o, j->y + o, n, (uint64_t)lo, 42, (uint64_t)1 << 31, 2.0f);
    break;
  case EW_SGD:
    j->f.sgd(j->y + o, j->dy + o, n, 1e-3f);
    break;
  case EW_MOMENTUM:
    j->f.momentum(j->y + o, j->y2 + o, j->dy + o, n, 1e-3f, 0.9f, false);
    break;
  case EW_ADAM:
    j->f.adam(j->y + o, j->y2 + o, j->state + o, j->dy + o, n, 1e-3f, 0.9f, 0.999f, 1.0f, 1e-8f);
    break;
  }
}

/* Bytes a call reads and writes per element, by the kernel contracts in backend.h, and the
   distinct bytes it touches (less for the optimizers, which update in place). */
typedef struct ew_traffic {
  double read, written, footprint;
} ew_traffic;
static ew_traffic traffic_per_element(const ew_op *op) {
  switch (op->kind) {
  case EW_UNARY:
  case EW_LEAKY:
  case EW_CLIP:
  case EW_CAST_F32_I32:
  case EW_CAST_I32_F32:
  case EW_DROPOUT:
    return (ew_traffic){4, 4, 8};
  case EW_UNARY_BWD: /* dy and the saved x or y (none for some) in, dx out */
    return strcmp(op->saved, "NONE") == 0 ? (ew_traffic){4, 4, 8} : (ew_traffic){8, 4, 12};
  case EW_LEAKY_BWD:
  case EW_CLIP_BWD:
  case EW_BINARY:
    return (ew_traffic){8, 4, 12};
  case EW_BINARY_BWD: /* dy, a and b (add and sub read neither), y (pow only); da and db */
    return strcmp(op->op, "add") == 0 || strcmp(op->op, "sub") == 0 ? (ew_traffic){4, 8, 12}
           : strcmp(op->op, "pow") == 0                             ? (ew_traffic){16, 8, 24}
                                                                    : (ew_traffic){12, 8, 20};
  case EW_COMPARE:
    return (ew_traffic){8, 1, 9};
  case EW_FILL:
    return (ew_traffic){0, 4, 4};
  case EW_WHERE:
    return (ew_traffic){9, 4, 13};
  case EW_WHERE_BWD:
    return (ew_traffic){5, 8, 13};
  case EW_SGD: /* w and g in, w out */
    return (ew_traffic){8, 4, 8};
  case EW_MOMENTUM: /* w, v and g in; w and v out */
    return (ew_traffic){12, 8, 12};
  case EW_ADAM: /* w, m, v and g in; w, m and v out */
    return (ew_traffic){16, 12, 16};
  }
  return (ew_traffic){0, 0, 0};
}

/* j's kernel and buffers for n elements of op on be, as the row runs them. */
static void ew_setup(const ew_op *op, const sg_backend *be, size_t n, ew_job *j) {
  float lo0, hi0, lo1, hi1;
  bench_op_range(op->op, 0, &lo0, &hi0);
  bench_op_range(op->op, 1, &lo1, &hi1);
  *j = (ew_job){.kind = op->kind, .f = slot_fn(be, op->offset)};
  j->a = bench_buffer(0, n, lo0, hi0);
  j->b = bench_buffer(1, n, lo1, hi1);
  j->dy = bench_buffer(2, n, -1, 1);
  j->y = bench_output(3, n);
  j->y2 = bench_output(4, n);
  j->ybool = (uint8_t *)j->y;
  j->cond = bench_buffer_bool(5, n);
  /* The forward's output where a backward reads it: real values, as in training. */
  float *fwd_y = bench_output(6, n);
  if (op->kind == EW_UNARY_BWD) {
    slot_fn(be, op->fwd_offset).unary(j->a, fwd_y, n);
    j->saved_x = strcmp(op->saved, "Y") != 0 ? j->a : NULL;
    j->saved_y = strcmp(op->saved, "X") != 0 ? fwd_y : NULL;
  } else if (op->kind == EW_BINARY_BWD) {
    slot_fn(be, op->fwd_offset).binary(j->a, 1, j->b, 1, fwd_y, n);
    j->saved_y = fwd_y;
  } else if (op->kind == EW_SGD || op->kind == EW_MOMENTUM || op->kind == EW_ADAM) {
    /* Weights from the inputs, state from zero; the updates keep them finite and normal. */
    memcpy(j->y, j->a, n * sizeof(float));
    memset(j->y2, 0, n * sizeof(float));
    memset(fwd_y, 0, n * sizeof(float));
    j->state = fwd_y;
  }
}

/* Seconds per element of j's kernel over its first elements (at most BENCH_RATE_N), in cache. */
static double ew_rate(ew_job *j, int64_t n) {
  int64_t m = n < BENCH_RATE_N ? n : BENCH_RATE_N;
  return m > 0 ? bench_kernel_seconds(ew_range, m, j) / (double)m : 0;
}

typedef struct ew_rate_entry {
  const sg_backend *be;
  const ew_op *op;
  double rate;
} ew_rate_entry;

double bench_ew_rate(const sg_backend *be, const char *slot) {
  static ew_rate_entry cache[64];
  static int cached;
  const ew_op *op = NULL;
  for (size_t o = 0; o < N_OPS && !op; o++)
    if (strcmp(k_ops[o].slot, slot) == 0) op = &k_ops[o];
  if (!op) return 0;
  for (int i = 0; i < cached; i++)
    if (cache[i].be == be && cache[i].op == op) return cache[i].rate;
  ew_job j;
  ew_setup(op, be, BENCH_RATE_N, &j);
  double rate = ew_rate(&j, BENCH_RATE_N);
  if (cached < 64) cache[cached++] = (ew_rate_entry){be, op, rate};
  return rate;
}

/* The engine's chunks (engine/engine.h, sg__flat_grain): a same-shape binary op or where
   (forward or backward with a given dy) and a unary op (the same) in chunks of SG_STREAM_CHUNK,
   which the kernels stream, where their footprint outgrows the last-level cache from 2 x
   SG_STREAM_CHUNK elements on; the costly unary kernels in finer chunks where they do not stream
   (engine/unary_cost.h); the casts as sg_cast runs them (flat, their kernels stream as the
   unary ones); everything else, leaky_relu, clip and fill included (their kernels never
   stream), in BENCH_GRAIN. */
static int64_t grain_of(const ew_op *op, int64_t n) {
  int bytes = (int)traffic_per_element(op).footprint;
  switch (op->kind) {
  case EW_UNARY:
  case EW_UNARY_BWD:
    return bench_unary_grain(op->slot, n, bytes);
  case EW_BINARY:
  case EW_BINARY_BWD:
  case EW_WHERE:
  case EW_WHERE_BWD:
  case EW_CAST_F32_I32:
  case EW_CAST_I32_F32:
    return bench_flat_grain(n, bytes);
  default:
    return BENCH_GRAIN;
  }
}

static void run_ew(bench_state *st, void *arg) {
  const ew_case *c = arg;
  const ew_op *op = c->op;
  size_t n = (size_t)c->n;
  ew_job j;
  ew_setup(op, c->be, n, &j);
  /* A library call's rate, before the row and after it, the faster counting: one measurement
     is a few milliseconds, which a neighbour's burst can spoil. */
  bool opaque = bench_kernel_opaque(op->slot, c->be->name);
  double rate = opaque ? ew_rate(&j, c->n) : 0;
  int64_t grain = grain_of(op, c->n);
  while (bench_keep_running(st)) {
    bench_parallel_for(c->n, grain, c->threads, ew_range, &j);
    bench_clobber_memory();
  }
  ew_traffic tr = traffic_per_element(op);
  /* The optimizer updates store every output over an input (w, m, v). */
  bool in_place = op->kind == EW_SGD || op->kind == EW_MOMENTUM || op->kind == EW_ADAM;
  bench_work w = {.flops = bench_kernel_flops(op->slot, c->be->name) * (double)n,
                  .kernel_s = opaque ? fmin(rate, ew_rate(&j, c->n)) * (double)n / c->threads : 0,
                  .bytes = (tr.read + tr.written) * (double)n,
                  .written = tr.written * (double)n,
                  .written_in_place = in_place ? tr.written * (double)n : 0,
                  .footprint = tr.footprint * (double)n,
                  .items = (double)n,
                  .isa = roofline_isa_of(c->be->name),
                  .threads = c->threads};
  if (w.kernel_s > 0) w.kernel_flops = w.flops;
  if (bench_kernel_issued(op->slot, c->be->name, (double)n, &w.insns, w.cls))
    w.mix_slots[0] = op->slot, w.mix_n = (double)n;
  bench_report(st, &w);
}

/* The suite's sizes, and for the math-heavy forward ops also 2^16 and 2^20: the range where
   their speed over scalar is judged (L2-resident data, compute-bound); add too, a case of
   bench/vs_peers. */
static int sizes_of(const char *slot, int64_t *out) {
  static const char *const heavy[] = {"exp", "tanh", "sigmoid", "gelu", "add"};
  int n = 0;
  for (int s = 0; s < bench_n_sizes; s++) out[n++] = bench_sizes[s];
  for (size_t h = 0; h < sizeof heavy / sizeof heavy[0]; h++)
    if (strcmp(slot, heavy[h]) == 0) {
      out[n++] = 1 << 16;
      out[n++] = 1 << 20;
    }
  return n;
}

void bench_register_elementwise(void) {
  const sg_backend *backends[4];
  int nb = bench_backends(backends), threads[2], nt = bench_thread_counts(threads);
  for (size_t o = 0; o < N_OPS; o++) {
    int64_t sizes[16];
    int n_sizes = sizes_of(k_ops[o].slot, sizes);
    for (int s = 0; s < n_sizes; s++) {
      int64_t n = sizes[s];
      char shape[32];
      snprintf(shape, sizeof shape, "%lld", (long long)n);
      for (int t = 0; t < nt; t++) {
        if (threads[t] > 1 && bench_chunks(n, grain_of(&k_ops[o], n)) < 2)
          continue; /* serial in the engine */
        for (int b = 0; b < nb; b++) {
          ew_case *c = malloc(sizeof *c);
          if (!c) abort();
          *c = (ew_case){&k_ops[o], backends[b], n, threads[t]};
          bench_add(k_ops[o].slot, backends[b]->name, shape, threads[t],
                    bench_in_default(k_ops[o].slot, n), run_ew, c);
        }
      }
    }
  }
}
