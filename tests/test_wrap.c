/* Zero-copy tensors over the caller's memory (sg_tensor_wrap_f32 / _i32) and writable access
 * to a tensor the caller owns outright (sg_data_f32_mut). Every path that ends a wrapped
 * tensor's life gives the buffer back through its deleter exactly once: dispose, scope end, tape
 * end, the end of a view, a failed wrap; an op that fails on it gives nothing back. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* ---- A deleter that counts ------------------------------------------------------------------- */

typedef struct owner {
  int calls;
  void *data; /* what the deleter was given */
} owner;

static void give_back(void *data, void *ctx) {
  owner *o = ctx;
  o->calls++;
  o->data = data;
  free(data);
}

/* A malloc'd buffer of n floats, 0.25 * i - 3, wrapped with give_back. */
static sg_tensor *wrapped(int64_t n, const int64_t *shape, int rank, owner *o) {
  float *buf = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  cr_assert_not_null(buf);
  for (int64_t i = 0; i < n; i++) buf[i] = 0.25f * (float)i - 3.0f;
  sg_tensor *t = sg_tensor_wrap_f32(buf, shape, rank, give_back, o);
  cr_assert_not_null(t, "%s", sg_last_error());
  cr_assert_eq(sg_data_f32(t), buf, "wrapping copies nothing");
  return t;
}

static bool same_bits(const sg_tensor *a, const sg_tensor *b) {
  return sg_numel(a) == sg_numel(b) &&
         memcmp(sg_data_f32(a), sg_data_f32(b), (size_t)sg_numel(a) * sizeof(float)) == 0;
}

/* ---- Life and death ---------------------------------------------------------------------------
 */

Test(wrap, dispose_gives_the_buffer_back_once) {
  int64_t live = t_live_tensors();
  sg_memory_info before = sg_memory();
  owner o = {0};
  const int64_t shape[2] = {256, 1024};
  sg_tensor *t = wrapped(256 * 1024, shape, 2, &o);
  float *buf = (float *)sg_data_f32(t);
  sg_memory_info during = sg_memory();
  cr_assert_eq(during.num_tensors, before.num_tensors + 1, "the tensor counts");
  cr_assert_eq(during.num_bytes, before.num_bytes, "its bytes are the caller's, not counted");
  cr_assert_eq(during.peak_bytes, before.peak_bytes);
  sg_tensor *y = sg_exp(t);
  cr_assert_not_null(y, "%s", sg_last_error());
  cr_assert_float_eq(sg_data_f32(y)[5], expf(0.25f * 5 - 3.0f), 1e-6f);
  sg_dispose(y);
  cr_assert_eq(o.calls, 0);
  sg_dispose(t);
  cr_assert_eq(o.calls, 1);
  cr_assert_eq(o.data, buf);
  cr_assert_eq(t_live_tensors(), live);
}

Test(wrap, retained_twice_given_back_once) {
  owner o = {0};
  const int64_t n = 8;
  sg_tensor *t = wrapped(n, &n, 1, &o);
  sg_retain(t);
  sg_dispose(t);
  cr_assert_eq(o.calls, 0);
  sg_dispose(t);
  cr_assert_eq(o.calls, 1);
}

Test(wrap, a_view_keeps_the_buffer_alive) {
  owner o = {0};
  const int64_t n = 12, mat[2] = {3, 4};
  sg_tensor *t = wrapped(n, &n, 1, &o);
  const float *buf = sg_data_f32(t);
  sg_tensor *v = sg_reshape(t, mat, 2);
  cr_assert_not_null(v, "%s", sg_last_error());
  sg_dispose(t);
  cr_assert_eq(o.calls, 0, "the view still reads the buffer");
  cr_assert_eq(sg_data_f32(v), buf);
  cr_assert_float_eq(sg_data_f32(v)[11], 0.25f * 11 - 3.0f, 0);
  sg_tensor *s = sg_sum(v, NULL, 0, false);
  cr_assert_not_null(s, "%s", sg_last_error());
  sg_dispose(s);
  sg_dispose(v);
  cr_assert_eq(o.calls, 1);
}

Test(wrap, scope_end_gives_the_buffer_back) {
  int64_t live = t_live_tensors();
  owner kept = {0}, dropped = {0};
  const int64_t n = 100;
  sg_scope_begin("outer");
  sg_tensor *k = wrapped(n, &n, 1, &kept);
  sg_scope_begin("inner");
  sg_tensor *d = wrapped(n, &n, 1, &dropped);
  sg_tensor *y = sg_add(sg_mul(d, k), k);
  cr_assert_not_null(y, "%s", sg_last_error());
  sg_scope_end(NULL, 0);
  cr_assert_eq(dropped.calls, 1);
  cr_assert_eq(kept.calls, 0, "made in the outer scope");
  sg_scope_end(NULL, 0);
  cr_assert_eq(kept.calls, 1);
  cr_assert_eq(dropped.calls, 1);
  cr_assert_eq(t_live_tensors(), live);
}

