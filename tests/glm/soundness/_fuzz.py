"""Differential fuzzing of the verifier's bounds at extreme magnitudes (exact references).

Each case (one seed) draws data, parameters and witnesses toward the float edges -- columns and
rows scaled from 1e-300 to 1e300, subnormal entries, zero, duplicated and opposite columns, one
huge entry among small ones, n or p = 1, y near the overflow of its square, lambda2 and M from
1e-300 to 1e300, witnesses scaled or put on their domain's boundary, intercepts huge -- and
compares what the verifier's own bound code computes with exact rational references:

* every region bound of a dual witness (a leaf's g*, and the bound-fixing regions of one sort)
  must be <= the exact dual value D(zeta) of that region (``fractions``; the logarithms of the
  logistic and Poisson conjugates enclosed with ``decimal`` at 500 digits);
* every region bound of a shifted witness must be <= the exact tangent bound with the verifier's
  own weight lambda', and a proven eigenvalue shift must leave X^T P X - mu I positive definite
  (exact LDL^T);
* the incumbent objective's upper estimate must be >= the exact objective.

Any violation is a soundness hole (a verifier's bound above a true lower bound can be claimed).
``python tests/glm/soundness/_fuzz.py --cases 2000 --start 0`` runs a campaign outside CI and
prints each violating seed; tests/glm/soundness/test_soundness_fuzz.py runs a fast seeded slice.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import numpy as np

from sparsecert.certificate import verify as V

_LOSSES = ("squared", "logistic", "squared_hinge", "poisson")
_FMAX = np.finfo(float).max


def Q(x) -> Fraction:
    return Fraction(float(x))


def _fmt(q: Fraction) -> str:
    try:
        return repr(float(q))
    except OverflowError:
        return f"{'-' if q < 0 else ''}>1e308"


# ------------------------------------------------------------------------------ exact pieces

_P = 100  # decimal digits of the logarithm and exponential enclosures


def _ln_enclosure(w: Fraction) -> tuple[Fraction, Fraction]:
    """[lo, hi] containing log(w), w > 0 rational (decimal at _P digits, widened: the
    input rounded to _P + 20 digits moves log by < 2 10^-(_P+19), the result errs < 1 ulp)."""
    with localcontext() as ctx:
        ctx.prec = _P + 20
        d = Decimal(w.numerator) / Decimal(w.denominator)
        ctx.prec = _P
        v = Fraction(d.ln())
    rel = Fraction(1, 10 ** (_P - 10))
    # |log(d) - log(w)| <= 2 |d - w| / w <= 2 * 10^-(P+19); the ln itself errs by < 1 ulp
    rad = rel * (abs(v) + 1)
    return v - rad, v + rad


def _log1p_enclosure(e: Fraction) -> tuple[Fraction, Fraction]:
    """[lo, hi] containing log(1 + e), e >= 0 (relative accuracy for tiny e)."""
    if e < Fraction(1, 10 ** 20):
        return e - e * e / 2, e
    return _ln_enclosure(1 + e)


def _exp_enclosure(x: Fraction) -> tuple[Fraction, Fraction] | None:
    """[lo, hi] containing exp(x) (None if |x| is too large for decimal)."""
    if abs(x) > 2000:
        return None
    with localcontext() as ctx:
        ctx.prec = _P + 20
        d = Decimal(x.numerator) / Decimal(x.denominator)
        ctx.prec = _P
        v = Fraction(d.exp())
    rad = Fraction(1, 10 ** (_P - 10)) * v
    return v - rad, v + rad


def conj_lower(loss: str, z: float, y: float) -> Fraction:
    """A lower bound of f*(z; y) (z in the domain; y coded -1/+1 for classification)."""
    z, y = Q(z), Q(y)
    if loss in ("squared", "squared_hinge"):
        return z * z / 4 + y * z
    if loss == "logistic":
        t = -y * z
        out = Fraction(0)
        for s in (t, 1 - t):
            if s > 0:
                lo, hi = _ln_enclosure(s)
                out += s * lo  # s > 0
        return out
    w = z + y
    if w == 0:
        return Fraction(0)
    lo, _ = _ln_enclosure(w)
    return w * lo - w


def huber(a: Fraction, M) -> Fraction:
    a = abs(a)
    if M is None or a <= Q(M):
        return a * a / 2
    return Q(M) * a - Q(M) * Q(M) / 2


def g_star(h: list[Fraction], state, k: int) -> Fraction | None:
    """Exact g*_region for Huber terms h (None: the region is empty)."""
    s1 = [j for j in range(len(h)) if state[j] == 1]
    free = [j for j in range(len(h)) if state[j] == 0]
    beta = k - len(s1)
    if beta < 0:
        return None
    top = sorted((h[j] for j in free), reverse=True)[:beta]
    return sum((h[j] for j in s1), Fraction(0)) + sum(top, Fraction(0))


def regions(state, k, fixings):
    """(description, state) of the leaf region (extended fixings) and of each fixing region."""
    out = []
    for j, v in fixings:
        st = list(state)
        st[j] = 1 if v == 0 else 2
        out.append((f"fixing [{j}, {v}]", st))
    st = list(state)
    for j, v in fixings:
        st[j] = 1 if v == 1 else 2
    out.append(("leaf", st))
    return out


def dual_values_exact(X, ym, loss, lam, M, k, state, fixings, zeta):
    """Upper bounds of the exact D(zeta) of each region (same order as ``regions``)."""
    n, p = X.shape
    L = Q(lam)
    grad = [sum(Q(X[i, j]) * Q(zeta[i]) for i in range(n)) for j in range(p)]
    h = [huber(-g / (2 * L), M) for g in grad]
    c_lo = sum((conj_lower(loss, zeta[i], ym[i]) for i in range(n)), Fraction(0))
    out = []
    for _, st in regions(state, k, fixings):
        g = g_star(h, st, k)
        out.append(None if g is None else -c_lo - 2 * L * g)
    return out


def shifted_values_exact(X, y, lamp, mu, M, k, state, fixings, b, fit):
    """Exact tangent bound of each region for the shifted witness b (weight lamp)."""
    n, p = X.shape
    Xq = [[Q(X[i, j]) for j in range(p)] for i in range(n)]
    yq = [Q(v) for v in y]
    bq = [Q(v) for v in b]
    mu, L = Q(mu), Q(lamp)

    def P(v):
        if not fit:
            return v
        m = sum(v, Fraction(0)) / n
        return [t - m for t in v]

    Py = P(yq)
    Xb = [sum(Xq[i][j] * bq[j] for j in range(p) if bq[j]) for i in range(n)]
    u = P(Xb)
    w = P([Xb[i] - yq[i] for i in range(n)])
    s = [2 * sum(Xq[i][j] * w[i] for i in range(n)) - 2 * mu * bq[j] for j in range(p)]
    const = sum(t * t for t in Py) - sum(t * t for t in u) + mu * sum(t * t for t in bq)
    h = [huber(-sj / (2 * L), M) for sj in s]
    out = []
    for _, st in regions(state, k, fixings):
        g = g_star(h, st, k)
        out.append(None if g is None else const - 2 * L * g)
    return out


def positive_definite_exact(X, mu, fit) -> bool:
    """Whether X^T P X - mu I is positive definite, by exact LDL^T."""
    n, p = X.shape
    cols = [[Q(X[i, j]) for i in range(n)] for j in range(p)]
    if fit:
        cols = [[v - sum(c, Fraction(0)) / n for v in c] for c in cols]
    A = [[sum(a * b for a, b in zip(cols[r], cols[s], strict=True)) for s in range(p)]
         for r in range(p)]
    for r in range(p):
        A[r][r] -= Q(mu)
    for c in range(p):
        if A[c][c] <= 0:
            return False
        for r in range(c + 1, p):
            f = A[r][c] / A[c][c]
            for s in range(c, p):
                A[r][s] -= f * A[c][s]
    return True


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.int64))


def _from_bits(b: int) -> float:
    return float(np.int64(b).view(np.float64))


def largest_proven_shift(X, fit) -> float:
    """The largest float mu that ``proves_eig_shift`` accepts (0.0 if none)."""
    def ok(mu):
        with np.errstate(all="ignore"):
            return V.proves_eig_shift(X, mu, fit)[0]
    lo, hi = 0, _bits(_FMAX) + 1  # ok(lo) is treated as true (mu = 0), ok(hi) false
    if ok(_FMAX):
        return _FMAX
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(_from_bits(mid)):
            lo = mid
        else:
            hi = mid
    return _from_bits(lo)


def _ridge_and_margins(X, ym, lam, coef, c) -> tuple[Fraction, list]:
    """The exact ridge term lam ||coef||^2 and every sample's exact (x_i^T coef + c, y_i)."""
    S = [j for j in range(X.shape[1]) if coef[j] != 0]
    ridge = Q(lam) * sum((Q(coef[j]) ** 2 for j in S), Fraction(0))
    return ridge, [(Q(c) + sum((Q(X[i, j]) * Q(coef[j]) for j in S), Fraction(0)), Q(ym[i]))
                   for i in range(X.shape[0])]


