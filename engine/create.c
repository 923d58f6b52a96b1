/* Tensor creation from user data, constants and seeded random numbers. */
#include <math.h>
#include <string.h>

#include "engine.h"
#include "engine/fpmode.h"

/* sg__new, its out-of-memory error naming op. */
static sg_tensor *new_named(const char *op, sg_dtype dtype, const int64_t *shape, int rank) {
  sg_ctx *c = sg__ctx();
  const char *outer = sg__name_begin(c, op);
  sg_tensor *t = sg__new(dtype, shape, rank);
  sg__name_end(c, outer);
  return t;
}

static sg_tensor *from_data(const void *data, sg_dtype dtype, const int64_t *shape, int rank,
                            const char *op) {
  sg__ensure_init();
  int64_t numel;
  if (!sg__check_shape(shape, rank, op, &numel)) return NULL;
  sg_tensor *t = new_named(op, dtype, shape, rank);
  if (!t) return NULL;
  size_t bytes = (size_t)numel * sg__dtype_size(dtype);
  if (data)
    memcpy(t->data, data, bytes);
  else
    memset(t->data, 0, bytes);
  return t;
}

sg_tensor *sg_tensor_f32(const float *data, const int64_t *shape, int rank) {
  return from_data(data, SG_F32, shape, rank, "tensor_f32");
}

sg_tensor *sg_tensor_i32(const int32_t *data, const int64_t *shape, int rank) {
  return from_data(data, SG_I32, shape, rank, "tensor_i32");
}

sg_tensor *sg_tensor_bool(const uint8_t *data, const int64_t *shape, int rank) {
  sg_tensor *t = from_data(data, SG_BOOL, shape, rank, "tensor_bool");
  if (t)
    for (int64_t i = 0; i < t->numel; i++) ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
  return t;
}

typedef struct fill_job {
  const sg_backend *be;
  float *y;
  float v;
} fill_job;

static void fill_range(int64_t lo, int64_t hi, void *arg) {
  const fill_job *j = arg;
  j->be->fill(j->y + lo, (size_t)(hi - lo), j->v);
}

void sg__fill(float *y, int64_t n, float v) {
  fill_job j = {sg__backend(), y, v};
  sg__parallel_for(n, SG_GRAIN_ELEMENTWISE, fill_range, &j); /* fill never streams */
}

static sg_tensor *filled(const int64_t *shape, int rank, float v, const char *op) {
  sg__ensure_init();
  int64_t numel;
  if (!sg__check_shape(shape, rank, op, &numel)) return NULL;
  sg_tensor *t = new_named(op, SG_F32, shape, rank);
  if (t) sg__fill(sg__f32(t), numel, v);
  return t;
}

sg_tensor *sg_fill(const int64_t *shape, int rank, float v) {
  return filled(shape, rank, v, "fill");
}
sg_tensor *sg_scalar(float v) { return filled(NULL, 0, v, "scalar"); }
sg_tensor *sg_zeros(const int64_t *shape, int rank) { return filled(shape, rank, 0.0f, "zeros"); }
sg_tensor *sg_ones(const int64_t *shape, int rank) { return filled(shape, rank, 1.0f, "ones"); }

/* SplitMix64 over (seed, index): every element is a pure function of its position, so the
   result does not depend on how the work is split. */
static uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in (0, 1): 24 random bits, offset by half a step so it is never 0. */
static float unit_open(uint64_t bits) { return ((float)(bits >> 40) + 0.5f) * 0x1p-24f; }

sg_tensor *sg_random_uniform(const int64_t *shape, int rank, float lo, float hi, uint64_t seed) {
  sg__ensure_init();
  int64_t numel;
  if (!sg__check_shape(shape, rank, "random_uniform", &numel)) return NULL;
  if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi)) {
    sg__error(SG_ERR_ARG, "random_uniform", "need finite lo <= hi, got [%g, %g]", lo, hi);
    return NULL;
  }
  sg_tensor *t = new_named("random_uniform", SG_F32, shape, rank);
  if (!t) return NULL;
  uint64_t key = mix64(seed);
  sg_fpmode fp;
  sg__fpmode_enter(&fp); /* Note [FP mode] */
  for (int64_t i = 0; i < numel; i++) {
    float u = unit_open(mix64(key ^ (uint64_t)i));
    sg__f32(t)[i] = lo + (hi - lo) * u;
  }
  sg__fpmode_leave(&fp);
  return t;
}

sg_tensor *sg_random_normal(const int64_t *shape, int rank, float mean, float stddev,
                            uint64_t seed) {
  sg__ensure_init();
  int64_t numel;
  if (!sg__check_shape(shape, rank, "random_normal", &numel)) return NULL;
  if (!(stddev >= 0) || !isfinite(mean) || !isfinite(stddev)) {
    sg__error(SG_ERR_ARG, "random_normal", "need finite mean and stddev >= 0, got %g, %g", mean,
              stddev);
    return NULL;
  }
  sg_tensor *t = new_named("random_normal", SG_F32, shape, rank);
  if (!t) return NULL;
  uint64_t key = mix64(seed);
  sg_fpmode fp;
  sg__fpmode_enter(&fp); /* Note [FP mode] */
  /* Box-Muller on pairs of positions; both halves of a pair come from one draw. */
  for (int64_t i = 0; i < numel; i += 2) {
    uint64_t r = mix64(key ^ (uint64_t)(i / 2));
    double u1 = unit_open(r), u2 = unit_open(mix64(r));
    double rad = sqrt(-2.0 * log(u1)), ang = 6.283185307179586 * u2;
    sg__f32(t)[i] = (float)(mean + stddev * rad * cos(ang));
    if (i + 1 < numel) sg__f32(t)[i + 1] = (float)(mean + stddev * rad * sin(ang));
  }
  sg__fpmode_leave(&fp);
  return t;
}
