/* conv2d forward and input gradient as shifted products summed over the taps (conv_shifted.h).
 * Work items are output rows (forward) or input rows (input gradient): each item writes its own
 * row only, so the result does not depend on the thread count. */
#include "conv_shifted.h"

#include <string.h>

#include "window2d.h"

/* Multiply-adds per parallel chunk (about 100 us of gemm). */
#define GRAIN_MACS (1 << 21)
/* Taps one gemm_taps call sums (a 3x3 window is 9); a bigger window is summed in groups. */
#define MAX_TAPS 64
/* A piece of a row narrower than this (the pixels at a padded edge, where the set of taps
   changes) makes a 1-row tile, too few accumulators to hide the FMA latency: at a 3x3 window's
   2 edge pixels of 56, that cost about 5% of the forward. The forward and the input gradient
   write such pieces down the column instead (write_edges), one pixel of many rows per call. */
#define EDGE_PIXELS 4
/* Rows a chunk holds at least, so that its edge columns make whole tiles (the taps tiles are
   6 rows tall on AVX2 and AVX-512, 12 on NEON). */
#define MIN_CHUNK_ROWS 12
/* Output rows the filter gradient sums per gemm_taps call: their x and dy rows (a few hundred
   KiB at 64 channels) stay in L2 while every tap and every tile of the gradient reads them. */
#define FILTER_GROUP_ROWS 8

bool sg__conv_shifted_suits(const sg_window2d *g) {
  return g->k_h * g->k_w > 1 && g->in_c >= SG_CONV_SHIFTED_MIN_CHANNELS &&
         g->out_c >= SG_CONV_SHIFTED_MIN_CHANNELS;
}

/* Filter column kw reaches the output columns [*ow0, *ow1), whose input columns
   ow * stride_w + kw * dilation_w - pad_left lie in [0, in_w) and start at *iw0. False when
   there are none. */
static bool tap_span(const sg_window2d *g, size_t kw, size_t *ow0, size_t *ow1, size_t *iw0) {
  ptrdiff_t tap = (ptrdiff_t)(kw * g->dilation_w), s = (ptrdiff_t)g->stride_w;
  ptrdiff_t first = (ptrdiff_t)g->pad_left - tap,
            last = (ptrdiff_t)(g->in_w + g->pad_left) - 1 - tap;
  ptrdiff_t lo = sg__ceil_div(first, s), hi = last < 0 ? 0 : last / s + 1;
  if (hi > (ptrdiff_t)g->out_w) hi = (ptrdiff_t)g->out_w;
  if (lo >= hi) return false;
  *ow0 = (size_t)lo;
  *ow1 = (size_t)hi;
  *iw0 = (size_t)(lo * s - first);
  return true;
}

/* The input row that filter row kh meets for output row oh, in *ih; false in the padding. */
static bool tap_row_in(const sg_window2d *g, size_t oh, size_t kh, size_t *ih) {
  ptrdiff_t r = (ptrdiff_t)(oh * g->stride_h + kh * g->dilation_h) - (ptrdiff_t)g->pad_top;
  if (r < 0 || r >= (ptrdiff_t)g->in_h) return false;
  *ih = (size_t)r;
  return true;
}

/* One tap's product for one target row: it reaches the target pixels [lo, hi); a is the A row
   (an input or dy pixel) of target pixel lo, the next ones lda apart; b is the tap's slice of
   the filter. */
typedef struct tap {
  size_t lo, hi;
  const float *a, *b;
} tap;

/* The taps of one target row, summed into it in groups of MAX_TAPS. */
typedef struct tap_row {
  const sg_backend *be;
  size_t width, n, k, lda, ldb, ldo; /* target pixels, each n floats, ldo apart; A_t is k wide */
  float *out;
  float beta; /* 0 until the first group is written, then 1 */
  /* Pieces narrower than this are left unwritten, for the caller to write down the column
     (only with all the row's taps in one group: the pieces are then the same in every group);
     0 writes them all. */
  size_t min_width;
  size_t count;
  tap taps[MAX_TAPS];
} tap_row;

/* The end of the piece of r's row that starts at pixel lo: the next pixel where the set of
   taps changes (a span's end), or the row's end. */
static size_t piece_end(const tap_row *r, size_t lo) {
  size_t hi = r->width;
  for (size_t t = 0; t < r->count; t++) {
    if (r->taps[t].lo > lo && r->taps[t].lo < hi) hi = r->taps[t].lo;
    if (r->taps[t].hi > lo && r->taps[t].hi < hi) hi = r->taps[t].hi;
  }
  return hi;
}

