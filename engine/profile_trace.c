/* A profile as Chrome trace event JSON (the "X" complete-event form that Perfetto and
 * chrome://tracing load): one slice per call, and scope slices around them.
 *
 * Scopes are not timed themselves, so their slices are made from the calls: on each thread, a
 * run of consecutive top-level calls whose scope paths share a prefix gets one slice per prefix
 * component, from the first call's start to the last one's end. Calls on one thread run one
 * after another and nested calls run inside their parent, so every slice lies inside the one
 * above it. Times are written in microseconds with three decimals, i.e. exact nanoseconds, so
 * rounding cannot make a child poke out of its parent. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/profile.h"

typedef struct slice {
  int thread;
  uint64_t ts, dur;
  int rank;         /* order among slices starting together: outer first */
  int64_t call;     /* -1 for a scope slice */
  const char *path; /* scope slices: the call's scope path ... */
  size_t len;       /* ... up to this component's end */
} slice;

typedef struct slices {
  slice *v;
  size_t n, cap;
} slices;

static bool push(slices *s, slice x) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 256;
    slice *grown = sg__realloc(s->v, cap * sizeof *grown);
    if (!grown) return false;
    s->v = grown;
    s->cap = cap;
  }
  s->v[s->n++] = x;
  return true;
}

static int by_start(const void *x, const void *y) {
  const slice *a = x, *b = y;
  if (a->thread != b->thread) return a->thread - b->thread;
  if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
  if (a->dur != b->dur) return a->dur > b->dur ? -1 : 1; /* the longer one encloses */
  return a->rank - b->rank;
}

/* Length of component k's end in path (components split by '/'), or 0 if there is none. */
static size_t component_end(const char *path, int k) {
  const char *s = path;
  for (int i = 0;; i++) {
    if (!*s) return 0;
    const char *slash = strchr(s, '/');
    size_t len = slash ? (size_t)(slash - s) : strlen(s);
    if (i == k) return (size_t)(s - path) + len;
    s += len + (slash != NULL);
  }
}

#define MAX_SCOPE_DEPTH 128

/* The scope slices of one thread's top-level calls [from, to). */
static bool scope_slices(const sg_profile *p, int64_t from, int64_t to, slices *out) {
  slice open[MAX_SCOPE_DEPTH];
  int depth = 0;
  for (int64_t i = from; i <= to; i++) {
    const sg_profile_call *c = i < to ? &p->calls[i] : NULL;
    if (c && c->parent >= 0) continue;
    /* Keep the open slices whose path is a prefix of this call's scope; close the rest. */
    int keep = 0;
    while (c && keep < depth) {
      size_t len = open[keep].len;
      if (strncmp(open[keep].path, c->scope, len) != 0 ||
          (c->scope[len] != '/' && c->scope[len] != '\0'))
        break;
      keep++;
    }
    while (depth > keep)
      if (!push(out, open[--depth])) return false;
    if (!c) break;
    for (size_t len; depth < MAX_SCOPE_DEPTH && (len = component_end(c->scope, depth)) != 0;) {
      open[depth] = (slice){c->thread, c->start_ns, 0, depth, -1, c->scope, len};
      depth++;
    }
    uint64_t end = c->start_ns + c->duration_ns;
    for (int k = 0; k < depth; k++) open[k].dur = end - open[k].ts;
  }
  return true;
}

