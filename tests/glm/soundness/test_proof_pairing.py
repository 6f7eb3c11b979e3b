"""Every bound the proof producer claims is one its verifier twin proves, and both are on the
right side of the exact value.

The producer (:mod:`sparsecert.proof`) and the standalone verifier
(:mod:`sparsecert.certificate.verify`) share no code; each function that makes a claim has a twin
on the other side. On the same inputs, for every loss, with and without an intercept and a box:

* a node's bound from a dual witness, and from a shifted witness (least squares with a shift):
  producer's claim <= verifier's proven bound <= the exact dual value (weak duality puts that
  below the node's optimum);
* the regions a node's fixings cut off, from one sort: likewise, region by region;
* the incumbent's objective: exact value <= verifier's proven upper bound <= producer's claim.

The exact values are rational (``fractions``) for the squared, squared-hinge and Huber losses;
the logistic and Poisson ones are enclosed from the outside (``tests/_exact.py``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from _certgen import zero_sum
from _exact import dual_value_upper, objective_enclosure

import sparsecert.certificate.verify as V
from sparsecert.proof.bounds import SafeEvaluator
from sparsecert.proof.claims import claim_lower, claim_lower_array, claim_upper
from sparsecert.proof.regions import fixing_regions
from sparsecert.proof.rounding import Ball
from sparsecert.solvers.losses import LOSS_NAMES, get_loss

DELTA = 0.6  # the Huber threshold of these tests


def F(x) -> Fraction:
    return Fraction(float(x))


def _params(loss):
    return {"huber_delta": DELTA} if loss == "huber" else {}


def _problem(loss: str, seed: int, n: int = 9, p: int = 5):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, p)) + np.linspace(0, 2, p), 4)
    lin = X[:, 0] - X[:, 1]
    if loss in ("logistic", "squared_hinge"):
        y = np.where(lin + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0)
        y[:2] = (1.0, -1.0)
    elif loss == "poisson":
        y = rng.poisson(1.5, n).astype(float)
    else:
        y = np.round(2 * lin + rng.standard_normal(n), 3)
    return X, y


def _dual_point(loss, X, y, fit_intercept, rng):
    """A dual witness: the loss's gradient at a random point, inside the domain (zero-sum with
    an intercept)."""
    f = get_loss(loss, _params(loss))
    z = f.gradient(X @ (0.4 * rng.standard_normal(X.shape[1])) + 0.2, y)
    lo, hi = f.dual_domain(y)
    z = np.clip(z, lo, hi)
    return zero_sum(z, lo, hi) if fit_intercept else z


def _h_box(t: Fraction, M) -> Fraction:
    return t * t / 2 if M is None or t <= F(M) else F(M) * t - F(M) * F(M) / 2


def _g_star(h, fixed_in, fixed_out, k):
    free = [j for j in range(len(h)) if j not in fixed_in and j not in fixed_out]
    top = sorted((h[j] for j in free), reverse=True)[:max(k - len(fixed_in), 0)]
    return sum((h[j] for j in fixed_in), Fraction(0)) + sum(top, Fraction(0))


def _conj_exact(loss, z, y) -> Fraction:
    if loss in ("squared", "squared_hinge", "huber"):
        return sum((F(a) * F(a) / 4 + F(b) * F(a) for a, b in zip(z, y, strict=True)),
                   Fraction(0))
    raise AssertionError(loss)


def exact_dual(loss, X, y, lam, M, k, fixed_in, fixed_out, z):
    """D(zeta) exactly (rational losses) or an upper enclosure of it (the others)."""
    if loss in ("logistic", "poisson"):
        return Fraction(dual_value_upper(X, y, loss, lam, M, k, fixed_in, fixed_out, z))
    n, p = X.shape
    a = [abs(sum(F(X[i, j]) * F(z[i]) for i in range(n))) / (2 * F(lam)) for j in range(p)]
    h = [_h_box(t, M) for t in a]
    return -_conj_exact(loss, z, y) - 2 * F(lam) * _g_star(h, fixed_in, fixed_out, k)


def exact_shifted(X, y, lam, mu, M, k, fixed_in, fixed_out, b, fit_intercept):
    """The shifted witness's bound exactly: ||Py||^2 - ||P X b~||^2 + mu ||b~||^2
    - 2 lam' g*(-s / (2 lam')), s = 2 X^T P (X b~ - y) - 2 mu b~, lam' = fl_down(lam + mu)."""
    n, p = X.shape
    Xf = [[F(X[i, j]) for j in range(p)] for i in range(n)]
    yf = [F(v) for v in y]
    bf = [F(v) for v in b]
    v = [sum(Xf[i][j] * bf[j] for j in range(p)) for i in range(n)]

    def P(w):
        if not fit_intercept:
            return w
        m = sum(w, Fraction(0)) / n
        return [x - m for x in w]

    Py, Pv = P(yf), P(v)
    r = [a - c for a, c in zip(Pv, Py, strict=True)]
    muf = F(mu)
    s = [2 * sum(Xf[i][j] * r[i] for i in range(n)) - 2 * muf * bf[j] for j in range(p)]
    lam2 = F(np.nextafter(lam + mu, -np.inf))
    h = [_h_box(abs(t) / (2 * lam2), M) for t in s]
    K = sum(t * t for t in Py) - sum(t * t for t in Pv) + muf * sum(t * t for t in bf)
    return K - 2 * lam2 * _g_star(h, fixed_in, fixed_out, k)