def objective_lower(X, ym, loss, lam, coef, c) -> Fraction | None:
    """A lower bound of the exact F(coef, c) (None if it cannot be enclosed)."""
    out, samples = _ridge_and_margins(X, ym, lam, coef, c)
    for u, y in samples:
        if loss == "squared":
            out += (y - u) ** 2
        elif loss == "squared_hinge":
            out += max(Fraction(0), 1 - y * u) ** 2
        elif loss == "logistic":  # softplus(x) = max(x, 0) + log(1 + exp(-|x|))
            x = -y * u
            out += max(x, Fraction(0))
            e = _exp_enclosure(-abs(x))
            if e is not None and e[0] > 0:
                out += _log1p_enclosure(e[0])[0]
        else:
            e = _exp_enclosure(u)
            if e is None:
                if u > 0:
                    return None
                out += -y * u
            else:
                out += max(e[0], Fraction(0)) - y * u
    return out


# ------------------------------------------------------------------------------ generation


def _log_uniform(rng, lo=-300, hi=300) -> float:
    return float(10.0 ** rng.uniform(lo, hi))


def _edge_scale(rng) -> float:
    r = rng.random()
    if r < 0.3:
        return 1.0
    if r < 0.5:
        return float(rng.choice([1e-300, 1e300, 1e-308, 1e308, 5e-324, 1.7e308, 2.0 ** 511,
                                 2.0 ** -537, 1.3e154]))
    return _log_uniform(rng)


