/* A small strict JSON (RFC 8259) parser for tests that check what the library writes, e.g. the
 * profiler's Chrome trace. Parses into a tree; rejects trailing commas, bad escapes, bad
 * numbers, control characters in strings and anything after the top-level value. */
#ifndef SIMDGRAD_TEST_SUPPORT_JSON_H
#define SIMDGRAD_TEST_SUPPORT_JSON_H

#include <stdbool.h>
#include <stddef.h>

typedef enum json_kind {
  JSON_NULL,
  JSON_BOOL,
  JSON_NUMBER,
  JSON_STRING,
  JSON_ARRAY,
  JSON_OBJECT
} json_kind;

typedef struct json {
  json_kind kind;
  bool boolean;
  double number;
  char *string;       /* JSON_STRING: decoded UTF-8, NUL-terminated */
  size_t n;           /* JSON_ARRAY / JSON_OBJECT: number of items */
  struct json *items; /* the items (object values) */
  char **keys;        /* JSON_OBJECT: the keys, decoded */
} json;

/* The value in text, or NULL with a message naming the byte offset in err. */
json *json_parse(const char *text, char *err, size_t err_size);
/* Reads a whole file and parses it; NULL with err set on failure. */
json *json_parse_file(const char *path, char *err, size_t err_size);
void json_free(json *v);
/* The value under key in an object (the first one), or NULL. */
const json *json_get(const json *obj, const char *key);

#endif
