/* Conformance of the binary slots (SG_FOR_EACH_BINARY_OP forward and backward,
 * SG_FOR_EACH_COMPARE_OP, where, fill) of every available backend against the scalar backend,
 * over every pair of steps (broadcast operands) and an all-pairs pass of edge values, with the
 * harness of support_conformance.h. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support_conformance.h"

static const bslot k_binary[] = {SG_FOR_EACH_BINARY_OP(B_ENTRY_)};
static const bslot k_compare[] = {SG_FOR_EACH_COMPARE_OP(C_ENTRY_)};

/* ==== Binary, comparisons, where ============================================================ */

/* The operand values of the all-pairs pass: the edge values and the ones pow treats specially. */
static const float k_pair_extra[] = {1, -1, 2, -2, 0.5f, 3, -3, 0.3f};
#define N_PAIR_VALUES (N_SPECIALS + COUNT(k_pair_extra))
static float pair_value(size_t k) {
  return k < N_SPECIALS ? special(k) : k_pair_extra[k - N_SPECIALS];
}

/* Operands of a binary case: a and b (1 element when their step is 0) and dy. Pass P_COUNT is
   the all-pairs pass (steps 1, 1). */
typedef struct bcase {
  size_t n, na, nb, a_step, b_step, off;
  int pass;
  float *a, *b, *dy;
  /* The backward's da and db at one offset, so that a streamed call can align both (apart, as
     by default, it stores both normally). */
  bool grads_alike;
} bcase;

static const char *bpass_name(int pass) { return pass == P_COUNT ? "pairs" : k_pass_names[pass]; }

static bcase bcase_make(const char *slot, const tol *t, size_t n, size_t a_step, size_t b_step,
                        size_t k, size_t off, int pass, bool ties) {
  bcase bc = {n,    a_step ? n : 1, b_step ? n : 1, a_step, b_step, off,
              pass, NULL,           NULL,           NULL,   false};
  seed(case_seed(slot, n, k * 4 + a_step * 2 + b_step, (size_t)pass));
  bc.a = fnew(bc.na);
  bc.b = fnew(bc.nb);
  bc.dy = fnew(n);
  float blo = t->blo != t->bhi ? t->blo : t->lo, bhi = t->blo != t->bhi ? t->bhi : t->hi;
  if (pass == P_COUNT) {
    for (size_t i = 0; i < n; i++) {
      bc.a[i] = pair_value(i / N_PAIR_VALUES);
      bc.b[i] = pair_value(i % N_PAIR_VALUES);
    }
  } else {
    gen(bc.a, bc.na, t->lo, t->hi, pass, k + 3u * (size_t)pass);
    gen(bc.b, bc.nb, blo, bhi, pass, k + 11u);
    /* A broadcast operand is an edge value on half of the non-clean cases. */
    if (pass != P_CLEAN && !a_step && k % 2 == 0) bc.a[0] = special(k / 2 + 5u * (size_t)pass);
    if (pass != P_CLEAN && !b_step && k % 2 == 1) bc.b[0] = special(k / 2 + 7u * (size_t)pass);
    if (ties) { /* half-integers, so equal operands are common */
      for (size_t i = 0; i < bc.na; i++)
        if (isfinite(bc.a[i]) && fabsf(bc.a[i]) < 1e6f) bc.a[i] = roundf(bc.a[i] * 2) / 2;
      for (size_t i = 0; i < bc.nb; i++)
        if (isfinite(bc.b[i]) && fabsf(bc.b[i]) < 1e6f) bc.b[i] = roundf(bc.b[i] * 2) / 2;
    }
  }
  gen(bc.dy, n, -1, 1, pass == P_COUNT ? P_CLEAN : pass, k + 13u);
  return bc;
}
static void bcase_free(bcase *bc) {
  free(bc->a);
  free(bc->b);
  free(bc->dy);
}

/* Calls fn(bc) for every binary case: sizes x offsets x passes x step pairs, plus the all-pairs
   pass. */
