/* simdgrad_mpi under mpirun (2 or 3 ranks, shared memory or TCP: distributed/tests/mpi_run.sh):
 * init, broadcast, the reducer's step against a 1-rank step on the concatenated batch (and the
 * same bits on every rank), and the bad inputs, each an error on every rank with the same
 * message. Plain C, not Criterion: Criterion forks each test, and MPI does not survive a fork.
 * A failed check prints the rank and line and aborts the whole job. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simdgrad/distributed.h"

static int g_me = -1, g_np = 0;

static void check_at(int line, int ok, const char *what, const char *fmt, ...) {
  if (ok) return;
  fprintf(stderr, "rank %d: line %d: check failed: %s: ", g_me, line, what);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fprintf(stderr, " (last error: %s)\n", sg_last_error());
  MPI_Abort(MPI_COMM_WORLD, 1);
}
#define CHECK(cond, ...) check_at(__LINE__, (cond) != 0, #cond, __VA_ARGS__)

/* The call failed with st on this rank, with every fragment in its message; clears the error. */
static void expect_error(int line, sg_status st, const char *fragment) {
  check_at(line, sg_last_status() == st, "status", "got %d, want %d", (int)sg_last_status(),
           (int)st);
  check_at(line, strstr(sg_last_error(), fragment) != NULL, "message", "\"%s\" lacks \"%s\"",
           sg_last_error(), fragment);
  /* Every rank has the same message. */
  char mine[1024] = {0}, root[1024];
  snprintf(mine, sizeof mine, "%s", sg_last_error());
  memcpy(root, mine, sizeof root);
  MPI_Bcast(root, sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
  check_at(line, strcmp(root, mine) == 0, "same message", "rank 0 has \"%s\"", root);
  sg_clear_error();
}
#define EXPECT_ERROR(st, fragment) expect_error(__LINE__, st, fragment)

/* ---- The model: a 2-layer MLP whose W1 is used twice (the matmul and a penalty) ---- */

enum { IN = 8, HID = 16, OUT = 4, PER_RANK = 5, NVARS = 4 };

static void make_vars(sg_tensor **v, uint64_t seed) {
  const int64_t w1[] = {IN, HID}, b1[] = {HID}, w2[] = {HID, OUT}, b2[] = {OUT};
  sg_tensor *init[NVARS] = {
      sg_random_normal(w1, 2, 0, 0.5f, seed), sg_random_normal(b1, 1, 0, 0.1f, seed + 1),
      sg_random_normal(w2, 2, 0, 0.5f, seed + 2), sg_random_normal(b2, 1, 0, 0.1f, seed + 3)};
  for (int i = 0; i < NVARS; i++) {
    v[i] = sg_variable(init[i]);
    sg_dispose(init[i]);
  }
}

static void free_vars(sg_tensor **v, int n) {
  for (int i = 0; i < n; i++) sg_dispose(v[i]);
}

/* Rows [first, first + rows) of a fixed data set: inputs and one-hot labels. */
static void make_batch(int64_t first, int64_t rows, sg_tensor **x, sg_tensor **y) {
  float *xv = malloc(sizeof(float) * (size_t)(rows * IN));
  float *yv = calloc((size_t)(rows * OUT), sizeof(float));
  for (int64_t r = 0; r < rows; r++) {
    int64_t g = first + r;
    for (int k = 0; k < IN; k++) xv[r * IN + k] = sinf((float)(g * IN + k) * 0.37f);
    yv[r * OUT + g % OUT] = 1;
  }
  const int64_t xs[] = {rows, IN}, ys[] = {rows, OUT};
  *x = sg_tensor_f32(xv, xs, 2);
  *y = sg_tensor_f32(yv, ys, 2);
  free(xv);
  free(yv);
}

/* The loss on a batch; the tape must be open. */
static sg_tensor *loss_of(sg_tensor *const *v, sg_tensor *x, sg_tensor *y) {
  sg_tensor *h = sg_relu(sg_add(sg_matmul(x, v[0], false, false), v[1]));
  sg_tensor *logits = sg_add(sg_matmul(h, v[2], false, false), v[3]);
  sg_tensor *penalty = sg_mul(sg_scalar(1e-2f), sg_sum(sg_square(v[0]), NULL, 0, false));
  return sg_add(sg_softmax_cross_entropy(y, logits), penalty);
}

/* ---- Cases ---- */

static void before_init(void) {
  sg_tensor *v[NVARS];
  make_vars(v, 1);
  CHECK(sg_dist_rank() == -1 && sg_dist_size() == -1, "rank %d", sg_dist_rank());
  CHECK(sg_reducer_new(v, NVARS, 0) == NULL, "a reducer before sg_dist_init");
  EXPECT_ERROR(SG_ERR_STATE, "sg_dist_init has not been called");
  CHECK(sg_dist_broadcast(v, NVARS, 0) == SG_ERR_STATE, "broadcast before init");
  EXPECT_ERROR(SG_ERR_STATE, "sg_dist_init has not been called");
  CHECK(sg_reducer_attach(NULL) == SG_ERR_ARG, "attach NULL");
  sg_clear_error();
  CHECK(sg_dist_init(MPI_COMM_NULL) == SG_ERR_ARG, "MPI_COMM_NULL");
  sg_clear_error();
  free_vars(v, NVARS);
}

static void broadcast_makes_replicas_equal(void) {
  sg_tensor *v[NVARS], *want[NVARS];
  for (int root = 0; root < g_np; root += g_np - 1) {
    make_vars(v, 100 + (uint64_t)g_me); /* different on every rank */
    make_vars(want, 100 + (uint64_t)root);
    CHECK(sg_dist_broadcast(v, NVARS, root) == SG_OK, "broadcast from %d", root);
    for (int i = 0; i < NVARS; i++)
      CHECK(memcmp(sg_data_f32(v[i]), sg_data_f32(want[i]), sizeof(float) * sg_numel(v[i])) == 0,
            "variable %d differs from rank %d's", i, root);
    free_vars(want, NVARS);
    free_vars(v, NVARS);
  }
}

/* One step per bucket size: the averaged gradients of the per-rank losses equal the gradients of
   the loss on the concatenated batch (the mean over equal shards), within float summation
   tolerance, and are bit-identical on every rank. Two steps each, the reducer reused. */
static void step_equals_one_rank_step(size_t bucket_bytes, int min_buckets) {
  sg_tensor *v[NVARS];
  make_vars(v, 7);
  sg_reducer *r = sg_reducer_new(v, NVARS, bucket_bytes);
  CHECK(r != NULL, "reducer_new");
  CHECK(sg_reducer_buckets(r) >= min_buckets, "%d buckets", sg_reducer_buckets(r));
  for (int step = 0; step < 2; step++) {
    sg_scope_begin("step");
    sg_tensor *x, *y, *xa, *ya, *g[NVARS], *ref[NVARS];
    make_batch((int64_t)(step * g_np + g_me) * PER_RANK, PER_RANK, &x, &y);
    make_batch((int64_t)step * g_np * PER_RANK, (int64_t)g_np * PER_RANK, &xa, &ya);
    /* The reference: one process, the whole batch. */
    sg_tape_begin();
    CHECK(sg_tape_end(loss_of(v, xa, ya), NULL, v, NVARS, ref) == SG_OK, "reference step");
    /* This rank's shard, reduced. */
    sg_tape_begin();
    CHECK(sg_reducer_attach(r) == SG_OK, "attach");
    CHECK(sg_reducer_attach(r) == SG_ERR_STATE, "attach twice");
    sg_clear_error();
    sg_tensor *local[NVARS];
    CHECK(sg_tape_end(loss_of(v, x, y), NULL, v, NVARS, local) == SG_OK, "tape_end");
    CHECK(sg_reducer_wait(r, g) == SG_OK, "wait");
    for (int i = 0; i < NVARS; i++) {
      const float *a = sg_data_f32(g[i]), *b = sg_data_f32(ref[i]);
      CHECK(sg_numel(g[i]) == sg_numel(ref[i]), "variable %d's numel", i);
      for (int64_t k = 0; k < sg_numel(g[i]); k++)
        CHECK(fabsf(a[k] - b[k]) <= 1e-6f + 1e-5f * fabsf(b[k]),
              "bucket_bytes %zu step %d variable %d [%lld]: %.9g, one rank %.9g", bucket_bytes,
              step, i, (long long)k, a[k], b[k]);
      /* The same bits on every rank. */
      size_t bytes = sizeof(float) * (size_t)sg_numel(g[i]);
      float *root = malloc(bytes);
      memcpy(root, a, bytes);
      MPI_Bcast(root, (int)sg_numel(g[i]), MPI_FLOAT, 0, MPI_COMM_WORLD);
      CHECK(memcmp(root, a, bytes) == 0, "variable %d differs from rank 0's", i);
      free(root);
    }
    sg_scope_end(NULL, 0);
  }
  sg_reducer_free(r);
  free_vars(v, NVARS);
}

/* The last rank registers something else: every rank fails, naming it. */
static void mismatched_variables(void) {
  sg_tensor *v[NVARS], *odd = NULL;
  make_vars(v, 3);
  int last = g_np - 1;
  char want[256];
  sg_tensor *mine[NVARS];
  memcpy(mine, v, sizeof mine);
  /* A shape. */
  const int64_t five[] = {5};
  if (g_me == last) mine[1] = odd = sg_zeros(five, 1);
  CHECK(sg_reducer_new(mine, NVARS, 0) == NULL, "a shape mismatch");
  snprintf(want, sizeof want, "variable 1 has shape [5] on rank %d but [16] on rank 0", last);
  if (g_np > 1) EXPECT_ERROR(SG_ERR_SHAPE, want);
  sg_dispose(odd);
  /* A count. */
  memcpy(mine, v, sizeof mine);
  CHECK(sg_reducer_new(mine, g_me == last ? NVARS - 1 : NVARS, 0) == NULL, "a count mismatch");
  snprintf(want, sizeof want, "variable 3 (shape [4] on rank 0) is missing on rank %d", last);
  if (g_np > 1) EXPECT_ERROR(SG_ERR_ARG, want);
  /* A variable that is not f32. */
  const int32_t iv[HID] = {0};
  const int64_t hid[] = {HID};
  odd = sg_tensor_i32(iv, hid, 1);
  if (g_me == last) mine[1] = odd;
  CHECK(sg_reducer_new(mine, NVARS, 0) == NULL, "an i32 variable");
  snprintf(want, sizeof want, "variable 1 is i32 on rank %d: only f32 variables", last);
  EXPECT_ERROR(SG_ERR_DTYPE, want);
  sg_dispose(odd);
  /* NULL. */
  memcpy(mine, v, sizeof mine);
  if (g_me == last) mine[2] = NULL;
  CHECK(sg_reducer_new(mine, NVARS, 0) == NULL, "a NULL variable");
  snprintf(want, sizeof want, "variable 2 is NULL on rank %d", last);
  EXPECT_ERROR(SG_ERR_ARG, want);
  /* A broadcast while a tape is open there. */
  if (g_me == last) sg_tape_begin();
  CHECK(sg_dist_broadcast(v, NVARS, 0) == SG_ERR_STATE, "broadcast under a tape");
  if (g_me == last) sg_tape_end(NULL, NULL, NULL, 0, NULL);
  snprintf(want, sizeof want, "a tape is open on rank %d", last);
  EXPECT_ERROR(SG_ERR_STATE, want);
  /* Different roots. */
  CHECK(sg_dist_broadcast(v, NVARS, g_me == last ? g_np : 0) != SG_OK, "a bad root");
  EXPECT_ERROR(SG_ERR_ARG, "root");
  free_vars(v, NVARS);
}

/* The last rank lacks a gradient (not among its xs, or no attach, or a failed tape_end): every
   rank fails naming it, and the next step works. */
static void missing_gradient(void) {
  sg_tensor *v[NVARS];
  make_vars(v, 5);
  int last = g_np - 1;
  sg_reducer *r = sg_reducer_new(v, NVARS, 256);
  CHECK(r != NULL, "reducer_new");
  char want[256];
  for (int how = 0; how < 4; how++) {
    sg_scope_begin("step");
    sg_tensor *x, *y, *local[NVARS], *g[NVARS];
    make_batch(g_me * PER_RANK, PER_RANK, &x, &y);
    sg_tape_begin();
    sg_tensor *l = loss_of(v, x, y);
    bool odd = g_me == last && how < 3;
    if (!(odd && how == 1)) CHECK(sg_reducer_attach(r) == SG_OK, "attach");
    int n = odd && how == 0 ? NVARS - 1 : NVARS;
    sg_status st = sg_tape_end(odd && how == 2 ? NULL : l, NULL, v, n, local);
    CHECK(st == (odd && how == 2 ? SG_ERR_ARG : SG_OK), "tape_end %d", (int)st);
    sg_clear_error();
    st = sg_reducer_wait(r, g);
    if (how < 3) {
      CHECK(st == SG_ERR_STATE, "wait with a gradient missing (case %d)", how);
      for (int i = 0; i < NVARS; i++) CHECK(g[i] == NULL, "grads[%d] set", i);
      snprintf(want, sizeof want, "the gradient of variable %d (shape %s) is missing on rank %d",
               how == 0 ? 3 : 0, how == 0 ? "[4]" : "[8, 16]", last);
      EXPECT_ERROR(SG_ERR_STATE, want);
    } else {
      CHECK(st == SG_OK, "the step after");
    }
    sg_scope_end(NULL, 0);
  }
  sg_reducer_free(r);
  free_vars(v, NVARS);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_me);
  MPI_Comm_size(MPI_COMM_WORLD, &g_np);
  CHECK(g_np >= 2, "run me on 2 ranks or more (mpirun -np 2), not %d", g_np);
  int64_t tensors = sg_memory().num_tensors;
  before_init();
  CHECK(sg_dist_init(MPI_COMM_WORLD) == SG_OK, "init");
  CHECK(sg_dist_rank() == g_me && sg_dist_size() == g_np, "rank %d size %d", sg_dist_rank(),
        sg_dist_size());
  broadcast_makes_replicas_equal();
  step_equals_one_rank_step(0, 1);   /* one bucket */
  step_equals_one_rank_step(4, 4);   /* one per variable */
  step_equals_one_rank_step(300, 2); /* some share */
  mismatched_variables();
  missing_gradient();
  /* No tensor left behind by any of it. */
  CHECK(sg_memory().num_tensors == tensors, "%lld live tensors, %lld before",
        (long long)sg_memory().num_tensors, (long long)tensors);
  if (g_me == 0) printf("test_dist: %d ranks: all checks passed\n", g_np);
  MPI_Finalize();
  return 0;
}