def make_case(rng, loss=None):
    drawn = _LOSSES[int(rng.integers(0, 4))]
    loss = loss or drawn
    n = int(rng.choice([1, 2, 3, 4, 5]))
    p = int(rng.choice([1, 2, 3, 4]))
    k = int(rng.integers(1, p + 1))
    fit = bool(rng.random() < 0.5) and n > 1
    X = rng.standard_normal((n, p)) if rng.random() < 0.6 else \
        rng.integers(-3, 4, (n, p)).astype(float)
    for _ in range(int(rng.integers(0, 4))):
        op = int(rng.integers(0, 8))
        j = int(rng.integers(0, p))
        i = int(rng.integers(0, n))
        with np.errstate(all="ignore"):
            if op == 0:
                X[:, j] *= _edge_scale(rng)
            elif op == 1:
                X[i, :] *= _edge_scale(rng)
            elif op == 2:
                X[i, j] = float(rng.choice([5e-324, -5e-324, 2.2e-308, 1e-310])) * \
                    float(rng.integers(1, 5))
            elif op == 3:
                X[:, j] = 0.0
            elif op == 4 and p > 1:
                X[:, j] = X[:, (j + 1) % p] * float(rng.choice([1.0, -1.0]))
            elif op == 5:
                X[i, j] = float(rng.choice([1e308, -1e308, 1.7e308, 1e154, 3e200]))
            elif op == 6:
                X *= _edge_scale(rng)
            else:
                X[:, j] += float(rng.choice([1e9, 1e150, 1e300, -1e16]))
    X = np.where(np.isfinite(X), X, 1e308)
    if loss == "squared" and rng.random() < 0.4:  # well conditioned: shifted witnesses apply
        n = int(rng.integers(p + 1 + fit, p + 4))
        X = rng.standard_normal((n, p))
        with np.errstate(all="ignore"):
            X = X * _edge_scale(rng)
            if rng.random() < 0.3:
                X[:, int(rng.integers(0, p))] += float(rng.choice([1e9, 1e16, -3e20]))
        X = np.where(np.isfinite(X), X, 1.0)
        if p > 2 and rng.random() < 0.4:  # (nearly) dependent columns: lambda_min ~ 0
            X = np.round(X / np.abs(X).max() * 8)
            X[:, 0] = X[:, 1] - X[:, 2] * float(rng.choice([1.0, 1 + 2.0 ** -40, 2.0]))
            with np.errstate(all="ignore"):
                X = X * _edge_scale(rng)
            X = np.where(np.isfinite(X), X, 1.0)
    if loss == "squared":
        y = rng.standard_normal(n) * _edge_scale(rng)
        if rng.random() < 0.2:
            y[int(rng.integers(0, n))] = float(rng.choice([1.34e154, 1.3407807929942596e154,
                                                          1e308, -1.7e308]))
    elif loss in ("logistic", "squared_hinge"):
        vals = sorted(rng.choice([-1.0, 0.0, 1.0, 2.0, 1e308, -1e308, 5e-324], 2,
                                 replace=False))
        y = np.where(rng.random(n) < 0.5, vals[0], vals[1])
        if np.unique(y).size < 2:
            y[0] = vals[0]
            y[-1] = vals[1]
            if n == 1:
                loss = "squared"
    else:
        with np.errstate(over="ignore"):  # an overflow to inf is replaced below
            y = np.abs(np.round(rng.standard_normal(n) * 3)) * _edge_scale(rng)
        if rng.random() < 0.2:
            y[int(rng.integers(0, n))] = float(rng.choice([5e-324, 1e308, 1e-300]))
    y = np.where(np.isfinite(y), y, 1e300)
    lam = _edge_scale(rng) if rng.random() < 0.7 else float(rng.choice([0.1, 1.0]))
    M = None if rng.random() < 0.5 else _edge_scale(rng) * float(rng.choice([1.0, 0.5]))
    return dict(loss=loss, X=X, y=y, k=k, lam=lam, M=M, fit=fit)