/* A tape saves a wrapped tensor by reference: the caller may drop it at once, the backward pass
   still reads the buffer, and the deleter runs when sg_tape_end releases it. */
Test(wrap, the_tape_holds_the_buffer_until_it_ends) {
  int64_t live = t_live_tensors();
  owner o = {0};
  const int64_t n = 70000; /* more than one chunk of the parallel-for */
  sg_tensor *w = wrapped(n, &n, 1, &o);
  sg_tensor *a = sg_fill(&n, 1, 2.0f);
  sg_tensor *want = sg_relu(w); /* d/da sum(relu(a * w)) at a = 2 */
  sg_scope_begin("forward");
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *loss = sg_sum(sg_relu(sg_mul(a, w)), NULL, 0, false), *grad = NULL;
  cr_assert_not_null(loss, "%s", sg_last_error());
  sg_dispose(w); /* mul saved it: its backward reads w for a's gradient */
  cr_assert_eq(o.calls, 0, "the tape still holds w");
  cr_assert_eq(sg_tape_end(loss, NULL, &a, 1, &grad), SG_OK, "%s", sg_last_error());
  cr_assert_eq(o.calls, 1, "released by sg_tape_end, after the backward pass");
  t_expect_f32(grad, sg_data_f32(want), 1, &n, 0, 0);
  sg_scope_end(NULL, 0);
  sg_dispose(want);
  sg_dispose(a);
  cr_assert_eq(o.calls, 1);
  cr_assert_eq(t_live_tensors(), live);
}

/* The tape's reference outlives everything else: a forward that failed after the wrapped tensor
   was saved still gives the buffer back, once, when the tape closes. */
Test(wrap, a_failed_forward_still_releases_at_tape_end) {
  int64_t live = t_live_tensors();
  owner o = {0};
  const int64_t n = 16, three = 3;
  sg_tensor *w = wrapped(n, &n, 1, &o);
  sg_tensor *other = sg_zeros(&three, 1);
  sg_scope_begin("forward");
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_add(sg_abs(w), other); /* abs saves w, add fails */
  cr_assert_null(y);
  sg_dispose(w);
  sg_dispose(other);
  cr_assert_eq(o.calls, 0);
  cr_assert_eq(sg_tape_end(y, NULL, NULL, 0, NULL), SG_ERR_SHAPE);
  cr_assert_eq(o.calls, 1);
  sg_clear_error();
  sg_scope_end(NULL, 0);
  cr_assert_eq(o.calls, 1);
  cr_assert_eq(t_live_tensors(), live);
}

/* A failing op keeps its inputs as they were: nothing is given back until the caller drops the
   tensor. A failing wrap gives the buffer back at once. */
Test(wrap, errors_give_the_buffer_back_exactly_once) {
  int64_t live = t_live_tensors();
  owner o = {0};
  const int64_t n = 6, three = 3;
  sg_tensor *t = wrapped(n, &n, 1, &o);
  sg_tensor *other = sg_zeros(&three, 1);
  t_expect_error(sg_add(t, other), SG_ERR_SHAPE, "add", NULL);
  t_expect_error(sg_matmul(t, other, false, false), SG_ERR_SHAPE, "matmul", NULL);
  cr_assert_eq(o.calls, 0);
  sg_dispose(other);
  sg_dispose(t);
  cr_assert_eq(o.calls, 1);

  owner bad_shape = {0}, no_data = {0}, no_shape = {0};
  const int64_t negative = -2;
  float *buf = malloc(16);
  t_expect_error(sg_tensor_wrap_f32(buf, &negative, 1, give_back, &bad_shape), SG_ERR_SHAPE,
                 "tensor_wrap_f32", "negative dimension", NULL);
  cr_assert_eq(bad_shape.calls, 1);
  cr_assert_eq(bad_shape.data, buf);
  t_expect_error(sg_tensor_wrap_f32(NULL, &n, 1, give_back, &no_data), SG_ERR_ARG, "data is NULL",
                 NULL);
  cr_assert_eq(no_data.calls, 1);
  char *bytes = malloc(64);
  const int64_t two = 2;
  t_expect_error(sg_tensor_wrap_f32((float *)(void *)(bytes + 2), &two, 1, NULL, NULL), SG_ERR_ARG,
                 "not aligned", NULL);
  free(bytes);
  int32_t *ibuf = malloc(8 * sizeof(int32_t));
  t_expect_error(sg_tensor_wrap_i32(ibuf, NULL, 1, give_back, &no_shape), SG_ERR_ARG,
                 "shape is NULL", NULL);
  cr_assert_eq(no_shape.calls, 1);
  cr_assert_eq(t_live_tensors(), live);
}

