/* The bench's plumbing: huge-page buffers filled with reproducible inputs, the parallel-for
 * that splits a kernel benchmark the way the engine splits an op, and the counters every
 * benchmark reports (bench.h). */
#define _DEFAULT_SOURCE /* madvise, clock_gettime */
#include <omp.h>
#include <simdgrad/simdgrad.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "bench.h"
#include "engine/engine.h"
#include "roofline.h"

#define HUGE_PAGE ((size_t)2 << 20)

void *bench_alloc(size_t bytes) {
  size_t size = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
  void *p = aligned_alloc(HUGE_PAGE, size ? size : HUGE_PAGE);
  if (!p) {
    fprintf(stderr, "simdgrad_bench: out of memory for %zu bytes\n", bytes);
    abort();
  }
#ifdef MADV_HUGEPAGE
  madvise(p, size, MADV_HUGEPAGE); /* a hint: 4 KiB pages work too, with more faults */
#endif
  return p;
}

/* The reusable buffers, and what each holds now: gbench calls a benchmark several times while it
   sizes the iteration count, and refilling 64 MiB inputs each time would cost more than the
   benchmark. Contents are described by (kind, n, lo, hi); kind 0 means anything (an output). */
enum { HOLDS_ANY, HOLDS_FLOATS, HOLDS_BOOLS, HOLDS_INDICES, HOLDS_LABELS };
static struct {
  void *p;
  size_t bytes;
  int kind;
  size_t n;
  float lo, hi;
} g_buffers[BENCH_BUFFERS];

/* Buffer i with room for `bytes`; true when it already holds (kind, n, lo, hi). Buffer i starts
   i * 256 bytes into its 2 MiB-aligned block, so that no two buffers share their low 12 address
   bits: a kernel loading one while storing another would otherwise measure 4K-aliasing stalls
   (STREAM offsets its arrays for the same reason). */
static bool buffer(int i, size_t bytes, int kind, size_t n, float lo, float hi, void **p) {
  if (i < 0 || i >= BENCH_BUFFERS) abort();
  size_t skew = (size_t)i * 256;
  if (g_buffers[i].bytes < bytes) {
    free(g_buffers[i].p);
    g_buffers[i].p = bench_alloc(bytes + skew);
    /* Faulted in here, not in a timed loop: an output that a kernel only writes (fill) paid
       every page fault in its first calls (75 ms a call for 16 MiB, against 0.65 ms after). */
    memset(g_buffers[i].p, 0, bytes + skew);
    g_buffers[i].bytes = bytes;
    g_buffers[i].kind = HOLDS_ANY;
  }
  *p = (char *)g_buffers[i].p + skew;
  bool same = kind != HOLDS_ANY && g_buffers[i].kind == kind && g_buffers[i].n == n &&
              g_buffers[i].lo == lo && g_buffers[i].hi == hi;
  g_buffers[i].kind = kind, g_buffers[i].n = n, g_buffers[i].lo = lo, g_buffers[i].hi = hi;
  return same;
}

/* A 24-bit uniform from (buffer, index): a multiply-xorshift hash, cheap and vectorisable. */
static inline uint32_t hash24(uint32_t k, uint32_t seed) {
  uint32_t h = k * 0x9E3779B1u ^ seed;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  h *= 0x297A2D39u;
  h ^= h >> 15;
  return h >> 8;
}

float *bench_buffer(int i, size_t n, float lo, float hi) {
  void *v;
  if (buffer(i, n * sizeof(float), HOLDS_FLOATS, n, lo, hi, &v)) return v;
  float *p = v, scale = (hi - lo) * 0x1p-24f;
  uint32_t seed = 0x5EEDu + 977u * (uint32_t)i;
  for (size_t k = 0; k < n; k++) p[k] = lo + scale * (float)hash24((uint32_t)k, seed);
  return p;
}

float *bench_output(int i, size_t n) {
  void *v;
  buffer(i, n * sizeof(float), HOLDS_ANY, n, 0, 0, &v);
  return v;
}

