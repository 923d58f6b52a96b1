/* simdgrad_mpi: the communicator, the collective check that every rank passed the same
 * variables, the broadcast of variables and the bucketed gradient reducer (docs/distributed.md).
 * Public simdgrad API only, plus MPI. */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simdgrad/distributed.h"

/* The communicator sg_dist_init was given: the component's one piece of process state, as MPI's
   own (MPI_COMM_WORLD) is. Reducers duplicate it and keep the duplicate. */
static MPI_Comm g_comm = MPI_COMM_NULL;
static int g_rank = -1, g_size = -1;

static sg_status not_initialised(const char *where) {
  return sg_set_error(SG_ERR_STATE, where,
                      "sg_dist_init has not been called (call it after MPI_Init, on every rank)");
}

/* An allocation that failed on one rank in the middle of a collective cannot be reported to the
   others without the memory it lacked: the job ends, as MPI ends it on its own errors. */
static void *must_alloc(MPI_Comm comm, size_t bytes) {
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) {
    fprintf(stderr, "simdgrad_mpi: out of memory (%zu bytes) in a collective call\n", bytes);
    MPI_Abort(comm, 1);
  }
  return p;
}

sg_status sg_dist_init(MPI_Comm comm) {
  int up = 0, down = 0;
  MPI_Initialized(&up);
  if (up) MPI_Finalized(&down);
  if (!up || down)
    return sg_set_error(SG_ERR_STATE, "dist_init", "MPI is %s (call MPI_Init first)",
                        down ? "finalized" : "not initialised");
  if (comm == MPI_COMM_NULL) return sg_set_error(SG_ERR_ARG, "dist_init", "comm is MPI_COMM_NULL");
  int rank, size;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS)
    return sg_set_error(SG_ERR_ARG, "dist_init", "comm is not a valid communicator");
  g_comm = comm;
  g_rank = rank;
  g_size = size;
  return SG_OK;
}

int sg_dist_rank(void) { return g_rank; }
int sg_dist_size(void) { return g_size; }

/* ---- Note [same variables]: the collective check ---------------------------------------------
   Rank 0 broadcasts its variable count and one descriptor per variable (dtype, rank, shape);
   every rank finds the first variable where it differs (or a local fault: a NULL list, an open
   tape) and an MPI_MINLOC allreduce of (index, rank) picks the first fault of all and the lowest
   rank that has it. That rank broadcasts what it has, so every rank formats the same message
   and returns the same status: no rank goes on into a collective the others left. */

enum { DESC = 2 + SG_MAX_RANK }; /* dtype (-1: NULL), rank, shape */
enum fault {
  F_NONE,
  F_LIST,    /* n < 0, or a NULL list */
  F_TAPE,    /* a tape is open (broadcast writes the variables) */
  F_ROOT,    /* root differs from rank 0's, or is out of range */
  F_NULL,    /* vars[i] is NULL */
  F_DTYPE,   /* vars[i] is not f32 */
  F_HUGE,    /* vars[i] has more elements than an MPI count holds */
  F_SHAPE,   /* vars[i]'s shape differs from rank 0's */
  F_MISSING, /* this rank has fewer variables than rank 0 */
  F_EXTRA    /* this rank has more variables than rank 0 */
};

static void describe(const sg_tensor *t, int64_t *d) {
  memset(d, 0, DESC * sizeof *d);
  d[0] = -1;
  if (!t) return;
  d[0] = sg_dtype_of(t);
  d[1] = sg_rank(t);
  memcpy(d + 2, sg_shape(t), (size_t)d[1] * sizeof *d);
}

static const char *shape_text(const int64_t *d, char *buf, size_t size) {
  int used = snprintf(buf, size, "[");
  for (int k = 0; k < d[1] && used > 0 && (size_t)used < size; k++)
    used += snprintf(buf + used, size - (size_t)used, "%s%lld", k ? ", " : "", (long long)d[2 + k]);
  if (used > 0 && (size_t)used < size) snprintf(buf + used, size - (size_t)used, "]");
  return buf;
}

static const char *dtype_text(int64_t dtype) {
  switch (dtype) {
  case SG_F32:
    return "f32";
  case SG_I32:
    return "i32";
  case SG_BOOL:
    return "bool";
  default:
    return "of an unknown dtype";
  }
}

/* Collective: SG_OK on every rank, or the same error on every rank. For a broadcast (bcast), also
   that no tape is open and that root is rank 0's and a rank. */