def exact_objective_upper(loss, X, y, lam, coef, c):
    if loss in ("logistic", "poisson"):
        return Fraction(objective_enclosure(X, y, loss, lam, coef, c)[1])
    n, p = X.shape
    total = Fraction(0)
    for i in range(n):
        u = F(c) + sum(F(X[i, j]) * F(coef[j]) for j in range(p))
        r, yi = F(y[i]) - u, F(y[i])
        if loss == "squared":
            total += r * r
        elif loss == "squared_hinge":
            m = max(Fraction(0), 1 - yi * u)
            total += m * m
        else:
            d = F(DELTA)
            total += r * r if abs(r) <= d else 2 * d * abs(r) - d * d
    return total + F(lam) * sum(F(v) * F(v) for v in coef)


CASES = [(loss, fi, M) for loss in LOSS_NAMES for fi in (False, True) for M in (None, 0.7)]


def _masks(p, fixed_in, fixed_out):
    fi, fo = np.zeros(p, bool), np.zeros(p, bool)
    fi[list(fixed_in)] = True
    fo[list(fixed_out)] = True
    return fi, fo


@pytest.mark.parametrize("loss, fit_intercept, M", CASES)
def test_dual_witness_node_and_region_bounds_pair(loss, fit_intercept, M):
    X, y = _problem(loss, seed=LOSS_NAMES.index(loss) + 3 * fit_intercept)
    n, p = X.shape
    k, lam = 2, 0.45
    rng = np.random.default_rng(1)
    f = get_loss(loss, _params(loss))
    ev = SafeEvaluator(X, y, f, lam, M, fit_intercept)
    vkw = {"huber_delta": DELTA} if loss == "huber" else {}
    for fixed_in, fixed_out in (((), ()), ((1,), (3,)), ((0,), ())):
        z = _dual_point(loss, X, y, fit_intercept, rng)
        wb = ev.dual(z)
        assert wb is not None
        fin, fout = _masks(p, fixed_in, fixed_out)
        claim = claim_lower(*wb.node(fin, fout, k))
        proven = V.node_lower_bound(X, y,
                                    V.Problem(loss, lam, k, M, fit_intercept=fit_intercept, **vkw),
                                    fixed_in, fixed_out, ("dual", z))
        exact = exact_dual(loss, X, y, lam, M, k, fixed_in, fixed_out, z)
        assert np.isfinite(claim) and claim <= proven and F(proven) <= exact
        # the regions that fixing each free variable in or out cuts off, from one sort
        free = [j for j in range(p) if j not in fixed_in and j not in fixed_out]
        fixings = [(j, v) for j in free for v in (0, 1)]
        claims = claim_lower_array(*fixing_regions(wb, fin, fout, k, fixings))
        for (j, v), c in zip(fixings, claims, strict=True):
            r_in = list(fixed_in) + ([j] if v == 0 else [])  # [j, 0] cuts off z_j = 1
            r_out = list(fixed_out) + ([j] if v == 1 else [])
            if len(r_in) > k:
                continue  # an empty region
            proven = V.node_lower_bound(X, y,
                                        V.Problem(loss, lam, k, M, fit_intercept=fit_intercept,
                                                  **vkw),
                                        r_in, r_out, ("dual", z))
            assert c <= proven <= exact_dual(loss, X, y, lam, M, k, r_in, r_out, z), (j, v)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("M", [None, 0.7])
