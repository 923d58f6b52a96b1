/* The roofline's model (roof_model.h) on made-up figures: no clock, nothing measured. */
#include <criterion/criterion.h>
#include <math.h>

#include "roof_model.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* A Zen 4 VM as seen on 2026-12-03: CPUID describes the host's L3 (320 MiB), sysfs the VM's. */
static const size_t k_sysfs[3] = {32 * KIB, 1 * MIB, 32 * MIB};
static const size_t k_cpuid[3] = {32 * KIB, 1 * MIB, 320 * MIB};
/* Caches none of whose capacities lies between the lower point around a row's footprint in the
   tests below and the footprint (8 and 12 MiB, between curve()'s 1 and 16 MiB points): those
   rows read the blend of the two points (roof_curve_footprint). */
static const size_t k_blend[3] = {32 * KIB, 512 * KIB, 32 * MIB};

Test(roof_model, caches_sysfs_before_cpuid) {
  roof_caches c = roof_choose_caches(k_sysfs, k_cpuid);
  cr_expect_eq(c.size[2], 32 * MIB);
  cr_expect_eq(c.source[2], ROOF_SRC_SYSFS);
  cr_expect_str_eq(roof_source_name(c.source[0]), "sysfs");
  /* A 16 MiB row on one thread lives in the LLC, a 64 MiB one in DRAM (CPUID's 320 MiB would
     have called it LLC). */
  cr_expect_eq(roof_level_of(&c, 16.0 * MIB, 1), ROOF_LLC);
  cr_expect_eq(roof_level_of(&c, 64.0 * MIB, 1), ROOF_DRAM);
  roof_caches host = roof_choose_caches(NULL, k_cpuid);
  cr_expect_eq(roof_level_of(&host, 64.0 * MIB, 1), ROOF_LLC);
  cr_expect_eq(host.source[2], ROOF_SRC_CPUID);
}

Test(roof_model, caches_cpuid_where_sysfs_has_none) {
  const size_t partial[3] = {48 * KIB, 0, 0}; /* sysfs knows L1 only */
  roof_caches c = roof_choose_caches(partial, k_cpuid);
  cr_expect_eq(c.size[0], 48 * KIB);
  cr_expect_eq(c.source[0], ROOF_SRC_SYSFS);
  cr_expect_eq(c.size[1], 1 * MIB);
  cr_expect_eq(c.source[1], ROOF_SRC_CPUID);
  roof_caches none = roof_choose_caches(NULL, NULL);
  cr_expect_eq(none.size[2], 4 * none.size[1]);
  cr_expect_eq(none.source[2], ROOF_SRC_DEFAULT);
}

Test(roof_model, level_per_thread_for_private_caches) {
  roof_caches c = roof_choose_caches(k_sysfs, NULL);
  cr_expect_eq(roof_level_of(&c, 48.0 * KIB, 1), ROOF_L2);
  cr_expect_eq(roof_level_of(&c, 48.0 * KIB, 2), ROOF_L1); /* 24 KiB each */
  cr_expect_eq(roof_level_of(&c, 1.5 * MIB, 2), ROOF_L2);
  cr_expect_eq(roof_level_of(&c, 1.5 * MIB, 1), ROOF_LLC);
}

Test(roof_model, footprints_span_half_l1_to_4x_llc) {
  roof_caches c = roof_choose_caches(k_sysfs, k_cpuid);
  double f[ROOF_MAX_POINTS];
  int n = roof_footprints(&c, 1, false, 0, f);
  cr_expect_geq(n, 10);
  cr_expect_float_eq(f[0], 16.0 * KIB, 1e-9);
  cr_expect_float_eq(f[n - 1], 128.0 * MIB, 1e-9);
  for (int i = 1; i < n; i++) cr_expect_gt(f[i], f[i - 1]);
  int q = roof_footprints(&c, 1, true, 0, f);
  cr_expect_lt(q, n);
  cr_expect_float_eq(f[q - 1], 128.0 * MIB, 1e-9);
  n = roof_footprints(&c, 2, false, 0, f);
  cr_expect_float_eq(f[0], 32.0 * KIB, 1e-9); /* half an L1 per thread */
  q = roof_footprints(&c, 2, true, 0, f);
  cr_expect_float_eq(f[0], 64.0 * KIB, 1e-9); /* on the 1-thread grid: 16, 64, 256 KiB ... */
  n = roof_footprints(&c, 1, false, 64.0 * MIB, f);
  cr_expect_float_eq(f[n - 1], 64.0 * MIB, 1e-9); /* capped by memory */
}

/* A curve: 100 GB/s read at 16 KiB falling to 20 at 128 MiB; triad 2/3 of it. */
static roof_figures curve(void) {
  roof_figures f = {.peak = 100e9, .n = 4};
  const double x[] = {16.0 * KIB, 1.0 * MIB, 16.0 * MIB, 128.0 * MIB};
  const double r[] = {300e9, 150e9, 90e9, 30e9};
  for (int i = 0; i < f.n; i++) f.footprint[i] = x[i], f.read[i] = r[i], f.triad[i] = r[i] * 2 / 3;
  return f;
}