static sg_status check_same_vars(MPI_Comm comm, const char *where, sg_tensor *const *vars, int n,
                                 bool bcast, int root) {
  int me, size;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  bool list_ok = n >= 0 && (n == 0 || vars);
  int nl = list_ok ? n : 0;
  int head[2] = {nl, root}; /* rank 0's count and root */
  MPI_Bcast(head, 2, MPI_INT, 0, comm);
  int n0 = head[0];
  int64_t *ref = must_alloc(comm, (size_t)n0 * DESC * sizeof *ref);
  int64_t *mine = must_alloc(comm, ((size_t)nl + 1) * DESC * sizeof *mine);
  for (int i = 0; i < nl; i++) describe(vars[i], mine + (size_t)i * DESC);
  if (me == 0) memcpy(ref, mine, (size_t)n0 * DESC * sizeof *ref);
  MPI_Bcast(ref, n0 * DESC, MPI_INT64_T, 0, comm);

  /* This rank's first fault: -1 for one of the rank as a whole. */
  int bad = INT_MAX, kind = F_NONE;
  if (!list_ok)
    bad = -1, kind = F_LIST;
  else if (bcast && sg_tape_active())
    bad = -1, kind = F_TAPE;
  else if (bcast && (root != head[1] || root < 0 || root >= size))
    bad = -1, kind = F_ROOT;
  for (int i = 0; bad == INT_MAX && i < (nl > n0 ? nl : n0); i++) {
    const int64_t *d = mine + (size_t)i * DESC, *r = ref + (size_t)i * DESC;
    if (i >= nl)
      kind = F_MISSING;
    else if (i >= n0)
      kind = F_EXTRA;
    else if (d[0] < 0)
      kind = F_NULL;
    else if (d[0] != SG_F32)
      kind = F_DTYPE;
    else if (sg_numel(vars[i]) >= INT_MAX)
      kind = F_HUGE;
    else if (memcmp(d, r, DESC * sizeof *d) != 0)
      kind = F_SHAPE;
    if (kind != F_NONE) bad = i;
  }
  int pick[2] = {bad, me};
  MPI_Allreduce(MPI_IN_PLACE, pick, 1, MPI_2INT, MPI_MINLOC, comm);
  sg_status st = SG_OK;
  if (pick[0] != INT_MAX) {
    /* The faulty rank tells what it has: its fault, count, root and the variable's descriptor. */
    int who = pick[1], i = pick[0];
    int64_t info[3 + DESC] = {kind, nl, root};
    if (me == who && i >= 0 && i < nl)
      memcpy(info + 3, mine + (size_t)i * DESC, sizeof *mine * DESC);
    MPI_Bcast(info, 3 + DESC, MPI_INT64_T, who, comm);
    const int64_t *d = info + 3, *r = i >= 0 && i < n0 ? ref + (size_t)i * DESC : NULL;
    char a[192], b[192];
    switch ((enum fault)info[0]) {
    case F_LIST:
      st = sg_set_error(SG_ERR_ARG, where, "rank %d passed n = %lld variables or a NULL list", who,
                        (long long)info[1]);
      break;
    case F_TAPE:
      st = sg_set_error(SG_ERR_STATE, where,
                        "a tape is open on rank %d (variables change only between steps)", who);
      break;
    case F_ROOT:
      st = sg_set_error(SG_ERR_ARG, where, "rank %d passed root %lld, rank 0 root %d (of %d ranks)",
                        who, (long long)info[2], head[1], size);
      break;
    case F_NULL:
      st = sg_set_error(SG_ERR_ARG, where, "variable %d is NULL on rank %d", i, who);
      break;
    case F_DTYPE:
      st = sg_set_error(SG_ERR_DTYPE, where,
                        "variable %d is %s on rank %d: only f32 variables can be used", i,
                        dtype_text(d[0]), who);
      break;
    case F_HUGE:
      st = sg_set_error(SG_ERR_SHAPE, where,
                        "variable %d (shape %s on rank %d) has more elements than an MPI count "
                        "holds",
                        i, shape_text(d, a, sizeof a), who);
      break;
    case F_SHAPE:
      st = sg_set_error(SG_ERR_SHAPE, where, "variable %d has shape %s on rank %d but %s on rank 0",
                        i, shape_text(d, a, sizeof a), who, shape_text(r, b, sizeof b));
      break;
    case F_MISSING:
      st = sg_set_error(SG_ERR_ARG, where,
                        "rank %d passed %lld variables but rank 0 passed %d: variable %d (shape %s "
                        "on rank 0) is missing on rank %d",
                        who, (long long)info[1], n0, i, shape_text(r, b, sizeof b), who);
      break;
    case F_EXTRA:
      st =
          sg_set_error(SG_ERR_ARG, where,
                       "rank %d passed %lld variables but rank 0 passed %d: variable %d (shape %s) "
                       "is extra on rank %d",
                       who, (long long)info[1], n0, i, shape_text(d, a, sizeof a), who);
      break;
    case F_NONE:
      break;
    }
  }
  free(ref);
  free(mine);
  return st;
}

