/* The scalar N-d transpose of 4-byte elements (f32 or i32 bits, copied bit for bit). The two
 * innermost axes of y are walked in square tiles so that neither x nor y is read or written
 * with a long stride inside a tile; the outer axes go through an odometer. */
#include <string.h>

#include "kernels_scalar.h"

#define TILE 32

void sg_f32_transpose__scalar(const float *x, const int64_t *shape, const int *perm, int rank,
                              float *y) {
  /* Bytes, not floats: an i32 pattern that reads as a signalling NaN must not be touched. */
  const char *xb = (const char *)x;
  char *yb = (char *)y;
  int64_t xstride[8], ydim[8], ystride_x[8];
  int64_t numel = 1;
  for (int i = rank - 1; i >= 0; i--) {
    xstride[i] = numel;
    numel *= shape[i];
  }
  if (numel == 0) return;
  if (rank == 0) {
    memcpy(yb, xb, 4);
    return;
  }
  /* y's axis i has x's length and x stride of axis perm[i]. A rank-1 y is a [1, n] one. */
  int r = rank < 2 ? 2 : rank, off = r - rank;
  for (int i = 0; i < off; i++) ydim[i] = 1, ystride_x[i] = 0;
  for (int i = 0; i < rank; i++) {
    ydim[off + i] = shape[perm[i]];
    ystride_x[off + i] = xstride[perm[i]];
  }
  const int64_t rows = ydim[r - 2], cols = ydim[r - 1];
  const int64_t srow = ystride_x[r - 2], scol = ystride_x[r - 1];
  int64_t outer = 1;
  for (int i = 0; i < r - 2; i++) outer *= ydim[i];

  int64_t idx[8] = {0};
  int64_t xbase = 0;
  char *yo = yb;
  for (int64_t o = 0; o < outer; o++) {
    for (int64_t i0 = 0; i0 < rows; i0 += TILE) {
      int64_t i1 = i0 + TILE < rows ? i0 + TILE : rows;
      for (int64_t j0 = 0; j0 < cols; j0 += TILE) {
        int64_t j1 = j0 + TILE < cols ? j0 + TILE : cols;
        for (int64_t i = i0; i < i1; i++) {
          const char *xr = xb + 4 * (xbase + i * srow);
          char *yr = yo + 4 * (i * cols);
          for (int64_t j = j0; j < j1; j++) memcpy(yr + 4 * j, xr + 4 * (j * scol), 4);
        }
      }
    }
    yo += 4 * rows * cols;
    /* Odometer over y's outer axes, carrying x's offset along. */
    for (int d = r - 3; d >= 0; d--) {
      xbase += ystride_x[d];
      if (++idx[d] < ydim[d]) break;
      xbase -= ystride_x[d] * ydim[d];
      idx[d] = 0;
    }
  }
}