typedef void (*bcase_fn)(const bslot *s, const tol *t, const bcase *bc);
static void for_each_bcase(const bslot *s, const char *slot, const tol *t, bool ties, bcase_fn fn) {
  for (size_t steps = 0; steps < 4; steps++) {
    size_t a_step = steps & 1, b_step = steps >> 1;
    for (size_t si = 0; si < COUNT(k_sizes); si++) {
      size_t n = k_sizes[si];
      /* Every offset when both operands are arrays; 0, 1, 7 and 15 with a broadcast one. */
      bool all = a_step && b_step && n < BIG;
      for (size_t k = 0; k < (all ? 16 : n_offsets(n) < 4 ? n_offsets(n) : 4); k++)
        for (int p = 0; p < n_passes(n); p++) {
          size_t off = all ? k : offset_at(BIG, k);
          bcase bc = bcase_make(slot, t, n, a_step, b_step, k, off, p, ties);
          fn(s, t, &bc);
          bcase_free(&bc);
        }
    }
  }
  for (size_t off = 0; off < 4; off += 3) {
    bcase bc = bcase_make(slot, t, N_PAIR_VALUES * N_PAIR_VALUES, 1, 1, off, off, P_COUNT, ties);
    fn(s, t, &bc);
    bcase_free(&bc);
  }
}

static void binary_forward_case(const bslot *s, const tol *t, const bcase *bc) {
  const sg_backend *ref = ref_backend();
  size_t n = bc->n, off = bc->off;
  float *want = fnew(n);
  SLOT(ref, sg_binary_kernel, s->fwd)(bc->a, bc->a_step, bc->b, bc->b_step, want, n);
  FOR_EACH_BACKEND(be) {
    sg_binary_kernel f = SLOT(be, sg_binary_kernel, s->fwd);
    /* 0: out of place; 1: y over a contiguous a (or b when a is broadcast). */
    for (int inplace = 0; inplace < 2; inplace++) {
      if (inplace && !bc->a_step && !bc->b_step) continue;
      cctx c;
      ctx_init(&c, be, s->name, bpass_name(bc->pass), "n=%zu steps=(%zu,%zu) off=%zu%s", n,
               bc->a_step, bc->b_step, off, inplace ? " in place" : "");
      ctx_input(&c, 0, "a", bc->a, bc->a_step);
      ctx_input(&c, 1, "b", bc->b, bc->b_step);
      gbuf ga = gb_floats(bc->a, bc->na, off_of(off, 0)),
           gb = gb_floats(bc->b, bc->nb, off_of(off, 1));
      gbuf gy = gb_floats(NULL, n, off_of(off, 2));
      float *y = !inplace ? gf(&gy) : bc->a_step ? gf(&ga) : gf(&gb);
      f(gf(&ga), bc->a_step, gf(&gb), bc->b_step, y, n);
      if (y != gf(&ga)) check_unchanged(&c, &ga, bc->a, "a");
      if (y != gf(&gb)) check_unchanged(&c, &gb, bc->b, "b");
      check_guards(&c, &ga, "a");
      check_guards(&c, &gb, "b");
      check_guards(&c, &gy, "y");
      check_f32(&c, t, y, want, n, 1, NULL);
      gb_free(&ga);
      gb_free(&gb);
      gb_free(&gy);
    }
  }
  free(want);
}