def _dual_witness(rng, loss, X, ym, fit):
    n, p = X.shape
    sc = _edge_scale(rng)
    with np.errstate(all="ignore"):
        if loss == "squared":
            b = rng.standard_normal(p) * _edge_scale(rng)
            z = 2.0 * (X @ b - ym) if rng.random() < 0.5 else rng.standard_normal(n) * sc
        elif loss == "logistic":
            t = rng.random(n)
            edge = rng.random(n)
            t = np.where(edge < 0.2, 0.0, np.where(edge < 0.4, 1.0, t))
            t = np.where((edge > 0.4) & (edge < 0.5), 5e-324, t)
            t = np.where((edge > 0.5) & (edge < 0.55), 1.0 - 2.0 ** -53, t)
            z = -ym * t
        elif loss == "squared_hinge":
            z = -ym * np.abs(rng.standard_normal(n)) * sc
        else:
            w = np.abs(rng.standard_normal(n)) * sc
            w = np.where(rng.random(n) < 0.3, 0.0, w)
            z = w - ym
    z = np.where(np.isfinite(z), z, 0.0)
    if fit:
        lo, hi = V.dual_domain_bounds(loss, ym)
        try:
            from _certgen import zero_sum
            with np.errstate(all="ignore"):
                z = zero_sum(z, lo, hi)
        except Exception:
            return None
    if rng.random() < 0.2:  # push along a null direction of X^T (exactly or nearly)
        try:
            v = np.linalg.svd(X.T)[2][-1]
            with np.errstate(all="ignore"):
                z2 = z + v * _edge_scale(rng)
            if np.isfinite(z2).all():
                z = z2
        except np.linalg.LinAlgError:
            pass
    return z


def _cancel_columns(rng, X, z, fit):
    """Some columns of X made (nearly) orthogonal to z in floating point, so that X^T z
    cancels and its rounding error dominates (the verifier's radius must cover it)."""
    X = X.copy()
    zc = z - z.mean() if fit else z
    with np.errstate(all="ignore"):
        zz = float(zc @ zc)
        if not (math.isfinite(zz) and zz > 0):
            return X
        for j in range(X.shape[1]):
            if rng.random() < 0.7:
                col = X[:, j] - (float(X[:, j] @ zc) / zz) * zc
                if rng.random() < 0.5:  # and again: an even smaller exact product
                    col = col - (float(col @ zc) / zz) * zc
                if np.isfinite(col).all():
                    X[:, j] = col
    return X


def _state_and_fixings(rng, p, k):
    state = [0] * p
    for j in range(p):
        r = rng.random()
        if r < 0.2:
            state[j] = 2
        elif r < 0.35 and sum(s == 1 for s in state) < k:
            state[j] = 1
    free = [j for j in range(p) if state[j] == 0]
    rng.shuffle(free)
    fixings = [(j, int(rng.integers(0, 2))) for j in free[:int(rng.integers(0, len(free) + 1))]]
    return state, fixings