/* Without a deleter the caller keeps the buffer; an empty tensor may have no data at all. */
Test(wrap, no_deleter_and_empty) {
  float buf[6] = {1, -2, 3, -4, 5, -6};
  const int64_t mat[2] = {2, 3}, zero = 0;
  sg_tensor *t = sg_tensor_wrap_f32(buf, mat, 2, NULL, NULL);
  sg_tensor *y = sg_relu(t);
  const float want[6] = {1, 0, 3, 0, 5, 0};
  t_expect_f32(y, want, 2, mat, 0, 0);
  sg_dispose(y);
  sg_dispose(t);
  cr_assert_float_eq(buf[5], -6.0f, 0, "the caller's buffer is untouched");
  sg_tensor *e = sg_tensor_wrap_f32(NULL, &zero, 1, NULL, NULL);
  cr_assert_not_null(e, "%s", sg_last_error());
  cr_assert_eq(sg_numel(e), 0);
  sg_dispose(e);
}

Test(wrap, i32_indices) {
  owner o = {0};
  int32_t *idx = malloc(3 * sizeof(int32_t));
  idx[0] = 2;
  idx[1] = 0;
  idx[2] = 2;
  const int64_t three = 3;
  sg_tensor *i = sg_tensor_wrap_i32(idx, &three, 1, give_back, &o);
  cr_assert_not_null(i, "%s", sg_last_error());
  cr_assert_eq(sg_data_i32(i), idx);
  const float xv[3] = {10, 20, 30};
  sg_tensor *x = t_f32(xv, 1, &three);
  sg_tensor *g = sg_gather(x, i, 0);
  const float want[3] = {30, 10, 30};
  t_expect_f32(g, want, 1, &three, 0, 0);
  sg_dispose(g);
  sg_dispose(x);
  sg_dispose(i);
  cr_assert_eq(o.calls, 1);
}

/* ---- Any alignment ------------------------------------------------------------------------------
 */

/* The same ops on a copy (64-byte aligned) and on wrapped buffers at every float offset from a
   64-byte boundary give the same bits, forward and backward. */
static sg_tensor *model(sg_tensor *x, sg_tensor *w, sg_tensor **gx) {
  static const int64_t img[4] = {2, 9, 9, 4}, flat[2] = {18, 36};
  static const int64_t kernel[4] = {3, 3, 4, 2};
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *c =
      sg_conv2d(sg_reshape(x, img, 4), sg_reshape(w, kernel, 4), NULL, SG_PADDING_SAME, NULL, NULL);
  sg_tensor *m =
      sg_matmul(sg_reshape(x, flat, 2), sg_transpose(sg_reshape(x, flat, 2), NULL), false, false);
  sg_tensor *y = sg_add(sg_sum(sg_softmax(m, 1), NULL, 0, false),
                        sg_sum(sg_tanh(sg_exp(sg_mul(c, c))), NULL, 0, false));
  cr_assert_not_null(y, "%s", sg_last_error());
  cr_assert_eq(sg_tape_end(y, NULL, &x, 1, gx), SG_OK, "%s", sg_last_error());
  return y;
}

Test(wrap, any_float_alignment) {
  const int64_t nx = 648, nw = 72;
  float *xs = malloc((nx + 16) * sizeof(float) + 64), *ws = malloc((nw + 16) * sizeof(float) + 64);
  float *x0 = (float *)(((uintptr_t)xs + 63) & ~(uintptr_t)63);
  float *w0 = (float *)(((uintptr_t)ws + 63) & ~(uintptr_t)63);
  sg_scope_begin("align");
  sg_tensor *xr = sg_random_uniform(&nx, 1, -0.1f, 0.1f, 1);
  sg_tensor *wr = sg_random_uniform(&nw, 1, -0.5f, 0.5f, 2);
  sg_tensor *g_ref, *y_ref = model(xr, wr, &g_ref);
  for (int off = 0; off < 16; off++) {
    memcpy(x0 + off, sg_data_f32(xr), (size_t)nx * sizeof(float));
    memcpy(w0 + off, sg_data_f32(wr), (size_t)nw * sizeof(float));
    sg_tensor *x = sg_tensor_wrap_f32(x0 + off, &nx, 1, NULL, NULL);
    sg_tensor *w = sg_tensor_wrap_f32(w0 + off, &nw, 1, NULL, NULL);
    sg_tensor *g, *y = model(x, w, &g);
    cr_assert(same_bits(y, y_ref), "offset %d floats: the output differs", off);
    cr_assert(same_bits(g, g_ref), "offset %d floats: the gradient differs", off);
  }
  sg_scope_end(NULL, 0);
  free(xs);
  free(ws);
}

