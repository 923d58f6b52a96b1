#!/usr/bin/env python3
"""The table behind gelu's a G(a) on AVX-512 and NEON (kernels_simd/simd_math.inc,
sg_gelu_ag_tab_): a G(a) = a erfcx(a / sqrt 2) / 2, gelu's factor, as 16 polynomials of degree 6
in the offset f from the left edge of each interval of a + 1 that the index picks (its exponent
and top two mantissa bits: widths 1/4 on [0, 1), 1/2 on [1, 3), 1 on [3, 7), 2 on [7, 15)).
Near-minimax in relative error (weighted least squares in double against mpmath, Lawson's
reweighting), the coefficients rounded to float one at a time from the top with the rest refitted,
and on [0, 1/4) the constant held at 0 (f = a there), so that a G keeps its relative accuracy as
a -> 0. Prints the table in the kernel's lane order (lane (12 + i) & 15 holds interval i) and each
interval's error with the Horner evaluation rounded to float at every FMA.

    python3 docs/fit_gelu_ag.py

Needs numpy and mpmath. Result (2026-12-04): at most 8.7e-8 relative (on [0.75, 1)) including the
evaluation's own rounding; docs/accuracy.md's sweep measures the kernel at 2.06 ulp.
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40
F32 = np.float32
DEGREE = 6


def ag(a):
    a = mp.mpf(a)
    return float(a * mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2)


def interval(lane):
    """[start, end) of a for a table lane (the index is bits(a + 1) >> 21, low 4 bits)."""
    if lane >= 12:
        m = lane - 12
        return m / 4, (m + 1) / 4
    if lane < 4:
        return 1 + lane / 2, 1.5 + lane / 2
    if lane < 8:
        return 3.0 + (lane - 4), 4.0 + (lane - 4)
    return 7.0 + 2 * (lane - 8), min(9.0 + 2 * (lane - 8), 14.8)


def fit(f, y, fixed):
    """Relative-error fit of the coefficients not in `fixed` (degree -> value)."""
    free = [k for k in range(DEGREE + 1) if k not in fixed]
    rhs = (y - sum(v * f**k for k, v in fixed.items())) / y
    a = np.stack([f**k for k in free], 1) / y[:, None]
    w = np.ones(len(f))
    for _ in range(30):  # Lawson: weight the worst points up, toward the minimax fit
        sol = np.linalg.lstsq(a * w[:, None], rhs * w, rcond=None)[0]
        err = np.abs(a @ sol - rhs)
        w = w * np.sqrt(err / err.max()) + 1e-12
        w /= w.max()
    c = dict(fixed)
    c.update(zip(free, sol))
    return c


def horner_f32(c, f):
    p = np.full_like(f, float(F32(c[DEGREE])))
    for k in range(DEGREE - 1, -1, -1):
        p = (p * f + c[k]).astype(F32).astype(np.float64)  # one rounding per FMA
    return p


def main():
    table = np.zeros((DEGREE + 1, 16))
    for lane in range(16):
        s, e = interval(lane)
        n = 400  # Chebyshev points of the interval
        a = (s + e) / 2 + (e - s) / 2 * np.cos(np.pi * (np.arange(n) + 0.5) / n)
        f, y = a - s, np.array([ag(v) for v in a])
        fixed = {0: 0.0} if s == 0 else {}
        for k in range(DEGREE, -1, -1):  # round from the top, refit the rest
            if k not in fixed:
                fixed[k] = float(F32(fit(f, y, fixed)[k]))
        table[:, lane] = [fixed[k] for k in range(DEGREE + 1)]
        at = np.linspace(s, e, 3001)[1:-1].astype(F32).astype(np.float64)  # float inputs
        ft = at - s  # exact, as the kernel's
        err = np.max(np.abs(horner_f32(fixed, ft) / np.array([ag(v) for v in at]) - 1))
        print(f"/* lane {lane:2d}: a in [{s:5.2f}, {e:5.2f}), {err:.2e} relative in float */")
    for k in range(DEGREE + 1):
        print("{" + ", ".join(f"{F32(v)!r}f".replace("np.float32(", "").replace(")", "")
                              for v in table[k]) + "},")


if __name__ == "__main__":
    main()
