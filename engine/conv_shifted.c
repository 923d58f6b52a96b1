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
  ptrdiff_t lo = first <= 0 ? 0 : (first + s - 1) / s, hi = last < 0 ? 0 : last / s + 1;
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
  size_t count;
  tap taps[MAX_TAPS];
} tap_row;

/* out's pixels [0, width) = the group's sum (+ out after the first group). The row is cut
   where the set of taps changes (a span's end), and each piece is one gemm_taps call over the
   taps active on all of it: every pixel is written, none twice. */
static void flush_taps(tap_row *r) {
  for (size_t lo = 0, hi; lo < r->width; lo = hi) {
    hi = r->width;
    for (size_t t = 0; t < r->count; t++) {
      if (r->taps[t].lo > lo && r->taps[t].lo < hi) hi = r->taps[t].lo;
      if (r->taps[t].hi > lo && r->taps[t].hi < hi) hi = r->taps[t].hi;
    }
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

/* Output rows [lo, hi) of all images: y row (n, oh) = sum over taps of x pixels times f taps. */
static void forward_rows(int64_t lo, int64_t hi, void *arg) {
  const shifted_job *j = arg;
  const sg_window2d *g = j->g;
  const size_t c = g->in_c, o = g->out_c;
  tap_row r = {
      .be = j->be, .width = g->out_w, .n = o, .k = c, .lda = g->stride_w * c, .ldb = o, .ldo = o};
  for (int64_t it = lo; it < hi; it++) {
    size_t n = (size_t)it / g->out_h, oh = (size_t)it % g->out_h;
    r.out = j->out + (n * g->out_h + oh) * g->out_w * o;
    r.beta = 0.0f;
    for (size_t kh = 0, ih; kh < g->k_h; kh++) {
      if (!tap_row_in(g, oh, kh, &ih)) continue;
      const float *x = j->in + (n * g->in_h + ih) * g->in_w * c;
      for (size_t kw = 0, ow0, ow1, iw0; kw < g->k_w; kw++)
        if (tap_span(g, kw, &ow0, &ow1, &iw0))
          add_tap(&r, ow0, ow1, x + iw0 * c, j->w + (kh * g->k_w + kw) * c * o);
    }
    finish_taps(&r);
  }
}

void sg__conv_shifted_forward(const sg_backend *be, const sg_window2d *g, const float *x,
                              const float *f, float *y) {
  shifted_job j = {be, g, x, f, y};
  double per_row = (double)g->out_w * (double)(g->k_h * g->k_w * g->in_c) * (double)g->out_c;
  sg_parallel_for((int64_t)(g->batch * g->out_h), sg__grain_for(per_row, GRAIN_MACS), forward_rows,
                  &j);
}

/* Input rows [lo, hi): dx row (n, ih) = sum over the taps that reach it of dy pixels times the
   transposed taps. Output column ow of tap kw lands on input column iw0 + (ow - ow0) *
   stride_w, so the taps split by iw mod stride_w: each class of input columns is one target
   row (stride_w * C apart), summed on its own. */
static void input_grad_rows(int64_t lo, int64_t hi, void *arg) {
  const shifted_job *j = arg;
  const sg_window2d *g = j->g;
  const size_t c = g->in_c, o = g->out_c, s = g->stride_w;
  tap_row r = {.be = j->be, .n = c, .k = o, .lda = o, .ldb = c, .ldo = s * c};
  for (int64_t it = lo; it < hi; it++) {
    size_t n = (size_t)it / g->in_h, ih = (size_t)it % g->in_h;
    float *dx = j->out + (n * g->in_h + ih) * g->in_w * c;
    for (size_t cls = 0; cls < s && cls < g->in_w; cls++) {
      r.out = dx + cls * c;
      r.width = (g->in_w - cls + s - 1) / s;
      r.beta = 0.0f;
      for (size_t kh = 0; kh < g->k_h; kh++) {
        /* oh * stride_h = ih + pad_top - kh * dilation_h */
        ptrdiff_t t = (ptrdiff_t)(ih + g->pad_top) - (ptrdiff_t)(kh * g->dilation_h);
        if (t < 0 || t % (ptrdiff_t)g->stride_h != 0) continue;
        size_t oh = (size_t)t / g->stride_h;
        if (oh >= g->out_h) continue;
        const float *dy = j->in + (n * g->out_h + oh) * g->out_w * o;
        for (size_t kw = 0, ow0, ow1, iw0; kw < g->k_w; kw++)
          if (tap_span(g, kw, &ow0, &ow1, &iw0) && iw0 % s == cls)
            add_tap(&r, iw0 / s, iw0 / s + (ow1 - ow0), dy + ow0 * o,
                    j->w + (kh * g->k_w + kw) * o * c);
      }
      finish_taps(&r);
    }
  }
}

void sg__conv_shifted_input_grad(const sg_backend *be, const sg_window2d *g, const float *dy,
                                 const float *ft, float *dx) {
  shifted_job j = {be, g, dy, ft, dx};
  double per_row = (double)g->in_w * (double)(g->k_h * g->k_w * g->in_c) * (double)g->out_c /
                   (double)(g->stride_h > 0 ? g->stride_h : 1);
  sg_parallel_for((int64_t)(g->batch * g->in_h), sg__grain_for(per_row, GRAIN_MACS),
                  input_grad_rows, &j);
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