static void binary_backward_case(const bslot *s, const tol *t, const bcase *bc) {
  const sg_backend *ref = ref_backend();
  size_t n = bc->n, off = bc->off;
  /* Only pow reads y (backend.h); the others get NULL. */
  bool needs_y = strcmp(s->name, "pow") == 0;
  float *y = fnew(n), *wa = fnew(n), *wb = fnew(n);
  double *scale = calloc(n ? n : 1, sizeof *scale);
  char slot[96];
  snprintf(slot, sizeof slot, "%s_backward", s->name);
  SLOT(ref, sg_binary_kernel, s->fwd)(bc->a, bc->a_step, bc->b, bc->b_step, y, n);
  SLOT(ref, sg_binary_backward_kernel, s->bwd)
  (bc->dy, bc->a, bc->a_step, bc->b, bc->b_step, needs_y ? y : NULL, wa, wb, n);
  for (size_t i = 0; i < n; i++) scale[i] = fabs(bc->dy[i]);
  FOR_EACH_BACKEND(be) {
    sg_binary_backward_kernel f = SLOT(be, sg_binary_backward_kernel, s->bwd);
    /* 0: da and db; 1: da only; 2: db only; 3: da over dy (in place), db apart. */
    for (int v = 0; v < 4; v++) {
      static const char *const vname[] = {"", " da only", " db only", " da in place"};
      cctx c;
      ctx_init(&c, be, slot, bpass_name(bc->pass), "n=%zu steps=(%zu,%zu) off=%zu%s", n, bc->a_step,
               bc->b_step, off, vname[v]);
      ctx_input(&c, 0, "dy", bc->dy, 1);
      ctx_input(&c, 1, "a", bc->a, bc->a_step);
      ctx_input(&c, 2, "b", bc->b, bc->b_step);
      gbuf gdy = gb_floats(bc->dy, n, off_of(off, 0)),
           ga = gb_floats(bc->a, bc->na, off_of(off, 1));
      gbuf gb = gb_floats(bc->b, bc->nb, off_of(off, 2)), gy = gb_floats(y, n, off_of(off, 3));
      gbuf gda = gb_floats(NULL, n, off_of(off, 4)),
           gdb = gb_floats(NULL, n, off_of(off, bc->grads_alike ? 4 : 5));
      float *da = v == 2 ? NULL : v == 3 ? gf(&gdy) : gf(&gda), *db = v == 1 ? NULL : gf(&gdb);
      f(gf(&gdy), gf(&ga), bc->a_step, gf(&gb), bc->b_step, needs_y ? gf(&gy) : NULL, da, db, n);
      if (v != 3) check_unchanged(&c, &gdy, bc->dy, "dy");
      check_unchanged(&c, &ga, bc->a, "a");
      check_unchanged(&c, &gb, bc->b, "b");
      check_unchanged(&c, &gy, y, "y");
      check_guards(&c, &gdy, "dy");
      check_guards(&c, &gda, "da");
      check_guards(&c, &gdb, "db");
      if (da) check_f32(&c, t, da, wa, n, 1, scale);
      if (db) check_f32(&c, t, db, wb, n, 1, scale);
      gb_free(&gdy);
      gb_free(&ga);
      gb_free(&gb);
      gb_free(&gy);
      gb_free(&gda);
      gb_free(&gdb);
    }
  }
  free(y);
  free(wa);
  free(wb);
  free(scale);
}

static void compare_case(const bslot *s, const tol *t, const bcase *bc) {
  (void)t;
  const sg_backend *ref = ref_backend();
  size_t n = bc->n, off = bc->off;
  uint8_t *want = calloc(n ? n : 1, 1);
  SLOT(ref, sg_compare_kernel, s->fwd)(bc->a, bc->a_step, bc->b, bc->b_step, want, n);
  FOR_EACH_BACKEND(be) {
    cctx c;
    ctx_init(&c, be, s->name, bpass_name(bc->pass), "n=%zu steps=(%zu,%zu) off=%zu", n, bc->a_step,
             bc->b_step, off);
    ctx_input(&c, 0, "a", bc->a, bc->a_step);
    ctx_input(&c, 1, "b", bc->b, bc->b_step);
    gbuf ga = gb_floats(bc->a, bc->na, off_of(off, 0)),
         gb = gb_floats(bc->b, bc->nb, off_of(off, 1));
    gbuf gy = gb_make(n, off_of(off, 2) * 3); /* byte offsets 0..45 */
    SLOT(be, sg_compare_kernel, s->fwd)(gf(&ga), bc->a_step, gf(&gb), bc->b_step, gy.p, n);
    check_unchanged(&c, &ga, bc->a, "a");
    check_unchanged(&c, &gb, bc->b, "b");
    check_guards(&c, &gy, "y");
    check_bytes(&c, gy.p, want, n, 1);
    gb_free(&ga);
    gb_free(&gb);
    gb_free(&gy);
  }
  free(want);
}

/* Condition bytes: any non-zero value selects a. */
static uint8_t *make_cond(size_t n) {
  static const uint8_t vals[] = {0, 1, 2, 255, 0, 1};
  uint8_t *c = malloc(n ? n : 1);
  cr_assert_not_null(c);
  for (size_t i = 0; i < (n ? n : 1); i++) c[i] = vals[next_u64() % sizeof vals];
  return c;
}

