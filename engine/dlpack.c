/* DLPack export and import (include/simdgrad/dlpack.h): the DLTensor both forms share, and the
 * unversioned DLManagedTensor of DLPack 0.6 (engine/dlpack_versioned.c has DLPack 1.x's form).
 * Compiled only when <dlpack/dlpack.h> was found (engine/CMakeLists.txt). */
#include <stdlib.h>

#include "dlpack_internal.h"

/* Bool in the unversioned form: DLPack's kDLBool where the header has it (0.8 and later), else
   8-bit kDLUInt holding 0 or 1, which 0.6's consumers (NumPy 1.2x, PyTorch 1.13) read. */
#if defined(DLPACK_MAJOR_VERSION) || DLPACK_VERSION >= 80
#define SG_DL_BOOL_CODE SG_DL_CODE_BOOL
#else
#define SG_DL_BOOL_CODE kDLUInt
#endif

/* The managed tensor and what it points into, in one block; the deleter frees it. */
typedef struct sg_dl_export {
  DLManagedTensor managed;
  int64_t shape[SG_MAX_RANK];
  int64_t strides[SG_MAX_RANK];
} sg_dl_export;

static void export_deleter(DLManagedTensor *m) {
  sg_tensor *t = m->manager_ctx;
  /* The reference sg_to_dlpack took, not the caller's (which the scope may still track). */
  sg__release(t);
  sg__free(m);
}

void sg__dl_describe(DLTensor *d, int64_t *shape, int64_t *strides, const sg_tensor *t,
                     uint8_t bool_code) {
  int64_t stride = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    shape[i] = t->shape[i];
    strides[i] = stride;
    stride *= t->shape[i];
  }
  d->data = t->data;
  d->device = (DLDevice){kDLCPU, 0};
  d->ndim = t->rank;
  switch (t->dtype) {
  case SG_F32:
    d->dtype = (DLDataType){kDLFloat, 32, 1};
    break;
  case SG_I32:
    d->dtype = (DLDataType){kDLInt, 32, 1};
    break;
  case SG_BOOL:
    d->dtype = (DLDataType){bool_code, 8, 1};
    break;
  }
  d->shape = shape;
  d->strides = strides;
  d->byte_offset = 0;
}

DLManagedTensor *sg_to_dlpack(sg_tensor *t) {
  const char *op = "to_dlpack";
  if (!sg__check(t, op, "t")) return NULL;
  sg_dl_export *e = sg__calloc(1, sizeof *e);
  if (!e) {
    sg__error(SG_ERR_OOM, op, "out of memory for a DLManagedTensor");
    return NULL;
  }
  sg__dl_describe(&e->managed.dl_tensor, e->shape, e->strides, t, SG_DL_BOOL_CODE);
  atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
  e->managed.manager_ctx = t;
  e->managed.deleter = export_deleter;
  return &e->managed;
}

static void import_deleter(void *data, void *ctx) {
  (void)data;
  DLManagedTensor *m = ctx;
  if (m->deleter) m->deleter(m);
}

/* The element type of d, or false + an error naming it. */
static bool import_dtype(const DLTensor *d, sg_dtype *out, const char *op) {
  DLDataType t = d->dtype;
  if (t.lanes != 1) {
    sg__error(SG_ERR_DTYPE, op, "dtype has %u lanes; only 1 (no vector types) is supported",
              (unsigned)t.lanes);
    return false;
  }
  if (t.code == kDLFloat && t.bits == 32)
    *out = SG_F32;
  else if (t.code == kDLInt && t.bits == 32)
    *out = SG_I32;
  else if ((t.code == SG_DL_CODE_BOOL || t.code == kDLUInt) && t.bits == 8)
    *out = SG_BOOL; /* 8-bit unsigned stands for bool: the caller checks for 0 and 1 */
  else {
    sg__error(SG_ERR_DTYPE, op,
              "dtype code %u with %u bits is not supported; only float32, int32 and bool "
              "(8-bit)",
              (unsigned)t.code, (unsigned)t.bits);
    return false;
  }
  return true;
}

/* True if d is row-major contiguous (NULL strides are). A dimension of size 1 may have any
   stride; an empty tensor is contiguous whatever its strides. */
static bool contiguous(const DLTensor *d, int *bad_axis) {
  if (!d->strides) return true;
  for (int i = 0; i < d->ndim; i++)
    if (d->shape[i] == 0) return true;
  int64_t expect = 1;
  for (int i = d->ndim - 1; i >= 0; i--) {
    if (d->shape[i] != 1 && d->strides[i] != expect) {
      *bad_axis = i;
      return false;
    }
    expect *= d->shape[i];
  }
  return true;
}

/* Refuses d (the error is set), or gives its dtype and element count. */
static bool import_check(const DLTensor *d, sg_dtype *dtype, int64_t *numel, const char *op) {
  if (d->device.device_type != kDLCPU) {
    sg__error(SG_ERR_UNSUPPORTED, op,
              "the tensor is on device type %d (id %d), not the CPU (kDLCPU); copy it to the "
              "CPU first",
              (int)d->device.device_type, (int)d->device.device_id);
    return false;
  }
  if (d->ndim < 0 || d->ndim > SG_MAX_RANK) {
    sg__error(SG_ERR_SHAPE, op, "ndim %d is outside [0, %d]", (int)d->ndim, SG_MAX_RANK);
    return false;
  }
  if (d->ndim > 0 && !d->shape) {
    sg__error(SG_ERR_SHAPE, op, "shape is NULL for ndim %d", (int)d->ndim);
    return false;
  }
  if (!import_dtype(d, dtype, op)) return false;
  if (!sg__check_shape(d->shape, d->ndim, op, numel)) return false;
  int axis = 0;
  if (!contiguous(d, &axis)) {
    char buf[SG_SHAPE_STR_MAX], sbuf[SG_SHAPE_STR_MAX];
    sg__error(SG_ERR_ARG, op,
              "the tensor is not contiguous row-major: shape %s, strides %s (axis %d); make a "
              "contiguous copy first",
              sg__shape_str(d->shape, d->ndim, buf, sizeof buf),
              sg__shape_str(d->strides, d->ndim, sbuf, sizeof sbuf), axis);
    return false;
  }
  return true;
}

sg_tensor *sg__dl_import(const DLTensor *d, sg_deleter deleter, void *ctx, const char *op) {
  sg_dtype dtype = SG_F32;
  int64_t numel = 0;
  bool ok = import_check(d, &dtype, &numel, op);
  char *data = ok && d->data ? (char *)d->data + d->byte_offset : NULL;
  if (ok && dtype == SG_BOOL && data) /* whatever the code says, only 0 and 1 may come in */
    for (int64_t i = 0; i < numel; i++)
      if ((unsigned char)data[i] > 1) {
        sg__error(SG_ERR_DTYPE, op,
                  "an 8-bit bool tensor holds %u at element %lld; bool must be 0 or 1",
                  (unsigned)(unsigned char)data[i], (long long)i);
        ok = false;
        break;
      }
  if (!ok) {
    deleter(data, ctx);
    return NULL;
  }
  return sg__wrap_user(data, dtype, d->shape, d->ndim, deleter, ctx, op);
}

sg_tensor *sg_from_dlpack(DLManagedTensor *m) {
  const char *op = "from_dlpack";
  sg__ensure_init();
  if (!m) {
    sg__error(SG_ERR_ARG, op, "m is NULL");
    return NULL;
  }
  return sg__dl_import(&m->dl_tensor, import_deleter, m, op);
}