/* out's pixels [0, width) = the group's sum (+ out after the first group). The row is cut
   where the set of taps changes, and each piece is one gemm_taps call over the taps active on
   all of it: every pixel is written (but for pieces under min_width), none twice. */
static void flush_taps(tap_row *r) {
  for (size_t lo = 0, hi; lo < r->width; lo = hi) {
    hi = piece_end(r, lo);
    if (hi - lo < r->min_width) continue;
    const float *a[MAX_TAPS], *b[MAX_TAPS];
    size_t used = 0;
    for (size_t t = 0; t < r->count; t++)
      if (r->taps[t].lo <= lo && hi <= r->taps[t].hi) {
        a[used] = r->taps[t].a + (lo - r->taps[t].lo) * r->lda;
        b[used++] = r->taps[t].b;
      }
    if (used || r->beta == 0.0f)
      r->be->gemm_taps(hi - lo, r->n, r->k, used, a, r->lda, false, b, r->ldb, r->beta,
                       r->out + lo * r->ldo, r->ldo);
  }
  r->beta = 1.0f;
  r->count = 0;
}

static void add_tap(tap_row *r, size_t lo, size_t hi, const float *a, const float *b) {
  if (r->count == MAX_TAPS) flush_taps(r);
  r->taps[r->count++] = (tap){lo, hi, a, b};
}

/* The last group, or zeros when no tap reached the row. */
static void finish_taps(tap_row *r) {
  if (r->count || r->beta == 0.0f) flush_taps(r);
}

typedef struct shifted_job {
  const sg_backend *be;
  const sg_window2d *g;
  const float *in, *w; /* x and f (forward), dy and ft (input gradient) */
  float *out;
} shifted_job;

/* Adds to r the taps of target row `row` of image n (for the input gradient, of its class cls
   of columns), for the target pixels [p0, p1): each span cut to them and shifted to start at 0. */
typedef void row_taps_fn(const shifted_job *j, size_t n, size_t row, size_t cls, size_t p0,
                         size_t p1, tap_row *r);

/* What the forward and the input gradient tell the row driver. */
typedef struct row_kind {
  row_taps_fn *taps;
  /* Whether target rows r1 and r2 of an image have the same taps, their A rows a_step apart
     per row between them. */
  bool (*same_taps)(const sg_window2d *g, size_t r1, size_t r2);
  size_t height;   /* target rows per image */
  size_t a_step;   /* floats from one target row's A rows to the next row's */
  size_t out_step; /* floats from one target row to the next */
} row_kind;

/* Adds tap (lo, hi, a, b) cut to the target pixels [p0, p1) and shifted to start at 0; the
   A row of target pixel lo + i is a + i * step. */
static void add_tap_cut(tap_row *r, size_t lo, size_t hi, const float *a, size_t step,
                        const float *b, size_t p0, size_t p1) {
  size_t from = lo > p0 ? lo : p0, to = hi < p1 ? hi : p1;
  if (from < to) add_tap(r, from - p0, to - p0, a + (from - lo) * step, b);
}

/* The narrow pieces of a run of `rows` target rows down the column: target pixel px of all
   the rows is one gemm_taps call, its A rows and its target rows a row step apart. r holds
   the last row's taps (the same pieces as every row of the run); out0 is the run's first row. */
static void write_edges(const shifted_job *j, const row_kind *kind, const tap_row *r, size_t n,
                        size_t row0, size_t rows, size_t cls, float *out0) {
  tap_row col = {.be = r->be,
                 .width = rows,
                 .n = r->n,
                 .k = r->k,
                 .lda = kind->a_step,
                 .ldb = r->ldb,
                 .ldo = kind->out_step};
  for (size_t p = 0, q; p < r->width; p = q) {
    q = piece_end(r, p);
    if (q - p >= r->min_width) continue;
    for (size_t px = p; px < q; px++) {
      col.out = out0 + px * r->ldo;
      col.beta = 0.0f;
      /* The first row's taps at px, then each made to reach all the rows. */
      kind->taps(j, n, row0, cls, px, px + 1, &col);
      for (size_t t = 0; t < col.count; t++) col.taps[t].hi = rows;
      finish_taps(&col);
    }
  }
}

/* Target rows [lo, hi) of all images (item n * height + row), class cls of their columns: r is
   set up but for out. Consecutive rows of an image with the same taps form a run; a run of
   several rows (and a window of one tap group) leaves its narrow pieces (a padded edge's
   pixels) to write_edges, where they make tiles as tall as the run. */