/* ---- sg_data_f32_mut ------------------------------------------------------------------------- */

/* sg_data_f32_mut(t) is NULL with status st and every fragment in the message. */
#define REFUSED(t, st, ...)                                                                        \
  do {                                                                                             \
    cr_assert_null(sg_data_f32_mut(t));                                                            \
    t_expect_error(NULL, st, __VA_ARGS__, NULL);                                                   \
  } while (0)

Test(data_f32_mut, an_owned_tensor_is_writable) {
  const int64_t n = 4;
  sg_tensor *t = sg_ones(&n, 1);
  float *p = sg_data_f32_mut(t);
  cr_assert_eq(p, sg_data_f32(t), "%s", sg_last_error());
  p[2] = 5.0f;
  sg_tensor *s = sg_sum(t, NULL, 0, false);
  cr_assert_float_eq(sg_data_f32(s)[0], 8.0f, 0);
  sg_dispose(s);
  sg_dispose(t);

  owner o = {0};
  sg_tensor *w = wrapped(n, &n, 1, &o);
  cr_assert_eq(sg_data_f32_mut(w), sg_data_f32(w), "a wrapped tensor too: %s", sg_last_error());
  sg_scope_begin("tracked"); /* a scope's tensor is still the caller's alone */
  sg_tensor *z = sg_zeros(&n, 1);
  cr_assert_not_null(sg_data_f32_mut(z), "%s", sg_last_error());
  sg_scope_end(NULL, 0);
  sg_dispose(w);
  cr_assert_eq(o.calls, 1);
}

Test(data_f32_mut, refuses_a_second_reference) {
  const int64_t n = 4;
  sg_tensor *t = sg_ones(&n, 1);
  sg_retain(t);
  REFUSED(t, SG_ERR_STATE, "data_f32_mut", "2 references", NULL);
  sg_dispose(t);
  cr_assert_not_null(sg_data_f32_mut(t), "%s", sg_last_error());
  sg_dispose(t);
}

Test(data_f32_mut, refuses_shared_storage) {
  const int64_t n = 4, mat[2] = {2, 2};
  sg_tensor *t = sg_ones(&n, 1);
  sg_tensor *v = sg_reshape(t, mat, 2);
  REFUSED(t, SG_ERR_STATE, "shares its storage", "1 other live tensor");
  REFUSED(v, SG_ERR_STATE, "shares its storage");
  sg_dispose(t);
  cr_assert_not_null(sg_data_f32_mut(v), "the view alone: %s", sg_last_error());
  sg_dispose(v);
}

Test(data_f32_mut, refuses_what_the_tape_saved) {
  const int64_t n = 4, mat[2] = {2, 2};
  sg_tensor *t = sg_ones(&n, 1), *u = sg_ones(&n, 1);
  cr_assert_eq(sg_tape_begin(), SG_OK);
  sg_tensor *y = sg_relu(t); /* saves t */
  REFUSED(t, SG_ERR_STATE, "saved by the open tape");
  sg_tensor *r = sg_reshape(u, mat, 2);
  sg_tensor *z = sg_abs(r); /* saves r, a view of u */
  sg_dispose(r);
  REFUSED(u, SG_ERR_STATE, "shares its storage with a tensor the open tape saved");
  cr_assert_not_null(sg_data_f32_mut(y), "an output nobody saved: %s", sg_last_error());
  cr_assert_eq(sg_tape_end(y, NULL, &t, 1, &r), SG_OK, "%s", sg_last_error());
  cr_assert_not_null(sg_data_f32_mut(t), "after the tape: %s", sg_last_error());
  cr_assert_not_null(sg_data_f32_mut(u), "after the tape: %s", sg_last_error());
  sg_tensor *all[] = {t, u, y, z, r};
  for (int i = 0; i < 5; i++) sg_dispose(all[i]);
}

Test(data_f32_mut, refuses_other_dtypes_and_bad_arguments) {
  const int64_t n = 2;
  const int32_t iv[2] = {1, 2};
  sg_tensor *i = sg_tensor_i32(iv, &n, 1);
  REFUSED(i, SG_ERR_DTYPE, "i32, not f32");
  sg_dispose(i);
  REFUSED(NULL, SG_ERR_ARG, "NULL");
  sg_tensor *d = sg_ones(&n, 1);
  sg_dispose(d);
  REFUSED(d, SG_ERR_STATE, "disposed");
}
