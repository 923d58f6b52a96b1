/* The public API fuzzer: the input is a program of simdgrad calls on a pool of tensor slots
 * (tensors of every dtype and of fuzzed shapes, invalid ones included; every op family; axes,
 * perms, slices, paddings; scopes with kept tensors, tapes and their gradients; disposal and
 * extra references; variables, sg_assign, and SGD, momentum and Adam optimizers made, stepped,
 * given a new rate and freed, with bad parameters, mismatched or missing tensors and open
 * tapes among their calls). After each call it checks the API's invariants:
 *   - no crash, no sanitizer report (the build has ASan and UBSan);
 *   - a call that fails returns NULL (or a status) with sg_last_status() set and a message in
 *     sg_last_error(); a call that succeeds leaves no error;
 *   - a result has a consistent shape (rank in [0, 8], sizes >= 0, sg_numel their product),
 *     the shape the op must give where the harness can tell, and readable data;
 *   - a variable is an f32 copy of its init; a successful sg_assign leaves the value's bits in
 *     the variable; a successful SGD step gives w - lr g bit for bit (the update kernels'
 *     contract: every backend gives the scalar kernel's result); no optimizer step or
 *     assignment succeeds while a tape is open;
 *   - once every slot is disposed, every optimizer freed and every scope and tape closed,
 *     sg_memory() shows as many tensors and bytes as before the program.
 * A broken invariant prints the call and aborts (libFuzzer saves the input). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simdgrad/simdgrad.h>

#include "fuzz.h"

/* Under ASan an impossible allocation returns NULL (SG_ERR_OOM) instead of aborting. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

#define SLOTS 16
#define MAX_STEPS 64
#define MAX_DEPTH 6
#define MAX_KEPT 4096 /* elements */
#define OPTS 3

typedef struct vm {
  fz f;
  sg_tensor *t[SLOTS];
  int depth[SLOTS]; /* the scope that tracks the slot's reference (0: none) */
  int cur;          /* scopes open */
  bool tape;
  sg_optimizer *opt[OPTS];
  bool sgd[OPTS]; /* an SGD optimizer, of rate lr: its steps are checked */
  float lr[OPTS];
  char op[64];
} vm;

/* ---- Invariants ---- */

static void check_error(vm *v) {
  sg_status st = sg_last_status();
  const char *msg = sg_last_error();
  if (st == SG_OK) fz_fail("%s failed with no status", v->op);
  if (!msg || !*msg) fz_fail("%s failed (status %d) with no message", v->op, (int)st);
  sg_clear_error();
}

static void check_ok(vm *v) {
  if (sg_last_status() != SG_OK)
    fz_fail("%s succeeded but left status %d: %s", v->op, (int)sg_last_status(), sg_last_error());
}

/* A result's shape holds together and its data can be read (ASan checks the reads). */
static void check_tensor(vm *v, const sg_tensor *t, int rank, const int64_t *shape, int dtype) {
  int r = sg_rank(t);
  if (r < 0 || r > SG_MAX_RANK) fz_fail("%s: result rank %d", v->op, r);
  const int64_t *sh = sg_shape(t);
  int64_t n = 1;
  for (int i = 0; i < r; i++) {
    if (sh[i] < 0) fz_fail("%s: result size %lld on axis %d", v->op, (long long)sh[i], i);
    n *= sh[i];
  }
  if (n != sg_numel(t))
    fz_fail("%s: numel %lld is not the product of the sizes, %lld", v->op, (long long)sg_numel(t),
            (long long)n);
  if (rank >= 0) {
    if (rank != r) fz_fail("%s: result rank %d, want %d", v->op, r, rank);
    for (int i = 0; i < r; i++)
      if (sh[i] != shape[i])
        fz_fail("%s: result size %lld on axis %d, want %lld", v->op, (long long)sh[i], i,
                (long long)shape[i]);
  }
  sg_dtype dt = sg_dtype_of(t);
  if (dtype >= 0 && (int)dt != dtype) fz_fail("%s: result dtype %d, want %d", v->op, dt, dtype);
  volatile unsigned sink = 0;
  if (dt == SG_F32) {
    const float *d = sg_data_f32(t);
    if (n && !d) fz_fail("%s: f32 result without data", v->op);
    for (int64_t i = 0; i < n; i++) sink += (unsigned)(d[i] != d[i]);
  } else if (dt == SG_I32) {
    const int32_t *d = sg_data_i32(t);
    if (n && !d) fz_fail("%s: i32 result without data", v->op);
    for (int64_t i = 0; i < n; i++) sink += (unsigned)d[i];
  } else if (dt == SG_BOOL) {
    const uint8_t *d = sg_data_bool(t);
    if (n && !d) fz_fail("%s: bool result without data", v->op);
    for (int64_t i = 0; i < n; i++)
      if (d[i] > 1) fz_fail("%s: bool result holds %u at %lld", v->op, d[i], (long long)i);
  } else {
    fz_fail("%s: result dtype %d", v->op, (int)dt);
  }
  (void)sink;
}

/* ---- Slots ---- */

static int pick(vm *v) { return (int)fz_range(&v->f, 0, SLOTS - 1); }
static sg_tensor *arg(vm *v) { return v->t[pick(v)]; }

static void drop(vm *v, int s) {
  if (!v->t[s]) return;
  sg_dispose(v->t[s]);
  v->t[s] = NULL;
  if (sg_last_status() != SG_OK) fz_fail("dispose of a live slot failed: %s", sg_last_error());
}

/* Stores a result: NULL must come with an error; a tensor is checked against the shape the op
   must give (rank < 0: not known) and takes a slot, tracked by the scope open now, or by none
   when kept (a variable). */