uint8_t *bench_buffer_bool(int i, size_t n) {
  void *v;
  if (buffer(i, n, HOLDS_BOOLS, n, 0, 0, &v)) return v;
  uint8_t *p = v;
  for (size_t k = 0; k < n; k++) p[k] = (uint8_t)(hash24((uint32_t)k, 0xB001u) & 1u);
  return p;
}

float *bench_buffer_labels(int i, size_t rows, size_t cols) {
  void *v;
  if (buffer(i, rows * cols * sizeof(float), HOLDS_LABELS, rows, 0, (float)cols, &v)) return v;
  float *p = v;
  for (size_t r = 0; r < rows; r++) {
    float *row = p + r * cols;
    double s = 0;
    for (size_t k = 0; k < cols; k++)
      s += row[k] = 0x1p-24f * (float)(hash24((uint32_t)(r * cols + k), 0x1AB5u) + 1u);
    for (size_t k = 0; k < cols; k++) row[k] = (float)(row[k] / s);
  }
  return p;
}

/* Index k of bench_buffer_index's buffers. */
static uint32_t index_at(size_t k, int32_t bound) {
  return hash24((uint32_t)k, 0x1D8u) % (uint32_t)(bound > 0 ? bound : 1);
}

int32_t *bench_buffer_index(int i, size_t n, int32_t bound) {
  void *v;
  if (buffer(i, n * sizeof(int32_t), HOLDS_INDICES, n, 0, (float)bound, &v)) return v;
  int32_t *p = v;
  for (size_t k = 0; k < n; k++) p[k] = (int32_t)index_at(k, bound);
  return p;
}

size_t bench_index_distinct(size_t n, int32_t bound) {
  size_t m = bound > 0 ? (size_t)bound : 1, count = 0;
  bool *seen = calloc(m, sizeof *seen);
  if (!seen) abort();
  for (size_t k = 0; k < n; k++) {
    uint32_t v = index_at(k, bound);
    if (!seen[v]) seen[v] = true, count++;
  }
  free(seen);
  return count;
}

void bench_rows_of(int64_t n, int64_t *rows, int64_t *cols) {
  *cols = n >= BENCH_COLS ? BENCH_COLS : n;
  *rows = n / *cols;
}

int64_t bench_chunks(int64_t n, int64_t grain) {
  if (n <= 0) return 0;
  return grain < 1 ? n : (n + grain - 1) / grain;
}

int64_t bench_flat_grain(int64_t n, int bytes) { return sg__flat_grain(n, bytes); }

int64_t bench_rows_stream_grain(int64_t rows, int64_t row, int bytes) {
  return sg__rows_stream_grain(rows, row, bytes);
}

int64_t bench_unary_grain(const char *slot, int64_t n, int bytes) {
  size_t len = strlen(slot);
  bool backward = len > 9 && strcmp(slot + len - 9, "_backward") == 0;
  if (backward) len -= 9;
#define COSTLY_(name, fwd, bwd)                                                                    \
  if (len == sizeof #name - 1 && strncmp(slot, #name, len) == 0)                                   \
    return sg__unary_grain_of_cost(backward ? bwd : fwd, n, bytes);
  SG_FOR_EACH_COSTLY_UNARY(COSTLY_)
#undef COSTLY_
  return sg__flat_grain(n, bytes);
}

int64_t bench_rows_grain(int64_t row) {
  return row >= BENCH_GRAIN ? 1 : BENCH_GRAIN / (row > 0 ? row : 1);
}

void bench_parallel_for(int64_t n, int64_t grain, int threads, bench_range_fn fn, void *ctx) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  int64_t chunks = bench_chunks(n, grain);
  if (chunks == 1 || threads <= 1) {
    for (int64_t c = 0; c < chunks; c++)
      fn(c * grain, c * grain + grain < n ? c * grain + grain : n, ctx);
    return;
  }
  if (threads > chunks) threads = (int)chunks;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < chunks; c++)
    fn(c * grain, c * grain + grain < n ? c * grain + grain : n, ctx);
}

