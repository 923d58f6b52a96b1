/* The library's one path to the system allocator. Every malloc, calloc, realloc, aligned_alloc
 * and free in engine/ and in the kernels' packing buffers goes through these, so a test can make
 * the k-th allocation fail and see what is still held afterwards (tests/test_alloc_fault.c).
 * Plain C types only: the ISA kernel files include this too. */
#ifndef SIMDGRAD_ENGINE_ALLOC_H
#define SIMDGRAD_ENGINE_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *sg__malloc(size_t bytes);
void *sg__calloc(size_t n, size_t size);
void *sg__realloc(void *p, size_t bytes);
/* C11 aligned_alloc: bytes a multiple of align. */
void *sg__aligned_alloc(size_t align, size_t bytes);
void sg__free(void *p);

/* Test-only, never exported. While the probe is on, every allocation call is counted, and so
   are the blocks allocated and not yet freed; off, the calls above cost one relaxed load more
   than the system's. Turn it on before the first call into the engine, so that every block
   freed later was counted when it was made. */
void sg__alloc_probe(bool on);
/* The k-th allocation call from now fails (1: the next one), once; 0 cancels. Needs the probe. */
void sg__alloc_fail_at(int64_t k);
/* Whether the failure planned by sg__alloc_fail_at has happened. */
bool sg__alloc_fault_fired(void);
/* Allocation calls counted so far, and blocks allocated and not yet freed. */
int64_t sg__alloc_calls(void);
int64_t sg__alloc_live(void);

#endif /* SIMDGRAD_ENGINE_ALLOC_H */
