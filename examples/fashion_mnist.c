/* Fashion-MNIST IDX reader (gzip through zlib) and batching helpers: see fashion_mnist.h. IDX is
 * big-endian: a magic (0x00000803 images, 0x00000801 labels), the dimensions, then bytes. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "fashion_mnist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static int read_exact(gzFile f, void *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    unsigned chunk = n - got > (1u << 30) ? (1u << 30) : (unsigned)(n - got);
    int r = gzread(f, (char *)p + got, chunk);
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

static uint32_t be32(const uint8_t *b) {
  return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Opens an IDX file and checks its magic and rank; dims[] gets the dimensions. */
static gzFile open_idx(const char *path, uint32_t magic, int rank, uint32_t *dims, char *err,
                       int err_size) {
  gzFile f = gzopen(path, "rb");
  if (!f) {
    snprintf(err, (size_t)err_size, "cannot open %s", path);
    return NULL;
  }
  uint8_t head[16];
  if (read_exact(f, head, 4 + 4 * (size_t)rank) != 0 || be32(head) != magic) {
    snprintf(err, (size_t)err_size, "%s is not an IDX file of rank %d", path, rank);
    gzclose(f);
    return NULL;
  }
  for (int i = 0; i < rank; i++) dims[i] = be32(head + 4 + 4 * i);
  return f;
}

int fm_load(const char *dir, const char *prefix, int64_t max_n, fm_set *out, char *err,
            int err_size) {
  memset(out, 0, sizeof *out);
  char path[1024];
  uint32_t idims[3], ldims[1];
  snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
  gzFile fi = open_idx(path, 0x803, 3, idims, err, err_size);
  if (!fi) return -1;
  snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
  gzFile fl = open_idx(path, 0x801, 1, ldims, err, err_size);
  if (!fl) {
    gzclose(fi);
    return -1;
  }
  int rc = -1;
  if (idims[1] != FM_ROWS || idims[2] != FM_COLS || idims[0] != ldims[0]) {
    snprintf(err, (size_t)err_size, "%s: unexpected sizes (%u images of %ux%u, %u labels)", prefix,
             idims[0], idims[1], idims[2], ldims[0]);
    goto done;
  }
  int64_t n = idims[0];
  if (max_n > 0 && max_n < n) n = max_n;
  uint8_t *raw = malloc((size_t)n * FM_PIXELS);
  out->images = malloc((size_t)n * FM_PIXELS * sizeof(float));
  out->labels = malloc((size_t)n);
  if (!raw || !out->images || !out->labels || read_exact(fi, raw, (size_t)n * FM_PIXELS) != 0 ||
      read_exact(fl, out->labels, (size_t)n) != 0) {
    snprintf(err, (size_t)err_size, "%s: short read or out of memory", prefix);
    free(raw);
    fm_free(out);
    goto done;
  }
  for (int64_t i = 0; i < n * FM_PIXELS; i++) out->images[i] = (float)raw[i] * (1.0f / 255.0f);
  free(raw);
  out->n = n;
  rc = 0;
  for (int64_t i = 0; i < n; i++)
    if (out->labels[i] >= FM_CLASSES) {
      snprintf(err, (size_t)err_size, "%s: label %u out of range", prefix, out->labels[i]);
      fm_free(out);
      rc = -1;
      break;
    }
done:
  gzclose(fi);
  gzclose(fl);
  return rc;
}

void fm_free(fm_set *s) {
  free(s->images);
  free(s->labels);
  memset(s, 0, sizeof *s);
}

const char *fm_dir(void) {
  const char *d = getenv("FASHION_MNIST_DIR");
  return d && *d ? d : FM_DEFAULT_DIR;
}

void fm_shuffle(int64_t *idx, int64_t n, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < n; i++) idx[i] = i;
  for (int64_t i = n - 1; i > 0; i--) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    int64_t j = (int64_t)(s % (uint64_t)(i + 1));
    int64_t t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }
}