def _verifier_region_bounds(t, state, k, fixings):
    """The verifier's bounds in ``regions`` order, computed by its own code paths."""
    st = np.array(state, dtype=np.int8)
    out = V._fixing_bounds(t, st, k, fixings) if fixings else []
    for j, v in fixings:
        st[j] = 1 if v == 1 else 2
    if (st == 1).sum() <= k:
        out.append(V._region_bound(t, V._g_star_up(t.h_up, st, k)))
    else:
        out.append(math.inf)
    return [b if not math.isnan(b) else -math.inf for b in out]


STATS: dict[str, int] = {}


def _compare(kind, verifier, exact, descs):
    bad = []
    for d, vb, ex in zip(descs, verifier, exact, strict=True):
        if ex is None or vb == -math.inf:
            continue
        STATS[kind] = STATS.get(kind, 0) + 1
        if vb == math.inf or Q(vb) > ex:
            bad.append(f"{kind} {d}: verifier {vb!r} > exact {_fmt(ex)}")
    return bad


# ------------------------------------------------------------------------------ one case


def run_case(seed: int, loss: str | None = None) -> list[str]:
    """All violations found for one seed (an empty list: the verifier was sound on it)."""
    rng = np.random.default_rng(seed)
    cs = make_case(rng, loss)
    loss, X, y, k, lam, M, fit = (cs[key] for key in ("loss", "X", "y", "k", "lam", "M", "fit"))
    n, p = X.shape
    ym = V.binary_labels(y) if loss in V.CLASSIFICATION_LOSSES else y
    bad: list[str] = []
    state, fixings = _state_and_fixings(rng, p, k)
    descs = [d for d, _ in regions(state, k, fixings)]
    z0 = _dual_witness(rng, loss, X, ym, fit)
    if z0 is not None and rng.random() < 0.5:
        X = _cancel_columns(rng, X, z0, fit)
    des = V._Design(X, ym, loss, fit)
    # dual witnesses
    for rep in range(2):
        z = z0 if rep == 0 else _dual_witness(rng, loss, X, ym, fit)
        if z is None or V._dual_problem(loss, z, ym, fit) is not None:
            continue
        with np.errstate(all="ignore"):
            t = V._dual_terms(des, z[None, :], float(lam), M)[0]
            vb = _verifier_region_bounds(t, state, k, fixings)
        if all(b == -math.inf for b in vb):
            continue
        ex = dual_values_exact(X, ym, loss, lam, M, k, state, fixings, z)
        bad += _compare("dual", vb, ex, descs)
    # shifted witness (squared loss): the shift proof and the tangent bound
    if loss == "squared":
        with np.errstate(all="ignore"):
            Xc = X - X.mean(0) if fit else X
            try:
                lmin = float(np.linalg.eigvalsh(Xc.T @ Xc)[0])
            except np.linalg.LinAlgError:
                lmin = math.nan
        if math.isfinite(lmin):
            f = float(rng.choice([1.0, 1 - 2.0 ** -40, 1 - 2.0 ** -20, 0.5, 1 + 2.0 ** -30]))
            mu = abs(lmin) * f if lmin != 0 else float(rng.choice([5e-324, 1e-300]))
            if rng.random() < 0.2:
                mu = float(np.nextafter(mu, np.inf))
            ok = False
            if mu > 0 and math.isfinite(mu):
                with np.errstate(all="ignore"):
                    ok = V.proves_eig_shift(X, mu, fit)[0]
            if ok:
                if not positive_definite_exact(X, mu, fit):
                    bad.append(f"eig_shift {mu!r} proven but X^T P X - mu I is not PD")
                else:
                    for _ in range(2):
                        b = rng.standard_normal(p) * _edge_scale(rng)
                        if rng.random() < 0.4:
                            try:
                                with np.errstate(all="ignore"):
                                    b = np.linalg.lstsq(Xc, (ym - ym.mean()) if fit else ym,
                                                        rcond=None)[0]
                            except np.linalg.LinAlgError:
                                pass
                        if not np.isfinite(b).all():
                            continue
                        with np.errstate(all="ignore"):
                            t = V._shifted_terms(des, b[None, :], float(lam), mu, M)[0]
                            vb = _verifier_region_bounds(t, state, k, fixings)
                        if all(v == -math.inf for v in vb):
                            continue
                        ex = shifted_values_exact(X, ym, t.lam, mu, M, k, state, fixings, b,
                                                  fit)
                        if Q(t.lam) > Q(lam) + Q(mu):
                            bad.append("shifted lambda' above lambda2 + mu")
                        bad += _compare("shifted", vb, ex, descs)
    # the largest shift the verifier proves (bisection on the floats) is below lambda_min
    if loss == "squared" and rng.random() < 0.5:
        mu = largest_proven_shift(X, fit)
        if mu > 0:
            STATS["shift_edge"] = STATS.get("shift_edge", 0) + 1
            if not positive_definite_exact(X, mu, fit):
                bad.append(f"eig_shift edge {mu!r} proven but X^T P X - mu I is not PD")
    # the incumbent's objective from above
    for _ in range(2):
        coef = np.zeros(p)
        S = rng.choice(p, size=int(rng.integers(0, k + 1)), replace=False)
        with np.errstate(over="ignore"):  # an infinite coefficient is a case too
            coef[S] = rng.standard_normal(S.size) * _edge_scale(rng)
        if rng.random() < 0.3 and S.size:
            coef[S[0]] = float(rng.choice([5e-324, 1e-300, 1e154, -1e300]))
        c = 0.0
        if fit:
            c = float(rng.standard_normal() * _edge_scale(rng))
        with np.errstate(all="ignore"):
            _, ub = V.objective_upper_bound(X, ym, V.Problem(loss, float(lam)), coef, c)
        if not math.isfinite(ub):
            continue
        lo = objective_lower(X, ym, loss, lam, coef, c)
        STATS["objective"] = STATS.get("objective", 0) + 1
        if lo is None:
            bad.append(f"objective: verifier {ub!r} finite where exp(u) overflows")
        elif Q(ub) < lo:
            bad.append(f"objective: verifier upper {ub!r} < exact {_fmt(lo)}")
    return [f"seed {seed} ({loss}, n={n}, p={p}, k={k}, fit={fit}, lam={lam:.3g}, "
            f"M={M}): {b}" for b in bad]


