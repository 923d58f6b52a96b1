/* A short real training run: a small CNN (conv + batch norm + ReLU + max-pool + dense, with
 * dropout) trained with Adam for one epoch on the first few hundred Fashion-MNIST images. The
 * loss over those images must fall below a set value, and memory must stay flat across steps.
 * The data are Debian's dataset-fashion-mnist, read through `gzip -dc` (no link-time zlib); the
 * test is skipped when the files are missing. */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

#define N_IMAGES 320
#define BATCH 32
#define PIXELS 784
#define DATA_DIR "/usr/share/datasets/fashion-mnist"

/* Reads `skip` header bytes then n bytes of a gzipped file through gzip. */
static bool read_gz(const char *path, size_t skip, size_t n, unsigned char *out) {
  FILE *probe = fopen(path, "rb");
  if (!probe) return false;
  fclose(probe);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "gzip -dc '%s'", path);
  FILE *p = popen(cmd, "r");
  if (!p) return false;
  unsigned char head[16];
  bool ok = fread(head, 1, skip, p) == skip && fread(out, 1, n, p) == n;
  pclose(p); /* gzip may get SIGPIPE for the rest: fine */
  return ok;
}

typedef struct model {
  sg_tensor *k, *off, *scale, *w, *b; /* variables */
} model;

static sg_tensor *forward(const model *m, sg_tensor *x, bool training, uint64_t step) {
  static const int64_t two[2] = {2, 2};
  sg_tensor *h = sg_conv2d(x, m->k, NULL, SG_PADDING_SAME, NULL, NULL);
  sg_tensor *mean, *var;
  if (sg_moments(h, (int[]){0, 1, 2}, 3, false, &mean, &var) != SG_OK) return NULL;
  h = sg_max_pool(sg_relu(sg_batch_norm(h, mean, var, m->off, m->scale, 1e-3f)), two, two,
                  SG_PADDING_VALID, NULL);
  h = sg_reshape(h, (int64_t[]){-1, 14 * 14 * 8}, 2);
  if (training) h = sg_dropout(h, 0.1f, step + 1);
  return sg_add(sg_matmul(h, m->w, false, false), m->b);
}

static float eval_loss(const model *m, sg_tensor *x, sg_tensor *y) {
  sg_scope_begin("eval");
  sg_tensor *l = sg_softmax_cross_entropy(y, forward(m, x, false, 0));
  cr_assert_not_null(l, "%s", sg_last_error());
  float v = sg_data_f32(l)[0];
  sg_scope_end(NULL, 0);
  return v;
}

static sg_tensor *var_of(sg_tensor *init) {
  sg_tensor *v = sg_variable(init);
  sg_dispose(init);
  return v;
}

Test(train, one_epoch_of_fashion_mnist_lowers_the_loss) {
  static unsigned char pix[N_IMAGES * PIXELS], lab[N_IMAGES];
  if (!read_gz(DATA_DIR "/train-images-idx3-ubyte.gz", 16, sizeof pix, pix) ||
      !read_gz(DATA_DIR "/train-labels-idx1-ubyte.gz", 8, sizeof lab, lab))
    cr_skip_test("Fashion-MNIST not found in " DATA_DIR " (apt-get install dataset-fashion-mnist)");
  int64_t live0 = t_live_tensors();
  float *xv = malloc(sizeof(float) * N_IMAGES * PIXELS), *yv = calloc(N_IMAGES * 10, 4);
  for (int i = 0; i < N_IMAGES * PIXELS; i++) xv[i] = pix[i] / 255.0f;
  for (int i = 0; i < N_IMAGES; i++) {
    cr_assert(lab[i] < 10);
    yv[i * 10 + lab[i]] = 1.0f;
  }
  sg_tensor *x = sg_keep(t_f32(xv, 4, (int64_t[]){N_IMAGES, 28, 28, 1}));
  sg_tensor *y = sg_keep(t_f32(yv, 2, (int64_t[]){N_IMAGES, 10}));
  model m = {
      .k = var_of(sg_random_normal((int64_t[]){3, 3, 1, 8}, 4, 0, 0.47f, 1)),
      .off = var_of(sg_zeros((int64_t[]){8}, 1)),
      .scale = var_of(sg_ones((int64_t[]){8}, 1)),
      .w = var_of(sg_random_normal((int64_t[]){14 * 14 * 8, 10}, 2, 0, 0.035f, 2)),
      .b = var_of(sg_zeros((int64_t[]){10}, 1)),
  };
  sg_tensor *params[5] = {m.k, m.off, m.scale, m.w, m.b}, *grads[5];
  sg_optimizer *opt = sg_adam(3e-3f, 0.9f, 0.999f, 1e-7f);
  float before = eval_loss(&m, x, y);
  int64_t live_step = -1;
  for (int64_t at = 0; at < N_IMAGES; at += BATCH) {
    sg_scope_begin("step");
    sg_tensor *xb = sg_slice(x, (int64_t[]){at, 0, 0, 0}, (int64_t[]){BATCH, -1, -1, -1});
    sg_tensor *yb = sg_slice(y, (int64_t[]){at, 0}, (int64_t[]){BATCH, -1});
    cr_assert_eq(sg_tape_begin(), SG_OK);
    sg_tensor *loss = sg_softmax_cross_entropy(yb, forward(&m, xb, true, (uint64_t)at));
    cr_assert_eq(sg_tape_end(loss, NULL, params, 5, grads), SG_OK, "%s", sg_last_error());
    cr_assert_eq(sg_optimizer_step(opt, params, grads, 5), SG_OK, "%s", sg_last_error());
    sg_scope_end(NULL, 0);
    /* Flat memory: the same live tensors after every step. */
    if (live_step < 0) live_step = t_live_tensors();
    cr_assert_eq(t_live_tensors(), live_step, "step at %lld: %lld live tensors, want %lld",
                 (long long)at, (long long)t_live_tensors(), (long long)live_step);
  }
  float after = eval_loss(&m, x, y);
  cr_log_info("loss over %d images: %.4f before, %.4f after one epoch", N_IMAGES, before, after);
  /* Untrained is about ln 10 = 2.3; one epoch of 10 steps reaches about 1.08 on every backend. */
  cr_assert(before > 1.8f, "initial loss %.4f", before);
  cr_assert(after < 1.3f, "loss after one epoch %.4f (before %.4f)", after, before);
  for (int i = 0; i < 5; i++) sg_dispose(params[i]);
  sg_optimizer_free(opt);
  sg_dispose(x);
  sg_dispose(y);
  free(xv);
  free(yv);
  cr_assert_eq(t_live_tensors(), live0);
}
