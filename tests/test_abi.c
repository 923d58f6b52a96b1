/* The versions and the kernel ABI: the version macros against the library, and the layout of
 * struct sg_backend pinned slot by slot (docs/embedding.md, "ABI policy"). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

Test(version, macros_match_the_library) {
  cr_assert_eq(sg_version(), SG_VERSION_MAJOR * 10000 + SG_VERSION_MINOR * 100 + SG_VERSION_PATCH);
  cr_assert_eq(sg_version(), SG_VERSION);
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", SG_VERSION_MAJOR, SG_VERSION_MINOR, SG_VERSION_PATCH);
  cr_assert_str_eq(sg_version_string(), want);
}

/* ---- struct sg_backend's layout (Note [Appending slots] in backend.h) ---- */

/* Every slot of ABI version 1 in the order of its release, written out here rather than taken
   from the op lists, so that a slot inserted in the middle of the struct (or of a frozen list)
   moves the offsets below and fails. A slot appended in a later release is appended here too. */
#define SLOT(name) {#name, offsetof(sg_backend, name)},
static const struct {
  const char *name;
  size_t offset;
} k_slots[] = {
    // clang-format off
    SLOT(neg) SLOT(neg_backward) SLOT(abs) SLOT(abs_backward) SLOT(exp) SLOT(exp_backward)
    SLOT(expm1) SLOT(expm1_backward) SLOT(log) SLOT(log_backward) SLOT(log1p)
    SLOT(log1p_backward) SLOT(sqrt) SLOT(sqrt_backward) SLOT(rsqrt) SLOT(rsqrt_backward)
    SLOT(square) SLOT(square_backward) SLOT(reciprocal) SLOT(reciprocal_backward) SLOT(relu)
    SLOT(relu_backward) SLOT(relu6) SLOT(relu6_backward) SLOT(elu) SLOT(elu_backward) SLOT(selu)
    SLOT(selu_backward) SLOT(sigmoid) SLOT(sigmoid_backward) SLOT(tanh) SLOT(tanh_backward)
    SLOT(softplus) SLOT(softplus_backward) SLOT(gelu) SLOT(gelu_backward) SLOT(sin)
    SLOT(sin_backward) SLOT(cos) SLOT(cos_backward) SLOT(floor) SLOT(ceil) SLOT(round) SLOT(sign)
    SLOT(add) SLOT(add_backward) SLOT(sub) SLOT(sub_backward) SLOT(mul) SLOT(mul_backward)
    SLOT(div) SLOT(div_backward) SLOT(pow) SLOT(pow_backward) SLOT(maximum)
    SLOT(maximum_backward) SLOT(minimum) SLOT(minimum_backward) SLOT(squared_difference)
    SLOT(squared_difference_backward) SLOT(equal) SLOT(not_equal) SLOT(less) SLOT(less_equal)
    SLOT(greater) SLOT(greater_equal) SLOT(leaky_relu) SLOT(leaky_relu_backward) SLOT(clip)
    SLOT(clip_backward) SLOT(fill) SLOT(where) SLOT(where_backward) SLOT(reduce_sum)
    SLOT(reduce_sum_backward) SLOT(reduce_max) SLOT(reduce_max_backward) SLOT(reduce_min)
    SLOT(reduce_min_backward) SLOT(reduce_logsumexp) SLOT(reduce_logsumexp_backward) SLOT(argmax)
    SLOT(argmin) SLOT(softmax) SLOT(softmax_backward) SLOT(log_softmax)
    SLOT(log_softmax_backward) SLOT(softmax_cross_entropy) SLOT(softmax_cross_entropy_backward)
    SLOT(gemm) SLOT(gemm_taps) SLOT(transpose) SLOT(scatter_add) SLOT(im2col) SLOT(col2im)
    SLOT(depthwise_conv2d) SLOT(depthwise_conv2d_backward_input)
    SLOT(depthwise_conv2d_backward_filter) SLOT(max_pool) SLOT(avg_pool) SLOT(max_pool_backward)
    SLOT(avg_pool_backward) SLOT(batch_norm) SLOT(batch_norm_backward) SLOT(dropout)
    SLOT(sgd_update) SLOT(momentum_update) SLOT(adam_update)
    /* 0.3 */
    SLOT(cast_f32_i32) SLOT(cast_i32_f32)
    // clang-format on
};
#undef SLOT
#define N_SLOTS (sizeof k_slots / sizeof k_slots[0])

/* The header's three fields on LP64 (x86-64, aarch64), then one pointer per slot from byte
   24 on, with no padding anywhere. */
Test(abi, header_fields_are_pinned) {
  cr_assert_eq(sizeof(void *), 8, "the pinned layout is the LP64 one");
  cr_assert_eq(offsetof(sg_backend, size), 0);
  cr_assert_eq(offsetof(sg_backend, abi_version), 8);
  cr_assert_eq(offsetof(sg_backend, name), 16);
  cr_assert_eq(SG_BACKEND_ABI_VERSION, 1);
}

Test(abi, every_slot_offset_is_pinned) {
  cr_assert_eq(N_SLOTS, 108 + 2, "ABI version 1 has 108 kernel slots, and 0.3 appended 2");
  for (size_t i = 0; i < N_SLOTS; i++)
    cr_assert_eq(k_slots[i].offset, 24 + 8 * i,
                 "slot %s is at byte %zu, ABI version 1 has it at %zu: a slot was inserted or "
                 "removed before it (append new slots at the end, Note [Appending slots])",
                 k_slots[i].name, k_slots[i].offset, 24 + 8 * i);
  cr_assert_eq(sizeof(sg_backend), 24 + 8 * N_SLOTS,
               "sg_backend has %zu bytes, its pinned slots end at %zu: list an appended slot "
               "in k_slots",
               sizeof(sg_backend), 24 + 8 * N_SLOTS);
}

/* Every table the library hands out says its size and ABI version and fills every slot. */
static void check_table(const sg_backend *b, const char *what) {
  cr_assert_not_null(b, "%s", what);
  cr_assert_eq(b->size, sizeof(sg_backend), "%s: size", what);
  cr_assert_eq(b->abi_version, SG_BACKEND_ABI_VERSION, "%s: abi_version", what);
  cr_assert_not_null(b->name, "%s: name", what);
  for (size_t i = 0; i < N_SLOTS; i++) {
    void *slot;
    memcpy(&slot, (const char *)b + k_slots[i].offset, sizeof slot);
    cr_assert_not_null(slot, "%s: slot %s is NULL", what, k_slots[i].name);
  }
  cr_assert(SG_BACKEND_HAS(b, cast_i32_f32), "%s: SG_BACKEND_HAS on the last slot", what);
}

Test(abi, every_table_has_size_version_and_slots) {
  static const char *const names[] = {"scalar", "avx2", "avx512", "neon"};
  check_table(sg_backend_current(), "current");
  for (int i = 0; i < 4; i++)
    if (sg_backend_available(names[i])) check_table(sg_backend_get(names[i]), names[i]);
}

/* What a program compiled against a newer header sees in an older library's table: a slot
   beyond b->size is absent. */
Test(abi, has_is_false_beyond_size) {
  sg_backend b = *sg_backend_current();
  cr_assert(SG_BACKEND_HAS(&b, gemm));
  b.size = offsetof(sg_backend, gemm);
  cr_assert(!SG_BACKEND_HAS(&b, gemm));
  cr_assert(SG_BACKEND_HAS(&b, softmax_cross_entropy_backward));
  b.softmax_cross_entropy_backward = NULL;
  cr_assert(!SG_BACKEND_HAS(&b, softmax_cross_entropy_backward));
}
