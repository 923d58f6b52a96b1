/* The memory budget (sg_set_memory_limit, SIMDGRAD_MEMORY_LIMIT) and the out-of-memory error of
 * a storage request, which names the op, what it asked for and, when the budget refused it, the
 * limit. engine/memory.c enforces the limit where storage is made. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine.h"

static atomic_llong g_limit; /* bytes; 0: none */

int64_t sg__memory_limit_now(void) { return atomic_load_explicit(&g_limit, memory_order_relaxed); }

void sg_set_memory_limit(int64_t bytes) {
  sg__ensure_init();
  if (bytes < 0) {
    sg__error(SG_ERR_ARG, "set_memory_limit", "limit %lld is negative (0 means none); kept %lld",
              (long long)bytes, (long long)sg__memory_limit_now());
    return;
  }
  atomic_store(&g_limit, bytes);
}

int64_t sg_memory_limit(void) {
  sg__ensure_init();
  return sg__memory_limit_now();
}

/* "512M" and the like: a non-negative integer with an optional K, M, G or T (powers of 1024,
   either case). False for anything else, a negative number or more than int64 holds. */
static bool parse_bytes(const char *s, int64_t *out) {
  if (!isdigit((unsigned char)*s)) return false; /* no sign, no space */
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno == ERANGE) return false;
  int shift = 0;
  switch (toupper((unsigned char)*end)) {
  case 'K':
    shift = 10;
    break;
  case 'M':
    shift = 20;
    break;
  case 'G':
    shift = 30;
    break;
  case 'T':
    shift = 40;
    break;
  }
  if (shift) end++;
  if (*end != '\0' || v > (unsigned long long)INT64_MAX >> shift) return false;
  *out = (int64_t)(v << shift);
  return true;
}

bool sg__memory_limit_init(char *problem, size_t size) {
  const char *env = getenv("SIMDGRAD_MEMORY_LIMIT");
  if (!env || !*env) return true;
  int64_t bytes;
  if (!parse_bytes(env, &bytes)) {
    snprintf(problem, size,
             "SIMDGRAD_MEMORY_LIMIT=%s is not a byte count (N, or N with K, M, G or T, at most "
             "2^63-1 bytes; 0 for none); using no limit",
             env);
    return false;
  }
  atomic_store(&g_limit, bytes);
  return true;
}

/* ---- The error ---------------------------------------------------------------------------- */

sg_status sg__oom(const char *op, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  sg_ctx *c = sg__ctx();
  char label[96];
  if (!op && c->op_name) {
    snprintf(label, sizeof label, "%s%s", c->op_name, c->op_backward ? " backward" : "");
    op = label;
  }
  sg_refusal r = c->refusal;
  c->refusal.refused = false;
  if (!r.refused) return sg__error(SG_ERR_OOM, op, "out of memory for %s", what);
  return sg__error(SG_ERR_OOM, op,
                   "%s needs %lld bytes; with the %lld bytes live tensors hold, that is above "
                   "the memory limit of %lld bytes (sg_set_memory_limit)",
                   what, (long long)r.bytes, (long long)r.live, (long long)r.limit);
}
