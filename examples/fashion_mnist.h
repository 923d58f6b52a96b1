/* Fashion-MNIST from its gzipped IDX files (Debian: dataset-fashion-mnist), read with zlib, plus
 * the small batching helpers the training examples share. */
#ifndef SIMDGRAD_EXAMPLES_FASHION_MNIST_H
#define SIMDGRAD_EXAMPLES_FASHION_MNIST_H

#include <stdint.h>

#define FM_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define FM_ROWS 28
#define FM_COLS 28
#define FM_PIXELS (FM_ROWS * FM_COLS)
#define FM_CLASSES 10

typedef struct fm_set {
  int64_t n;
  float *images;   /* [n, 28 * 28], scaled to [0, 1] */
  uint8_t *labels; /* [n], 0..9 */
} fm_set;

/* Loads "<dir>/<prefix>-images-idx3-ubyte.gz" and "...-labels-idx1-ubyte.gz" (prefix "train" or
   "t10k"), at most max_n images (<= 0: all). Returns 0, or -1 with a message in err. */
int fm_load(const char *dir, const char *prefix, int64_t max_n, fm_set *out, char *err,
            int err_size);
void fm_free(fm_set *s);

/* The data directory: $FASHION_MNIST_DIR, else FM_DEFAULT_DIR. */
const char *fm_dir(void);

/* A permutation of [0, n) from a seed (Fisher-Yates on a xorshift generator). */
void fm_shuffle(int64_t *idx, int64_t n, uint64_t seed);

/* Copies images idx[0..b) into x [b, 784] and their one-hot labels into y [b, 10]. */
void fm_batch(const fm_set *s, const int64_t *idx, int64_t b, float *x, float *y);

/* ---- The training loop both examples share (public simdgrad API only) ---- */

#include "models.h"

typedef struct fm_trainer {
  const fm_model *model;
  sg_optimizer *opt;
  int64_t batch;
  int epochs;
} fm_trainer;

/* Trains for t->epochs over `train` (reshuffled each epoch), printing one line per epoch: mean
   training loss, test accuracy, training images/s and time. Returns the last test accuracy in
   [0, 1], or -1 after printing an error. */
double fm_train(const fm_trainer *t, const fm_set *train, const fm_set *test);

/* An example's main: loads the data, builds the model, trains it with Adam (lr 1e-3, batch 128)
   for `epochs` on at most max_train images (<= 0: all). Returns the exit status. */
int fm_run_example(const char *prog, sg_status (*make_model)(fm_model *), int epochs,
                   int64_t max_train);

/* Fraction of `s` that the model classifies right (batches of 500, no tape). */
double fm_accuracy(const fm_model *m, const fm_set *s);

#endif