# ------------------------------------------------------------------------------ end to end


def objective_upper_exact(X, ym, loss, lam, coef, c) -> Fraction | None:
    """An upper bound of the exact F(coef, c) (None if it cannot be enclosed)."""
    out, samples = _ridge_and_margins(X, ym, lam, coef, c)
    tiny = Fraction(1, 10 ** 800)  # > exp(-2000)
    for u, y in samples:
        if loss == "squared":
            out += (y - u) ** 2
        elif loss == "squared_hinge":
            out += max(Fraction(0), 1 - y * u) ** 2
        elif loss == "logistic":
            x = -y * u
            e = _exp_enclosure(-abs(x))
            out += max(x, Fraction(0)) + (tiny if e is None else _log1p_enclosure(e[1])[1])
        else:
            e = _exp_enclosure(u)
            if e is None and u > 0:
                return None
            out += (tiny if e is None else e[1]) - y * u
    return out


def _random_tree(rng, p, k, witness):
    """Nodes of a random branching tree with random witnesses, some flagged for the verifier to
    derive their bound fixings (the tree then avoids branching on the variables a random
    choice "fixed": branchings stay on variables free by the tree's own branchings)."""
    nodes = []

    def visit(parent, bvar, bval, state):
        nid = len(nodes)
        rec = dict(id=nid, parent=parent, branch_var=bvar, branch_value=bval,
                   status="branched", bound=None, witness=None)
        nodes.append(rec)
        free = [j for j in range(p) if state[j] == 0]
        n_in = sum(v == 1 for v in state)
        fix = []
        if free and rng.random() < 0.3:
            rng.shuffle(free)
            for j in free[:int(rng.integers(1, len(free) + 1))]:
                v = int(rng.integers(0, 2))
                if v == 1 and n_in >= k:
                    v = 0
                n_in += v
                fix.append([int(j), v])
            rec["derive_fixings"] = True
            for j, v in fix:
                state = list(state)
                state[j] = 1 if v == 1 else 2
            free = [j for j in range(p) if state[j] == 0]
        if parent is None or rng.random() < 0.6:
            rec["witness"] = witness()
        if not free or len(nodes) > 12 or rng.random() < 0.35:
            rec["status"] = str(rng.choice(["solved", "pruned", "open"]))
            return
        j = int(rng.choice(free))
        s0, s1 = list(state), list(state)
        s0[j], s1[j] = 2, 1
        visit(nid, j, 0, s0)
        if n_in + 1 <= k:
            visit(nid, j, 1, s1)
        else:  # z_j = 1 would exceed k: the node stays a leaf, its fixings derived
            nodes[:] = [x for x in nodes if x["id"] <= nid]
            rec["status"] = "solved"
            rec["derive_fixings"] = True

    visit(None, None, None, [0] * p)
    return nodes


