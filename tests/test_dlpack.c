/* DLPack (include/simdgrad/dlpack.h): sg_to_dlpack and sg_from_dlpack share the buffer both
 * ways, each managed tensor's deleter runs exactly once on every path (use, refusal, scope end,
 * a view outliving its source), and each refusal names its rule. */
#include <simdgrad/dlpack.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* ---- A producer whose deleter counts --------------------------------------------------------- */

typedef struct producer {
  DLManagedTensor managed;
  int64_t shape[SG_MAX_RANK];
  int64_t strides[SG_MAX_RANK];
  void *buf;
  int *calls;
} producer;

static void producer_deleter(DLManagedTensor *m) {
  producer *p = m->manager_ctx;
  (*p->calls)++;
  free(p->buf);
  free(p);
}

/* A managed CPU tensor of n elements of `bytes` each over a fresh buffer (0, 1, 2, ... as the
   dtype), row-major, strides NULL. */
static producer *produce(DLDataType dtype, const int64_t *shape, int ndim, int *calls) {
  producer *p = calloc(1, sizeof *p);
  cr_assert_not_null(p);
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= p->shape[i] = shape[i];
  size_t bytes = (size_t)dtype.bits / 8;
  p->buf = calloc((size_t)(n > 0 ? n : 1), bytes);
  cr_assert_not_null(p->buf);
  for (int64_t i = 0; i < n; i++) {
    if (dtype.code == kDLFloat)
      ((float *)p->buf)[i] = (float)i;
    else if (bytes == 4)
      ((int32_t *)p->buf)[i] = (int32_t)i;
    else
      ((uint8_t *)p->buf)[i] = (uint8_t)(i % 2);
  }
  p->calls = calls;
  p->managed.dl_tensor = (DLTensor){.data = p->buf,
                                    .device = {kDLCPU, 0},
                                    .ndim = ndim,
                                    .dtype = dtype,
                                    .shape = p->shape,
                                    .strides = NULL,
                                    .byte_offset = 0};
  p->managed.manager_ctx = p;
  p->managed.deleter = producer_deleter;
  return p;
}

static const DLDataType F32 = {kDLFloat, 32, 1}, I32 = {kDLInt, 32, 1};
#if defined(DLPACK_MAJOR_VERSION) || DLPACK_VERSION >= 80
static const DLDataType BOOL8 = {kDLBool, 8, 1};
#else
static const DLDataType BOOL8 = {kDLUInt, 8, 1};
#endif

/* ---- Import ---------------------------------------------------------------------------------- */

Test(dlpack, from_dlpack_shares_the_buffer_and_deletes_once) {
  int64_t live = t_live_tensors();
  int calls = 0;
  const int64_t shape[2] = {3, 4};
  producer *p = produce(F32, shape, 2, &calls);
  void *buf = p->buf;
  sg_tensor *t = sg_from_dlpack(&p->managed);
  cr_assert_not_null(t, "%s", sg_last_error());
  cr_assert_eq((const void *)sg_data_f32(t), buf, "no copy");
  cr_assert_eq(sg_rank(t), 2);
  cr_assert_eq(sg_shape(t)[1], 4);
  sg_tensor *s = sg_sum(t, NULL, 0, false);
  cr_assert_float_eq(sg_data_f32(s)[0], 66.0f, 0);
  sg_dispose(s);
  const int64_t flat = 12;
  sg_tensor *v = sg_reshape(t, &flat, 1);
  sg_dispose(t);
  cr_assert_eq(calls, 0, "the view still reads the buffer");
  sg_dispose(v);
  cr_assert_eq(calls, 1);
  cr_assert_eq(t_live_tensors(), live);
}

