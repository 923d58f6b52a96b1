/* What the two DLPack forms share (engine/dlpack.c, the 0.6 DLManagedTensor, and
 * engine/dlpack_versioned.c, DLPack 1.x's DLManagedTensorVersioned): filling a DLTensor from a
 * tensor, and checking and wrapping one that comes in. */
#ifndef SG_DLPACK_INTERNAL_H
#define SG_DLPACK_INTERNAL_H

#include <simdgrad/dlpack.h>

#include "engine.h"

/* Debian 12's header is DLPack 0.6, which has no versioned form. The library exports
   sg_to_dlpack_versioned and sg_from_dlpack_versioned whatever header it was built with (its
   ABI must not depend on that), so without a DLPack 1.x header it lays the struct out itself,
   as DLPack 1.x defines it: this layout is DLPack's stable ABI for major version 1 (the same
   DLTensor, after a version, the manager's context, its deleter and the flags). Built against a
   DLPack 1.x header, the header's own definition is used and nothing here is compiled. */
#if !defined(DLPACK_MAJOR_VERSION) || DLPACK_MAJOR_VERSION < 1
#define SG_DL_OWN_VERSIONED_LAYOUT 1
typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
};
typedef struct DLManagedTensorVersioned DLManagedTensorVersioned;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)
#endif

/* DLPack's bool code, kDLBool since DLPack 0.8 (0.6 has none). Both forms accept it, and 8-bit
   kDLUInt holding 0 or 1, as bool; the versioned form also writes it. */
#define SG_DL_CODE_BOOL 6u

/* The major version the versioned functions read and write. */
#define SG_DL_VERSIONED_MAJOR 1u
#define SG_DL_VERSIONED_MINOR 0u

/* d over t's buffer, row-major, with shape and strides written to the caller's arrays (which
   must live as long as d); a bool tensor gets bool_code. */
void sg__dl_describe(DLTensor *d, int64_t *shape, int64_t *strides, const sg_tensor *t,
                     uint8_t bool_code);

/* A tensor over d's buffer whose deleter(data, ctx) runs with its last reference, or NULL + an
   error naming the rule d breaks; deleter has then run already. */
sg_tensor *sg__dl_import(const DLTensor *d, sg_deleter deleter, void *ctx, const char *op);

#endif /* SG_DLPACK_INTERNAL_H */
