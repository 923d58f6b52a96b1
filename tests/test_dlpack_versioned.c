/* DLPack 1.x's versioned form (sg_to_dlpack_versioned, sg_from_dlpack_versioned): the version
 * stamp is written, and checked before anything else is read; the read-only flag is honoured;
 * the buffer is shared both ways and each deleter runs exactly once. The struct comes from the
 * DLPack header when it is 1.x, else from the engine's own layout of it, so this suite runs
 * against whichever the library was built with. */
#include <stdlib.h>
#include <string.h>

#include "engine/dlpack_internal.h"
#include "support.h"

typedef struct producer {
  DLManagedTensorVersioned managed;
  int64_t shape[1];
  float *buf;
  int *calls;
} producer;

static void producer_deleter(DLManagedTensorVersioned *m) {
  producer *p = m->manager_ctx;
  (*p->calls)++;
  free(p->buf);
  free(p);
}

/* A versioned f32 vector 0, 1, ..., n-1 of version {1, minor} and the given flags. */
static producer *produce(int64_t n, uint32_t minor, uint64_t flags, int *calls) {
  producer *p = calloc(1, sizeof *p);
  cr_assert_not_null(p);
  p->buf = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
  cr_assert_not_null(p->buf);
  for (int64_t i = 0; i < n; i++) p->buf[i] = (float)i;
  p->shape[0] = n;
  p->calls = calls;
  p->managed.version.major = 1;
  p->managed.version.minor = minor;
  p->managed.flags = flags;
  p->managed.dl_tensor = (DLTensor){.data = p->buf,
                                    .device = {kDLCPU, 0},
                                    .ndim = 1,
                                    .dtype = {kDLFloat, 32, 1},
                                    .shape = p->shape};
  p->managed.manager_ctx = p;
  p->managed.deleter = producer_deleter;
  return p;
}

Test(dlpack_versioned, import_shares_the_buffer_and_deletes_once) {
  int64_t live = t_live_tensors();
  int calls = 0;
  producer *p = produce(10, 3, 0, &calls); /* a later minor version only adds enum values */
  float *buf = p->buf;
  sg_tensor *t = sg_from_dlpack_versioned(&p->managed);
  cr_assert_not_null(t, "%s", sg_last_error());
  cr_assert_eq(sg_data_f32(t), buf, "no copy");
  sg_tensor *s = sg_sum(t, NULL, 0, false);
  cr_assert_float_eq(sg_data_f32(s)[0], 45.0f, 0);
  sg_dispose(s);
  cr_assert_eq(sg_data_f32_mut(t), buf, "writable: the producer did not forbid it");
  sg_dispose(t);
  cr_assert_eq(calls, 1);
  cr_assert_eq(t_live_tensors(), live);
}

Test(dlpack_versioned, read_only_is_honoured) {
  int calls = 0;
  producer *p = produce(4, 0, DLPACK_FLAG_BITMASK_READ_ONLY, &calls);
  sg_tensor *t = sg_from_dlpack_versioned(&p->managed);
  cr_assert_not_null(t, "%s", sg_last_error());
  cr_assert_float_eq(sg_data_f32(t)[3], 3.0f, 0, "reading is fine");
  cr_assert_null(sg_data_f32_mut(t));
  cr_assert_eq(sg_last_status(), SG_ERR_STATE);
  cr_assert(strstr(sg_last_error(), "read-only"), "%s", sg_last_error());
  sg_clear_error();
  sg_dispose(t);
  cr_assert_eq(calls, 1);
}

/* DLPack: on another major version, call the deleter and read nothing else. The DLTensor here
   is garbage on purpose; reading it would trip the sanitizers or the checks. */
Test(dlpack_versioned, another_major_version_is_refused_unread) {
  int calls = 0;
  producer *p = produce(4, 0, 0, &calls);
  p->managed.version.major = 2;
  p->managed.dl_tensor.ndim = -5;
  p->managed.dl_tensor.device.device_type = (DLDeviceType)99;
  cr_assert_null(sg_from_dlpack_versioned(&p->managed));
  cr_assert_eq(sg_last_status(), SG_ERR_UNSUPPORTED);
  cr_assert(strstr(sg_last_error(), "major version 2"), "%s", sg_last_error());
  cr_assert_eq(calls, 1);
  sg_clear_error();

  p = produce(4, 0, 0, &calls); /* the checks the unversioned form makes apply too */
  p->managed.dl_tensor.device = (DLDevice){kDLCUDA, 0};
  cr_assert_null(sg_from_dlpack_versioned(&p->managed));
  cr_assert(strstr(sg_last_error(), "from_dlpack_versioned") &&
                strstr(sg_last_error(), "not the CPU"),
            "%s", sg_last_error());
  cr_assert_eq(calls, 2);
  cr_assert_null(sg_from_dlpack_versioned(NULL));
  cr_assert_eq(sg_last_status(), SG_ERR_ARG);
  sg_clear_error();
}

Test(dlpack_versioned, export_is_stamped_and_holds_a_reference) {
  int64_t live = t_live_tensors();
  const int64_t shape[2] = {2, 3}, n = 4;
  sg_tensor *t = sg_random_uniform(shape, 2, -1, 1, 7);
  const float *data = sg_data_f32(t);
  DLManagedTensorVersioned *m = sg_to_dlpack_versioned(t);
  cr_assert_not_null(m, "%s", sg_last_error());
  cr_assert_eq(m->version.major, 1);
  cr_assert_eq(m->version.minor, 0);
  cr_assert_eq(m->flags, 0);
  const DLTensor *d = &m->dl_tensor;
  cr_assert_eq(d->data, (const void *)data);
  cr_assert(d->ndim == 2 && d->shape[1] == 3 && d->strides[0] == 3 && d->strides[1] == 1);
  cr_assert(d->dtype.code == kDLFloat && d->dtype.bits == 32 && d->dtype.lanes == 1);
  sg_dispose(t);
  cr_assert_eq(t_live_tensors(), live + 1, "the managed tensor holds it");
  m->deleter(m);
  cr_assert_eq(t_live_tensors(), live);

  const uint8_t b[4] = {1, 0, 0, 1};
  sg_tensor *flags = sg_tensor_bool(b, &n, 1);
  m = sg_to_dlpack_versioned(flags);
  cr_assert_eq(m->dl_tensor.dtype.code, 6, "bool is kDLBool in DLPack 1.x");
  cr_assert_eq(m->dl_tensor.dtype.bits, 8);
  sg_tensor *back = sg_from_dlpack_versioned(m);
  cr_assert_not_null(back, "%s", sg_last_error());
  cr_assert_eq(sg_data_bool(back), sg_data_bool(flags), "one buffer");
  cr_assert_eq(sg_dtype_of(back), SG_BOOL);
  sg_dispose(flags);
  sg_dispose(back);
  cr_assert_eq(t_live_tensors(), live);
  cr_assert_null(sg_to_dlpack_versioned(NULL));
  sg_clear_error();
}