static void put_as(vm *v, sg_tensor *t, int rank, const int64_t *shape, int dtype, bool kept) {
  if (!t) {
    check_error(v);
    return;
  }
  check_ok(v);
  check_tensor(v, t, rank, shape, dtype);
  /* Slots keep small tensors only: sizes grow multiplicatively through tile, pad and
     broadcasting, and a program of such steps ran out of memory. */
  if (sg_numel(t) > MAX_KEPT) {
    sg_dispose(t);
    check_ok(v);
    return;
  }
  int s = pick(v);
  drop(v, s);
  v->t[s] = t;
  v->depth[s] = kept ? 0 : v->cur;
}

static void put(vm *v, sg_tensor *t, int rank, const int64_t *shape, int dtype) {
  put_as(v, t, rank, shape, dtype, false);
}

/* The shape of x, or rank -1 when x is NULL. */
static int shape_of(const sg_tensor *x, int64_t *shape) {
  if (!x) return -1;
  int r = sg_rank(x);
  if (r > 0) memcpy(shape, sg_shape(x), (size_t)r * sizeof *shape);
  return r;
}

/* ---- Fuzzed arguments ---- */

/* A size that is no size: negative, or huge (an overflow or an impossible allocation, never
   one that would succeed slowly), or 0. */
static int64_t fz_odd(vm *v) {
  static const int64_t odd[] = {
      -1, -2, INT64_MIN, INT64_MAX, (int64_t)1 << 40, (int64_t)1 << 62, (int64_t)1 << 50, 0};
  return odd[fz_u8(&v->f) % 8];
}

/* A size: small mostly, sometimes an odd one. */
static int64_t fz_dim(vm *v) {
  uint8_t k = fz_u8(&v->f);
  return k < 230 ? (int64_t)(k % 6) : fz_odd(v);
}

static int fz_rank(vm *v) {
  uint8_t k = fz_u8(&v->f);
  return k < 250 ? k % 5 : k % 2 ? 9 : -1;
}

static int fz_axis(vm *v) { return (int)fz_range(&v->f, 0, 12) - 6; }

static float fz_val(vm *v) { return fz_float(&v->f, -4, 4, FZ_ANY); }

static int64_t numel_of(const int64_t *shape, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0 || shape[i] > 64) return -1;
    n *= shape[i];
  }
  return n;
}

/* ---- The ops ---- */

typedef sg_tensor *(*unary_fn)(sg_tensor *);
typedef sg_tensor *(*binary_fn)(sg_tensor *, sg_tensor *);
typedef sg_tensor *(*reduce_fn)(sg_tensor *, const int *, int, bool);

static void op_make(vm *v) {
  int rank = fz_rank(v);
  int64_t shape[SG_MAX_RANK + 1] = {0};
  for (int i = 0; i < rank && i <= SG_MAX_RANK; i++) shape[i] = fz_dim(v);
  int64_t n = rank >= 0 && rank <= SG_MAX_RANK ? numel_of(shape, rank) : -1;
  /* Data for a shape the engine should accept; NULL (zeros) otherwise or on request. */
  bool with_data = n >= 0 && fz_bool(&v->f);
  size_t cnt = with_data ? (size_t)n : 0;
  int kind = (int)fz_range(&v->f, 0, 8);
  float *fd = malloc((cnt ? cnt : 1) * 4);
  int32_t *id = malloc((cnt ? cnt : 1) * 4);
  uint8_t *bd = malloc(cnt ? cnt : 1);
  if (!fd || !id || !bd) fz_fail("out of memory");
  for (size_t i = 0; i < cnt; i++) {
    fd[i] = fz_val(v);
    id[i] = (int32_t)fz_range(&v->f, 0, 12) - 4;
    bd[i] = fz_u8(&v->f) & 1;
  }
  sg_tensor *t = NULL;
  int dt = SG_F32;
  switch (kind) {
  case 0:
  case 1:
    snprintf(v->op, sizeof v->op, "tensor_f32");
    t = sg_tensor_f32(with_data ? fd : NULL, shape, rank);
    break;
  case 2:
    snprintf(v->op, sizeof v->op, "tensor_i32");
    t = sg_tensor_i32(with_data ? id : NULL, shape, rank), dt = SG_I32;
    break;
  case 3:
    snprintf(v->op, sizeof v->op, "tensor_bool");
    t = sg_tensor_bool(with_data ? bd : NULL, shape, rank), dt = SG_BOOL;
    break;
  case 4:
    snprintf(v->op, sizeof v->op, "zeros");
    t = sg_zeros(shape, rank);
    break;
  case 5:
    snprintf(v->op, sizeof v->op, "fill");
    t = sg_fill(shape, rank, fz_val(v));
    break;
  case 6:
    snprintf(v->op, sizeof v->op, "random_uniform");
    t = sg_random_uniform(shape, rank, fz_val(v), fz_val(v), fz_u32(&v->f));
    break;
  case 7:
    snprintf(v->op, sizeof v->op, "random_normal");
    t = sg_random_normal(shape, rank, fz_val(v), fz_val(v), fz_u32(&v->f));
    break;
  default:
    snprintf(v->op, sizeof v->op, "scalar");
    t = sg_scalar(fz_val(v)), rank = 0;
    break;
  }
  free(fd);
  free(id);
  free(bd);
  bool valid = rank >= 0 && rank <= SG_MAX_RANK;
  put(v, t, valid ? rank : -1, shape, dt);
}