Test(roof_model, interpolation_in_log_footprint) {
  roof_figures f = curve();
  int lo, hi;
  /* At a point, its value; halfway in log between 1 and 16 MiB (4 MiB), the mean. */
  cr_expect_float_eq(roof_interp(f.n, f.footprint, f.read, 1.0 * MIB, NULL, NULL), 150e9, 1);
  cr_expect_float_eq(roof_interp(f.n, f.footprint, f.read, 4.0 * MIB, &lo, &hi), 120e9, 1);
  cr_expect_eq(lo, 1);
  cr_expect_eq(hi, 2);
  /* Beyond the ends, the end values. */
  cr_expect_float_eq(roof_interp(f.n, f.footprint, f.read, 1.0 * KIB, NULL, NULL), 300e9, 1);
  cr_expect_float_eq(roof_interp(f.n, f.footprint, f.read, 1e12, &lo, &hi), 30e9, 1);
  cr_expect_eq(lo, 3);
}

Test(roof_model, judge_by_footprint_and_mix) {
  roof_figures f = curve();
  roof_caches c = roof_choose_caches(k_blend, NULL);
  /* Read-only at 16 MiB: 16 MiB at 90 GB/s. */
  roof_work ro = {.read = 16.0 * MIB, .footprint = 16.0 * MIB};
  roof_verdict v = roof_judge(&f, &c, 1, &ro);
  cr_expect_float_eq(v.seconds, 16.0 * MIB / 90e9, 1e-12);
  cr_expect_eq(v.level, ROOF_LLC);
  cr_expect_eq(v.flags, 0);
  /* A triad's mix (2 reads, 1 write) at 16 MiB: the triad curve, 60 GB/s. */
  roof_work tr = {.read = 32.0 * MIB / 3, .written = 16.0 * MIB / 3, .footprint = 16.0 * MIB};
  v = roof_judge(&f, &c, 1, &tr);
  cr_expect_float_eq(v.bandwidth, 60e9, 1e3);
  /* Between the two mixes, linear in the share of reads: 5/6 reads, halfway in time per byte. */
  roof_work mid = {.read = 10.0 * MIB, .written = 2.0 * MIB, .footprint = 16.0 * MIB};
  v = roof_judge(&f, &c, 1, &mid);
  cr_expect_float_eq(v.bandwidth, 2.0 / (1.0 / 90e9 + 1.0 / 60e9), 1e3);
  /* More writes than a triad (add's backward: dy in, da and db out): the faster curve. */
  roof_work wr = {.read = 4.0 * MIB, .written = 8.0 * MIB, .footprint = 12.0 * MIB};
  v = roof_judge(&f, &c, 1, &wr);
  double at12 = roof_interp(f.n, f.footprint, f.read, 12.0 * MIB, NULL, NULL);
  cr_expect_float_eq(v.bandwidth, at12, 1e3);
  /* An update in place (w and g in, w out, as SGD): the write-back is not timed, the reads at
     the read curve; the bandwidth counts every byte moved. */
  roof_work ip = {.read = 8.0 * MIB,
                  .written = 4.0 * MIB,
                  .written_in_place = 4.0 * MIB,
                  .footprint = 8.0 * MIB};
  v = roof_judge(&f, &c, 1, &ip);
  double at8 = roof_interp(f.n, f.footprint, f.read, 8.0 * MIB, NULL, NULL);
  cr_expect_float_eq(v.memory_s, 8.0 * MIB / at8, 1e-12);
  cr_expect_float_eq(v.bandwidth, 12.0 * MIB / v.memory_s, 1e3);
  /* The same traffic written elsewhere is a triad's mix, timed as one. */
  ip.written_in_place = 0;
  v = roof_judge(&f, &c, 1, &ip);
  cr_expect_gt(v.memory_s, 8.0 * MIB / at8 * 1.1);
  /* Within L2 (512 KiB here) a write in place counts half a write: an update of 128 KiB read
     and written back is timed as 128 KiB read and 64 KiB written elsewhere. */
  roof_work l2 = {.read = 128.0 * KIB,
                  .written = 128.0 * KIB,
                  .written_in_place = 128.0 * KIB,
                  .footprint = 128.0 * KIB};
  v = roof_judge(&f, &c, 1, &l2);
  cr_expect_eq(v.level, ROOF_L2);
  roof_work half = {.read = 128.0 * KIB, .written = 64.0 * KIB, .footprint = 128.0 * KIB};
  cr_expect_float_eq(v.memory_s, roof_judge(&f, &c, 1, &half).memory_s, 1e-15);
  cr_expect_float_eq(v.bandwidth, 256.0 * KIB / v.memory_s, 1e3);
  /* Compute-bound: FLOPs over the peak. */
  roof_work cb = {.flops = 1e9, .read = 1.0 * MIB, .written = 0.5 * MIB};
  v = roof_judge(&f, &c, 1, &cb);
  cr_expect_float_eq(v.seconds, 1e9 / 100e9, 1e-12);
  /* A library function's kernel: its measured time is the compute bound (no nominal FLOPs:
     they can claim more work than the kernel does, and read above 100%), and the peak's
     consistency flag does not apply to it; beside counted FLOPs, the two add up. */
  roof_figures bad_peak = f;
  bad_peak.peak_bad = true;
  roof_work lib = {.kernel_s = 0.5e-3, .read = 1.0 * MIB, .written = 0.5 * MIB};
  v = roof_judge(&bad_peak, &c, 1, &lib);
  cr_expect_float_eq(v.seconds, 0.5e-3, 1e-12);
  cr_expect_eq(v.flags, 0);
  lib.flops = 1e9;
  v = roof_judge(&f, &c, 1, &lib);
  cr_expect_float_eq(v.seconds, 0.5e-3 + 1e9 / 100e9, 1e-12);
  lib.flops = 0, lib.kernel_s = 1e-9; /* and the memory time still binds when it is longer */
  v = roof_judge(&f, &c, 1, &lib);
  cr_expect_float_eq(v.seconds, v.memory_s, 1e-15);
  cr_expect_gt(v.memory_s, 1e-9);
  /* Not measured: no bound, the level still. */
  v = roof_judge(NULL, &c, 1, &ro);
  cr_expect_eq(v.seconds, 0);
  cr_expect_eq(v.level, ROOF_LLC);
}

