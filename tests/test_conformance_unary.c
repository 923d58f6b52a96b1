/* Conformance of the unary slots (SG_FOR_EACH_UNARY_OP forward and backward,
 * SG_FOR_EACH_STEP_OP, leaky_relu and clip) of every available backend against the scalar
 * backend, with the harness of support_conformance.h. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support_conformance.h"

static const uslot k_unary[] = {SG_FOR_EACH_UNARY_OP(U_ENTRY_)};
static const uslot k_step[] = {SG_FOR_EACH_STEP_OP(S_ENTRY_)};

/* ==== Unary: forward, backward, step ops, leaky_relu, clip ================================== */

/* Where set, the forward and backward cases draw x from the bench's range of the op instead of
   its conformance domain, and every 1000th from the 300th is the domain's low end: a kernel that
   takes a cheap form per block of vectors where the data allow (AVX-512's gelu and its gradient,
   simd_unary.inc's SG_UNARY_LOOP_BLOCKED_) is checked on the data the bench measures, and on
   blocks with one odd lane. */
static struct {
  bool on;
  float lo, hi;
} g_bench_range;

static void gen_x(float *x, size_t n, const tol *t, int p, size_t k) {
  if (!g_bench_range.on) {
    gen(x, n, t->lo, t->hi, p, k);
    return;
  }
  gen(x, n, g_bench_range.lo, g_bench_range.hi, p, k);
  for (size_t i = 300; i < n; i += 1000) x[i] = t->lo;
}

/* One case: n floats at offset off, pass p (k picks the offset's seed). */
static void unary_forward_case(const ucall *u, size_t n, size_t k, size_t off, int p) {
  const sg_backend *ref = ref_backend();
  const tol *t = tol_for(u->slot);
  seed(case_seed(u->slot, n, k, (size_t)p));
  float *x = fnew(n), *want = fnew(n);
  gen_x(x, n, t, p, k + 3u * (size_t)p);
  ucall_fwd(ref, u, x, want, n);
  FOR_EACH_BACKEND(be) {
    cctx c;
    ctx_init(&c, be, u->slot, k_pass_names[p], "n=%zu off=%zu p=(%g,%g)", n, off, u->p0, u->p1);
    ctx_input(&c, 0, "x", x, 1);
    c.p0 = u->p0, c.p1 = u->p1;
    gbuf in = gb_floats(x, n, off_of(off, 0)), out = gb_floats(NULL, n, off_of(off, 1));
    ucall_fwd(be, u, gf(&in), gf(&out), n);
    check_unchanged(&c, &in, x, "x");
    check_guards(&c, &out, "y");
    check_f32(&c, t, gf(&out), want, n, 1, NULL);
    ctx_init(&c, be, u->slot, k_pass_names[p], "n=%zu off=%zu p=(%g,%g) in place", n, off, u->p0,
             u->p1);
    ctx_input(&c, 0, "x", x, 1);
    c.p0 = u->p0, c.p1 = u->p1;
    ucall_fwd(be, u, gf(&in), gf(&in), n);
    check_guards(&c, &in, "y (in place)");
    check_f32(&c, t, gf(&in), want, n, 1, NULL);
    gb_free(&in);
    gb_free(&out);
  }
  free(x);
  free(want);
}

/* Beside the shared sizes, whole steps of the loops that take four vectors at a time (AVX2 32
   floats, AVX-512 64, NEON 16) with nothing after them: no single vector, no tail. */
static const size_t k_whole_steps[] = {32, 64, 128};
static size_t unary_sizes(void) { return COUNT(k_sizes) + COUNT(k_whole_steps); }
static size_t unary_size(size_t si) {
  return si < COUNT(k_sizes) ? k_sizes[si] : k_whole_steps[si - COUNT(k_sizes)];
}

static void unary_forward(const ucall *u) {
  for (size_t si = 0; si < unary_sizes(); si++) {
    size_t n = unary_size(si);
    for (size_t k = 0; k < n_offsets(n); k++)
      for (int p = 0; p < n_passes(n); p++) unary_forward_case(u, n, k, offset_at(n, k), p);
  }
}