static void op_unary(vm *v) {
  static const struct {
    const char *name;
    unary_fn fn;
  } ops[] = {{"neg", sg_neg},           {"abs", sg_abs},
             {"exp", sg_exp},           {"expm1", sg_expm1},
             {"log", sg_log},           {"log1p", sg_log1p},
             {"sqrt", sg_sqrt},         {"rsqrt", sg_rsqrt},
             {"square", sg_square},     {"reciprocal", sg_reciprocal},
             {"relu", sg_relu},         {"relu6", sg_relu6},
             {"elu", sg_elu},           {"selu", sg_selu},
             {"sigmoid", sg_sigmoid},   {"tanh", sg_tanh},
             {"softplus", sg_softplus}, {"gelu", sg_gelu},
             {"sin", sg_sin},           {"cos", sg_cos},
             {"floor", sg_floor},       {"ceil", sg_ceil},
             {"round", sg_round},       {"sign", sg_sign}};
  size_t k = fz_range(&v->f, 0, FZ_COUNT(ops) + 1);
  sg_tensor *x = arg(v);
  int64_t shape[SG_MAX_RANK];
  int rank = shape_of(x, shape);
  sg_tensor *y;
  if (k < FZ_COUNT(ops)) {
    snprintf(v->op, sizeof v->op, "%s", ops[k].name);
    y = ops[k].fn(x);
  } else if (k == FZ_COUNT(ops)) {
    snprintf(v->op, sizeof v->op, "leaky_relu");
    y = sg_leaky_relu(x, fz_val(v));
  } else {
    snprintf(v->op, sizeof v->op, "clip");
    y = sg_clip(x, fz_val(v), fz_val(v));
  }
  put(v, y, rank, shape, SG_F32);
}

/* NumPy broadcasting of two shapes; false when they do not fit. */
static bool broadcast(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out, int *ro) {
  int r = ra > rb ? ra : rb;
  for (int i = 0; i < r; i++) {
    int64_t da = i < r - ra ? 1 : a[i - (r - ra)], db = i < r - rb ? 1 : b[i - (r - rb)];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  *ro = r;
  return true;
}

static void op_binary(vm *v) {
  static const struct {
    const char *name;
    binary_fn fn;
    int dtype;
  } ops[] = {
      {"add", sg_add, SG_F32},          {"sub", sg_sub, SG_F32},
      {"mul", sg_mul, SG_F32},          {"div", sg_div, SG_F32},
      {"pow", sg_pow, SG_F32},          {"maximum", sg_maximum, SG_F32},
      {"minimum", sg_minimum, SG_F32},  {"squared_difference", sg_squared_difference, SG_F32},
      {"equal", sg_equal, SG_BOOL},     {"not_equal", sg_not_equal, SG_BOOL},
      {"less", sg_less, SG_BOOL},       {"less_equal", sg_less_equal, SG_BOOL},
      {"greater", sg_greater, SG_BOOL}, {"greater_equal", sg_greater_equal, SG_BOOL}};
  size_t k = fz_range(&v->f, 0, FZ_COUNT(ops) - 1);
  sg_tensor *a = arg(v), *b = arg(v);
  snprintf(v->op, sizeof v->op, "%s", ops[k].name);
  sg_tensor *y = ops[k].fn(a, b);
  int64_t sa[SG_MAX_RANK], sb[SG_MAX_RANK], so[SG_MAX_RANK];
  int ra = shape_of(a, sa), rb = shape_of(b, sb), ro = -1;
  if (y && !broadcast(sa, ra, sb, rb, so, &ro)) fz_fail("%s: shapes that do not broadcast", v->op);
  put(v, y, ro, so, ops[k].dtype);
}

static void op_where(vm *v) {
  sg_tensor *c = arg(v), *a = arg(v), *b = arg(v);
  snprintf(v->op, sizeof v->op, "where");
  sg_tensor *y = sg_where(c, a, b);
  int64_t sc[SG_MAX_RANK], sa[SG_MAX_RANK], sb[SG_MAX_RANK], s1[SG_MAX_RANK], so[SG_MAX_RANK];
  int rc = shape_of(c, sc), ra = shape_of(a, sa), rb = shape_of(b, sb), r1 = -1, ro = -1;
  if (y && !(broadcast(sa, ra, sb, rb, s1, &r1) && broadcast(sc, rc, s1, r1, so, &ro)))
    fz_fail("where: shapes that do not broadcast");
  put(v, y, ro, so, SG_F32);
}

static void op_matmul(vm *v) {
  sg_tensor *a = arg(v), *b = arg(v);
  bool ta = fz_bool(&v->f), tb = fz_bool(&v->f);
  snprintf(v->op, sizeof v->op, "matmul(ta=%d, tb=%d)", ta, tb);
  sg_tensor *y = sg_matmul(a, b, ta, tb);
  int64_t sa[SG_MAX_RANK], sb[SG_MAX_RANK], so[SG_MAX_RANK];
  int ra = shape_of(a, sa), rb = shape_of(b, sb), ro = -1;
  if (y && ra == 2 && rb == 2) {
    ro = 2;
    so[0] = ta ? sa[1] : sa[0];
    so[1] = tb ? sb[0] : sb[1];
  }
  put(v, y, ro, so, SG_F32);
}

/* The shape of a reduction over axes (all when n == 0) of an input of rank r; false when an
   axis is out of range or repeated. */
static bool reduced_shape(const int64_t *in, int r, const int *axes, int n, bool keep, int64_t *out,
                          int *ro) {
  bool red[SG_MAX_RANK] = {0};
  for (int i = 0; i < n; i++) {
    int a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < 0 || a >= r || red[a]) return false;
    red[a] = true;
  }
  *ro = 0;
  for (int i = 0; i < r; i++) {
    if (n == 0 || red[i]) {
      if (keep) out[(*ro)++] = 1;
    } else {
      out[(*ro)++] = in[i];
    }
  }
  return true;
}

