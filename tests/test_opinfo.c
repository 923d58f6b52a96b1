/* Coverage of the op-info tables (opinfo/opinfo.h): every slot of backend.h's op lists has a row,
 * and every row has each field its consumers read (the value and gradient tests, the
 * conformance tests, the accuracy report, the bench). No consumer falls back to a default, so a
 * slot added to a list fails here until its row is written. */
#include <math.h>
#include <string.h>

#include "opinfo.h"
#include "support.h"

static bool has_range(opinfo_range r) { return r.lo < r.hi; }

typedef enum { SAVED_NONE, SAVED_X, SAVED_Y } saved_kind;

static void check_unary(const char *name, saved_kind saved, bool step) {
  const opinfo_unary *u = opinfo_unary_find(name);
  cr_assert_not_null(u, "no op-info row for the unary op %s (opinfo/opinfo_unary.c)", name);
  cr_expect_not_null(u->ref, "%s: no .ref", name);
  cr_expect(step ? !u->dref : u->dref != NULL, "%s: .dref must be %s", name,
            step ? "NULL (a step op)" : "given");
  cr_expect(saved == SAVED_Y ? u->dref_y != NULL : !u->dref_y,
            "%s: .dref_y must be given exactly when the op saves y", name);
  cr_expect(has_range(u->domain), "%s: no .domain", name);
  cr_expect(step || has_range(u->grad_domain), "%s: no .grad_domain", name);
  cr_expect(isnan(u->edge[0]), "%s: no .edge (f(NaN) is NaN for every op)", name);
  cr_expect(has_range(u->conf.domain), "%s: no .conf.domain", name);
  cr_expect(has_range(u->sweep), "%s: no .sweep", name);
  cr_expect(!u->sweep2_label || has_range(u->sweep2), "%s: .sweep2_label without .sweep2", name);
  cr_expect(has_range(u->bench_range), "%s: no .bench_range", name);
  cr_expect(u->flops.given, "%s: no .flops", name);
  cr_expect(!(u->promise.fwd > 0) || has_range(u->promise.fwd_range),
            "%s: .promise.fwd without .promise.fwd_range", name);
  cr_expect(!(u->promise.bwd > 0) || (!step && has_range(u->promise.bwd_range)),
            "%s: .promise.bwd without .promise.bwd_range or a backward", name);
}

static void check_binary(const char *name, bool has_backward) {
  const opinfo_binary *b = opinfo_binary_find(name);
  cr_assert_not_null(b, "no op-info row for the binary op %s (opinfo/opinfo_binary.c)", name);
  cr_expect_not_null(b->ref, "%s: no .ref", name);
  cr_expect(has_backward ? b->da && b->db : !b->da && !b->db, "%s: .da and .db must be %s", name,
            has_backward ? "given" : "NULL");
  cr_expect(has_range(b->domain) && has_range(b->domain_b), "%s: no .domain or .domain_b", name);
  cr_expect(has_range(b->conf.domain), "%s: no .conf.domain", name);
  cr_expect(has_range(b->sweep) && has_range(b->sweep_b), "%s: no .sweep or .sweep_b", name);
  cr_expect(has_range(b->bench_range) && has_range(b->bench_range_b), "%s: no .bench_range", name);
  cr_expect(b->flops.given, "%s: no .flops", name);
}

/* A kernel the conformance tests check (conf) and/or the bench counts (flops). */
static void check_kernel(const char *name, bool conf, bool flops) {
  const opinfo_kernel *k = opinfo_kernel_find(name);
  cr_assert_not_null(k,
                     "no op-info row for the kernel %s (opinfo/opinfo_reduce.c or "
                     "opinfo_kernel.c)",
                     name);
  if (conf) cr_expect(k->has_conf && has_range(k->conf.domain), "%s: no .conf", name);
  if (flops) cr_expect(k->flops.given, "%s: no .flops", name);
}

/* A row op's double reference (opinfo_row_ref): the members its consumers call are given, the
   others NULL. */
