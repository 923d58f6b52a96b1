/* The register-only FMA loop and the STREAM triad, one copy per instruction set: roofline_base.c
 * (the baseline ISA, no flags: SSE2 on x86-64, NEON on aarch64), roofline_avx2.c (-mavx2 -mfma)
 * and roofline_avx512.c (-mavx512f -mavx512dq -mfma; run only where the avx512 backend, which
 * needs DQ, is). roofline.c calls a copy only on a CPU that has its ISA, from one OpenMP thread
 * per core it measures. Each has a read-only loop too, and the x86 ones the issue bound's probes.
 */
#ifndef SIMDGRAD_BENCH_ROOFLINE_ISA_H
#define SIMDGRAD_BENCH_ROOFLINE_ISA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roof_model.h"

/* iters rounds of independent a = a * c + b on every accumulator register (enough of them to
   cover the FMA latency on every pipe); c and b are read at run time so nothing folds. Returns
   the FLOPs done (2 per lane per accumulator per round) and stores a sum in *sink. */
double bench_fma_loop__base(int64_t iters, float c, float b, float *sink);
double bench_fma_loop__avx2(int64_t iters, float c, float b, float *sink);
double bench_fma_loop__avx512(int64_t iters, float c, float b, float *sink);

/* The issue bound's rates (docs/bench.md, "The issue bound"), AVX2 and AVX-512 only (the kernels
   whose instructions bench/kernel_issued.inc counts); each returns the instructions it issued.
   issue and mix: the combined rate, iters rounds of independent chains of several classes at
   once, enough of them to cover each latency: FMAs and additions (the mix that fills both kinds
   of vector pipe on Zen 4: two FMA and two FADD pipes; Intel: FMA and add share theirs), and
   FMAs, additions and integer logic; the better of the two counts. issue_<class>: iters rounds
   of independent chains of that class's instructions alone (roof_model.h, ROOF_ISSUE_CLASSES;
   docs/kernel_loops.py's CLASSES says which instructions each holds): its own rate. An ISA
   without the class's instruction (AVX2's scalef) returns 0: no rate. */
double bench_issue_loop__avx2(int64_t iters, float c, float b, float *sink);
double bench_issue_loop__avx512(int64_t iters, float c, float b, float *sink);
double bench_issue_mix__avx2(int64_t iters, float c, float b, float *sink);
double bench_issue_mix__avx512(int64_t iters, float c, float b, float *sink);
#define ROOFLINE_ISSUE_DECL_(cls)                                                                  \
  double bench_issue_##cls##__avx2(int64_t iters, float c, float b, float *sink);                  \
  double bench_issue_##cls##__avx512(int64_t iters, float c, float b, float *sink);
ROOF_ISSUE_CLASSES(ROOFLINE_ISSUE_DECL_)
#undef ROOFLINE_ISSUE_DECL_

/* The shared-pipe term's pair probes (docs/bench.md, "Shared pipes"): bench_pair_<class>__<isa>
   runs iters rounds of FMAs beside the class's instructions (those of its issue probe), every one
   independent of the others, bench_pair_ratio__<isa>(class) FMAs to one of the class's (few
   enough of the class that its own pipes stay below their rate on Zen 4: 4 FMAs to one, 32
   (AVX-512) or 36 (AVX2) to one division or square root); returns the FMAs issued. The fma
   class's own pair (FMAs beside FMAs) checks the method: its cost should read 1. A class the ISA
   lacks returns 0. */
double bench_pair_ratio__avx2(int cls);
double bench_pair_ratio__avx512(int cls);
#define ROOFLINE_PAIR_DECL_(cls)                                                                   \
  double bench_pair_##cls##__avx2(int64_t iters, float c, float b, float *sink);                   \
  double bench_pair_##cls##__avx512(int64_t iters, float c, float b, float *sink);
ROOF_ISSUE_CLASSES(ROOFLINE_PAIR_DECL_)
#undef ROOFLINE_PAIR_DECL_

/* The mix probes (docs/bench.md, "A kernel's own mix"), one per kernel of bench/kernel_issued.inc
   and ISA: iters rounds of the kernel's main-loop instructions for as many vectors as make 64 or
   more, class by class as the table counts them (each class's issue-probe instruction; a single
   conversion for cvt), every one independent of the others, the classes interleaved or one after
   another (bench_mix_grouped; the caller takes the faster): the least time that loop's vector
   instructions take on this machine's pipes.
   Each returns the elements its rounds stand for, or 0 for another ISA's row. The tables end
   with a NULL slot. */