def run_e2e(seed: int, loss: str | None = None) -> list[str]:
    """A random certificate on edge data, claimed as tightly as the verifier allows; if it is
    accepted, its claims must be true (squared loss without a box: the exact optimum; every
    loss: LB <= the exact objective of feasible points, UB >= the incumbent's)."""
    from sparsecert.certificate import Certificate, verify_certificate

    rng = np.random.default_rng(seed)
    cs = make_case(rng, loss)
    loss, X, y, k, lam, M, fit = (cs[key] for key in ("loss", "X", "y", "k", "lam", "M", "fit"))
    n, p = X.shape
    ym = V.binary_labels(y) if loss in V.CLASSIFICATION_LOSSES else y
    mu = 0.0
    if loss == "squared" and rng.random() < 0.5:
        mu = largest_proven_shift(X, fit) * float(rng.choice([1.0, 0.5]))

    def witness():
        if mu > 0 and rng.random() < 0.7:
            with np.errstate(all="ignore"):
                b = rng.standard_normal(p) * _edge_scale(rng)
            return ("shifted", np.where(np.isfinite(b), b, 0.0))
        z = _dual_witness(rng, loss, X, ym, fit)
        return ("dual", np.zeros(n) if z is None else z)

    nodes = _random_tree(rng, p, k, witness)
    coef = np.zeros(p)
    S = rng.choice(p, size=int(rng.integers(0, k + 1)), replace=False)
    with np.errstate(all="ignore"):
        coef[S] = rng.standard_normal(S.size) * _edge_scale(rng)
    coef = np.where(np.isfinite(coef), coef, 1.0)
    if M is not None:
        coef = np.clip(coef, -M, M)
    c = float(rng.standard_normal() * _edge_scale(rng)) if fit else 0.0
    c = c if math.isfinite(c) else 0.0
    try:
        cert = Certificate.build(
            X, y, problem=dict(loss=loss, k=k, lambda2=lam, max_abs_coef=M, fit_intercept=fit),
            incumbent=dict(coef=coef, intercept=c, objective=0.0),
            bounds=dict(lower_bound=-1e300, upper_bound=1e300, status="time_limit",
                        rel_gap_tol=1e-4, abs_gap_tol=0.0),
            eig_shift=mu, nodes=nodes)
    except (ValueError, TypeError):
        return []
    doc, proof = cert.to_dict(), cert.proof_bytes()
    probe = verify_certificate(doc, X, y, proof=proof)  # the incumbent's upper estimate
    if np.isfinite(probe.objective_upper):  # probed again with the claim there (derivations)
        doc["bounds"].update(lower_bound=float(probe.objective_upper))
        probe = verify_certificate(doc, X, y, proof=proof)
    lb, ub = probe.certified_lower_bound, probe.objective_upper
    if not (np.isfinite(lb) and np.isfinite(ub)):
        return []
    doc["bounds"].update(lower_bound=float(min(lb, ub)), upper_bound=float(ub))
    rep = verify_certificate(doc, X, y, proof=proof)
    if not rep.ok:
        return []
    STATS["e2e_accepted"] = STATS.get("e2e_accepted", 0) + 1
    LB, UB = Q(doc["bounds"]["lower_bound"]), Q(doc["bounds"]["upper_bound"])
    bad = []
    lo = objective_lower(X, ym, loss, lam, coef, c)
    if lo is None or UB < lo:
        bad.append(f"e2e: UB {float(UB)!r} below the incumbent's exact objective")
    if loss == "squared" and M is None:
        from _exact import squared_optimum
        opt = squared_optimum(X, y, k, lam, fit)
        if LB > opt:
            bad.append(f"e2e: LB {float(LB)!r} above the exact optimum {_fmt(opt)}")
    else:
        import itertools

        from _bruteforce import solve_support
        for size in range(min(k, p) + 1):
            for sup in itertools.combinations(range(p), size):
                try:
                    with np.errstate(all="ignore"):
                        _, bS, cS = solve_support(X, ym, sup, loss, lam, M, fit)
                except Exception:
                    continue
                b = np.zeros(p)
                b[list(sup)] = bS
                if M is not None:
                    b = np.clip(b, -M, M)
                if not (np.isfinite(b).all() and math.isfinite(cS)):
                    continue
                up = objective_upper_exact(X, ym, loss, lam, b, cS if fit else 0.0)
                if up is not None and LB > up:
                    bad.append(f"e2e: LB {float(LB)!r} above F = {_fmt(up)} at support "
                               f"{sup}")
    return [f"seed {seed} ({loss}, n={n}, p={p}, k={k}, fit={fit}, lam={lam:.3g}, "
            f"M={M}, mu={mu!r}): {b}" for b in bad]