def test_shifted_witness_bounds_pair(fit_intercept, M):
    X, y = _problem("squared", seed=11, n=12, p=4)
    p = X.shape[1]
    k, lam = 2, 0.3
    Xc = X - X.mean(axis=0) if fit_intercept else X
    mu = 0.5 * float(np.linalg.eigvalsh(Xc.T @ Xc)[0])
    assert V.proves_eig_shift(X, mu, fit_intercept)[0]
    ev = SafeEvaluator(X, y, "squared", lam, M, fit_intercept, mu)
    rng = np.random.default_rng(2)
    for fixed_in, fixed_out in (((), ()), ((2,), (0,))):
        b = 0.5 * rng.standard_normal(p)
        b[list(fixed_out)] = 0.0
        fin, fout = _masks(p, fixed_in, fixed_out)
        claim = claim_lower(*ev.shifted(b).node(fin, fout, k))
        proven = V.node_lower_bound(X, y,
                                    V.Problem("squared", lam, k, M, fit_intercept=fit_intercept),
                                    fixed_in, fixed_out, ("shifted", b), eig_shift=mu)
        exact = exact_shifted(X, y, lam, mu, M, k, fixed_in, fixed_out, b, fit_intercept)
        assert np.isfinite(claim) and claim <= proven and F(proven) <= exact


@pytest.mark.parametrize("loss, fit_intercept, M", CASES[::2])
def test_objective_bounds_pair(loss, fit_intercept, M):
    X, y = _problem(loss, seed=20 + LOSS_NAMES.index(loss))
    lam = 0.45
    rng = np.random.default_rng(3)
    vkw = {"huber_delta": DELTA} if loss == "huber" else {}
    ev = SafeEvaluator(X, y, get_loss(loss, _params(loss)), lam, M, fit_intercept)
    for _ in range(3):
        coef = np.where(rng.random(X.shape[1]) < 0.5, 0.0, 0.6 * rng.standard_normal(X.shape[1]))
        c = float(rng.standard_normal()) if fit_intercept else 0.0
        claim = claim_upper(*ev.objective(coef, c))
        _, proven = V.objective_upper_bound(X, y, V.Problem(loss, lam, **vkw), coef, c)
        exact = exact_objective_upper(loss, X, y, lam, coef, c)
        assert exact <= F(proven) and proven <= claim < np.inf


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_conjugate_sum_enclosures_pair(loss):
    """The producer's and the verifier's upper enclosures of sum_i f*(zeta_i; y_i) agree to a
    few rounding errors and are above the exact value (the logistic and Poisson ones: above a
    lower enclosure of it)."""
    X, y = _problem(loss, seed=30)
    z = _dual_point(loss, X, y, False, np.random.default_rng(4))
    vkw = {"huber_delta": DELTA} if loss == "huber" else {}
    mid, hi = get_loss(loss, _params(loss)).conjugate_sum_upper(z, Ball(y, np.zeros(y.size)))
    up = V.conjugate_sum_upper(loss, z, y, **vkw)
    if loss in ("logistic", "poisson"):  # D with g* = 0 (k = 0) is -sum f*
        exact = -Fraction(dual_value_upper(np.zeros((y.size, 1)), y, loss, 1.0, None, 0, (), (),
                                           z))
    else:
        exact = _conj_exact(loss, z, y)
    assert exact <= F(hi) and exact <= F(up)
    assert abs(hi - up) <= 1e-12 * max(1.0, abs(mid))


def test_two_product_is_exact_in_its_range():
    """Dekker's product (shared by the producer's linear balls and the loss enclosures):
    ``p + err`` equals ``a b`` exactly (in rationals) inside the documented range, products
    that round included."""
    from sparsecert.proof.rounding import two_product

    rng = np.random.default_rng(7)
    a = rng.standard_normal(400) * 10.0 ** rng.integers(-100, 100, 400)
    b = rng.standard_normal(400) * 10.0 ** rng.integers(-100, 100, 400)
    p, err = two_product(a, b)
    assert (err != 0).sum() > 300  # the products do round: err carries what fl(a b) lost
    for ai, bi, pi, ei in zip(a.tolist(), b.tolist(), p.tolist(), err.tolist(), strict=True):
        assert Fraction(pi) + Fraction(ei) == Fraction(ai) * Fraction(bi)
    # a scalar factor (one column's coefficient) gives the same pairs
    p1, e1 = two_product(a, b[0])
    p2, e2 = two_product(a, np.full(a.shape, b[0]))
    assert np.array_equal(p1, p2) and np.array_equal(e1, e2)
