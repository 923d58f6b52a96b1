/* simdgrad: zero-copy exchange with other frameworks through DLPack (NumPy, PyTorch, JAX, ...).
 *
 * Needs <dlpack/dlpack.h> (Debian: libdlpack-dev, DLPack 0.6; any later one will do) on the
 * include path; the library has these functions only when it was built with such a header
 * (docs/embedding.md, "DLPack"). Both forms are there whichever header that was: DLPack 0.6's
 * DLManagedTensor and DLPack 1.x's DLManagedTensorVersioned (a complete type only where the
 * consumer's header is DLPack 1.x; with 0.6 it is an opaque struct, enough to pass it on).
 * Both directions share the buffer, row-major and contiguous, for f32, i32 and bool tensors on
 * the CPU. Bool is DLPack's kDLBool (code 6) in the versioned form and, in the unversioned one,
 * where the library's header has it (DLPack >= 0.8), else 8-bit kDLUInt holding 0 or 1; on the
 * way in both are read as bool.
 */
#ifndef SIMDGRAD_DLPACK_H
#define SIMDGRAD_DLPACK_H

#include <dlpack/dlpack.h>
#include <simdgrad/simdgrad.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A DLManagedTensor over t's buffer (no copy), holding a reference to t until its deleter runs:
   t may be disposed (or its scope end) before the consumer is done. Its shape and strides arrays
   (row-major strides, in elements) live as long as it does. The deleter may run on any thread,
   at most once. NULL + an error if t is NULL or disposed, or memory runs out.
   The consumer sees a writable pointer, but simdgrad's tensors are immutable to the engine:
   writing through it while any op, a tape or another tensor may read the buffer is undefined
   (sg_data_f32_mut's rules apply); a variable changes under the consumer on sg_assign and
   sg_optimizer_step. */
SG_API DLManagedTensor *sg_to_dlpack(sg_tensor *t);

/* A tensor over m's buffer (no copy), tracked by the scope like any new tensor. Takes ownership
   of m in every case, as sg_tensor_wrap_f32 takes its buffer: m->deleter(m) runs exactly once,
   when the tensor's last reference (views included) goes, or before this returns NULL.
   Refused (NULL, the error names the rule): a device other than kDLCPU (SG_ERR_UNSUPPORTED), a
   dtype other than float32, int32 or bool, or lanes != 1 (SG_ERR_DTYPE), ndim outside
   [0, SG_MAX_RANK] or a negative dimension (SG_ERR_SHAPE), strides other than row-major
   contiguous (SG_ERR_ARG; a dimension of size 1 may have any stride; NULL strides are
   row-major), an 8-bit unsigned tensor holding a value other than 0 or 1 (SG_ERR_DTYPE), data
   not aligned to its element (SG_ERR_ARG). byte_offset is honoured. The buffer must not change
   behind the engine's back while ops may read it. */
SG_API sg_tensor *sg_from_dlpack(DLManagedTensor *m);

struct DLManagedTensorVersioned; /* DLPack 1.x; defined by its header, opaque under 0.6 */

/* sg_to_dlpack in DLPack 1.x's versioned form: version {1, 0}, flags 0 (writable, under the
   same rules as above). */
SG_API struct DLManagedTensorVersioned *sg_to_dlpack_versioned(sg_tensor *t);

/* sg_from_dlpack for DLPack 1.x's versioned form, with the same rules and ownership, and two
   more: a major version other than 1 is refused (SG_ERR_UNSUPPORTED) before any other field is
   read, and a tensor flagged DLPACK_FLAG_BITMASK_READ_ONLY is one sg_data_f32_mut refuses. */
SG_API sg_tensor *sg_from_dlpack_versioned(struct DLManagedTensorVersioned *m);

#ifdef __cplusplus
}
#endif

#endif /* SIMDGRAD_DLPACK_H */