/* ---- Broadcast ---- */

/* MPI counts are ints: a long buffer goes in pieces. */
#define MAX_COUNT (INT_MAX / 2)

sg_status sg_dist_broadcast(sg_tensor *const *vars, int n, int root) {
  if (g_comm == MPI_COMM_NULL) return not_initialised("dist_broadcast");
  sg_status st = check_same_vars(g_comm, "dist_broadcast", vars, n, true, root);
  if (st != SG_OK) return st;
  size_t total = 0;
  for (int i = 0; i < n; i++) total += (size_t)sg_numel(vars[i]);
  float *buf = must_alloc(g_comm, total * sizeof *buf);
  if (g_rank == root)
    for (size_t i = 0, at = 0; i < (size_t)n; at += (size_t)sg_numel(vars[i]), i++)
      memcpy(buf + at, sg_data_f32(vars[i]), (size_t)sg_numel(vars[i]) * sizeof *buf);
  int rc = MPI_SUCCESS;
  for (size_t at = 0; at < total && rc == MPI_SUCCESS; at += MAX_COUNT) {
    size_t count = total - at < MAX_COUNT ? total - at : MAX_COUNT;
    rc = MPI_Bcast(buf + at, (int)count, MPI_FLOAT, root, g_comm);
  }
  for (size_t i = 0, at = 0; rc == MPI_SUCCESS && g_rank != root && i < (size_t)n && st == SG_OK;
       at += (size_t)sg_numel(vars[i]), i++) {
    sg_tensor *v = sg_tensor_f32(buf + at, sg_shape(vars[i]), sg_rank(vars[i]));
    st = v ? sg_assign(vars[i], v) : sg_last_status();
    sg_dispose(v);
  }
  free(buf);
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return sg_set_error(SG_ERR_STATE, "dist_broadcast", "MPI_Bcast failed: %s", msg);
  }
  return st;
}

/* ---- The reducer ------------------------------------------------------------------------------
   Note [buckets]: the gradients are packed, from the last variable back, into buckets of about
   bucket_bytes (a variable larger than that has one of its own), each followed by one float that
   counts the ranks missing a gradient in it. The tape reports each gradient as final
   (sg_tape_on_grad_ready); the hook copies it into its bucket, and starts the MPI_Iallreduce of
   every complete bucket whose predecessors have all started: all ranks must start their
   non-blocking collectives in the same order, and a rank whose gradients come in another order
   (or not at all) only delays its own starts. It then tests the buckets in flight, since OpenMPI
   moves a non-blocking collective on mostly inside MPI calls. sg_reducer_wait starts what is
   left, with its missing gradients as zeros and its count raised, and waits: a non-zero count
   anywhere is an error on every rank, since every rank sees the same sums. */

typedef struct bucket {
  int lo, hi;   /* variables [lo, hi) */
  size_t count; /* floats: the gradients, then the missing count */
  float *buf;
  int pending; /* gradients not yet in buf this step */
  bool started;
  MPI_Request req;
} bucket;

struct sg_reducer {
  MPI_Comm comm; /* a duplicate of sg_dist_init's, errors returned */
  int rank, size;
  int n;
  int64_t *desc;   /* [n][DESC] */
  size_t *offset;  /* in its bucket */
  int *bucket_of;  /* per variable */
  bool *got;       /* per variable, this step */
  bucket *buckets; /* n_buckets, the last variables' first */
  int n_buckets, next_start;
  bool step_open; /* attached and not yet waited for */
  int mpi_error;  /* the first MPI error of this step */
  bool drive;     /* test the buckets in flight from the hook (SIMDGRAD_MPI_NO_TEST=1: not) */
  size_t bytes;
};

static int64_t desc_numel(const int64_t *d) {
  int64_t numel = 1;
  for (int k = 0; k < d[1]; k++) numel *= d[2 + k];
  return numel;
}