static void op_reduce(vm *v) {
  static const struct {
    const char *name;
    reduce_fn fn;
  } ops[] = {{"sum", sg_sum},
             {"mean", sg_mean},
             {"max", sg_max},
             {"min", sg_min},
             {"logsumexp", sg_logsumexp}};
  size_t k = fz_range(&v->f, 0, FZ_COUNT(ops) - 1);
  sg_tensor *x = arg(v);
  int axes[10], n = (int)fz_range(&v->f, 0, 3);
  if (fz_u8(&v->f) > 250) n = (int)fz_range(&v->f, 0, 9) - 1;
  for (int i = 0; i < n && i < 10; i++) axes[i] = fz_axis(v);
  bool keep = fz_bool(&v->f), null_axes = n == 0 && fz_bool(&v->f);
  snprintf(v->op, sizeof v->op, "%s(n_axes=%d, keep=%d)", ops[k].name, n, keep);
  sg_tensor *y = ops[k].fn(x, null_axes ? NULL : axes, n, keep);
  int64_t sx[SG_MAX_RANK], so[SG_MAX_RANK];
  int rx = shape_of(x, sx), ro = -1;
  if (y && (n < 0 || n > 8 || !reduced_shape(sx, rx, axes, n, keep, so, &ro)))
    fz_fail("%s: accepted bad axes", v->op);
  put(v, y, ro, so, SG_F32);
}

static void op_arg(vm *v) {
  bool mx = fz_bool(&v->f);
  sg_tensor *x = arg(v);
  int axis = fz_axis(v);
  snprintf(v->op, sizeof v->op, "%s(axis=%d)", mx ? "argmax" : "argmin", axis);
  sg_tensor *y = mx ? sg_argmax(x, axis) : sg_argmin(x, axis);
  int64_t sx[SG_MAX_RANK], so[SG_MAX_RANK];
  int rx = shape_of(x, sx), ro = -1;
  if (y && !reduced_shape(sx, rx, &axis, 1, false, so, &ro)) fz_fail("%s: bad axis", v->op);
  put(v, y, ro, so, SG_I32);
}

static void op_softmax(vm *v) {
  int k = (int)fz_range(&v->f, 0, 2);
  sg_tensor *x = arg(v), *l = arg(v);
  int axis = fz_axis(v);
  int64_t sx[SG_MAX_RANK];
  int rx = shape_of(x, sx);
  if (k == 2) {
    snprintf(v->op, sizeof v->op, "softmax_cross_entropy");
    put(v, sg_softmax_cross_entropy(l, x), -1, NULL, SG_F32);
    return;
  }
  snprintf(v->op, sizeof v->op, "%s(axis=%d)", k ? "log_softmax" : "softmax", axis);
  put(v, k ? sg_log_softmax(x, axis) : sg_softmax(x, axis), rx, sx, SG_F32);
}

static void op_reshape(vm *v) {
  sg_tensor *x = arg(v);
  int rank = fz_rank(v);
  int64_t shape[SG_MAX_RANK + 1] = {0};
  int64_t sx[SG_MAX_RANK];
  int rx = shape_of(x, sx);
  /* Often the same number of elements: x's sizes regrouped, one maybe -1. */
  if (x && fz_bool(&v->f) && rank >= 0 && rank <= SG_MAX_RANK) {
    int64_t n = sg_numel(x);
    for (int i = 0; i < rank; i++) {
      int64_t d = i == rank - 1 ? n : (fz_bool(&v->f) && n % 2 == 0 ? 2 : 1);
      shape[i] = d;
      n /= d ? d : 1;
    }
    if (rank && fz_bool(&v->f)) shape[fz_range(&v->f, 0, (size_t)rank - 1)] = -1;
  } else {
    for (int i = 0; i < rank && i <= SG_MAX_RANK; i++) shape[i] = fz_dim(v);
  }
  (void)rx;
  snprintf(v->op, sizeof v->op, "reshape(rank=%d)", rank);
  put(v, sg_reshape(x, shape, rank), -1, NULL, x ? (int)sg_dtype_of(x) : -1);
}