/* The same curve with a copy's (scale) and a store-only (fill) curve measured: a cache that takes
   stores at a quarter of its loads' rate. */
Test(roof_model, judge_writes_by_their_own_curves) {
  roof_figures f = curve();
  roof_caches c = roof_choose_caches(k_sysfs, NULL);
  for (int i = 0; i < f.n; i++) f.scale[i] = f.read[i] / 2, f.fill[i] = f.read[i] / 4;
  /* A copy's mix (neg: x in, y out) at 16 MiB: the scale curve, 45 GB/s, where the faster of
     read and triad (90) made the bound twice too short. */
  roof_work cp = {.read = 8.0 * MIB, .written = 8.0 * MIB, .footprint = 16.0 * MIB};
  roof_verdict v = roof_judge(&f, &c, 1, &cp);
  cr_expect_float_eq(v.bandwidth, 45e9, 1e3);
  /* Stores alone (fill): the fill curve, 22.5 GB/s. */
  roof_work fl = {.written = 16.0 * MIB, .footprint = 16.0 * MIB};
  v = roof_judge(&f, &c, 1, &fl);
  cr_expect_float_eq(v.bandwidth, 22.5e9, 1e3);
  /* Between fill and scale (add's backward, rho = 1/3), linear in rho: 2/3 of a scale's time per
     byte and 1/3 of a fill's. */
  roof_work ab = {.read = 4.0 * MIB, .written = 8.0 * MIB, .footprint = 16.0 * MIB};
  v = roof_judge(&f, &c, 1, &ab);
  cr_expect_float_eq(v.bandwidth, 1.0 / (2.0 / 3.0 / 45e9 + 1.0 / 3.0 / 22.5e9), 1e3);
  /* Between scale and triad (mul's backward: dy, a, b in, da, db out, rho = 3/5): these figures
     are convex in rho, and the neighbouring segments' lines (both 1 / 56.25 GB/s there) lie below
     the chord (1 / 52.9). */
  roof_work mb = {.read = 9.0 * MIB, .written = 6.0 * MIB, .footprint = 16.0 * MIB};
  v = roof_judge(&f, &c, 1, &mb);
  cr_expect_float_eq(v.bandwidth, 56.25e9, 1e3);
  /* At and above a triad's mix, as before: the new curves do not enter. */
  roof_work tr = {.read = 32.0 * MIB / 3, .written = 16.0 * MIB / 3, .footprint = 16.0 * MIB};
  v = roof_judge(&f, &c, 1, &tr);
  cr_expect_float_eq(v.bandwidth, 60e9, 1e3);
  /* A fill curve that was not measured: below a copy's mix the fastest curve, a bound still. */
  for (int i = 0; i < f.n; i++) f.fill[i] = 0;
  v = roof_judge(&f, &c, 1, &ab);
  cr_expect_float_eq(v.bandwidth, 90e9, 1e3);
}

/* Past a cache's capacity, the next level's figures: an Intel Xeon VM's curve (48 KiB of L1d per
   core, 2 MiB of L2) on the grid of half an L1 times powers of 2, in GB/s. */