static void put_string(FILE *f, const char *s, size_t len) {
  fputc('"', f);
  for (size_t i = 0; i < len && s[i]; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

static void put_time(FILE *f, uint64_t ns) {
  fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

static void put_shapes(FILE *f, const sg_profile_shape *s, int n) {
  fputc('"', f);
  for (int i = 0; i < n && i < SG_PROFILE_MAX_SHAPES; i++) {
    fprintf(f, i ? " [" : "[");
    for (int d = 0; d < s[i].rank; d++) fprintf(f, d ? ",%lld" : "%lld", (long long)s[i].dims[d]);
    fputc(']', f);
  }
  if (n > SG_PROFILE_MAX_SHAPES) fprintf(f, " ...");
  fputc('"', f);
}

static void put_slice(FILE *f, const sg_profile *p, const slice *s) {
  fprintf(f, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":", s->thread);
  put_time(f, s->ts);
  fprintf(f, ",\"dur\":");
  put_time(f, s->dur);
  if (s->call < 0) {
    const char *name = s->path + s->len;
    while (name > s->path && name[-1] != '/') name--;
    fprintf(f, ",\"cat\":\"scope\",\"name\":");
    put_string(f, name, (size_t)(s->path + s->len - name));
    fprintf(f, ",\"args\":{\"path\":");
    put_string(f, s->path, s->len);
    fprintf(f, "}}");
    return;
  }
  const sg_profile_call *c = &p->calls[s->call];
  bool bwd = c->phase == SG_PROFILE_BACKWARD;
  fprintf(f, ",\"cat\":\"%s\",\"name\":", bwd ? "backward" : "forward");
  if (bwd) {
    char name[128];
    snprintf(name, sizeof name, "%s (backward)", c->op);
    put_string(f, name, strlen(name));
  } else {
    put_string(f, c->op, strlen(c->op));
  }
  fprintf(f, ",\"args\":{\"scope\":");
  put_string(f, c->scope, strlen(c->scope));
  fprintf(f, ",\"kernel\":");
  put_string(f, c->kernel, strlen(c->kernel));
  if (c->n_inputs >= 0) {
    fprintf(f, ",\"inputs\":");
    put_shapes(f, c->inputs, c->n_inputs);
  }
  fprintf(f, ",\"outputs\":");
  put_shapes(f, c->outputs, c->n_outputs);
  fprintf(f, ",\"bytes\":%lld,\"tensors\":%lld", (long long)c->bytes, (long long)c->tensors);
  if (c->failed) fprintf(f, ",\"failed\":true");
  if (c->unfinished) fprintf(f, ",\"unfinished\":true");
  fprintf(f, "}}");
}

sg_status sg_profile_write_trace(const sg_profile *p, const char *path) {
  if (!p || !path)
    return sg__error(SG_ERR_ARG, "profile_write_trace", "%s is NULL", p ? "path" : "profile");
  slices s = {0};
  bool ok = true;
  for (int64_t i = 0; ok && i < p->n_calls;) {
    int64_t j = i;
    while (j < p->n_calls && p->calls[j].thread == p->calls[i].thread) j++;
    ok = scope_slices(p, i, j, &s);
    i = j;
  }
  for (int64_t i = 0; ok && i < p->n_calls; i++) {
    const sg_profile_call *c = &p->calls[i];
    ok = push(&s, (slice){c->thread, c->start_ns, c->duration_ns, MAX_SCOPE_DEPTH + c->depth, i,
                          NULL, 0});
  }
  if (!ok) {
    sg__free(s.v);
    return sg__error(SG_ERR_OOM, "profile_write_trace", "out of memory");
  }
  if (s.n) qsort(s.v, s.n, sizeof *s.v, by_start);
  FILE *f = fopen(path, "w");
  if (!f) {
    sg__free(s.v);
    return sg__error(SG_ERR_ARG, "profile_write_trace", "cannot open \"%s\" for writing: %s", path,
                     strerror(errno));
  }
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  fprintf(f, "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\","
             "\"args\":{\"name\":\"simdgrad\"}}");
  for (int t = 0; t < p->n_threads; t++)
    fprintf(f,
            ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\","
            "\"args\":{\"name\":\"thread %d\"}}",
            t, t);
  for (size_t i = 0; i < s.n; i++) put_slice(f, p, &s.v[i]);
  fprintf(f, "\n]}\n");
  sg__free(s.v);
  bool bad = ferror(f) != 0;
  if (fclose(f) != 0 || bad)
    return sg__error(SG_ERR_ARG, "profile_write_trace", "writing \"%s\" failed", path);
  return SG_OK;
}