static const char *human_bytes(double b, char *buf, size_t size) {
  if (b < 1024 * 1024)
    snprintf(buf, size, "%.0f KiB", b / 1024);
  else
    snprintf(buf, size, "%.1f MiB", b / (1024 * 1024));
  return buf;
}

/* The row's kernels' own mixes on `isa`, added (0 where none was measured). */
static double mix_seconds(const bench_work *w, const char *isa) {
  double s = 0;
  for (int k = 0; k < 2; k++)
    if (w->mix_slots[k])
      s += roofline_kernel_mix(bench_issued_slot(w->mix_slots[k], isa), isa, w->threads, w->mix_n);
  return s;
}

/* rw's work with the narrower ISA's instruction counts and mixes for the row's kernels, in *out;
   false where one of them has no count there. */
static bool narrower_work(const bench_work *w, const char *isa, const roof_work *rw,
                          roof_work *out) {
  if (!w->mix_slots[0]) return false;
  *out = *rw;
  out->insns = 0;
  for (int k = 0; k < ROOF_N_CLASSES; k++) out->cls[k] = 0;
  for (int k = 0; k < 2; k++)
    if (w->mix_slots[k] &&
        !bench_kernel_issued(w->mix_slots[k], isa, w->mix_n, &out->insns, out->cls))
      return false;
  out->mix_s = mix_seconds(w, isa);
  return true;
}

