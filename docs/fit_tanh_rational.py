#!/usr/bin/env python3
"""Why simdgrad's tanh is not a rational function: fits tanh x = x P(x^2) / Q(x^2) on [0, 9] (the
form ONNX Runtime's MLAS and Eigen use), P(0) = Q(0) = 1, near-minimax in relative error
(Loeb's linearised least squares with Lawson's reweighting, in double against mpmath), then
evaluates it as a float kernel would (coefficients rounded to float, every FMA and operation
rounded to float) and measures the error in ulp against tanh in double.

    python3 docs/fit_tanh_rational.py [M N]      (default 4 4: degrees of P and Q in x^2)

Needs numpy and mpmath. Result for 4 4 (2026-12-03): fit error 2.1e-8 relative (0.36 ulp), 0.48
ulp with float coefficients, 5.1 ulp evaluated in float, the worst near x = 8.6 where tanh is
within 1e-7 of 1: there an ulp is 2^-24 relative, and each of the ~8 roundings of the numerator,
the denominator and the division can cost up to one. kernels_simd/simd_math.inc's vtanh (from
e^-2|x| - 1 and one division) measures 2.48 (docs/accuracy.md).
"""
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 40
F32 = np.float32


def fit(m, n, xmax=9.0, points=3000, iters=60):
    x = (1 - np.cos(np.linspace(0, np.pi, points))) / 2 * xmax
    x[0] = 1e-4
    s = x * x
    f = np.array([float(mp.tanh(mp.mpf(v)) / mp.mpf(v)) for v in x])  # tanh x / x
    w, qprev, best = np.ones(points), np.ones(points), None
    for it in range(iters):
        # P(s) - f Q(s) = 0 with P(0) = Q(0) = 1, weighted by 1 / (f Q_prev): relative error
        a = np.hstack([np.stack([s**i for i in range(1, m + 1)], 1),
                       -f[:, None] * np.stack([s**j for j in range(1, n + 1)], 1)])
        wt = w / (f * qprev)
        c, *_ = np.linalg.lstsq(a * wt[:, None], (f - 1) * wt, rcond=None)
        p, q = np.concatenate([[1], c[:m]]), np.concatenate([[1], c[m:]])
        qs = np.polyval(q[::-1], s)
        err = np.polyval(p[::-1], s) / qs / f - 1
        e = np.max(np.abs(err))
        if best is None or e < best[0]:
            best = (e, p, q)
        qprev = qs
        if it > 5:
            w = w * np.abs(err) ** 0.5  # Lawson: weight where the error is large
            w /= w.sum()
    return best


def fma(a, b, c):  # a * b is exact in double; one more rounding to double before float (rarely off)
    return (a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)).astype(F32)


def ulps(got, ref):
    return np.abs(got.astype(np.float64) - ref) / 2.0 ** (np.floor(np.log2(np.abs(ref))) - 23)


def main():
    m, n = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) == 3 else (4, 4)
    xmax = 9.0
    e, p, q = fit(m, n, xmax)
    pf, qf = p.astype(F32), q.astype(F32)
    rng = np.random.default_rng(1)
    lo, hi = np.float32(1e-6).view(np.uint32), np.float32(12).view(np.uint32)
    x = rng.integers(lo, hi, 2000000, dtype=np.uint64).astype(np.uint32).view(F32)
    x = np.concatenate([x, np.linspace(0.001, 12, 1000000, dtype=F32)])
    ref = np.tanh(x.astype(np.float64))
    xc = np.minimum(x, F32(xmax))
    s = xc * xc
    xd = xc.astype(np.float64)
    sd = xd * xd
    exact = xd * np.polyval(p[::-1], sd) / np.polyval(q[::-1], sd)
    rounded = xd * np.polyval(pf.astype(np.float64)[::-1], sd) / np.polyval(qf.astype(np.float64)[::-1], sd)
    # the float kernel: x + (x s) P'(s) over 1 + s Q'(s), Horner with FMAs
    pp = np.full_like(s, pf[m])
    for i in range(m - 1, 0, -1):
        pp = fma(pp, s, np.full_like(s, pf[i]))
    qq = np.full_like(s, qf[n])
    for j in range(n - 1, 0, -1):
        qq = fma(qq, s, np.full_like(s, qf[j]))
    y = (fma(xc * s, pp, xc) / fma(s, qq, np.full_like(s, F32(1)))).astype(F32)
    u = ulps(y, ref)
    print(f"degrees {m}/{n} in x^2 on [0, {xmax}]: fit error {e:.3g} relative")
    print(f"max ulp: fit {ulps(exact, ref).max():.2f}, float coefficients {ulps(rounded, ref).max():.2f},"
          f" float evaluation {u.max():.2f} (x = {x[np.argmax(u)]:.6g})")
    print("P:", ", ".join(repr(float(v)) for v in pf), " Q:", ", ".join(repr(float(v)) for v in qf))


if __name__ == "__main__":
    main()