def run_package(seed: int, loss: str | None = None) -> list[str]:
    """The package's own certificate on edge data it accepts, mutated by a forger
    (tests/glm/soundness/test_soundness_mutations.py) and claimed as tightly as the verifier
    allows; the claims of an accepted mutant must be true (squared loss: the exact optimum;
    every loss: the exact objective of the incumbent and of the package's model)."""
    from test_soundness_mutations import tightly_claimed_mutants

    import sparsecert

    rng = np.random.default_rng(seed)
    cs = make_case(rng, loss)
    loss, X, y, k, lam, M, fit = (cs[key] for key in ("loss", "X", "y", "k", "lam", "M", "fit"))
    n, p = X.shape
    ym = V.binary_labels(y) if loss in V.CLASSIFICATION_LOSSES else y
    try:
        with np.errstate(all="ignore"):
            res = sparsecert.certify(X, y, k, lam, loss=loss, max_abs_coef=M, fit_intercept=fit,
                                     verbose=0, rel_gap=1e-6, node_limit=200, time_limit=5.0)
    except (ValueError, TypeError, NotImplementedError, np.linalg.LinAlgError,
            FloatingPointError, OverflowError, ZeroDivisionError):
        return []
    cert = res.certificate
    STATS["package_certified"] = STATS.get("package_certified", 0) + 1
    opt = None
    if loss == "squared" and M is None:
        from _exact import squared_optimum
        opt = squared_optimum(X, y, k, lam, fit)
    bad = []
    for d in tightly_claimed_mutants(cert, X, y, fit, rng, 4):
        STATS["package_accepted"] = STATS.get("package_accepted", 0) + 1
        LB, UB = Q(d["bounds"]["lower_bound"]), Q(d["bounds"]["upper_bound"])
        inc = d["incumbent"]
        coef, c = np.array(inc["coef"], dtype=float), float(inc["intercept"])
        lo = objective_lower(X, ym, loss, lam, coef, c)
        if lo is None or UB < lo:
            bad.append(f"package: UB {float(UB)!r} below the incumbent's exact objective")
        if opt is not None and LB > opt:
            bad.append(f"package: LB {float(LB)!r} above the exact optimum {_fmt(opt)}")
        up = objective_upper_exact(X, ym, loss, lam, np.asarray(res.coef, dtype=float),
                                   float(res.intercept) if fit else 0.0)
        if up is not None and LB > up:
            bad.append(f"package: LB {float(LB)!r} above the package model's F {_fmt(up)}")
    return [f"seed {seed} ({loss}, n={n}, p={p}, k={k}, fit={fit}, lam={lam:.3g}, "
            f"M={M}): {b}" for b in bad]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--loss", choices=_LOSSES, default=None, help="only this loss")
    ap.add_argument("--e2e", action="store_true", help="whole random certificates (slower)")
    ap.add_argument("--package", action="store_true",
                    help="the package's own certificates, mutated (slower)")
    args = ap.parse_args(argv)
    np.seterr(all="ignore")
    t0, c0 = time.time(), time.process_time()
    found = 0
    for seed in range(args.start, args.start + args.cases):
        try:
            run = run_package if args.package else run_e2e if args.e2e else run_case
            bad = run(seed, args.loss)
        except Exception as exc:  # a crash of the harness or the verifier: report it
            bad = [f"seed {seed}: exception {type(exc).__name__}: {exc}"]
        for line in bad:
            print(line, flush=True)
        found += bool(bad)
        done = seed - args.start + 1
        if done % 250 == 0:
            print(f"... {done} cases, {found} with violations, "
                  f"{time.process_time() - c0:.0f} s CPU", flush=True)
    print("finite bounds compared:", STATS)
    print(f"{args.cases} cases (seeds {args.start}..{args.start + args.cases - 1}), "
          f"{found} with violations, {time.process_time() - c0:.1f} s CPU, "
          f"{time.time() - t0:.1f} s wall")
    return 1 if found else 0


if __name__ == "__main__":
    # run as a script: the helpers shared by every test folder are two folders up
    sys.path.insert(1, str(Path(__file__).resolve().parents[2]))
    sys.exit(main())