Test(roof_model, past_a_cache_the_next_level) {
  roof_figures f = {.peak = 100e9, .n = 8};
  const double x[] = {24.0 * KIB,   48.0 * KIB,   96.0 * KIB, 192.0 * KIB,
                      1536.0 * KIB, 3072.0 * KIB, 24.0 * MIB, 48.0 * MIB};
  const double rd[] = {270e9, 262e9, 171e9, 171e9, 92e9, 30e9, 28e9, 16e9};
  const double fl[] = {229e9, 205e9, 57e9, 57e9, 48e9, 26e9, 22e9, 18e9};
  for (int i = 0; i < f.n; i++)
    f.footprint[i] = x[i], f.read[i] = rd[i], f.triad[i] = f.scale[i] = rd[i], f.fill[i] = fl[i];
  const size_t xeon[3] = {48 * KIB, 2 * MIB, 32 * MIB};
  roof_caches c = roof_choose_caches(xeon, NULL);
  int lo, hi;
  /* A fill of 64 KiB: past the L1 that the 48 KiB point fits, so the 96 KiB point's 57 GB/s, not
     the blend's 143; the figures come from that point alone. */
  cr_expect_float_eq(roof_curve_footprint(&f, &c, 1, 64.0 * KIB, &lo, &hi), 96.0 * KIB, 1e-9);
  cr_expect_eq(lo, 2);
  cr_expect_eq(hi, 2);
  roof_work fill = {.written = 64.0 * KIB};
  cr_expect_float_eq(roof_judge(&f, &c, 1, &fill).bandwidth, 57e9, 1e3);
  f.bad[1] = true; /* the point below, not used, does not flag the row */
  cr_expect_not(roof_judge(&f, &c, 1, &fill).flags & ROOF_FLAG_INCONSISTENT);
  f.bad[1] = false;
  /* Inside L1 between two points: the footprint itself, the blend. */
  cr_expect_float_eq(roof_curve_footprint(&f, &c, 1, 32.0 * KIB, &lo, &hi), 32.0 * KIB, 1e-9);
  cr_expect_eq(lo, 0);
  cr_expect_eq(hi, 1);
  roof_work small = {.written = 32.0 * KIB};
  double blend = roof_interp(f.n, f.footprint, f.fill, 32.0 * KIB, NULL, NULL);
  cr_expect_float_eq(roof_judge(&f, &c, 1, &small).bandwidth, blend, 1e3);
  cr_expect_gt(blend, 205e9);
  /* A capacity between two points (a 40 KiB L1): at it the footprint itself, past it the point
     above. */
  const size_t l1_40[3] = {40 * KIB, 2 * MIB, 32 * MIB};
  roof_caches c40 = roof_choose_caches(l1_40, NULL);
  cr_expect_float_eq(roof_curve_footprint(&f, &c40, 1, 40.0 * KIB, NULL, NULL), 40.0 * KIB, 1e-9);
  cr_expect_float_eq(roof_curve_footprint(&f, &c40, 1, 41.0 * KIB, NULL, NULL), 48.0 * KIB, 1e-9);
  /* On two threads 64 KiB is 32 KiB each, inside their L1s: the blend. */
  cr_expect_float_eq(roof_curve_footprint(&f, &c, 2, 64.0 * KIB, NULL, NULL), 64.0 * KIB, 1e-9);
  /* Past the L2 (2 MiB a thread) the blend still: 2.5 MiB on one thread, on two and on 0 threads
     (counted as one), between the 1.5 and 3 MiB points. */
  cr_expect_float_eq(roof_curve_footprint(&f, &c, 1, 2.5 * MIB, &lo, &hi), 2.5 * MIB, 1e-9);
  cr_expect_eq(lo, 4);
  cr_expect_eq(hi, 5);
  cr_expect_float_eq(roof_curve_footprint(&f, &c, 2, 2.5 * MIB, NULL, NULL), 2.5 * MIB, 1e-9);
  cr_expect_float_eq(roof_curve_footprint(&f, &c, 0, 2.5 * MIB, NULL, NULL), 2.5 * MIB, 1e-9);
  /* An L2 of 1.5 MiB, at a grid point: 2 MiB, past it, takes the blend, while past the L1 the
     point above still counts. */
  const size_t l2_small[3] = {48 * KIB, 1536 * KIB, 32 * MIB};
  roof_caches cl2 = roof_choose_caches(l2_small, NULL);
  cr_expect_float_eq(roof_curve_footprint(&f, &cl2, 1, 2.0 * MIB, NULL, NULL), 2.0 * MIB, 1e-9);
  cr_expect_float_eq(roof_curve_footprint(&f, &cl2, 1, 64.0 * KIB, NULL, NULL), 96.0 * KIB, 1e-9);
  /* Past the LLC (32 MiB for all threads, not per thread), from the 24 MiB point inside it:
     40 MiB takes the 48 MiB point on one thread and on two. */
  cr_expect_float_eq(roof_curve_footprint(&f, &c, 1, 40.0 * MIB, NULL, NULL), 48.0 * MIB, 1e-9);
  cr_expect_float_eq(roof_curve_footprint(&f, &c, 2, 40.0 * MIB, NULL, NULL), 48.0 * MIB, 1e-9);
  /* An unknown capacity (0) is no cliff. */
  roof_caches none = c;
  none.size[0] = 0;
  cr_expect_float_eq(roof_curve_footprint(&f, &none, 1, 64.0 * KIB, NULL, NULL), 64.0 * KIB, 1e-9);
  /* Between two points of one level (96 and 192 KiB, both past L1, inside L2), and beyond the
     last point: the footprint. */
  cr_expect_float_eq(roof_curve_footprint(&f, &c, 1, 150.0 * KIB, NULL, NULL), 150.0 * KIB, 1e-9);
  cr_expect_float_eq(roof_curve_footprint(&f, &c, 1, 64.0 * MIB, &lo, &hi), 64.0 * MIB, 1e-9);
  cr_expect_eq(lo, 7);
  cr_expect_eq(hi, 7);
}