void bench_report(bench_state *st, const bench_work *w) {
  double t = bench_elapsed(st);
  int64_t it = bench_iterations(st);
  if (t <= 0 || it <= 0) return;
  double per_call = t / (double)it;
  bench_counter(st, "simdgrad_threads", w->threads > 0 ? w->threads : 1);
  if (w->items > 0) bench_counter(st, "items_per_second", w->items / per_call);
  if (w->bytes > 0) bench_counter(st, "bytes_per_second", w->bytes / per_call);
  if (w->flops > 0) {
    bench_counter(st, "FLOPS", w->flops / per_call);
    if (w->bytes > 0) bench_counter(st, "AI", w->flops / w->bytes);
  }
  if (w->bytes <= 0 && w->flops <= 0) return;
  roof_work rw = {.flops = w->flops - w->kernel_flops,
                  .kernel_s = w->kernel_s,
                  .read = w->bytes - w->written,
                  .written = w->written,
                  .written_in_place = w->written_in_place,
                  .footprint = w->footprint > 0 ? w->footprint : w->bytes,
                  .insns = w->insns};
  for (int k = 0; k < ROOF_N_CLASSES; k++) rw.cls[k] = w->cls[k];
  rw.mix_s = mix_seconds(w, w->isa);
  /* The row's bound: the lower of its ISA's and that of the narrower ISA's kernels for the same
     slots, on that ISA's figures (the same bytes; their own instructions and rates): a backend
     that may run them could have, at any size, whether or not it hands this row's calls on. A
     row of two kernels (the tape's) takes both from one ISA, not the better of each: its bound
     may then sit above the best mix, never below what either ISA's kernels need. */
  const char *isa = w->isa, *narrow = isa ? roofline_narrower_isa(isa) : NULL;
  roof_verdict v = roofline_judge(isa, w->threads, &rw);
  roof_work rn;
  if (narrow && narrower_work(w, narrow, &rw, &rn)) {
    roof_verdict vn = roofline_judge(narrow, w->threads, &rn);
    if (vn.seconds > 0 && vn.seconds < v.seconds * (1 - 1e-9)) /* ties keep the row's own */
      v = vn, rw = rn, isa = narrow;
    else
      narrow = NULL;
  } else {
    narrow = NULL;
  }
  double best = bench_best_call(st), fastest = best > 0 && best < per_call ? best : per_call;
  if (v.seconds > 0 && 100.0 * v.seconds / fastest > ROOF_MODEL_ERROR_PCT) {
    /* the figure that bound the row measured again; its kernels' mixes too where they did */
    bool raised = false;
    if (v.issue_class == ROOF_MIX && v.issue_s >= v.seconds)
      for (int k = 0; k < 2; k++)
        if (w->mix_slots[k])
          raised |= roofline_recheck_mix(bench_issued_slot(w->mix_slots[k], isa), isa, w->threads);
    raised |= roofline_recheck(isa, w->threads, rw.footprint,
                               v.compute_s >= v.memory_s || v.issue_s >= v.memory_s);
    if (raised) { /* a figure rose: judged again */
      rw.mix_s = mix_seconds(w, isa);
      v = roofline_judge(isa, w->threads, &rw);
      bench_counter(st, "roof_rechecked", 1);
    }
  }
  unsigned flags = v.flags;
  if (v.seconds > 0) {
    bench_counter(st, "pct_roofline", roof_pct(&v, per_call, &flags));
    if (rw.footprint > 0) bench_counter(st, "footprint_bytes", rw.footprint);
    if (v.bandwidth > 0) bench_counter(st, "roof_gbs", v.bandwidth / 1e9);
    /* 1: compute (the FMA peak), 2: the issue bound, 0: memory */
    bench_counter(st, "roof_bound", v.issue_s >= v.seconds ? 2 : v.compute_s >= v.memory_s ? 1 : 0);
    if (v.issue_s > 0) bench_counter(st, "roof_issue_s", v.issue_s);
    if (v.pipes_s > 0) bench_counter(st, "roof_pipes_s", v.pipes_s);
    if (rw.mix_s > 0) bench_counter(st, "roof_mix_s", rw.mix_s);
    if (narrow) bench_counter(st, "roof_narrower_isa", 1);
  }
  if (best > 0) {
    bench_counter(st, "best_call_s", best);
    if (v.seconds > 0) {
      unsigned best_flags;
      bench_counter(st, "best_pct_roofline", roof_pct(&v, best, &best_flags));
      flags |= best_flags;
    }
  }
  if (v.seconds > 0) bench_counter(st, "roof_flags", flags);
  char label[192], ws[32], issue[48];
  if (w->kernel_s > 0) bench_counter(st, "roof_kernel_s", w->kernel_s);
  /* the class whose instructions bind: "all" for the total over the combined rate */
  snprintf(issue, sizeof issue, "; issue-bound (%s%s%s)", roof_class_name(v.issue_class),
           narrow ? ", " : "", narrow ? narrow : "");
  snprintf(label, sizeof label, "%s%s%s in %s%s%s%s", w->desc ? w->desc : "", w->desc ? "; " : "",
           human_bytes(rw.footprint, ws, sizeof ws), roof_level_name(v.level),
           w->kernel_s > 0 ? "; compute: the library call's own rate in cache"
           : v.seconds > 0 && v.issue_s >= v.seconds ? issue
                                                     : "",
           flags & ROOF_FLAG_INCONSISTENT ? "; judged on an inconsistent roof" : "",
           flags & ROOF_FLAG_MODEL_ERROR ? "; above 105% of the roof: a model error" : "");
  bench_set_label(st, label);
}

double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best of at least 16 calls and 5 ms: a few microseconds each, so noise (an interrupt, the
   other core's neighbour) spoils some calls but rarely the best. */
double bench_kernel_seconds(void (*fn)(int64_t lo, int64_t hi, void *ctx), int64_t n, void *ctx) {
  double best = 0, start = bench_now();
  for (int rep = 0; rep < 16 || bench_now() - start < 5e-3; rep++) {
    double t0 = bench_now();
    fn(0, n, ctx);
    double t = bench_now() - t0;
    if (rep == 0 || t < best) best = t;
    if (rep > 4096) break;
  }
  return best;
}

void bench_enter(const sg_backend *be, int threads, bench_engine_state *saved) {
  snprintf(saved->backend, sizeof saved->backend, "%s", sg_backend_name());
  saved->threads = sg_threads();
  sg_use_backend(be->name);
  sg_set_threads(threads);
  sg_scope_begin("bench");
}

void bench_leave(const bench_engine_state *saved) {
  sg_scope_end(NULL, 0);
  sg_use_backend(saved->backend);
  sg_set_threads(saved->threads);
}