static void unary_backward_case(const ucall *u, size_t n, size_t k, size_t off, int p) {
  const sg_backend *ref = ref_backend();
  char slot[96];
  snprintf(slot, sizeof slot, "%s_backward", u->slot);
  const tol *tf = tol_for(u->slot), *t = tol_for(slot);
  seed(case_seed(slot, n, k, (size_t)p));
  float *x = fnew(n), *y = fnew(n), *dy = fnew(n), *want = fnew(n);
  double *scale = calloc(n ? n : 1, sizeof *scale);
  gen_x(x, n, tf, p, k + 3u * (size_t)p);
  gen(dy, n, -1, 1, p, k + 7u);
  ucall_fwd(ref, u, x, y, n);
  for (size_t i = 0; i < n; i++) scale[i] = fabs(dy[i]) * (t->mag ? t->mag(x[i]) : 1);
  /* The tensor the op list does not name saved is passed as NULL: kernels must not
     read it. */
  const float *xs = u->saved == SV_X ? x : NULL, *ys = u->saved == SV_Y ? y : NULL;
  ucall_bwd(ref, u, dy, xs, ys, want, n);
  FOR_EACH_BACKEND(be) {
    for (int inplace = 0; inplace < 2; inplace++) {
      cctx c;
      ctx_init(&c, be, slot, k_pass_names[p], "n=%zu off=%zu%s", n, off,
               inplace ? " in place" : "");
      ctx_input(&c, 0, "dy", dy, 1);
      ctx_input(&c, 1, "x", x, 1);
      ctx_input(&c, 2, "y", y, 1);
      c.tiny_by = dy;
      gbuf gdy = gb_floats(dy, n, off_of(off, 0)), gx = gb_floats(x, n, off_of(off, 1));
      gbuf gy = gb_floats(y, n, off_of(off, 2)), gdx = gb_floats(NULL, n, off_of(off, 3));
      float *dx = inplace ? gf(&gdy) : gf(&gdx);
      ucall_bwd(be, u, gf(&gdy), xs ? gf(&gx) : NULL, ys ? gf(&gy) : NULL, dx, n);
      if (!inplace) check_unchanged(&c, &gdy, dy, "dy");
      check_unchanged(&c, &gx, x, "x");
      check_unchanged(&c, &gy, y, "y");
      check_guards(&c, &gdx, "dx");
      check_guards(&c, &gdy, "dy");
      check_f32(&c, t, dx, want, n, 1, scale);
      gb_free(&gdy);
      gb_free(&gx);
      gb_free(&gy);
      gb_free(&gdx);
    }
  }
  free(x);
  free(y);
  free(dy);
  free(want);
  free(scale);
}

static void unary_backward(const ucall *u) {
  for (size_t si = 0; si < unary_sizes(); si++) {
    size_t n = unary_size(si);
    for (size_t k = 0; k < n_offsets(n); k++)
      for (int p = 0; p < n_passes(n); p++) unary_backward_case(u, n, k, offset_at(n, k), p);
  }
}

/* Outputs of 2^21 floats and more take the SIMD unary kernels' non-temporal store path
   (SG_STREAM_MIN in kernels_simd/simd_decls.inc), forward and backward: a masked head up to the
   output's vector alignment, streamed vectors, a fence, the tail. The offsets put the output
   (off_of's operand 1 forward, 3 backward) at a 64-byte boundary once and 7 floats past one
   once, so the head is empty once and ragged once (and ragged both times in place); n leaves a
   tail. One pass, with the edge values. */
#define STREAM_N (((size_t)2 << 20) + 13)
static void unary_streamed(const ucall *u, bool backward) {
  static const size_t fwd_offs[] = {11, 2}, bwd_offs[] = {1, 8};
  for (size_t k = 0; k < 2; k++) {
    if (backward)
      unary_backward_case(u, STREAM_N, k, bwd_offs[k], P_SPECIAL);
    else
      unary_forward_case(u, STREAM_N, k, fwd_offs[k], P_SPECIAL);
  }
}

/* Every loop of a kernel (unrolled, staged, streamed, one vector at a time, the masked tail)
   must evaluate the same expression: each element of a long call has the bits of that element
   computed alone, which is a one-element call, the masked tail (NaN matching NaN: which NaN an
   x86 operation returns depends on its operand order). This is what keeps a lane's
   result from depending on where it sits (docs/floating-point.md); it would catch, say, a staged
   op (simd_unary.inc) whose two stages do not add up to its one-vector form. On n = 1000 every
   element; on a streamed size every 1009th and the first and last 64 (loops_sampled). */

static void unary_loops_agree(const ucall *u, size_t n, bool backward) {
  char slot[96];
  snprintf(slot, sizeof slot, backward ? "%s_backward" : "%s", u->slot);
  const tol *t = tol_for(u->slot);
  seed(case_seed(slot, n, 0, P_SPECIAL));
  float *x = fnew(n), *y = fnew(n), *dy = fnew(n), *all = fnew(n), *alone = fnew(n);
  gen_x(x, n, t, P_SPECIAL, 1);
  gen(dy, n, -1, 1, P_SPECIAL, 5);
  ucall_fwd(ref_backend(), u, x, y, n);
  const float *xs = u->saved == SV_X ? x : NULL, *ys = u->saved == SV_Y ? y : NULL;
  FOR_EACH_BACKEND(be) {
    cctx c;
    ctx_init(&c, be, slot, "loops against one-element calls", "n=%zu", n);
    ctx_input(&c, 0, backward ? "dy" : "x", backward ? dy : x, 1);
    if (backward) ctx_input(&c, 1, "x", x, 1);
    if (backward)
      ucall_bwd(be, u, dy, xs, ys, all, n);
    else
      ucall_fwd(be, u, x, all, n);
    for (size_t i = 0; i < n; i++) {
      alone[i] = all[i];
      if (!loops_sampled(i, n)) continue;
      if (backward)
        ucall_bwd(be, u, dy + i, xs ? xs + i : NULL, ys ? ys + i : NULL, alone + i, 1);
      else
        ucall_fwd(be, u, x + i, alone + i, 1);
    }
    check_same_bits(&c, backward ? "dx" : "y", all, alone, n);
  }
  free(x);
  free(y);
  free(dy);
  free(all);
  free(alone);
}