/* An ISA's curves take the better figure of an ISA it includes, point by point, on the same
   grid only; the rest stays its own. */
Test(roof_model, curves_of_an_included_isa) {
  roof_figures wide = curve(), narrow = curve();
  narrow.triad[1] = 1.1 * wide.triad[1]; /* faster stores at 1 MiB */
  narrow.read[1] = 0.5 * wide.read[1];
  narrow.peak = 2 * wide.peak;
  narrow.bad[1] = true;
  narrow.footprint[3] = 64.0 * MIB, narrow.fill[3] = 1e12; /* another grid there */
  wide.fill[3] = 5e9;
  wide.scale[1] = wide.fill[1] = 40e9;
  narrow.scale[1] = 50e9, narrow.fill[1] = 30e9;
  narrow.issue = 9e9, narrow.cls[0] = 3e9;
  roof_take_curves(&wide, &narrow);
  cr_expect_float_eq(wide.scale[1], 50e9, 1);
  cr_expect_float_eq(wide.fill[1], 40e9, 1);
  cr_expect_eq(wide.issue, 0);
  cr_expect_eq(wide.cls[0], 0);
  cr_expect_float_eq(wide.triad[1], 1.1 * curve().triad[1], 1);
  cr_expect_float_eq(wide.read[1], curve().read[1], 1);
  cr_expect_float_eq(wide.fill[3], 5e9, 1);
  cr_expect_float_eq(wide.peak, curve().peak, 1);
  cr_expect_not(wide.bad[1]);
}

/* Time per byte against the share of reads, between the mixes measured. */
Test(roof_model, per_byte_between_mixes) {
  const double xs[] = {0, 0.5, 2.0 / 3.0, 1};
  /* Reads and writes that cost apart (each read 2 units, each write 1): linear, met exactly. */
  const double add[] = {1, 1.5, 5.0 / 3.0, 2};
  for (int k = 0; k <= 100; k++) {
    double rho = k / 100.0;
    cr_expect_float_eq(roof_per_byte(rho, 4, xs, add), 1 + rho, 1e-12, "rho %g", rho);
  }
  /* The same costs overlapping (a read 2 units, a write 1, each stream alone; the time the longer
     of the two): convex, with a kink at rho = 1/3 between two mixes. The straight line there
     reads 1 where the time is 2/3; the bound never exceeds the time and meets it at 1/3. */
  const double lap[] = {1, 1, 4.0 / 3.0, 2};
  for (int k = 0; k <= 100; k++) {
    double rho = k / 100.0, t = 2 * rho > 1 - rho ? 2 * rho : 1 - rho;
    cr_expect_leq(roof_per_byte(rho, 4, xs, lap), t * (1 + 1e-12), "rho %g", rho);
  }
  cr_expect_float_eq(roof_per_byte(1.0 / 3.0, 4, xs, lap), 2.0 / 3.0, 1e-12);
  /* A reduction writes a little (rho near 1): its reads' time at least, not the triad's line
     extended. */
  cr_expect_geq(roof_per_byte(0.999, 4, xs, lap), 0.999 * 2);
  /* Two mixes only (read and triad): the straight line, as before the scale and the fill. */
  cr_expect_float_eq(roof_per_byte(5.0 / 6.0, 2, xs + 2, add + 2), 1 + 5.0 / 6.0, 1e-12);
}

/* A curve measured at some footprints only (made by hand): not used where a point around the
   row's footprint is 0. */
Test(roof_model, partly_measured_curve) {
  roof_figures f = curve();
  roof_caches c = roof_choose_caches(k_blend, NULL);
  for (int i = 0; i < f.n; i++) f.scale[i] = f.read[i] / 2, f.fill[i] = f.read[i] / 4;
  f.fill[2] = 0;
  roof_work ab = {.read = 4.0 * MIB, .written = 8.0 * MIB, .footprint = 12.0 * MIB};
  roof_verdict v = roof_judge(&f, &c, 1, &ab);
  double at12 = roof_interp(f.n, f.footprint, f.read, 12.0 * MIB, NULL, NULL);
  cr_expect_float_eq(v.bandwidth, at12, 1e3); /* below 1/2 without the fill: the fastest */
  roof_work cp = {.read = 6.0 * MIB, .written = 6.0 * MIB, .footprint = 12.0 * MIB};
  v = roof_judge(&f, &c, 1, &cp); /* the scale is whole there */
  cr_expect_float_eq(v.bandwidth, roof_interp(f.n, f.footprint, f.scale, 12.0 * MIB, NULL, NULL),
                     1e3);
}

