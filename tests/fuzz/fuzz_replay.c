/* A main() for a harness without libFuzzer: runs LLVMFuzzerTestOneInput once on every file
 * named (a folder: on every file in it), so the corpus is part of the ordinary test suite with
 * any compiler, and a crashing input can be replayed under gdb or valgrind. */
#define _POSIX_C_SOURCE 200809L /* opendir */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
    return 1;
  }
  size_t cap = 4096, n = 0;
  unsigned char *buf = malloc(cap);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      unsigned char *grown = realloc(buf, cap *= 2);
      if (!grown) free(buf);
      buf = grown;
    }
  }
  fclose(f);
  if (!buf) {
    fprintf(stderr, "fuzz_replay: out of memory reading %s\n", path);
    return 1;
  }
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of a folder, in name order. */
static int run_dir(const char *dir, int *count) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      char **grown = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
      if (!grown) break;
      names = grown;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n]) break;
    snprintf(names[n++], len, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      rc |= run_file(names[i]);
      (*count)++;
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE|FOLDER...\n", argv[0]);
    return 2;
  }
  int rc = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "fuzz_replay: no such file or folder: %s\n", argv[i]);
      rc = 1;
    } else if (S_ISDIR(st.st_mode)) {
      rc |= run_dir(argv[i], &count) < 0;
    } else {
      rc |= run_file(argv[i]);
      count++;
    }
  }
  printf("fuzz_replay: %d input(s) ran\n", count);
  return rc;
}