static void where_case(const bslot *s, const tol *t, const bcase *bc) {
  (void)s;
  const sg_backend *ref = ref_backend();
  const tol *tb = tol_for("where_backward");
  size_t n = bc->n, off = bc->off;
  for (size_t c_step = 0; c_step < 2; c_step++) {
    size_t nc = c_step ? n : 1;
    uint8_t *cond = make_cond(nc);
    float *want = fnew(n), *wa = fnew(n), *wb = fnew(n);
    ref->where(cond, c_step, bc->a, bc->a_step, bc->b, bc->b_step, want, n);
    ref->where_backward(bc->dy, cond, c_step, wa, wb, n);
    FOR_EACH_BACKEND(be) {
      for (int inplace = 0; inplace < 2; inplace++) {
        if (inplace && !bc->a_step) continue;
        cctx c;
        ctx_init(&c, be, "where", bpass_name(bc->pass), "n=%zu steps=(c %zu, %zu,%zu) off=%zu%s", n,
                 c_step, bc->a_step, bc->b_step, off, inplace ? " in place" : "");
        ctx_input(&c, 0, "a", bc->a, bc->a_step);
        ctx_input(&c, 1, "b", bc->b, bc->b_step);
        gbuf gc = gb_make(nc, off_of(off, 3)), ga = gb_floats(bc->a, bc->na, off_of(off, 0));
        gbuf gb = gb_floats(bc->b, bc->nb, off_of(off, 1)), gy = gb_floats(NULL, n, off_of(off, 2));
        memcpy(gc.p, cond, nc);
        float *y = inplace ? gf(&ga) : gf(&gy);
        be->where(gc.p, c_step, gf(&ga), bc->a_step, gf(&gb), bc->b_step, y, n);
        check_unchanged(&c, &gc, cond, "c");
        if (!inplace) check_unchanged(&c, &ga, bc->a, "a");
        check_unchanged(&c, &gb, bc->b, "b");
        check_guards(&c, &ga, "a");
        check_guards(&c, &gy, "y");
        check_f32(&c, t, y, want, n, 1, NULL);
        gb_free(&ga);
        gb_free(&gb);
        gb_free(&gy);
        gb_free(&gc);
      }
      /* Backward: 0 both, 1 da only, 2 db only, 3 da over dy. */
      for (int v = 0; v < 4; v++) {
        cctx c;
        ctx_init(&c, be, "where_backward", bpass_name(bc->pass), "n=%zu c_step=%zu off=%zu v=%d", n,
                 c_step, off, v);
        ctx_input(&c, 0, "dy", bc->dy, 1);
        gbuf gc = gb_make(nc, off_of(off, 3)), gdy = gb_floats(bc->dy, n, off_of(off, 0));
        gbuf gda = gb_floats(NULL, n, off_of(off, 1)),
             gdb = gb_floats(NULL, n, off_of(off, bc->grads_alike ? 1 : 2));
        memcpy(gc.p, cond, nc);
        float *da = v == 2 ? NULL : v == 3 ? gf(&gdy) : gf(&gda), *db = v == 1 ? NULL : gf(&gdb);
        be->where_backward(gf(&gdy), gc.p, c_step, da, db, n);
        check_unchanged(&c, &gc, cond, "c");
        if (v != 3) check_unchanged(&c, &gdy, bc->dy, "dy");
        check_guards(&c, &gdy, "dy");
        check_guards(&c, &gda, "da");
        check_guards(&c, &gdb, "db");
        if (da) check_f32(&c, tb, da, wa, n, 1, NULL);
        if (db) check_f32(&c, tb, db, wb, n, 1, NULL);
        gb_free(&gc);
        gb_free(&gdy);
        gb_free(&gda);
        gb_free(&gdb);
      }
    }
    free(cond);
    free(want);
    free(wa);
    free(wb);
  }
}

/* Outputs of 2^21 floats and more take the SIMD binary kernels' non-temporal store path
   (SG_STREAM_MIN in kernels_simd/simd_decls.inc): a masked head up to y's vector alignment,
   streamed vectors, a fence, the tail. Offsets 6 and 13 put y at 0 and 7 floats past a 64-byte
   boundary (off_of), so the head is empty once and ragged once; n leaves a tail. */