/* ==== The tests ============================================================================== */

Test(conformance, unary_forward) {
  for (size_t i = 0; i < COUNT(k_unary); i++) {
    ucall u = {k_unary[i].name, k_unary[i].fwd, 0, SV_NONE, 0, 0, 0};
    unary_forward(&u);
    unary_streamed(&u, false);
  }
  finish("unary forward");
}

Test(conformance, unary_backward) {
  for (size_t i = 0; i < COUNT(k_unary); i++) {
    ucall u = {k_unary[i].name, k_unary[i].fwd, k_unary[i].bwd, k_unary[i].saved, 0, 0, 0};
    unary_backward(&u);
    unary_streamed(&u, true);
  }
  finish("unary backward");
}

/* The staged loops (simd_unary.inc) start at 3, 4, 5 or 7 vectors left (two stages two or three
   vectors apart, three stages): those sizes and one past them, for 4, 8 and 16 floats a vector,
   so that each loop's first step, drain and tail meet at their edges. */
static void unary_loops_agree_at_stage_edges(const ucall *u, bool backward) {
  static const size_t lanes[] = {4, 8, 16}, vectors[] = {3, 4, 5, 7};
  for (size_t l = 0; l < COUNT(lanes); l++)
    for (size_t v = 0; v < COUNT(vectors); v++)
      for (size_t extra = 0; extra < 2; extra++)
        unary_loops_agree(u, lanes[l] * vectors[v] + extra, backward);
}

Test(conformance, unary_loops_agree_with_one_element_calls) {
  for (size_t i = 0; i < COUNT(k_unary); i++) {
    ucall u = {k_unary[i].name, k_unary[i].fwd, k_unary[i].bwd, k_unary[i].saved, 0, 0, 0};
    for (int backward = 0; backward < 2; backward++) {
      unary_loops_agree(&u, BIG, backward);
      unary_loops_agree(&u, STREAM_N, backward);
      unary_loops_agree_at_stage_edges(&u, backward);
    }
  }
  finish("unary loops");
}

/* Every unary op again on its bench range, an odd value every 1000 elements: forward and
   backward values on every size, the streamed size, and the loops against one-element calls (a
   block's odd lane must not move the bits of the others). */
Test(conformance, unary_on_the_bench_range) {
  for (size_t i = 0; i < COUNT(k_unary); i++) {
    const opinfo_unary *r = opinfo_unary_find(k_unary[i].name);
    cr_assert_not_null(r, "no op-info row for %s", k_unary[i].name);
    g_bench_range.on = true, g_bench_range.lo = r->bench_range.lo;
    g_bench_range.hi = r->bench_range.hi;
    ucall u = {k_unary[i].name, k_unary[i].fwd, k_unary[i].bwd, k_unary[i].saved, 0, 0, 0};
    unary_forward(&u);
    unary_backward(&u);
    for (int backward = 0; backward < 2; backward++) {
      unary_streamed(&u, backward);
      unary_loops_agree(&u, BIG, backward);
      unary_loops_agree(&u, STREAM_N, backward);
    }
    g_bench_range.on = false;
  }
  finish("unary on the bench range");
}

Test(conformance, step_ops) {
  for (size_t i = 0; i < COUNT(k_step); i++) {
    ucall u = {k_step[i].name, k_step[i].fwd, 0, SV_NONE, 0, 0, 0};
    unary_forward(&u);
  }
  finish("step ops");
}

Test(conformance, leaky_relu_and_clip) {
  /* alpha 0 makes -0 from negative x; clip bounds of +-0 and lo == hi probe the signed-zero and
     tie rules. */
  static const float alphas[] = {0.1f, 0.0f, 1.5f};
  static const float bounds[][2] = {{-1, 2}, {0, 6}, {-0.0f, 0.0f}, {0.5f, 0.5f}};
  for (size_t i = 0; i < COUNT(alphas); i++) {
    ucall u = {"leaky_relu", 0, 0, SV_X, 1, alphas[i], 0};
    unary_forward(&u);
    unary_backward(&u);
  }
  for (size_t i = 0; i < COUNT(bounds); i++) {
    ucall u = {"clip", 0, 0, SV_X, 2, bounds[i][0], bounds[i][1]};
    unary_forward(&u);
    unary_backward(&u);
  }
  finish("leaky_relu and clip");
}
