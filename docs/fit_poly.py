"""What the fit scripts (docs/fit_gelu_ag.py, docs/fit_gelu_near.py) share: a near-minimax fit of
polynomial coefficients by weighted least squares with Lawson's reweighting, and a Horner
evaluation rounded to float at every FMA, as the kernels evaluate. Needs numpy."""
import numpy as np

F32 = np.float32


def lawson_fit(t, y, fixed, scale, degree):
    """Coefficients of degree <= `degree` in t not in `fixed` (degree -> value), the errors
    measured against `scale` (y itself for a relative fit): a dict of all of them."""
    free = [k for k in range(degree + 1) if k not in fixed]
    rhs = (y - sum(v * t**k for k, v in fixed.items())) / scale
    a = np.stack([t**k for k in free], 1) / scale[:, None]
    w = np.ones(len(t))
    for _ in range(30):  # Lawson: weight the worst points up, toward the minimax fit
        sol = np.linalg.lstsq(a * w[:, None], rhs * w, rcond=None)[0]
        err = np.abs(a @ sol - rhs)
        w = w * np.sqrt(err / err.max()) + 1e-12
        w /= w.max()
    c = dict(fixed)
    c.update(zip(free, sol))
    return c


def horner_f32(c, t, degree):
    """The polynomial with coefficients c (degree -> value) at t, rounded to float at each FMA."""
    p = np.full_like(t, float(F32(c[degree])))
    for k in range(degree - 1, -1, -1):
        p = (p * t + c[k]).astype(F32).astype(np.float64)  # one rounding per FMA
    return p


def print_c_rows(table):
    """A table's rows (row d: every lane's coefficient of degree d) as C initialisers of floats."""
    for row in table:
        print("{" + ", ".join(f"{F32(v)!r}f".replace("np.float32(", "").replace(")", "")
                              for v in row) + "},")