#define STREAM_N (((size_t)2 << 20) + 13)
static void binary_forward_streamed(const bslot *s) {
  const tol *t = tol_for(s->name);
  static const size_t offs[] = {6, 13};
  for (size_t steps = 0; steps < 4; steps++)
    for (size_t k = 0; k < COUNT(offs); k++) {
      bcase bc =
          bcase_make(s->name, t, STREAM_N, steps & 1, steps >> 1, k, offs[k], P_SPECIAL, false);
      binary_forward_case(s, t, &bc);
      bcase_free(&bc);
    }
}

Test(conformance, binary_forward) {
  for (size_t i = 0; i < COUNT(k_binary); i++) {
    for_each_bcase(&k_binary[i], k_binary[i].name, tol_for(k_binary[i].name), false,
                   binary_forward_case);
    binary_forward_streamed(&k_binary[i]);
  }
  finish("binary forward");
}

/* The backward kernels stream da and db as the forward streams y, where the two sit alike
   against the vector size (else they store normally): offset 13 puts both 1 float past a 64-byte
   boundary (off_of(off, 4)), a ragged head; offset 6 puts them apart (10 and 15 floats past
   it), the fallback. The first with every pair of steps (each has a loop of its own), the other
   with both operands arrays: the streamed size costs 20x under qemu. (The empty head is
   binary_forward_streamed's and where's.) */
static const struct {
  size_t off;
  bool alike;
} k_grads_streamed[] = {{13, true}, {6, false}};

static void binary_backward_streamed(const bslot *s, const char *slot) {
  const tol *t = tol_for(slot);
  for (size_t steps = 0; steps < 4; steps++)
    for (size_t k = 0; k < (steps == 3 ? COUNT(k_grads_streamed) : 1); k++) {
      bcase bc = bcase_make(slot, t, STREAM_N, steps & 1, steps >> 1, k, k_grads_streamed[k].off,
                            P_SPECIAL, strncmp(slot, "m", 1) == 0);
      bc.grads_alike = k_grads_streamed[k].alike;
      binary_backward_case(s, t, &bc);
      bcase_free(&bc);
    }
}

Test(conformance, binary_backward) {
  for (size_t i = 0; i < COUNT(k_binary); i++) {
    char slot[96];
    snprintf(slot, sizeof slot, "%s_backward", k_binary[i].name);
    for_each_bcase(&k_binary[i], slot, tol_for(slot), strncmp(slot, "m", 1) == 0,
                   binary_backward_case);
    binary_backward_streamed(&k_binary[i], slot);
  }
  finish("binary backward");
}

/* As tests/test_conformance_unary.c's unary_loops_agree: each element of a long call has the
   bits of that element computed by a one-element call (the masked tail), NaN matching NaN,
   forward and backward (da and db), with both operands arrays and with either one broadcast;
   on n = 1000 every element, on the streamed size every 1009th and the first and last 64. */

static void binary_loops_agree(const bslot *s, size_t n, size_t a_step, size_t b_step) {
  char slot[96];
  snprintf(slot, sizeof slot, "%s_backward", s->name);
  bcase bc = bcase_make(s->name, tol_for(s->name), n, a_step, b_step, 0, 0, P_SPECIAL, false);
  float *y = fnew(n), *alone = fnew(n), *da = fnew(n), *db = fnew(n), *da1 = fnew(n),
        *db1 = fnew(n);
  FOR_EACH_BACKEND(be) {
    cctx c;
    ctx_init(&c, be, s->name, "loops against one-element calls", "n=%zu steps=(%zu,%zu)", n, a_step,
             b_step);
    ctx_input(&c, 0, "a", bc.a, a_step);
    ctx_input(&c, 1, "b", bc.b, b_step);
    sg_binary_kernel f = SLOT(be, sg_binary_kernel, s->fwd);
    sg_binary_backward_kernel g = SLOT(be, sg_binary_backward_kernel, s->bwd);
    f(bc.a, a_step, bc.b, b_step, y, n);
    g(bc.dy, bc.a, a_step, bc.b, b_step, y, da, db, n);
    memcpy(alone, y, n * sizeof *y);
    memcpy(da1, da, n * sizeof *da);
    memcpy(db1, db, n * sizeof *db);
    for (size_t i = 0; i < n; i++) {
      if (!loops_sampled(i, n)) continue;
      const float *ai = bc.a + i * a_step, *bi = bc.b + i * b_step;
      f(ai, a_step, bi, b_step, alone + i, 1);
      g(bc.dy + i, ai, a_step, bi, b_step, y + i, da1 + i, db1 + i, 1);
    }
    check_same_bits(&c, "y", y, alone, n);
    ctx_init(&c, be, slot, "loops against one-element calls", "n=%zu steps=(%zu,%zu)", n, a_step,
             b_step);
    ctx_input(&c, 0, "a", bc.a, a_step);
    ctx_input(&c, 1, "b", bc.b, b_step);
    check_same_bits(&c, "da", da, da1, n);
    check_same_bits(&c, "db", db, db1, n);
  }
  free(y);
  free(alone);
  free(da);
  free(db);
  free(da1);
  free(db1);
  bcase_free(&bc);
}