/* A scale or fill point below a later one of its own curve is suspect, as for read and triad. */
Test(roof_model, checks_the_scale_and_fill_curves) {
  roof_figures one = curve();
  for (int i = 0; i < one.n; i++) one.scale[i] = one.read[i] / 2, one.fill[i] = one.read[i] / 4;
  bool s1[ROOF_MAX_POINTS], s2[ROOF_MAX_POINTS], peak;
  cr_expect_not(roof_check(&one, NULL, s1, s2, &peak));
  one.fill[1] = 0.5 * one.fill[2]; /* 1 MiB far below 16 MiB */
  cr_expect(roof_check(&one, NULL, s1, s2, &peak));
  cr_expect(s1[1] && s1[2]);
  one.fill[1] = one.read[1] / 4;
  roof_figures more = one;
  more.scale[2] = 0.5 * one.scale[2]; /* two threads slower than one */
  cr_expect(roof_check(&one, &more, s1, s2, &peak));
  cr_expect(s2[2]);
}

Test(roof_model, tape_row_whose_gradient_is_a_view) {
  /* tape.add on n floats: the forward reads a and b and writes y; sg_tape_end writes the seed
     of ones; add's gradient is dy itself for both inputs: no kernel. */
  double n = 1 << 20;
  roof_work fwd = {.read = 8 * n, .written = 4 * n};
  roof_work bwd = {.read = 4 * n, .written = 8 * n}; /* what add_backward would move */
  roof_work w = roof_tape_work(&fwd, &bwd, 4 * n, true);
  cr_expect_float_eq(w.read + w.written, 16 * n, 1e-6); /* not 32 */
  cr_expect_float_eq(w.written, 8 * n, 1e-6);
  cr_expect_float_eq(w.footprint, 16 * n, 1e-6);
  /* mul's gradient runs its kernel: dy, a and b in, da and db out. */
  roof_work mb = {.read = 12 * n, .written = 8 * n};
  w = roof_tape_work(&fwd, &mb, 4 * n, false);
  cr_expect_float_eq(w.read + w.written, 36 * n, 1e-6);
  cr_expect_float_eq(w.footprint, 24 * n, 1e-6);
}

Test(roof_model, flags_inconsistent_roof) {
  roof_figures one = curve(), more = curve();
  for (int i = 0; i < more.n; i++) more.read[i] *= 2, more.triad[i] *= 2;
  more.peak = 2 * one.peak;
  bool s1[ROOF_MAX_POINTS], s2[ROOF_MAX_POINTS], peak;
  cr_expect_not(roof_check(&one, &more, s1, s2, &peak));
  /* Two threads below one at 1 MiB (a neighbour took the second core), and a level slower than
     the next on one thread (16 KiB below 1 MiB). */
  more.read[1] = 0.5 * one.read[1];
  one.triad[0] = 0.6 * one.triad[1]; /* below the next point, not below the one after */
  more.peak = 0.5 * one.peak;
  cr_expect(roof_check(&one, &more, s1, s2, &peak));
  cr_expect(s2[1]);
  cr_expect(s1[0]);
  cr_expect(s1[1]); /* the later point of the pair: one of the two is wrong */
  cr_expect_not(s1[2]);
  cr_expect(s2[2]); /* more.read[1] is also below more.read[2] */
  cr_expect_not(s2[3]);
  cr_expect(peak);
  /* Marked (as the measuring code does after a second try): a row judged at that point carries
     the flag, a row elsewhere does not. */
  roof_caches c = roof_choose_caches(k_sysfs, NULL);
  more.bad[1] = true;
  roof_work at = {.read = 1.0 * MIB};
  cr_expect(roof_judge(&more, &c, 2, &at).flags & ROOF_FLAG_INCONSISTENT);
  roof_work far = {.read = 128.0 * MIB};
  cr_expect_not(roof_judge(&more, &c, 2, &far).flags & ROOF_FLAG_INCONSISTENT);
  /* A compute-bound row on a bad peak is flagged; a memory-bound one is not. */
  more.peak_bad = true;
  roof_work cb = {.flops = 1e12, .read = 128.0 * MIB};
  cr_expect(roof_judge(&more, &c, 2, &cb).flags & ROOF_FLAG_INCONSISTENT);
  roof_work mb = {.flops = 1, .read = 128.0 * MIB};
  cr_expect_not(roof_judge(&more, &c, 2, &mb).flags & ROOF_FLAG_INCONSISTENT);
}

Test(roof_model, flags_row_above_105_percent) {
  roof_figures f = curve();
  roof_caches c = roof_choose_caches(k_sysfs, NULL);
  roof_work w = {.read = 128.0 * MIB};
  roof_verdict v = roof_judge(&f, &c, 1, &w);
  unsigned flags;
  double pct = roof_pct(&v, v.seconds / 1.04, &flags);
  cr_expect_float_eq(pct, 104, 1e-9);
  cr_expect_eq(flags, 0);
  pct = roof_pct(&v, v.seconds / 1.5, &flags);
  cr_expect_float_eq(pct, 150, 1e-9);
  cr_expect(flags & ROOF_FLAG_MODEL_ERROR);
}

/* The issue bound: the larger of all instructions over the combined rate and each class's
   instructions over its own rate, over the FMA and memory times where it is larger; a term whose
   rate was not measured drops out. */