void fm_batch(const fm_set *s, const int64_t *idx, int64_t b, float *x, float *y) {
  memset(y, 0, (size_t)b * FM_CLASSES * sizeof(float));
  for (int64_t i = 0; i < b; i++) {
    memcpy(x + i * FM_PIXELS, s->images + idx[i] * FM_PIXELS, FM_PIXELS * sizeof(float));
    y[i * FM_CLASSES + s->labels[idx[i]]] = 1.0f;
  }
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static sg_tensor *input_tensor(const fm_model *m, const float *x, int64_t b) {
  const int64_t flat[2] = {b, FM_PIXELS}, img[4] = {b, FM_ROWS, FM_COLS, 1};
  return m->images ? sg_tensor_f32(x, img, 4) : sg_tensor_f32(x, flat, 2);
}

double fm_accuracy(const fm_model *m, const fm_set *s) {
  const int64_t eb = 500;
  int64_t right = 0, *idx = malloc(sizeof(int64_t) * (size_t)eb);
  float *x = malloc(sizeof(float) * (size_t)(eb * FM_PIXELS));
  float *y = malloc(sizeof(float) * (size_t)(eb * FM_CLASSES));
  for (int64_t at = 0; at < s->n; at += eb) {
    int64_t b = s->n - at < eb ? s->n - at : eb;
    for (int64_t i = 0; i < b; i++) idx[i] = at + i;
    fm_batch(s, idx, b, x, y);
    sg_scope_begin("eval");
    sg_tensor *pred = sg_argmax(m->forward(m, input_tensor(m, x, b)), 1);
    const int32_t *p = sg_data_i32(pred);
    for (int64_t i = 0; p && i < b; i++) right += p[i] == s->labels[at + i];
    sg_scope_end(NULL, 0);
  }
  free(idx);
  free(x);
  free(y);
  return s->n ? (double)right / (double)s->n : 0.0;
}

double fm_train(const fm_trainer *t, const fm_set *train, const fm_set *test) {
  int64_t *order = malloc(sizeof(int64_t) * (size_t)train->n);
  float *x = malloc(sizeof(float) * (size_t)(t->batch * FM_PIXELS));
  float *y = malloc(sizeof(float) * (size_t)(t->batch * FM_CLASSES));
  double acc = -1;
  printf("%s: %lld training and %lld test images, batch %lld, backend %s, %d threads%s\n",
         t->model->name, (long long)train->n, (long long)test->n, (long long)t->batch,
         sg_backend_name(), sg_threads(), sg_flush_denormals() ? ", denormals flushed" : "");
  for (int epoch = 1; epoch <= t->epochs; epoch++) {
    fm_shuffle(order, train->n, (uint64_t)epoch);
    double t0 = now_s(), loss_sum = 0;
    int64_t steps = 0, seen = 0;
    for (int64_t at = 0; at + t->batch <= train->n; at += t->batch) {
      fm_batch(train, order + at, t->batch, x, y);
      const int64_t lshape[2] = {t->batch, FM_CLASSES};
      sg_scope_begin("batch");
      sg_tensor *xb = input_tensor(t->model, x, t->batch), *yb = sg_tensor_f32(y, lshape, 2);
      float loss = 0;
      sg_status st = fm_train_step(t->model, t->opt, xb, yb, &loss);
      if (st != SG_OK) fprintf(stderr, "%s: step failed: %s\n", t->model->name, sg_last_error());
      sg_scope_end(NULL, 0);
      if (st != SG_OK) goto done;
      loss_sum += loss;
      steps++;
      seen += t->batch;
    }
    double dt = now_s() - t0;
    acc = fm_accuracy(t->model, test);
    printf("epoch %d/%d  loss %.4f  test accuracy %.2f%%  %.0f images/s  %.1f s  (live tensors "
           "%lld)\n",
           epoch, t->epochs, steps ? loss_sum / (double)steps : 0.0, 100.0 * acc, (double)seen / dt,
           dt, (long long)sg_memory().num_tensors);
    fflush(stdout);
  }
done:
  free(order);
  free(x);
  free(y);
  return acc;
}

int fm_run_example(const char *prog, sg_status (*make_model)(fm_model *), int epochs,
                   int64_t max_train) {
  char err[256];
  fm_set train, test = {0};
  if (fm_load(fm_dir(), "train", max_train, &train, err, sizeof err) != 0 ||
      fm_load(fm_dir(), "t10k", 0, &test, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s (apt-get install dataset-fashion-mnist)\n", prog, err);
    fm_free(&train); /* fm_load leaves a set it failed on empty */
    fm_free(&test);
    return 2;
  }
  /* As the gradients shrink, their squares (Adam's second moment) and the backward matmuls'
     products fall into the denormal range, where the FPU takes a slow path: steps got 2x slower
     after a few hundred. Training does not need numbers below FLT_MIN; simdgrad keeps them by
     default, so a training program opts out (FM_KEEP_DENORMALS=1 keeps them, to compare). */
  const char *keep = getenv("FM_KEEP_DENORMALS");
  sg_set_flush_denormals(!(keep && *keep == '1'));
  fm_model m;
  double acc = -1;
  if (make_model(&m) != SG_OK) {
    fprintf(stderr, "%s: %s\n", prog, sg_last_error());
  } else {
    fm_trainer t = {
        .model = &m, .opt = sg_adam(1e-3f, 0.9f, 0.999f, 1e-7f), .batch = 128, .epochs = epochs};
    acc = fm_train(&t, &train, &test);
    sg_optimizer_free(t.opt);
    fm_model_free(&m);
  }
  fm_free(&train);
  fm_free(&test);
  return acc < 0 ? 1 : 0;
}