enum { R_REDUCE = 1, R_DX = 2, R_ARG = 4, R_MAP = 8, R_MAP_BACKWARD = 16, R_LOSS = 32 };
static void check_row_ref(const char *name, unsigned want) {
  const opinfo_kernel *k = opinfo_kernel_find(name);
  cr_assert_not_null(k, "no op-info row for the row op %s (opinfo/opinfo_reduce.c)", name);
  const opinfo_row_ref *f = &k->row_ref;
  const bool given[] = {f->reduce, f->dx, f->arg, f->map, f->map_backward, f->loss};
  static const char *const member[] = {"reduce", "dx", "arg", "map", "map_backward", "loss"};
  for (unsigned i = 0; i < sizeof given / sizeof *given; i++)
    cr_expect(given[i] == ((want >> i) & 1u), "%s: .row_ref.%s must be %s", name, member[i],
              (want >> i) & 1u ? "given (its double reference)" : "NULL");
}

#define UNARY_(nm, sv, doc) check_unary(#nm, SAVED_##sv, false);
#define STEP_(nm, doc) check_unary(#nm, SAVED_NONE, true);
#define BINARY_(nm, doc) check_binary(#nm, true);
#define COMPARE_(nm, doc) check_binary(#nm, false);
#define REDUCE_(nm, doc)                                                                           \
  check_kernel("reduce_" #nm, true, true);                                                         \
  check_row_ref("reduce_" #nm, R_REDUCE | R_DX);

Test(opinfo, every_slot_of_the_op_lists_has_a_full_row) {
  SG_FOR_EACH_UNARY_OP(UNARY_)
  SG_FOR_EACH_STEP_OP(STEP_)
  check_unary("leaky_relu", SAVED_X, false);
  check_unary("clip", SAVED_X, false);
  SG_FOR_EACH_BINARY_OP(BINARY_)
  SG_FOR_EACH_COMPARE_OP(COMPARE_)
  const opinfo_binary *w = opinfo_binary_find("where");
  cr_assert_not_null(w, "no op-info row for where");
  cr_expect(has_range(w->conf.domain) && w->flops.given && has_range(w->bench_range),
            "where: no .conf, .flops or .bench_range");
  SG_FOR_EACH_REDUCE_OP(REDUCE_)
  /* The other kernels the conformance tests or the differential fuzzers (tests/fuzz/) check,
     and the bench's FLOPs (bench_api.c, bench_elementwise.c, bench_rows.c). */
  static const char *const conf_and_flops[] = {
      "argmax",     "argmin",     "softmax",     "log_softmax",      "softmax_cross_entropy",
      "fill",       "transpose",  "scatter_add", "depthwise_conv2d", "max_pool",
      "avg_pool",   "batch_norm", "dropout",     "sgd_update",       "momentum_update",
      "adam_update"};
  static const char *const conf_only[] = {"softmax_cross_entropy:log_probs",
                                          "softmax_cross_entropy_backward:dlabels",
                                          "gemm",
                                          "gemm_taps",
                                          "depthwise_conv2d_backward_input",
                                          "depthwise_conv2d_backward_filter",
                                          "im2col",
                                          "col2im",
                                          "batch_norm_backward:sums"};
  static const char *const flops_only[] = {"conv2d", "cast_f32_i32", "cast_i32_f32"};
  for (size_t i = 0; i < sizeof conf_and_flops / sizeof *conf_and_flops; i++)
    check_kernel(conf_and_flops[i], true, true);
  for (size_t i = 0; i < sizeof conf_only / sizeof *conf_only; i++)
    check_kernel(conf_only[i], true, false);
  for (size_t i = 0; i < sizeof flops_only / sizeof *flops_only; i++)
    check_kernel(flops_only[i], false, true);
}

/* The other row ops' references (the reductions' are checked with their list above). */
Test(opinfo, every_row_op_has_its_double_reference) {
  check_row_ref("argmax", R_ARG);
  check_row_ref("argmin", R_ARG);
  check_row_ref("softmax", R_MAP | R_MAP_BACKWARD);
  check_row_ref("log_softmax", R_MAP | R_MAP_BACKWARD);
  check_row_ref("softmax_cross_entropy", R_LOSS | R_DX);
  check_row_ref("softmax_cross_entropy:log_probs", R_MAP);
  check_row_ref("softmax_cross_entropy_backward:dlabels", R_DX);
}

/* Every row names a slot: a row left behind by a renamed op is found too. */
#define NAME_(nm, ...) #nm,
Test(opinfo, every_row_names_a_slot) {
  static const char *const unary[] = {
      SG_FOR_EACH_UNARY_OP(NAME_) SG_FOR_EACH_STEP_OP(NAME_) "leaky_relu", "clip"};
  static const char *const binary[] = {SG_FOR_EACH_BINARY_OP(NAME_)
                                           SG_FOR_EACH_COMPARE_OP(NAME_) "where"};
  for (size_t i = 0; i < opinfo_unary_count; i++) {
    bool found = false;
    for (size_t j = 0; j < sizeof unary / sizeof *unary; j++)
      found |= strcmp(unary[j], opinfo_unary_table[i].name) == 0;
    cr_expect(found, "the unary row %s names no slot", opinfo_unary_table[i].name);
  }
  for (size_t i = 0; i < opinfo_binary_count; i++) {
    bool found = false;
    for (size_t j = 0; j < sizeof binary / sizeof *binary; j++)
      found |= strcmp(binary[j], opinfo_binary_table[i].name) == 0;
    cr_expect(found, "the binary row %s names no slot", opinfo_binary_table[i].name);
  }
}

/* The row references' documented rules (opinfo_row_ref), on hand values: the kernels' tests
   compare with these references on random rows, where ties and second NaNs do not occur. */
Test(opinfo, row_references_keep_their_nan_tie_and_empty_rules) {
  const float row[] = {1, 3, 3, 0, -2, -2}, nans[] = {2, NAN, 9, NAN};
  cr_expect_eq(t_row_ref("argmax")->arg(row, 6, 1), 1, "argmax: the first of tied maxima");
  cr_expect_eq(t_row_ref("argmin")->arg(row, 6, 1), 4, "argmin: the first of tied minima");
  cr_expect_eq(t_row_ref("argmax")->arg(nans, 4, 1), 1, "argmax: the first NaN wins");
  cr_expect_eq(t_row_ref("argmin")->arg(nans, 4, 1), 1, "argmin: the first NaN wins");
  cr_expect_eq(t_row_ref("argmax")->arg(row, 3, 2), 1, "argmax over a strided row");
  static const char *const reductions[] = {"reduce_sum", "reduce_max", "reduce_min",
                                           "reduce_logsumexp"};
  const double empty[] = {0, -INFINITY, INFINITY, -INFINITY};
  for (int i = 0; i < 4; i++) {
    const opinfo_row_ref *f = t_row_ref(reductions[i]);
    cr_assert_not_null(f->reduce, "%s: no .row_ref.reduce", reductions[i]);
    cr_expect(isnan(f->reduce(nans, 4, 1)), "%s: a NaN in the row gives NaN", reductions[i]);
    double e = f->reduce(row, 0, 1);
    cr_expect(e == empty[i] && !signbit(e) == !signbit(empty[i]), "%s of an empty row: %g",
              reductions[i], e);
  }
  cr_expect_eq(t_row_ref("reduce_max")->reduce(row, 6, 1), 3);
  cr_expect_eq(t_row_ref("reduce_min")->reduce(row, 3, 2), -2); /* 1, 3, -2 */
  double y[4];
  for (int lf = 0; lf < 2; lf++) {
    t_row_ref(lf ? "log_softmax" : "softmax")->map(nans, 4, 1, y);
    for (int i = 0; i < 4; i++) cr_expect(isnan(y[i]), "a NaN row's softmax is NaN throughout");
  }
}
