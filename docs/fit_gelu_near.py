#!/usr/bin/env python3
"""The table behind AVX-512's gelu (kernels_simd/simd_math.inc, sg_gelu_tab32_), gelu(x) =
max(-0, x) - T(a), T(a) = a Phi(-a), a = |x|. Lanes 0-27, for a < 5.5: T itself, no exponential
(over a width of 1/5, e^(-a^2/2)'s fall is a polynomial's work), as polynomials of degree 6 in
t = 5a - k on the intervals k = round(5a), 0 <= k <= 27 (the index is the low 5 bits of 5a +
1.5 2^23). Lanes 28-31, for a in [5.5, 14.8], where T must be scaled by e^(-a^2/2) = (1 + s) 2^n:
a G(a) = T(a) e^(a^2/2), degree 6 in t = 5w - k, k = round(5w), w = a / 12 + 5.5 (1 - 1/12)
rounded (the same index and t as the near lanes', from w in [5.5, 6.3): intervals of 2.4 in a,
over which a G, flat, is easy; w's rounding moves a G by 2e-8 at most).

Near-minimax in relative error (weighted least squares in double against mpmath, Lawson's
reweighting), the coefficients rounded to float one at a time from the top with the rest refitted;
on interval 0 the constant is held at 0 (t = 5a there), so that T keeps its relative accuracy as
a -> 0. Prints each near interval's worst error in ulp on sampled float inputs, t rounded once as the
kernel's FMA rounds it and Horner's evaluation rounded to float at every FMA: of -T (x < 0, the
result is the polynomial's last rounding) and of x - T rounded (x > 0); each far interval's worst
relative error of a G so evaluated (the scaling's own error comes on top); then the table in lane
order.

    python3 docs/fit_gelu_near.py [--degree D] [--grad 1]

With --grad 1, the table behind gelu's derivative (sg_gelu_grad_tab32_): near, D(a) = Phi(-a) -
a phi(a), the derivative at x = -a (1 - D at x = a); far, G(a) = e^(a^2/2) Phi(-a) (the kernel
subtracts a / sqrt(2 pi) with an FMA and scales by e^(-a^2/2)), in t = a - e, e the left edge of
a's interval [4, 6), [6, 8), [8, 12) or [12, 16) (a's exponent and top mantissa bit: the index
is bits(a) >> 22, plus 26): G falls like 1 / a, and w's rounding (up to 3e-6 in a) would cost it
5e-7 relative. D crosses 0 at a = 0.7518, where only absolute accuracy means anything:
below a = 1 the fit weighs errors against max(|D|, 0.01) and reports them absolute.

The errors are measured on 3000 evenly spaced floats an interval, not every float: on every
float the kernel reads more (2.26 ulp in the near range for the forward, 2.12 at x = -4.696 for the
derivative; docs/accuracy.md has the sweeps). Needs numpy and mpmath. Result (2026-12-06): near,
at most 1.96 ulp (on [0, 0.1)), 1.76 elsewhere, on those samples; far, 6.6e-8 relative at most
(degree 5 near reached 2.80 ulp with width 1/6).
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
if len(sys.argv) % 2 == 0 or set(ARGS) - {"--degree", "--grad"}:
    sys.exit("usage: fit_gelu_near.py [--degree D] [--grad 1]")
DEGREE = ARGS.get("--degree", 6)
GRAD = bool(ARGS.get("--grad", 0))
ABS_BELOW, ABS_FLOOR = 1.0, 0.01  # --grad: absolute below a = 1 (D's zero at 0.7518)
SCALE, NEAR, LANES, FAR_FROM, TOP = 5, 28, 32, 5.5, 14.8
FAR_SCALE, FAR_OFFSET = F32(1 / 12), F32(5.5 - 5.5 / 12)  # w = a FAR_SCALE + FAR_OFFSET
FAR_EDGES = (4.0, 6.0, 8.0, 12.0, 16.0)  # --grad's far lanes: a's exponent, top mantissa bit


def far_w(a):
    """w as the kernel's FMA rounds it (float inputs a)."""
    return (a * np.float64(FAR_SCALE) + np.float64(FAR_OFFSET)).astype(F32).astype(np.float64)


def tail(a):
    a = mp.mpf(a)
    return float(a * mp.erfc(a / mp.sqrt(2)) / 2)


def ag(a):
    a = mp.mpf(a)
    return float(a * mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2)


def grad_near(a):
    a = mp.mpf(a)
    return float(mp.erfc(a / mp.sqrt(2)) / 2 - a * mp.exp(-a * a / 2) / mp.sqrt(2 * mp.pi))