sg_reducer *sg_reducer_new(sg_tensor *const *vars, int n, size_t bucket_bytes) {
  if (g_comm == MPI_COMM_NULL) {
    not_initialised("reducer_new");
    return NULL;
  }
  if (check_same_vars(g_comm, "reducer_new", vars, n, false, 0) != SG_OK) return NULL;
  if (!bucket_bytes) bucket_bytes = SG_REDUCER_DEFAULT_BUCKET_BYTES;
  size_t per_bucket = bucket_bytes / sizeof(float);
  if (per_bucket > MAX_COUNT) per_bucket = MAX_COUNT;
  sg_reducer *r = must_alloc(g_comm, sizeof *r);
  r->n = n;
  r->rank = g_rank;
  r->size = g_size;
  r->desc = must_alloc(g_comm, ((size_t)n + 1) * DESC * sizeof *r->desc);
  r->offset = must_alloc(g_comm, ((size_t)n + 1) * sizeof *r->offset);
  r->bucket_of = must_alloc(g_comm, ((size_t)n + 1) * sizeof *r->bucket_of);
  r->got = must_alloc(g_comm, ((size_t)n + 1) * sizeof *r->got);
  r->buckets = must_alloc(g_comm, ((size_t)n + 1) * sizeof *r->buckets);
  for (int i = 0; i < n; i++) describe(vars[i], r->desc + (size_t)i * DESC);
  /* Buckets from the last variable back; within a bucket, variables in index order. */
  for (int hi = n; hi > 0;) {
    int lo = hi - 1;
    size_t count = (size_t)desc_numel(r->desc + (size_t)lo * DESC);
    while (lo > 0) {
      size_t next = (size_t)desc_numel(r->desc + (size_t)(lo - 1) * DESC);
      if (count + next > per_bucket) break;
      count += next;
      lo--;
    }
    bucket *b = &r->buckets[r->n_buckets];
    b->lo = lo;
    b->hi = hi;
    b->req = MPI_REQUEST_NULL;
    for (int i = lo; i < hi; i++) {
      r->offset[i] = b->count;
      r->bucket_of[i] = r->n_buckets;
      b->count += (size_t)desc_numel(r->desc + (size_t)i * DESC);
    }
    b->count++; /* the missing count */
    b->buf = must_alloc(g_comm, b->count * sizeof *b->buf);
    r->bytes += b->count * sizeof *b->buf;
    r->n_buckets++;
    hi = lo;
  }
  const char *no_test = getenv("SIMDGRAD_MPI_NO_TEST");
  r->drive = !(no_test && no_test[0] == '1');
  MPI_Comm_dup(g_comm, &r->comm);
  MPI_Comm_set_errhandler(r->comm, MPI_ERRORS_RETURN);
  return r;
}

int sg_reducer_buckets(const sg_reducer *r) { return r ? r->n_buckets : 0; }
size_t sg_reducer_bytes(const sg_reducer *r) { return r ? r->bytes : 0; }

static void start_bucket(sg_reducer *r, bucket *b, bool missing) {
  b->buf[b->count - 1] = missing ? 1.0f : 0.0f;
  int rc =
      MPI_Iallreduce(MPI_IN_PLACE, b->buf, (int)b->count, MPI_FLOAT, MPI_SUM, r->comm, &b->req);
  if (rc != MPI_SUCCESS && r->mpi_error == MPI_SUCCESS) r->mpi_error = rc;
  b->started = true;
}

static void on_grad_ready(void *ctx, int index, const sg_tensor *grad) {
  sg_reducer *r = ctx;
  if (!r->step_open || index < 0 || index >= r->n || r->got[index]) return;
  const int64_t *d = r->desc + (size_t)index * DESC;
  if (sg_dtype_of(grad) != SG_F32 || sg_numel(grad) != desc_numel(d)) return; /* missing */
  bucket *b = &r->buckets[r->bucket_of[index]];
  memcpy(b->buf + r->offset[index], sg_data_f32(grad), (size_t)sg_numel(grad) * sizeof(float));
  r->got[index] = true;
  b->pending--;
  while (r->next_start < r->n_buckets && r->buckets[r->next_start].pending == 0)
    start_bucket(r, &r->buckets[r->next_start++], false);
  /* Move what is in flight along (Note [buckets]). */
  for (int k = 0; r->drive && k < r->next_start; k++) {
    if (r->buckets[k].req == MPI_REQUEST_NULL) continue;
    int done = 0;
    int rc = MPI_Test(&r->buckets[k].req, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS && r->mpi_error == MPI_SUCCESS) r->mpi_error = rc;
  }
}

static void open_step(sg_reducer *r) {
  memset(r->got, 0, (size_t)r->n * sizeof *r->got);
  for (int k = 0; k < r->n_buckets; k++) {
    bucket *b = &r->buckets[k];
    b->pending = b->hi - b->lo;
    b->started = false;
    b->req = MPI_REQUEST_NULL;
  }
  r->next_start = 0;
  r->mpi_error = MPI_SUCCESS;
  r->step_open = true;
}