static void write_rows(const shifted_job *j, const row_kind *kind, tap_row *r, int64_t lo,
                       int64_t hi, size_t cls) {
  const sg_window2d *g = j->g;
  for (int64_t it = lo, end; it < hi; it = end) {
    size_t n = (size_t)it / kind->height, row = (size_t)it % kind->height;
    for (end = it + 1; end < hi && (size_t)end / kind->height == n; end++)
      if (!kind->same_taps(g, row, (size_t)end % kind->height)) break;
    size_t rows = (size_t)(end - it);
    float *out0 = j->out + (size_t)it * kind->out_step + cls * r->n;
    r->min_width = rows > 1 && g->k_h * g->k_w <= MAX_TAPS ? EDGE_PIXELS : 0;
    for (size_t i = 0; i < rows; i++) {
      r->out = out0 + i * kind->out_step;
      r->beta = 0.0f;
      kind->taps(j, n, row + i, cls, 0, r->width, r);
      /* Before finish_taps, which clears the taps that write_edges reads the pieces from. */
      if (i + 1 == rows && r->min_width) write_edges(j, kind, r, n, row, rows, cls, out0);
      finish_taps(r);
    }
  }
}

static int64_t chunk_rows(double macs_per_row) {
  int64_t grain = sg__grain_for(macs_per_row, GRAIN_MACS);
  return grain < MIN_CHUNK_ROWS ? MIN_CHUNK_ROWS : grain;
}

/* Output row oh: the x pixels each tap (kh, kw) meets, times its [C, O] slice of f. */
static void forward_taps(const shifted_job *j, size_t n, size_t oh, size_t cls, size_t p0,
                         size_t p1, tap_row *r) {
  (void)cls;
  const sg_window2d *g = j->g;
  const size_t c = g->in_c, o = g->out_c;
  for (size_t kh = 0, ih; kh < g->k_h; kh++) {
    if (!tap_row_in(g, oh, kh, &ih)) continue;
    const float *x = j->in + (n * g->in_h + ih) * g->in_w * c;
    for (size_t kw = 0, ow0, ow1, iw0; kw < g->k_w; kw++)
      if (tap_span(g, kw, &ow0, &ow1, &iw0))
        add_tap_cut(r, ow0, ow1, x + iw0 * c, g->stride_w * c, j->w + (kh * g->k_w + kw) * c * o,
                    p0, p1);
  }
}

/* Output rows that meet the same filter rows (neither, or both, in the padding). */
static bool forward_same_taps(const sg_window2d *g, size_t oh1, size_t oh2) {
  for (size_t kh = 0, ih; kh < g->k_h; kh++)
    if (tap_row_in(g, oh1, kh, &ih) != tap_row_in(g, oh2, kh, &ih)) return false;
  return true;
}

static void forward_rows(int64_t lo, int64_t hi, void *arg) {
  const shifted_job *j = arg;
  const sg_window2d *g = j->g;
  const size_t c = g->in_c, o = g->out_c;
  const row_kind kind = {forward_taps, forward_same_taps, g->out_h, g->stride_h * g->in_w * c,
                         g->out_w * o};
  tap_row r = {
      .be = j->be, .width = g->out_w, .n = o, .k = c, .lda = g->stride_w * c, .ldb = o, .ldo = o};
  write_rows(j, &kind, &r, lo, hi, 0);
}

/* y row (n, oh) = sum over taps of x pixels times f taps. */
void sg__conv_shifted_forward(const sg_backend *be, const sg_window2d *g, const float *x,
                              const float *f, float *y) {
  shifted_job j = {be, g, x, f, y};
  double per_row = (double)g->out_w * (double)(g->k_h * g->k_w * g->in_c) * (double)g->out_c;
  sg__parallel_for((int64_t)(g->batch * g->out_h), chunk_rows(per_row), forward_rows, &j);
}

/* The output row that filter row kh sends to input row ih, in *oh; false when none does
   (oh * stride_h = ih + pad_top - kh * dilation_h). */
static bool tap_row_out(const sg_window2d *g, size_t ih, size_t kh, size_t *oh) {
  ptrdiff_t t = (ptrdiff_t)(ih + g->pad_top) - (ptrdiff_t)(kh * g->dilation_h);
  if (t < 0 || t % (ptrdiff_t)g->stride_h != 0 || (size_t)t / g->stride_h >= g->out_h) return false;
  *oh = (size_t)t / g->stride_h;
  return true;
}

/* Input row ih, class cls: output column ow of tap kw lands on input column iw0 + (ow - ow0) *
   stride_w, so the taps split by iw mod stride_w, and class cls takes those with iw0 % stride_w
   == cls (its pixel iw0 / stride_w on). Each tap: dy pixels times the tap transposed. */