Test(dlpack, from_dlpack_i32_bool_offset_and_size_one_strides) {
  int calls = 0;
  const int64_t shape[3] = {2, 1, 3};
  producer *p = produce(I32, shape, 3, &calls);
  int64_t strides[3] = {3, 99, 1}; /* a size-1 axis may have any stride */
  p->managed.dl_tensor.strides = strides;
  p->managed.dl_tensor.byte_offset = 0;
  sg_tensor *t = sg_from_dlpack(&p->managed);
  cr_assert_not_null(t, "%s", sg_last_error());
  cr_assert_eq(sg_data_i32(t)[5], 5);
  sg_dispose(t);
  cr_assert_eq(calls, 1);

  /* byte_offset: the tensor starts 4 floats into the buffer */
  const int64_t n = 8, four = 4;
  p = produce(F32, &n, 1, &calls);
  p->shape[0] = four;
  p->managed.dl_tensor.byte_offset = 4 * sizeof(float);
  t = sg_from_dlpack(&p->managed);
  cr_assert_not_null(t, "%s", sg_last_error());
  cr_assert_eq((const void *)sg_data_f32(t), (char *)p->buf + 16);
  cr_assert_float_eq(sg_data_f32(t)[0], 4.0f, 0);
  sg_dispose(t);
  cr_assert_eq(calls, 2);

  p = produce(BOOL8, &n, 1, &calls);
  t = sg_from_dlpack(&p->managed);
  cr_assert_not_null(t, "%s", sg_last_error());
  cr_assert_eq(sg_dtype_of(t), SG_BOOL);
  cr_assert_eq(sg_data_bool(t)[3], 1);
  sg_dispose(t);
  cr_assert_eq(calls, 3);

  /* DLPack 1.x producers label bool with kDLBool (code 6) even in this form; 0.6 has no name
     for it */
  p = produce((DLDataType){6, 8, 1}, &n, 1, &calls);
  t = sg_from_dlpack(&p->managed);
  cr_assert_not_null(t, "%s", sg_last_error());
  cr_assert_eq(sg_dtype_of(t), SG_BOOL);
  sg_dispose(t);
  cr_assert_eq(calls, 4);
}

Test(dlpack, scope_end_deletes_the_import) {
  int calls = 0;
  const int64_t n = 5;
  sg_scope_begin("import");
  cr_assert_not_null(sg_from_dlpack(&produce(F32, &n, 1, &calls)->managed));
  sg_scope_end(NULL, 0);
  cr_assert_eq(calls, 1);
}

/* Each refusal: NULL, the rule in the message, the producer's deleter run once (ownership is
   taken in every case, as sg_tensor_wrap_f32 takes its buffer). */
static void refused(producer *p, int *calls, sg_status st, const char *words) {
  int before = *calls;
  cr_assert_null(sg_from_dlpack(&p->managed));
  cr_assert_eq(sg_last_status(), st, "%s", sg_last_error());
  cr_assert(strstr(sg_last_error(), words), "'%s' lacks '%s'", sg_last_error(), words);
  cr_assert(strstr(sg_last_error(), "from_dlpack"), "%s", sg_last_error());
  cr_assert_eq(*calls, before + 1, "the deleter ran once");
  sg_clear_error();
}

Test(dlpack, refusals_name_the_rule_and_delete_once) {
  int calls = 0;
  const int64_t shape[2] = {2, 3}, n = 4;
  producer *p = produce(F32, shape, 2, &calls);
  p->managed.dl_tensor.device = (DLDevice){kDLCUDA, 1};
  refused(p, &calls, SG_ERR_UNSUPPORTED, "not the CPU");

  p = produce((DLDataType){kDLFloat, 64, 1}, shape, 2, &calls);
  refused(p, &calls, SG_ERR_DTYPE, "64 bits is not supported");

  p = produce(F32, shape, 2, &calls);
  p->managed.dl_tensor.dtype.lanes = 4;
  refused(p, &calls, SG_ERR_DTYPE, "4 lanes");

  p = produce(F32, shape, 2, &calls);
  int64_t transposed[2] = {1, 2};
  p->managed.dl_tensor.strides = transposed;
  refused(p, &calls, SG_ERR_ARG, "not contiguous row-major");

  p = produce(F32, shape, 2, &calls);
  p->managed.dl_tensor.ndim = SG_MAX_RANK + 1;
  refused(p, &calls, SG_ERR_SHAPE, "ndim 9 is outside");

  p = produce(BOOL8, &n, 1, &calls);
  ((uint8_t *)p->buf)[2] = 7;
  refused(p, &calls, SG_ERR_DTYPE, "bool must be 0 or 1");

  p = produce(F32, &n, 1, &calls);
  p->managed.dl_tensor.byte_offset = 2; /* misaligned floats */
  refused(p, &calls, SG_ERR_ARG, "not aligned");

  cr_assert_null(sg_from_dlpack(NULL));
  cr_assert_eq(sg_last_status(), SG_ERR_ARG);
  sg_clear_error();
}