sg_status sg_reducer_attach(sg_reducer *r) {
  if (!r) return sg_set_error(SG_ERR_ARG, "reducer_attach", "r is NULL");
  if (r->step_open)
    return sg_set_error(SG_ERR_STATE, "reducer_attach",
                        "the previous step has not been waited for (sg_reducer_wait)");
  if (!sg_tape_active())
    return sg_set_error(SG_ERR_STATE, "reducer_attach",
                        "no tape is open on this thread (attach between sg_tape_begin and "
                        "sg_tape_end)");
  sg_status st = sg_tape_on_grad_ready(on_grad_ready, r);
  if (st == SG_OK) open_step(r);
  return st;
}

/* Waits for every bucket that started; the first MPI error, or MPI_SUCCESS. */
static int wait_started(sg_reducer *r) {
  for (int k = 0; k < r->n_buckets; k++) {
    if (r->buckets[k].req == MPI_REQUEST_NULL) continue;
    int rc = MPI_Wait(&r->buckets[k].req, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS && r->mpi_error == MPI_SUCCESS) r->mpi_error = rc;
  }
  return r->mpi_error;
}

sg_status sg_reducer_wait(sg_reducer *r, sg_tensor **grads) {
  if (!r) return sg_set_error(SG_ERR_ARG, "reducer_wait", "r is NULL");
  for (int i = 0; grads && i < r->n; i++) grads[i] = NULL;
  if (!r->step_open) open_step(r); /* not attached this step: every gradient is missing */
  /* Waited for before sg_tape_end: the tape must not call into this step afterwards. */
  if (sg_tape_active()) sg_tape_on_grad_ready(NULL, NULL);
  int first_missing = INT_MAX;
  for (int k = r->next_start; k < r->n_buckets; k++) {
    bucket *b = &r->buckets[k];
    for (int i = b->lo; i < b->hi; i++) {
      if (r->got[i]) continue;
      if (i < first_missing) first_missing = i;
      memset(b->buf + r->offset[i], 0,
             (size_t)desc_numel(r->desc + (size_t)i * DESC) * sizeof(float));
    }
    start_bucket(r, b, b->pending > 0);
  }
  r->next_start = r->n_buckets;
  r->step_open = false;
  int rc = wait_started(r);
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return sg_set_error(SG_ERR_STATE, "reducer_wait", "MPI_Iallreduce failed on rank %d: %s",
                        r->rank, msg);
  }
  bool missing = false;
  for (int k = 0; k < r->n_buckets; k++) missing |= r->buckets[k].buf[r->buckets[k].count - 1] > 0;
  if (missing) {
    /* Every rank sees the same counts, so every rank takes this branch (Note [buckets]). */
    int pick[2] = {first_missing, r->rank};
    MPI_Allreduce(MPI_IN_PLACE, pick, 1, MPI_2INT, MPI_MINLOC, r->comm);
    char a[192];
    return sg_set_error(SG_ERR_STATE, "reducer_wait",
                        "the gradient of variable %d (shape %s) is missing on rank %d: "
                        "sg_tape_end failed there, did not take the reducer's variables as its "
                        "first xs, or sg_reducer_attach was not called before it; no gradient "
                        "is averaged this step",
                        pick[0], shape_text(r->desc + (size_t)pick[0] * DESC, a, sizeof a),
                        pick[1]);
  }
  if (!grads) return sg_set_error(SG_ERR_ARG, "reducer_wait", "grads is NULL");
  const float size = (float)r->size;
  sg_status st = SG_OK;
  for (int k = 0; k < r->n_buckets; k++) {
    bucket *b = &r->buckets[k];
    for (size_t j = 0; j + 1 < b->count; j++) b->buf[j] /= size;
  }
  for (int i = 0; i < r->n && st == SG_OK; i++) {
    const int64_t *d = r->desc + (size_t)i * DESC;
    grads[i] = sg_tensor_f32(r->buckets[r->bucket_of[i]].buf + r->offset[i], d + 2, (int)d[1]);
    if (!grads[i]) st = sg_last_status();
  }
  if (st != SG_OK)
    for (int i = 0; i < r->n; i++) {
      sg_dispose(grads[i]);
      grads[i] = NULL;
    }
  return st;
}

void sg_reducer_free(sg_reducer *r) {
  if (!r) return;
  wait_started(r);
  MPI_Comm_free(&r->comm);
  for (int k = 0; k < r->n_buckets; k++) free(r->buckets[k].buf);
  free(r->buckets);
  free(r->desc);
  free(r->offset);
  free(r->bucket_of);
  free(r->got);
  free(r);
}