Test(roof_model, issue_bound) {
  roof_caches c = roof_choose_caches(k_sysfs, k_cpuid);
  roof_figures f = {.peak = 100e9, .issue = 8e9, .n = 1};
  f.cls[ROOF_CLASS_div] = 1e9, f.cls[ROOF_CLASS_shuffle] = 2e9;
  f.footprint[0] = 16 * KIB, f.read[0] = 400e9, f.triad[0] = 400e9;
  /* 1000 elements: 20 FLOPs (0.2 us), 3 instructions (0.375 us), 0.1 division (0.1 us) and
     0.5 shuffle (0.25 us) each */
  roof_work w = {.flops = 20e3, .read = 4e3, .written = 4e3, .insns = 3e3};
  w.cls[ROOF_CLASS_div] = 100, w.cls[ROOF_CLASS_shuffle] = 500;
  roof_verdict v = roof_judge(&f, &c, 1, &w);
  cr_expect_float_eq(v.issue_s, 3e3 / 8e9, 1e-15);
  cr_expect_float_eq(v.seconds, v.issue_s, 1e-15);
  cr_expect_eq(v.issue_class, ROOF_N_CLASSES);
  cr_expect_str_eq(roof_class_name(v.issue_class), "all");
  w.cls[ROOF_CLASS_div] = 600; /* 0.6 us of divisions */
  v = roof_judge(&f, &c, 1, &w);
  cr_expect_float_eq(v.seconds, 600 / 1e9, 1e-15);
  cr_expect_eq(v.issue_class, ROOF_CLASS_div);
  cr_expect_str_eq(roof_class_name(v.issue_class), "div");
  w.cls[ROOF_CLASS_shuffle] = 1600; /* 0.8 us of shuffles */
  v = roof_judge(&f, &c, 1, &w);
  cr_expect_float_eq(v.seconds, 1600 / 2e9, 1e-15);
  cr_expect_eq(v.issue_class, ROOF_CLASS_shuffle);
  f.issue = f.cls[ROOF_CLASS_div] = f.cls[ROOF_CLASS_shuffle] = 0; /* not measured: FMA bound */
  v = roof_judge(&f, &c, 1, &w);
  cr_expect_eq(v.issue_s, 0);
  cr_expect_float_eq(v.seconds, 20e3 / 100e9, 1e-15);
}

/* A class's FMA-pipe cost from its pair probe: the excess of the pair's time over its FMAs'
   own, per instruction of the class; 0 for a faster pair (noise), an unknown rate, or a pair
   that ran the class near its own rate (its pipes, not the FMA pipes, may have set the pace). */
Test(roof_model, pipe_cost) {
  /* 16 FMAs to one division at 1 FMA per ns alone; the pair's 16 FMAs take 18 ns: 2 slots */
  cr_expect_float_eq(roof_pipe_cost(1e9, 16.0 / 18.0 * 1e9, 16, 0.2e9), 2.0, 1e-12);
  /* 4 FMAs to one addition, no slower than FMAs alone: 0, and not negative when faster */
  cr_expect_float_eq(roof_pipe_cost(1e9, 1e9, 4, 1e9), 0, 1e-12);
  cr_expect_float_eq(roof_pipe_cost(1e9, 1.01e9, 4, 1e9), 0, 1e-12);
  cr_expect_float_eq(roof_pipe_cost(1e9, 0.999e9, 4, 1e9), 0, 1e-12); /* 0.004: noise */
  /* an FMA beside FMAs: 4 to 1 take 5/4 of the time, one slot each */
  cr_expect_float_eq(roof_pipe_cost(1e9, 0.8e9, 4, 1e9), 1.0, 1e-12);
  cr_expect_eq(roof_pipe_cost(0, 1e9, 4, 1e9), 0);
  cr_expect_eq(roof_pipe_cost(1e9, 0, 4, 1e9), 0);
  cr_expect_eq(roof_pipe_cost(1e9, 0.5e9, 0, 1e9), 0);
  /* the pair issued the class at 0.5e9 / 4 = 0.125e9 per s, its own rate 0.15e9: saturated */
  cr_expect_eq(roof_pipe_cost(1e9, 0.5e9, 4, 0.15e9), 0);
  cr_expect_float_eq(roof_pipe_cost(1e9, 0.5e9, 4, 0), 4.0, 1e-12); /* own rate unknown */
}

/* The FMA pipes' term: the FMAs and the slots the other classes take of those pipes, over the
   FMA class's rate, beside the per-class and total terms, the largest binding ("fma pipes"). */