def grad_far(a):
    a = mp.mpf(a)
    return float(mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2) / 2)


def ulps(got, want):
    w = np.abs(want).astype(F32)
    return np.abs(got - want) / (np.nextafter(w, F32(np.inf)).astype(np.float64) - w)


def fitted(s, e, origin, scale, func, zero):
    """Float coefficients in t = (a - origin) scale on [s, e), and float inputs of it."""
    n = 300  # Chebyshev points of the interval
    a = (s + e) / 2 + (e - s) / 2 * np.cos(np.pi * (np.arange(n) + 0.5) / n)
    t, y = (a - origin) * scale, np.array([func(v) for v in a])
    weigh = np.maximum(np.abs(y), ABS_FLOOR) if GRAD and s < ABS_BELOW else np.abs(y)
    fixed = {0: 0.0} if zero else {}
    for d in range(DEGREE, -1, -1):  # round from the top, refit the rest
        if d not in fixed:
            fixed[d] = float(F32(lawson_fit(t, y, fixed, weigh, DEGREE)[d]))
    at = np.unique(np.linspace(max(s, 1e-6), e, 3000).astype(F32)).astype(np.float64)
    return fixed, at[(at >= s) & (at < e)]


def main():
    table = np.zeros((DEGREE + 1, LANES))
    near, far = (grad_near, grad_far) if GRAD else (tail, ag)
    for k in range(NEAR):
        s, e = max(0.0, (k - 0.5) / SCALE), min((k + 0.5) / SCALE, FAR_FROM)
        c, at = fitted(s, e, k / SCALE, SCALE, near, k == 0 and not GRAD)
        table[:, k] = [c[d] for d in range(DEGREE + 1)]
        tt = (at * SCALE - k).astype(F32).astype(np.float64)  # the FMA's one rounding
        got, want = horner_f32(c, tt, DEGREE), np.array([near(v) for v in at])
        if GRAD:  # x = -a: D; x = a: 1 - D, rounded
            pos = ulps((1 - got).astype(F32).astype(np.float64), 1 - want).max()
            if s < ABS_BELOW:
                neg = f"{np.abs(got - want).max():.1e} absolute"
            else:
                neg = f"{ulps(got, want).max():.2f} ulp"
            print(f"/* lane {k:2d}: a in [{s:4.2f}, {e:4.2f}), x < 0 {neg}, x > 0 {pos:.2f} ulp */")
            continue
        neg = ulps(got, want).max()
        pos = ulps((at - got).astype(F32).astype(np.float64), at - want).max()
        print(f"/* lane {k:2d}: a in [{s:4.2f}, {e:4.2f}), x < 0 {neg:.2f} ulp, x > 0 {pos:.2f} */")
    for k in range(NEAR, LANES if GRAD else 0):  # t = a - e, exact
        edge = FAR_EDGES[k - NEAR]
        s, e = max(edge, FAR_FROM), min(FAR_EDGES[k - NEAR + 1], TOP)
        c, at = fitted(s, e, edge, 1.0, far, False)
        table[:, k] = [c[d] for d in range(DEGREE + 1)]
        err = np.max(np.abs(horner_f32(c, at - edge, DEGREE) / np.array([far(v) for v in at]) - 1))
        print(f"/* lane {k:2d}: a in [{s:5.2f}, {e:5.2f}), G {err:.2e} relative */")
    for k in range(NEAR, 0 if GRAD else LANES):  # w in [(k - 1/2) / 5, (k + 1/2) / 5): a from w
        s = max(FAR_FROM, ((k - 0.5) / SCALE - float(FAR_OFFSET)) / float(FAR_SCALE))
        e = min(TOP, ((k + 0.5) / SCALE - float(FAR_OFFSET)) / float(FAR_SCALE))
        # a G against t = 5w - k, w exact here: the fit's own variable is affine in a
        origin = (k / SCALE - float(FAR_OFFSET)) / float(FAR_SCALE)  # where t = 0
        c, at = fitted(s, e, origin, SCALE * float(FAR_SCALE), far, False)
        table[:, k] = [c[d] for d in range(DEGREE + 1)]
        tt = (far_w(at) * SCALE - k).astype(F32).astype(np.float64)  # w and t rounded
        err = np.max(np.abs(horner_f32(c, tt, DEGREE) / np.array([far(v) for v in at]) - 1))
        print(f"/* lane {k:2d}: a in [{s:5.2f}, {e:5.2f}), a G {err:.2e} relative */")
    print_c_rows(table)


if __name__ == "__main__":
    main()