Test(conformance, binary_loops_agree_with_one_element_calls) {
  for (size_t i = 0; i < COUNT(k_binary); i++)
    for (size_t steps = 1; steps < 4; steps++) {
      binary_loops_agree(&k_binary[i], BIG, steps & 1, steps >> 1);
      binary_loops_agree(&k_binary[i], STREAM_N, steps & 1, steps >> 1);
    }
  finish("binary loops");
}

Test(conformance, comparisons) {
  for (size_t i = 0; i < COUNT(k_compare); i++)
    for_each_bcase(&k_compare[i], k_compare[i].name, tol_for(k_compare[i].name), true,
                   compare_case);
  finish("comparisons");
}

/* fill: the bits of v at every size (STREAM_N: past the binary ops' streaming threshold, which
   fill does not stream) and offset; the guards catch a write past n. */
static void fill_family(void) {
  static const float values[] = {1.0f, -0.0f, 1e-40f, -INFINITY, NAN};
  const sg_backend *ref = ref_backend();
  for (size_t si = 0; si <= COUNT(k_sizes); si++) {
    size_t n = si < COUNT(k_sizes) ? k_sizes[si] : STREAM_N;
    for (size_t vi = 0; vi < COUNT(values); vi++) {
      float v = values[vi];
      float *want = fnew(n);
      ref->fill(want, n, v);
      for (size_t i = 0; i < n; i++)
        cr_assert_eq(bits_of(want[i]), bits_of(v), "scalar fill: [%zu] is not v", i);
      FOR_EACH_BACKEND(be) {
        cctx c;
        size_t off = (si + vi) % 16;
        ctx_init(&c, be, "fill", NULL, "n=%zu v=%g off=%zu", n, v, off);
        gbuf gy = gb_floats(NULL, n, off);
        be->fill(gf(&gy), n, v);
        check_guards(&c, &gy, "y");
        check_bytes(&c, gy.p, want, n * sizeof(float), sizeof(float));
        gb_free(&gy);
      }
      free(want);
    }
  }
}

Test(conformance, fill) {
  fill_family();
  finish("fill");
}

Test(conformance, where) {
  static const bslot w = {"where", 0, 0};
  for_each_bcase(&w, "where", tol_for("where"), false, where_case);
  /* The streamed size, as binary_forward_streamed (y at 7 and 0 floats past a 64-byte boundary:
     offsets 13 and 6) and binary_backward_streamed (da and db alike at 2 floats past it, a
     ragged head, and at 0; apart at 11 and 0), a tail each time; the first with every pair of
     steps, the others with both operands arrays. */
  static const struct {
    size_t off;
    bool alike;
  } cases[] = {{13, true}, {6, false}, {11, true}};
  for (size_t steps = 0; steps < 4; steps++)
    for (size_t k = 0; k < (steps == 3 ? COUNT(cases) : 1); k++) {
      bcase bc = bcase_make("where", tol_for("where"), STREAM_N, steps & 1, steps >> 1, k,
                            cases[k].off, P_SPECIAL, false);
      bc.grads_alike = cases[k].alike;
      where_case(&w, tol_for("where"), &bc);
      bcase_free(&bc);
    }
  finish("where");
}
