/* DLPack 1.x's DLManagedTensorVersioned (include/simdgrad/dlpack.h): the form NumPy 2, PyTorch
 * 2.x and JAX hand out when a consumer asks for max_version (1, 0). It differs from the 0.6 form
 * in the version stamp, which must be checked before anything else is read, and in the flags. */
#include <stddef.h>
#include <stdlib.h>

#include "dlpack_internal.h"

/* A consumer may rely on these: DLPack 1.x put the version first and the DLTensor after the
   flags, and a struct of our own making must agree with the header's. */
_Static_assert(offsetof(DLManagedTensorVersioned, version) == 0, "version comes first");
_Static_assert(offsetof(DLManagedTensorVersioned, manager_ctx) == 8, "DLPack 1.x layout");
_Static_assert(offsetof(DLManagedTensorVersioned, flags) == 24, "DLPack 1.x layout");
_Static_assert(offsetof(DLManagedTensorVersioned, dl_tensor) == 32, "DLPack 1.x layout");

typedef struct sg_dl_export_versioned {
  DLManagedTensorVersioned managed;
  int64_t shape[SG_MAX_RANK];
  int64_t strides[SG_MAX_RANK];
} sg_dl_export_versioned;

static void export_deleter(DLManagedTensorVersioned *m) {
  sg__release(m->manager_ctx); /* the reference sg_to_dlpack_versioned took */
  sg__free(m);
}

DLManagedTensorVersioned *sg_to_dlpack_versioned(sg_tensor *t) {
  const char *op = "to_dlpack_versioned";
  if (!sg__check(t, op, "t")) return NULL;
  sg_dl_export_versioned *e = sg__calloc(1, sizeof *e);
  if (!e) {
    sg__error(SG_ERR_OOM, op, "out of memory for a DLManagedTensorVersioned");
    return NULL;
  }
  e->managed.version.major = SG_DL_VERSIONED_MAJOR;
  e->managed.version.minor = SG_DL_VERSIONED_MINOR;
  /* Writable, as in the unversioned form: the rules of sg_data_f32_mut apply to the consumer
     (docs/embedding.md); marking it read-only would make PyTorch refuse it. */
  e->managed.flags = 0;
  sg__dl_describe(&e->managed.dl_tensor, e->shape, e->strides, t, SG_DL_CODE_BOOL);
  atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
  e->managed.manager_ctx = t;
  e->managed.deleter = export_deleter;
  return &e->managed;
}

static void import_deleter(void *data, void *ctx) {
  (void)data;
  DLManagedTensorVersioned *m = ctx;
  if (m->deleter) m->deleter(m);
}

sg_tensor *sg_from_dlpack_versioned(DLManagedTensorVersioned *m) {
  const char *op = "from_dlpack_versioned";
  sg__ensure_init();
  if (!m) {
    sg__error(SG_ERR_ARG, op, "m is NULL");
    return NULL;
  }
  /* Another major version may lay out everything after the deleter differently: DLPack says
     to call the deleter and read nothing else. */
  if (m->version.major != SG_DL_VERSIONED_MAJOR) {
    sg__error(SG_ERR_UNSUPPORTED, op,
              "DLPack major version %u; this library reads major version %u (the producer's "
              "deleter was called)",
              (unsigned)m->version.major, SG_DL_VERSIONED_MAJOR);
    import_deleter(NULL, m);
    return NULL;
  }
  bool read_only = (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
  sg_tensor *t = sg__dl_import(&m->dl_tensor, import_deleter, m, op);
  if (t && read_only) t->storage->read_only = true;
  return t;
}