static void op_transpose(vm *v) {
  sg_tensor *x = arg(v);
  int64_t sx[SG_MAX_RANK], so[SG_MAX_RANK];
  int rx = shape_of(x, sx);
  int perm[SG_MAX_RANK];
  int r = rx < 0 ? 0 : rx;
  for (int i = 0; i < r; i++) perm[i] = i;
  for (int i = r - 1; i > 0; i--) {
    int j = (int)fz_range(&v->f, 0, (size_t)i), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  bool reverse = fz_u8(&v->f) < 40;
  if (r && fz_u8(&v->f) < 30) perm[fz_range(&v->f, 0, (size_t)r - 1)] = fz_axis(v); /* maybe bad */
  snprintf(v->op, sizeof v->op, "transpose(%s)", reverse ? "NULL" : "perm");
  sg_tensor *y = sg_transpose(x, reverse ? NULL : perm);
  bool seen[SG_MAX_RANK] = {0}, ok = true;
  for (int i = 0; i < r; i++) {
    int p = reverse ? r - 1 - i : perm[i];
    if (p < 0 || p >= r || seen[p]) {
      ok = false;
      break;
    }
    seen[p] = true;
    so[i] = sx[p];
  }
  if (y && !ok) fz_fail("transpose accepted a perm that is no permutation");
  put(v, y, y ? r : -1, so, x ? (int)sg_dtype_of(x) : -1);
}

static void op_slice(vm *v) {
  sg_tensor *x = arg(v);
  int64_t sx[SG_MAX_RANK], so[SG_MAX_RANK], begin[SG_MAX_RANK], sz[SG_MAX_RANK];
  int rx = shape_of(x, sx);
  for (int i = 0; i < (rx < 0 ? 0 : rx); i++) {
    begin[i] = fz_u8(&v->f) < 240 ? (int64_t)fz_range(&v->f, 0, 5) : fz_dim(v);
    sz[i] = fz_u8(&v->f) < 200 ? (int64_t)fz_range(&v->f, 0, 5) - 1 : fz_dim(v);
  }
  snprintf(v->op, sizeof v->op, "slice");
  sg_tensor *y = sg_slice(x, begin, sz);
  int ro = -1;
  if (y) {
    ro = rx;
    for (int i = 0; i < rx; i++) so[i] = sz[i] == -1 ? sx[i] - begin[i] : sz[i];
  }
  put(v, y, ro, so, x ? (int)sg_dtype_of(x) : -1);
}

static void op_concat(vm *v) {
  int n = (int)fz_range(&v->f, 0, 4);
  sg_tensor *xs[4];
  for (int i = 0; i < n; i++) xs[i] = arg(v);
  int axis = fz_axis(v);
  snprintf(v->op, sizeof v->op, "concat(n=%d, axis=%d)", n, axis);
  put(v, sg_concat(xs, n, axis), -1, NULL, -1);
}

static void op_pad(vm *v) {
  sg_tensor *x = arg(v);
  int64_t sx[SG_MAX_RANK], so[SG_MAX_RANK], p[2 * SG_MAX_RANK];
  int rx = shape_of(x, sx);
  for (int i = 0; i < 2 * (rx < 0 ? 0 : rx); i++)
    p[i] = fz_u8(&v->f) < 240 ? (int64_t)fz_range(&v->f, 0, 2) : fz_odd(v);
  snprintf(v->op, sizeof v->op, "pad");
  sg_tensor *y = sg_pad(x, p, fz_val(v));
  for (int i = 0; y && i < rx; i++) /* the engine accepted them: no overflow */
    so[i] = sx[i] + p[2 * i] + p[2 * i + 1];
  put(v, y, y ? rx : -1, so, -1);
}

static void op_tile(vm *v) {
  sg_tensor *x = arg(v);
  int64_t sx[SG_MAX_RANK], so[SG_MAX_RANK], reps[SG_MAX_RANK];
  int rx = shape_of(x, sx);
  for (int i = 0; i < (rx < 0 ? 0 : rx); i++)
    reps[i] = fz_u8(&v->f) < 240 ? (int64_t)fz_range(&v->f, 0, 3) : fz_odd(v);
  snprintf(v->op, sizeof v->op, "tile");
  sg_tensor *y = sg_tile(x, reps);
  for (int i = 0; y && i < rx; i++) so[i] = sx[i] * reps[i];
  put(v, y, y ? rx : -1, so, x ? (int)sg_dtype_of(x) : -1);
}

static void op_gather(vm *v) {
  sg_tensor *x = arg(v), *idx = arg(v);
  int axis = fz_axis(v);
  snprintf(v->op, sizeof v->op, "gather(axis=%d)", axis);
  sg_tensor *y = sg_gather(x, idx, axis);
  int64_t sx[SG_MAX_RANK], si[SG_MAX_RANK], so[2 * SG_MAX_RANK];
  int rx = shape_of(x, sx), ri = shape_of(idx, si), ro = -1;
  if (y) {
    int a = axis < 0 ? axis + rx : axis;
    if (a < 0 || a >= rx) fz_fail("gather accepted axis %d of a rank-%d tensor", axis, rx);
    ro = 0;
    for (int i = 0; i < a; i++) so[ro++] = sx[i];
    for (int i = 0; i < ri; i++) so[ro++] = si[i];
    for (int i = a + 1; i < rx; i++) so[ro++] = sx[i];
    if (ro > SG_MAX_RANK) fz_fail("gather: a result of rank %d", ro);
  }
  put(v, y, ro, so, x ? (int)sg_dtype_of(x) : -1);
}

static void op_one_hot(vm *v) {
  sg_tensor *idx = arg(v);
  int depth = fz_u8(&v->f) < 240 ? (int)fz_range(&v->f, 0, 6) : (int)fz_dim(v);
  snprintf(v->op, sizeof v->op, "one_hot(depth=%d)", depth);
  sg_tensor *y = sg_one_hot(idx, depth);
  int64_t si[SG_MAX_RANK + 1];
  int ri = shape_of(idx, si);
  if (y) si[ri] = depth;
  put(v, y, y ? ri + 1 : -1, si, SG_F32);
}

static void op_cast(vm *v) {
  sg_tensor *x = arg(v);
  int dt = (int)fz_range(&v->f, 0, 3);
  snprintf(v->op, sizeof v->op, "cast(%d)", dt);
  int64_t sx[SG_MAX_RANK];
  int rx = shape_of(x, sx);
  put(v, sg_cast(x, (sg_dtype)dt), rx, sx, dt);
}

static void op_nn(vm *v) {
  int k = (int)fz_range(&v->f, 0, 5);
  sg_tensor *x = arg(v), *w = arg(v);
  int64_t st[2] = {1 + (int64_t)fz_range(&v->f, 0, 2), 1 + (int64_t)fz_range(&v->f, 0, 2)};
  int64_t dil[2] = {1 + (int64_t)fz_range(&v->f, 0, 1), 1 + (int64_t)fz_range(&v->f, 0, 1)};
  int64_t pads[4], ks[2] = {(int64_t)fz_range(&v->f, 0, 3), (int64_t)fz_range(&v->f, 0, 3)};
  for (int i = 0; i < 4; i++) pads[i] = (int64_t)fz_range(&v->f, 0, 4) - 1;
  bool wild = fz_u8(&v->f) > 240;
  if (wild) st[0] = fz_dim(v);
  sg_padding pad = (sg_padding)fz_range(&v->f, 0, 3);
  if (wild) { /* one more parameter huge or odd: the geometry's overflow checks */
    int64_t *params[] = {&st[1], &dil[0], &dil[1], &ks[0], &ks[1], &pads[0], &pads[1], &pads[3]};
    *params[fz_range(&v->f, 0, 7)] = fz_odd(v);
  }
  sg_tensor *y = NULL;
  switch (k) {
  case 0:
    snprintf(v->op, sizeof v->op, "conv2d(pad=%d)", (int)pad);
    y = sg_conv2d(x, w, st, pad, pads, dil);
    break;
  case 1:
    snprintf(v->op, sizeof v->op, "depthwise_conv2d(pad=%d)", (int)pad);
    y = sg_depthwise_conv2d(x, w, st, pad, pads, dil);
    break;
  case 2:
    snprintf(v->op, sizeof v->op, "max_pool(pad=%d)", (int)pad);
    y = sg_max_pool(x, ks, fz_bool(&v->f) ? NULL : st, pad, pads);
    break;
  case 3:
    snprintf(v->op, sizeof v->op, "avg_pool(pad=%d)", (int)pad);
    y = sg_avg_pool(x, ks, fz_bool(&v->f) ? NULL : st, pad, pads);
    break;
  case 4:
    snprintf(v->op, sizeof v->op, "dropout");
    y = sg_dropout(x, fz_float(&v->f, -0.5f, 1.5f, FZ_SPECIAL), fz_u32(&v->f));
    break;
  default:
    snprintf(v->op, sizeof v->op, "batch_norm");
    y = sg_batch_norm(x, w, arg(v), arg(v), arg(v), fz_float(&v->f, -1, 1, FZ_SPECIAL));
    break;
  }
  put(v, y, -1, NULL, SG_F32);
}

static void op_moments(vm *v) {
  sg_tensor *x = arg(v), *mean = NULL, *var = NULL;
  int axes[3], n = (int)fz_range(&v->f, 0, 3);
  for (int i = 0; i < n; i++) axes[i] = fz_axis(v);
  bool keep = fz_bool(&v->f);
  snprintf(v->op, sizeof v->op, "moments(n_axes=%d, keep=%d)", n, keep);
  sg_status st = sg_moments(x, axes, n, keep, &mean, &var);
  if (st != SG_OK) {
    if (mean || var) fz_fail("moments failed but gave a tensor");
    if (st != sg_last_status())
      fz_fail("moments returned %d, last status %d", st, sg_last_status());
    check_error(v);
    return;
  }
  if (!mean || !var) fz_fail("moments succeeded without both tensors");
  int64_t sx[SG_MAX_RANK], so[SG_MAX_RANK];
  int rx = shape_of(x, sx), ro = -1;
  if (!reduced_shape(sx, rx, axes, n, keep, so, &ro)) fz_fail("moments accepted bad axes");
  put(v, mean, ro, so, SG_F32);
  put(v, var, ro, so, SG_F32);
}

/* ---- Variables and optimizers ---- */

static bool f32_data(const sg_tensor *t) { return t && sg_dtype_of(t) == SG_F32; }

/* A status-returning call: a failure sets the same last status and a message; success none. */
static void check_status(vm *v, sg_status st) {
  if (st == SG_OK) {
    check_ok(v);
    return;
  }
  if (st != sg_last_status())
    fz_fail("%s returned %d, last status %d", v->op, (int)st, (int)sg_last_status());
  check_error(v);
}

static void op_variable(vm *v) {
  sg_tensor *init = arg(v);
  snprintf(v->op, sizeof v->op, "variable");
  sg_tensor *var = sg_variable(init);
  if (var) {
    if (!f32_data(init)) fz_fail("variable of a tensor that is no f32 one");
    if (var == init) fz_fail("variable returned its init, not a copy");
    int64_t n = sg_numel(init);
    if (sg_numel(var) == n && n &&
        memcmp(sg_data_f32(var), sg_data_f32(init), (size_t)n * sizeof(float)) != 0)
      fz_fail("variable does not hold its init's values");
  }
  int64_t shape[SG_MAX_RANK];
  int rank = shape_of(init, shape);
  put_as(v, var, var ? rank : -1, shape, SG_F32, true);
}

static void op_assign(vm *v) {
  sg_tensor *var = arg(v), *val = arg(v);
  snprintf(v->op, sizeof v->op, "assign%s", v->tape ? " (tape open)" : "");
  sg_status st = sg_assign(var, val);
  check_status(v, st);
  if (st != SG_OK) return;
  if (v->tape) fz_fail("assign succeeded with a tape open");
  int64_t n = sg_numel(var);
  if (n != sg_numel(val))
    fz_fail("assign succeeded across %lld and %lld elements", (long long)n,
            (long long)sg_numel(val));
  if (n && memcmp(sg_data_f32(var), sg_data_f32(val), (size_t)n * sizeof(float)) != 0)
    fz_fail("assign left other values than the value's");
}

/* SGD's expected result for one variable w and gradient g (separate memory): the scalar
   kernel's, which every backend must give bit for bit (opinfo's sgd_update row). NULL when the
   step will not be checked. */
static float *sgd_expect(const sg_tensor *w, const sg_tensor *g, float lr) {
  if (!f32_data(w) || !f32_data(g) || sg_numel(w) != sg_numel(g) || sg_numel(w) == 0) return NULL;
  const float *wd = sg_data_f32(w), *gd = sg_data_f32(g);
  size_t n = (size_t)sg_numel(w);
  uintptr_t w0 = (uintptr_t)wd, g0 = (uintptr_t)gd, bytes = n * sizeof(float);
  if (w0 < g0 + bytes && g0 < w0 + bytes) return NULL; /* shared memory: no crash is all */
  float *want = malloc(n * sizeof *want);
  if (!want) fz_fail("out of memory");
  memcpy(want, wd, n * sizeof *want);
  fz_scalar()->sgd_update(want, gd, n, lr);
  return want;
}

static void op_optimizer(vm *v) {
  int k = (int)fz_range(&v->f, 0, OPTS - 1), what = (int)fz_range(&v->f, 0, 5);
  sg_optimizer **o = &v->opt[k];
  if (what == 0) { /* make one (the old one in the slot is freed) */
    int kind = (int)fz_range(&v->f, 0, 2);
    float lr = fz_float(&v->f, 0, 1, FZ_ANY);
    sg_optimizer_free(*o);
    *o = NULL;
    v->sgd[k] = kind == 0, v->lr[k] = lr;
    if (kind == 0) {
      snprintf(v->op, sizeof v->op, "sgd");
      *o = sg_sgd(lr);
    } else if (kind == 1) {
      snprintf(v->op, sizeof v->op, "momentum");
      *o = sg_momentum(lr, fz_float(&v->f, 0, 1, FZ_ANY), fz_bool(&v->f));
    } else {
      /* Mostly valid betas and epsilon; the others must be refused. */
      float b1 = fz_float(&v->f, 0, 1, FZ_ANY), b2 = fz_float(&v->f, 0, 1, FZ_ANY);
      float eps = fz_float(&v->f, 0, 1e-3f, FZ_ANY);
      bool valid = b1 >= 0 && b1 < 1 && b2 >= 0 && b2 < 1 && eps >= 0;
      snprintf(v->op, sizeof v->op, "adam(%g, %g, %g)", b1, b2, eps);
      *o = sg_adam(lr, b1, b2, eps);
      if (!*o && valid) fz_fail("%s refused valid parameters", v->op);
      if (*o && !valid) fz_fail("%s accepted invalid parameters", v->op);
    }
    if (!*o)
      check_error(v);
    else
      check_ok(v);
    return;
  }
  if (what == 1) {
    snprintf(v->op, sizeof v->op, "optimizer_free");
    sg_optimizer_free(*o); /* NULL too: a no-op */
    *o = NULL;
    return;
  }
  if (what == 2) {
    snprintf(v->op, sizeof v->op, "optimizer_set_lr");
    float lr = fz_float(&v->f, 0, 1, FZ_ANY);
    sg_optimizer_set_lr(*o, lr);
    v->lr[k] = lr;
    return;
  }
  /* A step: n of -1..3 variables and gradients from the slots (NULL arrays sometimes). */
  int n = (int)fz_range(&v->f, 0, 4) - 1;
  sg_tensor *vars[3] = {0}, *grads[3] = {0};
  for (int i = 0; i < n; i++) vars[i] = arg(v), grads[i] = arg(v);
  bool null_arrays = fz_u8(&v->f) < 10;
  /* An empty slot steps as NULL, or with a fresh SGD optimizer. */
  if (!*o && fz_bool(&v->f)) {
    v->sgd[k] = true, v->lr[k] = fz_float(&v->f, 0, 1, FZ_DOMAIN);
    *o = sg_sgd(v->lr[k]);
  }
  bool checked = *o && v->sgd[k] && n == 1 && !v->tape && !null_arrays;
  float *want = checked ? sgd_expect(vars[0], grads[0], v->lr[k]) : NULL;
  snprintf(v->op, sizeof v->op, "optimizer_step(n=%d)%s%s", n, *o ? "" : " of NULL",
           v->tape ? " (tape open)" : "");
  sg_status st = sg_optimizer_step(*o, null_arrays ? NULL : vars, null_arrays ? NULL : grads, n);
  check_status(v, st);
  if (st == SG_OK) {
    if (v->tape && n > 0) fz_fail("%s succeeded with a tape open", v->op);
    if (!*o) fz_fail("%s succeeded without an optimizer", v->op);
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        if (grads[i] == vars[j]) fz_fail("%s succeeded with grads[%d] = vars[%d]", v->op, i, j);
  }
  if (want) {
    const float *got = sg_data_f32(vars[0]);
    for (int64_t i = 0; st == SG_OK && i < sg_numel(vars[0]); i++)
      if (memcmp(&got[i], &want[i], sizeof *got) != 0 && !(isnan(got[i]) && isnan(want[i])))
        fz_fail("%s: w[%lld] = %.9g, the scalar sgd_update gives %.9g", v->op, (long long)i, got[i],
                want[i]);
    free(want);
  }
}

/* ---- References, scopes, tapes ---- */

static void op_dispose(vm *v) {
  int s = pick(v);
  snprintf(v->op, sizeof v->op, "dispose");
  drop(v, s);
}

/* A second reference in another slot. Only of untracked tensors: a scope tracks a tensor, not
   each of its references, so the model stays simple. */
static void op_retain(vm *v) {
  int s = pick(v);
  if (!v->t[s] || v->depth[s] != 0) return;
  snprintf(v->op, sizeof v->op, "retain");
  sg_tensor *t = sg_retain(v->t[s]);
  if (t != v->t[s]) fz_fail("retain returned another tensor");
  int d = pick(v);
  if (d == s) {
    sg_dispose(t);
    return;
  }
  drop(v, d);
  v->t[d] = t;
  v->depth[d] = 0;
}

static void op_keep(vm *v) {
  int s = pick(v);
  if (!v->t[s]) return;
  snprintf(v->op, sizeof v->op, "keep");
  if (sg_keep(v->t[s]) != v->t[s]) fz_fail("keep returned another tensor");
  for (int i = 0; i < SLOTS; i++)
    if (v->t[i] == v->t[s]) v->depth[i] = 0;
}

static void op_scope(vm *v) {
  if (v->cur < MAX_DEPTH && fz_bool(&v->f)) {
    char name[16];
    snprintf(name, sizeof name, "s%d", v->cur);
    sg_scope_begin(fz_u8(&v->f) < 20 ? NULL : name);
    v->cur++;
    return;
  }
  snprintf(v->op, sizeof v->op, "scope_end");
  sg_tensor *keep[4];
  int nk = (int)fz_range(&v->f, 0, 3), ks[4];
  for (int i = 0; i < nk; i++) {
    ks[i] = pick(v);
    keep[i] = v->t[ks[i]];
  }
  if (v->cur == 0) {
    sg_scope_end(keep, nk);
    check_error(v); /* no scope is open */
    return;
  }
  sg_scope_end(keep, nk);
  check_ok(v);
  /* The slots this scope tracked are gone, except the kept ones, which move out a level. */
  for (int s = 0; s < SLOTS; s++) {
    if (!v->t[s] || v->depth[s] != v->cur) continue;
    bool kept = false;
    for (int i = 0; i < nk; i++) kept |= keep[i] == v->t[s];
    if (kept)
      v->depth[s] = v->cur - 1;
    else
      v->t[s] = NULL;
  }
  v->cur--;
}

static void op_tape(vm *v) {
  if (!v->tape || fz_u8(&v->f) < 40) {
    snprintf(v->op, sizeof v->op, "tape_begin");
    sg_status st = sg_tape_begin();
    if (v->tape != (st != SG_OK))
      fz_fail("tape_begin returned %d with a tape %s", st, v->tape ? "open" : "closed");
    if (st != SG_OK) check_error(v);
    v->tape = true;
    return;
  }
  sg_tensor *y = arg(v), *dy = fz_u8(&v->f) < 60 ? arg(v) : NULL, *xs[4], *grads[4];
  int n = (int)fz_range(&v->f, 0, 4);
  for (int i = 0; i < n; i++) {
    xs[i] = arg(v);
    grads[i] = NULL;
  }
  snprintf(v->op, sizeof v->op, "tape_end(n=%d)", n);
  sg_status st = sg_tape_end(y, dy, xs, n, grads);
  v->tape = false;
  if (sg_tape_active()) fz_fail("tape_end left the tape open");
  if (st != SG_OK) {
    if (st != sg_last_status())
      fz_fail("tape_end returned %d, last status %d", st, sg_last_status());
    for (int i = 0; i < n; i++)
      if (grads[i]) fz_fail("tape_end failed but gave gradient %d", i);
    check_error(v);
    return;
  }
  /* The shapes first: putting a gradient in a slot may dispose an xs[i]. */
  int64_t sx[4][SG_MAX_RANK];
  int rx[4];
  for (int i = 0; i < n; i++) {
    if (!grads[i]) fz_fail("tape_end succeeded without gradient %d", i);
    rx[i] = shape_of(xs[i], sx[i]);
  }
  for (int i = 0; i < n; i++) put(v, grads[i], rx[i], sx[i], SG_F32);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool inited;
  if (!inited) {
    sg_init();
    sg_set_threads(1);
    /* Huge valid shapes are refused by the engine's budget (SG_ERR_OOM) before any allocator
       sees them: ASan aborts on requests past its maximum instead of returning NULL, and
       libFuzzer reports mallocs past its limit as crashes. */
    sg_set_memory_limit((int64_t)1 << 30);
    inited = true;
  }
  sg_clear_error();
  sg_memory_info before = sg_memory();
  vm v = {0};
  v.f = fz_make(data, size);
  snprintf(fz_case, sizeof fz_case, "the API program of %zu bytes", size);
  static void (*const ops[])(vm *) = {
      op_make,    op_make,   op_unary,   op_binary,  op_binary,    op_where, op_matmul,
      op_reduce,  op_arg,    op_softmax, op_reshape, op_transpose, op_slice, op_concat,
      op_pad,     op_tile,   op_gather,  op_one_hot, op_cast,      op_nn,    op_moments,
      op_dispose, op_retain, op_keep,    op_scope,   op_tape};
  /* The byte values past the last whole round of ops[] pick the later ops, so that the corpus
     written before them (tests/fuzz/corpus/fuzz_api) decodes mostly as it did. */
  static void (*const later[])(vm *) = {
      op_variable,  op_variable,  op_variable,  op_variable,  op_variable,  op_assign,
      op_assign,    op_assign,    op_assign,    op_assign,    op_optimizer, op_optimizer,
      op_optimizer, op_optimizer, op_optimizer, op_optimizer, op_optimizer, op_optimizer,
      op_optimizer, op_optimizer, op_optimizer, op_optimizer};
  const unsigned first_later = 256 - FZ_COUNT(later);
  _Static_assert(256 - FZ_COUNT(later) == 9 * FZ_COUNT(ops), "later[] takes 234..255");
  for (int step = 0; step < MAX_STEPS && v.f.n > 0; step++) {
    v.op[0] = 0;
    unsigned b = fz_u8(&v.f);
    if (b < first_later)
      ops[b % FZ_COUNT(ops)](&v);
    else
      later[b - first_later](&v);
  }
  /* Everything back: tape, scopes, slots. */
  snprintf(v.op, sizeof v.op, "the clean-up");
  if (v.tape) {
    sg_tape_end(NULL, NULL, NULL, 0, NULL);
    sg_clear_error();
  }
  for (; v.cur > 0; v.cur--) sg_scope_end(NULL, 0);
  for (int k = 0; k < OPTS; k++) sg_optimizer_free(v.opt[k]);
  for (int s = 0; s < SLOTS; s++)
    if (v.t[s] && v.depth[s] == 0) drop(&v, s);
  check_ok(&v);
  sg_memory_info after = sg_memory();
  if (after.num_tensors != before.num_tensors || after.num_bytes != before.num_bytes)
    fz_fail("memory not back at its baseline: %lld tensors, %lld bytes before; %lld, %lld after",
            (long long)before.num_tensors, (long long)before.num_bytes,
            (long long)after.num_tensors, (long long)after.num_bytes);
  return 0;
}