/* ---- Export ---------------------------------------------------------------------------------- */

Test(dlpack, to_dlpack_shares_and_holds_a_reference) {
  int64_t live = t_live_tensors();
  const int64_t shape[2] = {2, 3};
  sg_tensor *t = sg_random_uniform(shape, 2, -1, 1, 7);
  const float *data = sg_data_f32(t);
  DLManagedTensor *m = sg_to_dlpack(t);
  cr_assert_not_null(m, "%s", sg_last_error());
  DLTensor *d = &m->dl_tensor;
  cr_assert_eq(d->data, (const void *)data);
  cr_assert_eq(d->device.device_type, kDLCPU);
  cr_assert_eq(d->ndim, 2);
  cr_assert_eq(d->shape[0], 2);
  cr_assert_eq(d->shape[1], 3);
  cr_assert_eq(d->strides[0], 3);
  cr_assert_eq(d->strides[1], 1);
  cr_assert(d->dtype.code == kDLFloat && d->dtype.bits == 32 && d->dtype.lanes == 1);
  sg_dispose(t);
  cr_assert_eq(t_live_tensors(), live + 1, "the managed tensor holds it");
  cr_assert_float_eq(((float *)d->data)[5], data[5], 0);
  m->deleter(m);
  cr_assert_eq(t_live_tensors(), live);
}

Test(dlpack, to_dlpack_in_a_scope_outlives_it) {
  int64_t live = t_live_tensors();
  const int64_t n = 3;
  sg_scope_begin("export");
  const int32_t v[3] = {4, 5, 6};
  DLManagedTensor *m = sg_to_dlpack(sg_tensor_i32(v, &n, 1));
  sg_scope_end(NULL, 0);
  cr_assert_not_null(m);
  cr_assert(m->dl_tensor.dtype.code == kDLInt && m->dl_tensor.dtype.bits == 32);
  cr_assert_eq(((int32_t *)m->dl_tensor.data)[2], 6);
  m->deleter(m);
  cr_assert_eq(t_live_tensors(), live);
  cr_assert_null(sg_to_dlpack(NULL));
  sg_clear_error();
}

/* To and back: the same buffer; the import's end runs the export's deleter, which drops the
   reference on the original. */
Test(dlpack, round_trip_shares_the_pointer) {
  int64_t live = t_live_tensors();
  const int64_t n = 6;
  const uint8_t b[6] = {1, 0, 1, 1, 0, 0};
  sg_tensor *src[3] = {sg_random_normal(&n, 1, 0, 1, 3), sg_tensor_i32(NULL, &n, 1),
                       sg_tensor_bool(b, &n, 1)};
  for (int i = 0; i < 3; i++) {
    const void *data = i == 0   ? (const void *)sg_data_f32(src[i])
                       : i == 1 ? (const void *)sg_data_i32(src[i])
                                : (const void *)sg_data_bool(src[i]);
    sg_tensor *back = sg_from_dlpack(sg_to_dlpack(src[i]));
    cr_assert_not_null(back, "%s", sg_last_error());
    cr_assert_eq(sg_dtype_of(back), sg_dtype_of(src[i]));
    const void *back_data = i == 0   ? (const void *)sg_data_f32(back)
                            : i == 1 ? (const void *)sg_data_i32(back)
                                     : (const void *)sg_data_bool(back);
    cr_assert_eq(back_data, data, "one buffer");
    sg_dispose(src[i]);
    cr_assert_eq(t_live_tensors(), live + 4 - i, "back keeps the original alive");
    sg_dispose(back);
    cr_assert_eq(t_live_tensors(), live + 2 - i);
  }
}
