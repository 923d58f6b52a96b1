#!/usr/bin/env python3
"""The tables behind gelu's a G(a) (kernels_simd/simd_math.inc): a G(a) = a erfcx(a / sqrt 2) / 2,
gelu's factor, as polynomials in the offset f from the left edge of each interval of a + 1 that
the index picks. NEON's sg_gelu_ag_tab_: 16 polynomials of degree 6, the index the exponent and
top two mantissa bits (widths 1/4 on [0, 1), 1/2 on [1, 3), 1 on [3, 7), 2 on [7, 15)).
(AVX-512's form until the twenty-eighth landing took 32 of degree 5, one mantissa bit more; its
gelu now has a table of its own, docs/fit_gelu_near.py.) AVX2's
sg_gelu_ag_tab8_ (--lanes 8): 8 of degree 7, one mantissa bit fewer (widths 1/2, 1, 2, 4), the
index bits(a + 1) >> 22; --degree D fits another degree (8 reached 1.0e-7, 6 2.2e-7).
Near-minimax in relative error (weighted least squares in double against mpmath, Lawson's
reweighting), the coefficients rounded to float one at a time from the top with the rest refitted,
and on [0, 1/4) the constant held at 0 (f = a there), so that a G keeps its relative accuracy as
a -> 0. Prints the table in the kernel's lane order (the index's low bits: 1.0 has 12 there of 16,
6 of 8) and each interval's error with the Horner evaluation rounded to float at every FMA.

    python3 docs/fit_gelu_ag.py [--lanes 8|16] [--degree D]

Needs numpy and mpmath. Result (2026-12-04): at most 8.7e-8 relative (on [0.75, 1)) including the
evaluation's own rounding; docs/accuracy.md's sweep measures the kernel at 2.06 ulp. With --lanes
8 (2026-12-06): at most 1.16e-7 (on [0, 1/2)), 9.8e-8 elsewhere.
"""
import os
import sys

import mpmath as mp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fit_poly import horner_f32, lawson_fit, print_c_rows  # noqa: E402

mp.mp.dps = 40
F32 = np.float32
ARGS = dict(zip(sys.argv[1::2], map(int, sys.argv[2::2])))
if (len(sys.argv) % 2 == 0 or set(ARGS) - {"--lanes", "--degree"}
        or ARGS.get("--lanes", 16) not in (8, 16)):
    sys.exit("usage: fit_gelu_ag.py [--lanes 8|16] [--degree D]")
LANES = ARGS.get("--lanes", 16)
DEGREE = ARGS.get("--degree", {8: 7, 16: 6}[LANES])


def ag(a):
    a = mp.mpf(a)
    return float(a * mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2)


def interval(lane):
    """[start, end) of a for a table lane (the index is bits(a + 1) >> 22, low 3 bits, or >> 21,
    low 4 bits: a's interval in [0, 1), [1, 3), [3, 7) or [7, 15) and a half or a quarter of
    it)."""
    per = LANES // 4
    group, m = divmod((lane + per) % LANES, per)  # 1.0 (a = 0) has 3 per there
    s, length = ((0.0, 1.0), (1.0, 2.0), (3.0, 4.0), (7.0, 8.0))[group]
    w = length / per
    return s + m * w, min(s + (m + 1) * w, 14.8)


def main():
    table = np.zeros((DEGREE + 1, LANES))
    for lane in range(LANES):
        s, e = interval(lane)
        n = 400  # Chebyshev points of the interval
        a = (s + e) / 2 + (e - s) / 2 * np.cos(np.pi * (np.arange(n) + 0.5) / n)
        f, y = a - s, np.array([ag(v) for v in a])
        fixed = {0: 0.0} if s == 0 else {}
        for k in range(DEGREE, -1, -1):  # round from the top, refit the rest
            if k not in fixed:
                fixed[k] = float(F32(lawson_fit(f, y, fixed, y, DEGREE)[k]))
        table[:, lane] = [fixed[k] for k in range(DEGREE + 1)]
        at = np.linspace(s, e, 3001)[1:-1].astype(F32).astype(np.float64)  # float inputs
        ft = at - s  # exact, as the kernel's
        err = np.max(np.abs(horner_f32(fixed, ft, DEGREE) / np.array([ag(v) for v in at]) - 1))
        print(f"/* lane {lane:2d}: a in [{s:5.2f}, {e:5.2f}), {err:.2e} relative in float */")
    print_c_rows(table)


if __name__ == "__main__":
    main()
