/* The strict JSON parser of support_json.h: recursive descent over the RFC 8259 grammar. */
#include "support_json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NESTING 256

typedef struct parser {
  const char *s;
  size_t at;
  char *err;
  size_t err_size;
  bool failed;
} parser;

static bool fail(parser *p, const char *what) {
  if (!p->failed) snprintf(p->err, p->err_size, "JSON error at byte %zu: %s", p->at, what);
  p->failed = true;
  return false;
}

static void skip_ws(parser *p) {
  while (p->s[p->at] == ' ' || p->s[p->at] == '\t' || p->s[p->at] == '\n' || p->s[p->at] == '\r')
    p->at++;
}

static bool literal(parser *p, const char *word) {
  size_t n = strlen(word);
  if (strncmp(p->s + p->at, word, n) != 0) return fail(p, "unknown literal");
  p->at += n;
  return true;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool number(parser *p, json *v) {
  size_t start = p->at;
  if (p->s[p->at] == '-') p->at++;
  if (p->s[p->at] == '0') {
    p->at++;
  } else if (is_digit(p->s[p->at])) {
    while (is_digit(p->s[p->at])) p->at++;
  } else {
    return fail(p, "bad number");
  }
  if (p->s[p->at] == '.') {
    p->at++;
    if (!is_digit(p->s[p->at])) return fail(p, "no digit after the decimal point");
    while (is_digit(p->s[p->at])) p->at++;
  }
  if (p->s[p->at] == 'e' || p->s[p->at] == 'E') {
    p->at++;
    if (p->s[p->at] == '+' || p->s[p->at] == '-') p->at++;
    if (!is_digit(p->s[p->at])) return fail(p, "no digit in the exponent");
    while (is_digit(p->s[p->at])) p->at++;
  }
  char buf[64];
  size_t len = p->at - start;
  if (len >= sizeof buf) return fail(p, "number too long");
  memcpy(buf, p->s + start, len);
  buf[len] = '\0';
  v->kind = JSON_NUMBER;
  v->number = strtod(buf, NULL);
  return true;
}

static int hex4(const char *s) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

static size_t put_utf8(char *out, uint32_t cp) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* A string starting at the opening quote; the decoded text is malloc'd into *out. */
static bool string(parser *p, char **out) {
  p->at++; /* the opening quote */
  size_t end = p->at;
  while (p->s[end] && p->s[end] != '"') end += p->s[end] == '\\' && p->s[end + 1] ? 2 : 1;
  char *buf = malloc(end - p->at + 1); /* decoding never grows the text */
  if (!buf) return fail(p, "out of memory");
  size_t n = 0;
  for (;;) {
    unsigned char c = (unsigned char)p->s[p->at];
    if (c == '\0') {
      free(buf);
      return fail(p, "unterminated string");
    }
    if (c < 0x20) {
      free(buf);
      return fail(p, "control character in a string");
    }
    if (c == '"') break;
    if (c != '\\') {
      buf[n++] = (char)c;
      p->at++;
      continue;
    }
    char e = p->s[p->at + 1];
    const char *simple = "\"\\/bfnrt", *value = "\"\\/\b\f\n\r\t";
    const char *hit = e ? strchr(simple, e) : NULL;
    if (hit) {
      buf[n++] = value[hit - simple];
      p->at += 2;
      continue;
    }
    if (e != 'u') {
      free(buf);
      return fail(p, "bad escape");
    }
    int cp = hex4(p->s + p->at + 2);
    p->at += 6;
    if (cp >= 0xd800 && cp <= 0xdbff && p->s[p->at] == '\\' && p->s[p->at + 1] == 'u') {
      int lo = hex4(p->s + p->at + 2);
      if (lo >= 0xdc00 && lo <= 0xdfff) {
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        p->at += 6;
      }
    }
    if (cp < 0 || (cp >= 0xd800 && cp <= 0xdfff)) {
      free(buf);
      return fail(p, "bad \\u escape");
    }
    n += put_utf8(buf + n, (uint32_t)cp);
  }
  p->at++; /* the closing quote */
  buf[n] = '\0';
  *out = buf;
  return true;
}

static bool value(parser *p, json *v, int depth);

static bool grow(parser *p, json *v, size_t *cap, bool keys) {
  if (v->n < *cap) return true;
  size_t c = *cap ? 2 * *cap : 8;
  json *items = realloc(v->items, c * sizeof *items);
  if (items) v->items = items;
  if (!items) return fail(p, "out of memory");
  if (keys) {
    char **k = realloc(v->keys, c * sizeof *k);
    if (!k) return fail(p, "out of memory");
    v->keys = k;
  }
  *cap = c;
  return true;
}

static bool array_or_object(parser *p, json *v, int depth, bool object) {
  v->kind = object ? JSON_OBJECT : JSON_ARRAY;
  size_t cap = 0;
  p->at++;
  skip_ws(p);
  char close = object ? '}' : ']';
  if (p->s[p->at] == close) {
    p->at++;
    return true;
  }
  for (;;) {
    skip_ws(p);
    if (!grow(p, v, &cap, object)) return false;
    json *item = &v->items[v->n];
    memset(item, 0, sizeof *item);
    if (object) {
      if (p->s[p->at] != '"') return fail(p, "expected a key");
      if (!string(p, &v->keys[v->n])) return false;
      skip_ws(p);
      if (p->s[p->at] != ':') {
        free(v->keys[v->n]);
        return fail(p, "expected ':'");
      }
      p->at++;
    }
    v->n++; /* counted now so json_free releases it whatever happens next */
    if (!value(p, item, depth + 1)) return false;
    skip_ws(p);
    if (p->s[p->at] == ',') {
      p->at++;
      continue;
    }
    if (p->s[p->at] == close) {
      p->at++;
      return true;
    }
    return fail(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static bool value(parser *p, json *v, int depth) {
  if (depth > MAX_NESTING) return fail(p, "nested too deeply");
  skip_ws(p);
  char c = p->s[p->at];
  switch (c) {
  case '{':
  case '[':
    return array_or_object(p, v, depth, c == '{');
  case '"':
    v->kind = JSON_STRING;
    return string(p, &v->string);
  case 't':
    v->kind = JSON_BOOL;
    v->boolean = true;
    return literal(p, "true");
  case 'f':
    v->kind = JSON_BOOL;
    return literal(p, "false");
  case 'n':
    v->kind = JSON_NULL;
    return literal(p, "null");
  default:
    return number(p, v);
  }
}

static void release(json *v) {
  for (size_t i = 0; i < v->n; i++) {
    release(&v->items[i]);
    if (v->kind == JSON_OBJECT) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->string);
}

json *json_parse(const char *text, char *err, size_t err_size) {
  json *v = calloc(1, sizeof *v);
  parser p = {text, 0, err, err_size, false};
  if (!v) return NULL;
  if (value(&p, v, 0)) {
    skip_ws(&p);
    if (p.s[p.at] == '\0') return v;
    fail(&p, "text after the value");
  }
  json_free(v);
  return NULL;
}

json *json_parse_file(const char *path, char *err, size_t err_size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, err_size, "cannot open %s", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = size >= 0 ? malloc((size_t)size + 1) : NULL;
  size_t got = text ? fread(text, 1, (size_t)size, f) : 0;
  fclose(f);
  if (!text || got != (size_t)size) {
    free(text);
    snprintf(err, err_size, "cannot read %s", path);
    return NULL;
  }
  text[size] = '\0';
  if (strlen(text) != (size_t)size) {
    free(text);
    snprintf(err, err_size, "%s holds a NUL byte", path);
    return NULL;
  }
  json *v = json_parse(text, err, err_size);
  free(text);
  return v;
}

void json_free(json *v) {
  if (!v) return;
  release(v);
  free(v);
}

const json *json_get(const json *obj, const char *key) {
  if (!obj || obj->kind != JSON_OBJECT) return NULL;
  for (size_t i = 0; i < obj->n; i++)
    if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
  return NULL;
}