Test(roof_model, fma_pipes) {
  roof_caches c = roof_choose_caches(k_sysfs, k_cpuid);
  roof_figures f = {.peak = 100e9, .issue = 8e9, .n = 1};
  f.footprint[0] = 16 * KIB, f.read[0] = 400e9, f.triad[0] = 400e9;
  f.cls[ROOF_CLASS_fma] = 1e9, f.cls[ROOF_CLASS_div] = 0.2e9, f.cls[ROOF_CLASS_fadd] = 1e9;
  f.cls[ROOF_CLASS_ternlog] = 1e9;
  /* a division: 2 slots (16 FMAs to 1 in 18 FMAs' time); a vpternlogd: 1 (4 to 1 in 5);
     an addition: none (4 to 1 in 4) */
  f.pair[ROOF_CLASS_div] = 16.0 / 18.0 * 1e9, f.pair_ratio[ROOF_CLASS_div] = 16;
  f.pair[ROOF_CLASS_ternlog] = 0.8e9, f.pair_ratio[ROOF_CLASS_ternlog] = 4;
  f.pair[ROOF_CLASS_fadd] = 1e9, f.pair_ratio[ROOF_CLASS_fadd] = 4;
  /* 1000 elements: 0.5 FMA, 0.0625 division, 0.0625 vpternlogd, 0.25 addition each: the FMA
     class alone 0.5 us, the divisions 0.3125 us, the FMA pipes 500 + 125 + 62.5 slots */
  roof_work w = {.flops = 1e3, .read = 4e3, .written = 4e3, .insns = 1e3};
  w.cls[ROOF_CLASS_fma] = 500, w.cls[ROOF_CLASS_div] = 62.5, w.cls[ROOF_CLASS_ternlog] = 62.5;
  w.cls[ROOF_CLASS_fadd] = 250;
  roof_verdict v = roof_judge(&f, &c, 1, &w);
  cr_expect_float_eq(v.pipes_s, 687.5e-9, 1e-15);
  cr_expect_float_eq(v.issue_s, v.pipes_s, 1e-15);
  cr_expect_float_eq(v.seconds, v.pipes_s, 1e-15);
  cr_expect_eq(v.issue_class, ROOF_FMA_PIPES);
  cr_expect_str_eq(roof_class_name(v.issue_class), "fma pipes");
  /* many divisions: their own pipe binds, not the FMA pipes (2 slots each on them) */
  w.cls[ROOF_CLASS_div] = 500;
  v = roof_judge(&f, &c, 1, &w);
  cr_expect_float_eq(v.pipes_s, (500 + 1000 + 62.5) * 1e-9, 1e-15);
  cr_expect_float_eq(v.issue_s, 500 / 0.2e9, 1e-15);
  cr_expect_eq(v.issue_class, ROOF_CLASS_div);
  /* no pair measured (the baseline ISA, or a kernel of classes without one): no pipe term, the
     FMA class's own term stays */
  w.cls[ROOF_CLASS_div] = w.cls[ROOF_CLASS_ternlog] = w.cls[ROOF_CLASS_fadd] = 0;
  v = roof_judge(&f, &c, 1, &w);
  cr_expect_eq(v.pipes_s, 0);
  cr_expect_float_eq(v.issue_s, 500e-9, 1e-15);
  cr_expect_eq(v.issue_class, ROOF_CLASS_fma);
}

/* The kernel's own mix, where measured, takes the FMA pipes' place: it binds when it is the
   largest term ("mix"), whether the pairs' estimate was larger or smaller, and a per-class or
   total term above it still binds. */
Test(roof_model, own_mix) {
  roof_caches c = roof_choose_caches(k_sysfs, k_cpuid);
  roof_figures f = {.peak = 100e9, .issue = 8e9, .n = 1};
  f.footprint[0] = 16 * KIB, f.read[0] = 400e9, f.triad[0] = 400e9;
  f.cls[ROOF_CLASS_fma] = 1e9, f.cls[ROOF_CLASS_div] = 0.2e9, f.cls[ROOF_CLASS_ternlog] = 1e9;
  f.pair[ROOF_CLASS_ternlog] = 0.8e9, f.pair_ratio[ROOF_CLASS_ternlog] = 4; /* 1 slot each */
  /* 500 FMAs and 250 vpternlogd: the pairs say 750 slots, 750 ns */
  roof_work w = {.flops = 1e3, .read = 4e3, .written = 4e3, .insns = 1e3, .mix_s = 600e-9};
  w.cls[ROOF_CLASS_fma] = 500, w.cls[ROOF_CLASS_ternlog] = 250;
  roof_verdict v = roof_judge(&f, &c, 1, &w);
  cr_expect_float_eq(v.pipes_s, 750e-9, 1e-15); /* still reported */
  cr_expect_float_eq(v.issue_s, 600e-9, 1e-15); /* the mix measured less: it counts */
  cr_expect_float_eq(v.seconds, 600e-9, 1e-15);
  cr_expect_eq(v.issue_class, ROOF_MIX);
  cr_expect_str_eq(roof_class_name(v.issue_class), "mix");
  w.mix_s = 900e-9; /* more than the pairs say */
  v = roof_judge(&f, &c, 1, &w);
  cr_expect_float_eq(v.issue_s, 900e-9, 1e-15);
  cr_expect_eq(v.issue_class, ROOF_MIX);
  w.mix_s = 100e-9; /* below the FMA class's own term (500 ns): that one binds */
  v = roof_judge(&f, &c, 1, &w);
  cr_expect_float_eq(v.issue_s, 500e-9, 1e-15);
  cr_expect_eq(v.issue_class, ROOF_CLASS_fma);
  w.mix_s = 0; /* not measured: the pairs' term as before */
  v = roof_judge(&f, &c, 1, &w);
  cr_expect_float_eq(v.issue_s, 750e-9, 1e-15);
  cr_expect_eq(v.issue_class, ROOF_FMA_PIPES);
}