typedef struct bench_mix_kernel {
  const char *slot, *isa;
  double (*probe)(int64_t iters, float c, float b, float *sink);
} bench_mix_kernel;
/* Which order the probes issue a round in: the classes interleaved (false) or class after class. */
extern bool bench_mix_grouped;
extern const bench_mix_kernel bench_mix_kernels__avx2[];
extern const bench_mix_kernel bench_mix_kernels__avx512[];

/* The GEMM micro-kernel's k step, iters times, with the ISA's register tile (kernels_<isa>/
   gemm_tuning.h) and every load from ab, which holds the tile's B vectors and then its A values
   (GEMM_NV x the ISA's width + GEMM_MR floats, 64-byte aligned): the rate that tile's loads,
   broadcasts and FMAs issue at with nothing else to wait for (bench row gemm.mix). Returns the
   FLOPs and stores a sum in *sink. */
double bench_gemm_mix__avx2(int64_t iters, const float *ab, float *sink);
double bench_gemm_mix__avx512(int64_t iters, const float *ab, float *sink);
/* That tile's rows and columns. */
void bench_gemm_tile__avx2(int *rows, int *cols);
void bench_gemm_tile__avx512(int *rows, int *cols);

/* a[i] = b[i] + s * c[i] for i < n: 12 bytes per element (two loads, one store). n is a
   multiple of 64 and the arrays are 64-byte aligned. */
void bench_triad__base(float *restrict a, const float *restrict b, const float *restrict c,
                       size_t n, float s);
void bench_triad__avx2(float *restrict a, const float *restrict b, const float *restrict c,
                       size_t n, float s);
void bench_triad__avx512(float *restrict a, const float *restrict b, const float *restrict c,
                         size_t n, float s);

/* The same triad with non-temporal (streaming) stores, then a store fence: no read for
   ownership of a's lines, as the binary kernels store outputs of 2^21 floats and more. */
void bench_triad_nt__base(float *restrict a, const float *restrict b, const float *restrict c,
                          size_t n, float s);
void bench_triad_nt__avx2(float *restrict a, const float *restrict b, const float *restrict c,
                          size_t n, float s);
void bench_triad_nt__avx512(float *restrict a, const float *restrict b, const float *restrict c,
                            size_t n, float s);

/* STREAM's scale, a[i] = s * b[i] for i < n: 8 bytes per element (one load, one store), the mix
   of a unary kernel or a transpose; with normal stores, and with non-temporal ones (fenced). n is
   a multiple of 64 and the arrays are 64-byte aligned. */
void bench_scale__base(float *restrict a, const float *restrict b, size_t n, float s);
void bench_scale__avx2(float *restrict a, const float *restrict b, size_t n, float s);
void bench_scale__avx512(float *restrict a, const float *restrict b, size_t n, float s);
void bench_scale_nt__base(float *restrict a, const float *restrict b, size_t n, float s);
void bench_scale_nt__avx2(float *restrict a, const float *restrict b, size_t n, float s);
void bench_scale_nt__avx512(float *restrict a, const float *restrict b, size_t n, float s);

/* a[i] = s for i < n: 4 bytes written per element, nothing read (fill's mix), with normal and
   with non-temporal stores. n is a multiple of 64 and a is 64-byte aligned. */
void bench_fill__base(float *restrict a, size_t n, float s);
void bench_fill__avx2(float *restrict a, size_t n, float s);
void bench_fill__avx512(float *restrict a, size_t n, float s);
void bench_fill_nt__base(float *restrict a, size_t n, float s);
void bench_fill_nt__avx2(float *restrict a, size_t n, float s);
void bench_fill_nt__avx512(float *restrict a, size_t n, float s);

/* The sum of a[0..n): 4 bytes read per element, nothing written (the read-only curve), as two
   streams (the two halves at once: a kernel with two inputs keeps two prefetch streams busy, and
   one stream alone reads DRAM slower). n is a multiple of 128 and a is 64-byte aligned. */
float bench_read__base(const float *a, size_t n);
/* The same as one stream: in the LLC of a Zen 4 VM one stream read faster than two, in DRAM
   slower; the read curve takes the better. */
float bench_read1__base(const float *a, size_t n);
float bench_read1__avx2(const float *a, size_t n);
float bench_read1__avx512(const float *a, size_t n);
float bench_read__avx2(const float *a, size_t n);
float bench_read__avx512(const float *a, size_t n);

#endif /* SIMDGRAD_BENCH_ROOFLINE_ISA_H */
