/* The runner behind tests/plain_test.h: with no --filter, runs every registered test in a child
 * process of its own (this program again, with --filter suite/name) and prints a synthesis line
 * as Criterion's; with --filter GLOB, runs the matching tests in this process. */
#define _POSIX_C_SOURCE 200809L /* posix_spawn, readlink */
#include <fnmatch.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plain_test.h"

extern char **environ;

#define MAX_TESTS 256
static struct {
  const char *suite, *name;
  plain_test_fn fn;
} g_tests[MAX_TESTS];
static int g_n_tests;
static const char *g_current = "";
static bool g_skipped;

void plain_register(const char *suite, const char *name, plain_test_fn fn) {
  if (g_n_tests == MAX_TESTS) {
    fprintf(stderr, "plain_test: more than %d tests\n", MAX_TESTS);
    exit(2);
  }
  g_tests[g_n_tests].suite = suite;
  g_tests[g_n_tests].name = name;
  g_tests[g_n_tests].fn = fn;
  g_n_tests++;
}

void plain_check(bool ok, const char *file, int line, const char *expr, const char *fmt, ...) {
  if (ok) return;
  fprintf(stderr, "[FAIL] %s: %s:%d: %s", g_current, file, line, expr);
  if (fmt && *fmt) {
    va_list ap;
    va_start(ap, fmt);
    fputs(": ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
  }
  fputc('\n', stderr);
  exit(1);
}

void plain_skip(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[SKIP] %s: ", g_current);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  g_skipped = true;
}

static void synthesis(int tested, int passing, int failing, int crashing) {
  fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d \n",
          tested, passing, failing, crashing);
}

/* --filter GLOB: the matching tests, here, one after the other; the synthesis line unless
   run_all started this process (--child), which prints one for all. */
static int run_here(const char *glob, bool child) {
  int tested = 0;
  for (int i = 0; i < g_n_tests; i++) {
    char full[256];
    snprintf(full, sizeof full, "%s/%s", g_tests[i].suite, g_tests[i].name);
    if (fnmatch(glob, full, 0) != 0) continue;
    g_current = full;
    g_skipped = false;
    g_tests[i].fn();
    tested++;
  }
  if (!child) synthesis(tested, tested, 0, 0); /* a failure has exited already */
  return tested > 0 ? 0 : 1;
}

/* Every test in a child process. */
static int run_all(void) {
  char self[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    perror("plain_test: /proc/self/exe");
    return 2;
  }
  self[len] = '\0';
  int passing = 0, failing = 0, crashing = 0;
  for (int i = 0; i < g_n_tests; i++) {
    char full[256];
    snprintf(full, sizeof full, "%s/%s", g_tests[i].suite, g_tests[i].name);
    char *argv[] = {self, "--filter", full, "--child", NULL};
    fflush(NULL);
    pid_t pid;
    int status = 0;
    if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0 ||
        waitpid(pid, &status, 0) != pid) {
      perror("plain_test: cannot start a test");
      return 2;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      passing++;
    } else if (WIFEXITED(status)) {
      failing++;
      fprintf(stderr, "[FAIL] %s: exit status %d\n", full, WEXITSTATUS(status));
    } else {
      crashing++;
      fprintf(stderr, "[CRASH] %s: signal %d\n", full, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    }
  }
  synthesis(g_n_tests, passing, failing, crashing);
  return failing || crashing ? 1 : 0;
}

int main(int argc, char **argv) {
  const char *filter = NULL;
  bool child = false;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc) {
      filter = argv[++i];
    } else if (strcmp(argv[i], "--child") == 0) {
      child = true;
    } else if (strcmp(argv[i], "--jobs") == 0 && i + 1 < argc) {
      i++; /* one test at a time */
    } else {
      fprintf(stderr, "usage: %s [--filter SUITE/NAME-GLOB] [--jobs N]\n", argv[0]);
      return 2;
    }
  }
  return filter ? run_here(filter, child) : run_all();
}