static void input_grad_taps(const shifted_job *j, size_t n, size_t ih, size_t cls, size_t p0,
                            size_t p1, tap_row *r) {
  const sg_window2d *g = j->g;
  const size_t c = g->in_c, o = g->out_c, s = g->stride_w;
  for (size_t kh = 0, oh; kh < g->k_h; kh++) {
    if (!tap_row_out(g, ih, kh, &oh)) continue;
    const float *dy = j->in + (n * g->out_h + oh) * g->out_w * o;
    for (size_t kw = 0, ow0, ow1, iw0; kw < g->k_w; kw++)
      if (tap_span(g, kw, &ow0, &ow1, &iw0) && iw0 % s == cls)
        add_tap_cut(r, iw0 / s, iw0 / s + (ow1 - ow0), dy + ow0 * o, o,
                    j->w + (kh * g->k_w + kw) * o * c, p0, p1);
  }
}

/* Input rows that the same filter rows reach, the next output row each (stride 1 only: with a
   bigger stride, neighbouring input rows meet different filter rows). */
static bool input_grad_same_taps(const sg_window2d *g, size_t ih1, size_t ih2) {
  if (g->stride_h != 1) return false;
  for (size_t kh = 0, oh; kh < g->k_h; kh++)
    if (tap_row_out(g, ih1, kh, &oh) != tap_row_out(g, ih2, kh, &oh)) return false;
  return true;
}

static void input_grad_rows(int64_t lo, int64_t hi, void *arg) {
  const shifted_job *j = arg;
  const sg_window2d *g = j->g;
  const size_t c = g->in_c, o = g->out_c, s = g->stride_w;
  const row_kind kind = {input_grad_taps, input_grad_same_taps, g->in_h, g->out_w * o, g->in_w * c};
  tap_row r = {.be = j->be, .n = c, .k = o, .lda = o, .ldb = c, .ldo = s * c};
  for (size_t cls = 0; cls < s && cls < g->in_w; cls++) {
    r.width = (g->in_w - cls + s - 1) / s;
    write_rows(j, &kind, &r, lo, hi, cls);
  }
}

/* dx row (n, ih) = sum over the taps that reach it of dy pixels times the transposed taps, each
   class of its columns (a target row stride_w * C apart) summed on its own. */
void sg__conv_shifted_input_grad(const sg_backend *be, const sg_window2d *g, const float *dy,
                                 const float *ft, float *dx) {
  shifted_job j = {be, g, dy, ft, dx};
  double per_row = (double)g->in_w * (double)(g->k_h * g->k_w * g->in_c) * (double)g->out_c /
                   (double)(g->stride_h > 0 ? g->stride_h : 1);
  sg__parallel_for((int64_t)(g->batch * g->in_h), chunk_rows(per_row), input_grad_rows, &j);
}

/* part [KH, KW, C, O] = the filter gradient of output rows [lo, hi) (items (n, oh)): for each
   tap, the x pixels it meets (transposed: C x pixels) times those pixels' dy rows, summed over
   the rows of a group in one gemm_taps call. The sum for each element runs over the groups,
   the rows and the pixels in order, so it depends on lo and hi only. */
void sg__conv_shifted_filter_grad(const sg_backend *be, const sg_window2d *g, const float *x,
                                  const float *dy, int64_t lo, int64_t hi, float *part) {
  const size_t c = g->in_c, o = g->out_c;
  memset(part, 0, g->k_h * g->k_w * c * o * sizeof(float));
  for (int64_t g0 = lo; g0 < hi; g0 += FILTER_GROUP_ROWS) {
    int64_t g1 = hi - g0 < FILTER_GROUP_ROWS ? hi : g0 + FILTER_GROUP_ROWS;
    for (size_t kh = 0; kh < g->k_h; kh++)
      for (size_t kw = 0, ow0, ow1, iw0; kw < g->k_w; kw++) {
        if (!tap_span(g, kw, &ow0, &ow1, &iw0)) continue;
        const float *a[FILTER_GROUP_ROWS], *b[FILTER_GROUP_ROWS];
        size_t rows = 0;
        for (int64_t it = g0; it < g1; it++) {
          size_t n = (size_t)it / g->out_h, oh = (size_t)it % g->out_h, ih;
          if (!tap_row_in(g, oh, kh, &ih)) continue;
          a[rows] = x + ((n * g->in_h + ih) * g->in_w + iw0) * c;
          b[rows++] = dy + ((n * g->out_h + oh) * g->out_w + ow0) * o;
        }
        if (rows)
          be->gemm_taps(c, o, ow1 - ow0, rows, a, g->stride_w * c, true, b, o, 1.0f,
                        part + (kh * g->k_w + kw) * c * o, o);
      }
  }
}
