/* The part of Criterion's test API the thread tests use (Test, cr_assert*, cr_skip_test), for
 * building them as plain programs: Criterion's runner cannot start under ThreadSanitizer
 * ("Could not initialize inheritable arena"), so the TSan build compiles tests/test_threads.c
 * and tests/test_host.c against this header instead (support.h picks it when
 * SIMDGRAD_PLAIN_TESTS is defined) and links tests/plain_test.c's main.
 *
 * The runner behaves like Criterion where the tests rely on it: each test runs in a process of
 * its own (the program starts itself again with --filter suite/name, so the parent never starts
 * a thread), --filter takes a suite/name glob, --jobs is accepted and ignored, and the synthesis
 * line reads as Criterion's ("[====] Synthesis: Tested: 1 | Passing: 1 | ..."). A failed
 * assertion prints its message and ends the test's process with status 1. */
#ifndef SIMDGRAD_PLAIN_TEST_H
#define SIMDGRAD_PLAIN_TEST_H

#include <stdbool.h>
#include <stddef.h>

typedef void (*plain_test_fn)(void);
void plain_register(const char *suite, const char *name, plain_test_fn fn);
/* Fails the test unless ok: prints file:line, the expression and the printf-style message. */
void plain_check(bool ok, const char *file, int line, const char *expr, const char *fmt, ...);
void plain_skip(const char *fmt, ...);

#define Test(suite, name)                                                                          \
  static void suite##_##name(void);                                                                \
  __attribute__((constructor)) static void suite##_##name##_register(void) {                       \
    plain_register(#suite, #name, suite##_##name);                                                 \
  }                                                                                                \
  static void suite##_##name(void)

/* Each macro appends "" so that a message is optional without an empty __VA_ARGS__ (which
   -Wpedantic rejects in C11); the extra argument is never read. */
#define PLAIN_CHECK_(cond, expr, ...) plain_check((cond), __FILE__, __LINE__, expr, __VA_ARGS__)
#define PLAIN_ONE_(c, ...) PLAIN_CHECK_(!!(c), #c, __VA_ARGS__)
#define PLAIN_CMP_(op, a, b, ...) PLAIN_CHECK_((a)op(b), #a " " #op " " #b, __VA_ARGS__)
#define PLAIN_NULL_(p, ...) PLAIN_CHECK_((p) == NULL, #p " == NULL", __VA_ARGS__)
#define PLAIN_NOT_NULL_(p, ...) PLAIN_CHECK_((p) != NULL, #p " != NULL", __VA_ARGS__)

#define cr_assert(...) PLAIN_ONE_(__VA_ARGS__, "")
#define cr_assert_eq(...) PLAIN_CMP_(==, __VA_ARGS__, "")
#define cr_assert_neq(...) PLAIN_CMP_(!=, __VA_ARGS__, "")
#define cr_assert_gt(...) PLAIN_CMP_(>, __VA_ARGS__, "")
#define cr_assert_geq(...) PLAIN_CMP_(>=, __VA_ARGS__, "")
#define cr_assert_lt(...) PLAIN_CMP_(<, __VA_ARGS__, "")
#define cr_assert_leq(...) PLAIN_CMP_(<=, __VA_ARGS__, "")
#define cr_assert_null(...) PLAIN_NULL_(__VA_ARGS__, "")
#define cr_assert_not_null(...) PLAIN_NOT_NULL_(__VA_ARGS__, "")
/* Ends the test as skipped: only from the test function itself (it returns from it). */
#define cr_skip_test(...)                                                                          \
  do {                                                                                             \
    plain_skip(__VA_ARGS__);                                                                       \
    return;                                                                                        \
  } while (0)

#endif
