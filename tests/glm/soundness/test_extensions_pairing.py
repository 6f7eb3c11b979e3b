"""The problem's extensions (sample weights, offsets, per-coefficient bounds) in the bounds: every
producer claim is one its verifier twin proves, and both are on the right side of the exact value.

As ``test_proof_pairing.py`` for the plain problem, on the same inputs and for every loss:

* a node's bound from a dual witness of the weighted problem with offsets and bounds (and the
  regions its fixings cut off): producer's claim <= verifier's proven bound <= the exact dual
  value ``-sum_i w_i f*(zeta_i / w_i) + o^T zeta - 2 lam g*_node(-X^T zeta / 2 lam)``, where
  ``g*`` has the terms ``H_j(a) = sup_{b in [l_j, u_j]} (a b - b^2/2)``;
* the weighted shifted witness (least squares with a proven shift of ``X^T Q X``);
* the incumbent's objective ``sum_i w_i f(x_i^T b + c + o_i) + lam ||b||^2``;
* the maths against the plain problem on modified data: integer weights are repeated rows, a zero
  weight is a removed row, an offset of the squared loss is ``y - o`` (exact values equal).

Exact values: ``fractions`` for the squared, squared-hinge and Huber losses, 60-digit enclosures
for the logistic and Poisson ones (``_exact.py``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from _certgen import zero_sum
from _exact import general_dual_value, general_objective, weighted_shifted_value

import sparsecert.certificate.verify as V
from sparsecert.proof.bounds import SafeEvaluator, SampleAndBounds
from sparsecert.proof.claims import claim_lower, claim_lower_array, claim_upper
from sparsecert.proof.regions import fixing_regions
from sparsecert.solvers.losses import LOSS_NAMES, get_loss

DELTA = 0.6
LOWER = np.array([-np.inf, -0.5, 0.0, -1.0, -0.2])
UPPER = np.array([np.inf, 0.4, np.inf, 0.0, 0.7])


def F(x) -> Fraction:
    return Fraction(float(x))


def _params(loss):
    return {"huber_delta": DELTA} if loss == "huber" else {}


def _problem(loss: str, seed: int, n: int = 10, p: int = 5):
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
    w = rng.choice([0.0, 0.5, 1.0, 2.0, 3.25], n)
    w[:4] = (1.5, 2.0, 0.75, 0.0)  # positive weights on both labels, and a zero weight
    o = np.round(0.3 * rng.standard_normal(n), 3)
    return X, y, w, o


def _dual_point(loss, X, y, w, o, fit_intercept, rng):
    """w * f'(X b + c + o) inside the weighted domain (zero-sum with an intercept)."""
    f = get_loss(loss, _params(loss))
    z = w * f.gradient(X @ (0.4 * rng.standard_normal(X.shape[1])) + 0.2 + o, y)
    lo, hi = f.weighted_dual_domain(y, w)
    z = np.clip(z, lo, hi)
    return zero_sum(z, lo, hi) if fit_intercept else z


def _masks(p, fixed_in, fixed_out):
    fi, fo = np.zeros(p, bool), np.zeros(p, bool)
    fi[list(fixed_in)] = True
    fo[list(fixed_out)] = True
    return fi, fo


CASES = [(loss, fi, M) for loss in LOSS_NAMES for fi in (False, True) for M in (None, 0.6)]


@pytest.mark.parametrize("loss, fit_intercept, M", CASES)
def test_weighted_offset_bounded_dual_witness_pairs(loss, fit_intercept, M):
    X, y, w, o = _problem(loss, seed=LOSS_NAMES.index(loss) + 3 * fit_intercept)
    n, p = X.shape
    k, lam = 2, 0.45
    rng = np.random.default_rng(1)
    f = get_loss(loss, _params(loss))
    ext = dict(sample_weight=w, offset=o, coef_lower=LOWER, coef_upper=UPPER)
    ev = SafeEvaluator(X, y, f, lam, M, fit_intercept, extras=SampleAndBounds(**ext))
    vkw = {"huber_delta": DELTA} if loss == "huber" else {}
    for fixed_in, fixed_out in (((), ()), ((1,), (3,)), ((0,), ())):
        z = _dual_point(loss, X, y, w, o, fit_intercept, rng)
        assert (z[w == 0] == 0).all()
        wb = ev.dual(z)
        assert wb is not None
        fin, fout = _masks(p, fixed_in, fixed_out)
        claim = claim_lower(*wb.node(fin, fout, k))
        proven = V.node_lower_bound(X, y,
                                    V.Problem(loss, lam, k, M, fit_intercept=fit_intercept, **vkw,
                                              **ext),
                                    fixed_in, fixed_out, ("dual", z))
        exact = general_dual_value(X, y, loss, lam, k, fixed_in, fixed_out, z, w=w, o=o,
                                   lower=LOWER, upper=UPPER, M=M)
        assert np.isfinite(claim) and claim <= proven and F(proven) <= exact
        assert exact - F(proven) <= 1e-9 * (1 + abs(exact))  # the bound is tight, not vacuous
        free = [j for j in range(p) if j not in fixed_in and j not in fixed_out]
        fixings = [(j, v) for j in free for v in (0, 1)]
        claims = claim_lower_array(*fixing_regions(wb, fin, fout, k, fixings))
        for (j, v), c in zip(fixings, claims, strict=True):
            r_in = list(fixed_in) + ([j] if v == 0 else [])
            r_out = list(fixed_out) + ([j] if v == 1 else [])
            if len(r_in) > k:
                continue
            proven = V.node_lower_bound(X, y,
                                        V.Problem(loss, lam, k, M, fit_intercept=fit_intercept,
                                                  **vkw, **ext),
                                        r_in, r_out, ("dual", z))
            assert c <= proven
            assert F(proven) <= general_dual_value(X, y, loss, lam, k, r_in, r_out, z, w=w,
                                                   o=o, lower=LOWER, upper=UPPER, M=M)


@pytest.mark.parametrize("loss", LOSS_NAMES)
def test_a_zero_weight_needs_a_zero_dual_and_the_domain_is_weighted(loss):
    X, y, w, o = _problem(loss, seed=40)
    z = _dual_point(loss, X, y, w, o, False, np.random.default_rng(5))
    vkw = {"huber_delta": DELTA} if loss == "huber" else {}
    kw = dict(sample_weight=w, **vkw)
    assert np.isfinite(V.node_lower_bound(X, y, V.Problem(loss, 0.5, 2, None, **kw), (), (),
                                          ("dual", z)))
    i = int(np.flatnonzero(w == 0)[0])
    bad = z.copy()
    bad[i] = -1e-3 * y[i] if loss != "poisson" else 1e-3
    assert V.node_lower_bound(X, y, V.Problem(loss, 0.5, 2, None, **kw), (), (),
                              ("dual", bad)) == -np.inf
    assert SafeEvaluator(X, y, get_loss(loss, _params(loss)), 0.5, None, False,
                         extras=SampleAndBounds(sample_weight=w)).dual(bad) is None
    if loss in ("logistic", "huber", "poisson"):  # a dual just beyond the weighted domain
        j, beyond = 0, z.copy()
        beyond[j] = {"logistic": -y[j] * w[j] * (1 + 1e-12), "huber": 2 * DELTA * w[j] * (
            1 + 1e-12), "poisson": -w[j] * y[j] - 1e-12 * (1 + w[j] * y[j])}[loss]
        assert V.node_lower_bound(X, y, V.Problem(loss, 0.5, 2, None, **kw), (), (),
                                  ("dual", beyond)) == -np.inf


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("bounded", [False, True])
def test_weighted_shifted_witness_pairs_and_its_shift_is_proven(fit_intercept, bounded):
    X, y, w, o = _problem("squared", seed=11, n=14, p=4)
    p = X.shape[1]
    k, lam = 2, 0.3
    m = (w @ X) / w.sum() if fit_intercept else 0.0
    Xc = X - m
    lam_min = float(np.linalg.eigvalsh(Xc.T @ (w[:, None] * Xc))[0])
    mu = 0.5 * lam_min
    ok, msg = V.proves_eig_shift_weighted(X, mu, fit_intercept, w)
    assert ok, msg
    assert not V.proves_eig_shift_weighted(X, 1.02 * lam_min, fit_intercept, w)[0]
    # the unweighted proof of the same shift is about another matrix
    Xu = X - X.mean(axis=0) if fit_intercept else X
    assert float(np.linalg.eigvalsh(Xu.T @ Xu)[0]) != pytest.approx(lam_min, rel=1e-3)
    lower, upper = (LOWER[:p], UPPER[:p]) if bounded else (None, None)
    ext = dict(sample_weight=w, offset=o, coef_lower=lower, coef_upper=upper)
    ev = SafeEvaluator(X, y, "squared", lam, None, fit_intercept, mu,
                       extras=SampleAndBounds(**ext))
    rng = np.random.default_rng(2)
    for fixed_in, fixed_out in (((), ()), ((2,), (0,))):
        b = 0.5 * rng.standard_normal(p)
        b[list(fixed_out)] = 0.0
        fin, fout = _masks(p, fixed_in, fixed_out)
        claim = claim_lower(*ev.shifted(b).node(fin, fout, k))
        proven = V.node_lower_bound(X, y,
                                    V.Problem("squared", lam, k, None, fit_intercept=fit_intercept,
                                              **ext),
                                    fixed_in, fixed_out, ("shifted", b), eig_shift=mu)
        exact = weighted_shifted_value(X, y, lam, mu, k, fixed_in, fixed_out, b, fit_intercept,
                                       w=w, o=o, lower=lower, upper=upper)
        assert np.isfinite(claim) and claim <= proven and F(proven) <= exact
        assert exact - F(proven) <= 1e-9 * (1 + abs(exact))


@pytest.mark.parametrize("loss, fit_intercept, M", CASES[::2])
def test_weighted_objective_with_offsets_pairs(loss, fit_intercept, M):
    X, y, w, o = _problem(loss, seed=20 + LOSS_NAMES.index(loss))
    lam = 0.45
    rng = np.random.default_rng(3)
    vkw = {"huber_delta": DELTA} if loss == "huber" else {}
    ev = SafeEvaluator(X, y, get_loss(loss, _params(loss)), lam, M, fit_intercept,
                       extras=SampleAndBounds(sample_weight=w, offset=o))
    for _ in range(3):
        coef = np.where(rng.random(X.shape[1]) < 0.5, 0.0, 0.6 * rng.standard_normal(X.shape[1]))
        c = float(rng.standard_normal()) if fit_intercept else 0.0
        claim = claim_upper(*ev.objective(coef, c))
        _, proven = V.objective_upper_bound(X, y,
                                            V.Problem(loss, lam, sample_weight=w, offset=o, **vkw),
                                            coef, c)
        exact = general_objective(X, y, loss, lam, coef, c, w=w, o=o, delta=DELTA)
        assert exact <= F(proven) and proven <= claim < np.inf
        assert F(proven) - exact <= 1e-9 * (1 + abs(exact))


# ------------------------------------------------------------------------------ the maths
@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson", "huber"])
def test_integer_weights_are_repeated_rows_and_zero_weights_removed_rows(loss):
    """The weighted dual value equals the plain one on the data with each row repeated w_i
    times (its dual split evenly over the copies) and the zero-weight rows removed."""
    X, y, _, o = _problem(loss, seed=7)
    rng = np.random.default_rng(8)
    w = rng.choice([0.0, 1.0, 2.0, 3.0], X.shape[0])
    w[:3] = (1.0, 2.0, 3.0)
    z = _dual_point(loss, X, y, w, o, False, rng)
    # each copy of row i carries s_i = zeta_i / w_i, on a grid fine enough that w_i s_i is a
    # float (rounded toward 0: still inside every loss's domain)
    q = 2.0 ** -30
    s_ = np.trunc(z / np.where(w > 0, w, 1.0) / q) * q
    z_exact = w * s_
    assert (z_exact / np.where(w > 0, w, 1.0) == s_).all()
    rep = np.repeat(np.arange(X.shape[0]), w.astype(int))
    zr = s_[rep]
    for bounds in ((None, None), (LOWER, UPPER)):
        kw = dict(lower=bounds[0], upper=bounds[1])
        weighted = general_dual_value(X, y, loss, 0.5, 2, (1,), (), z_exact, w=w, o=o, **kw)
        plain = general_dual_value(X[rep], y[rep], loss, 0.5, 2, (1,), (), zr, o=o[rep], **kw)
        if loss in ("squared", "huber"):
            assert weighted == plain
        else:  # enclosures of the same number
            assert abs(weighted - plain) <= Fraction(1, 10 ** 40)
        vkw = {"huber_delta": DELTA} if loss == "huber" else {}
        vw = V.node_lower_bound(X, y,
                                V.Problem(loss, 0.5, 2, None, sample_weight=w, offset=o,
                                          coef_lower=bounds[0], coef_upper=bounds[1], **vkw),
                                (1,), (), ("dual", z_exact))
        vp = V.node_lower_bound(X[rep], y[rep],
                                V.Problem(loss, 0.5, 2, None, offset=o[rep], coef_lower=bounds[0],
                                          coef_upper=bounds[1], **vkw),
                                (1,), (), ("dual", zr))
        assert vw == pytest.approx(vp, rel=1e-10, abs=1e-10)


def test_the_offset_of_the_squared_loss_is_the_target_less_the_offset():
    X, y, w, o = _problem("squared", seed=9)
    y, o = np.round(y * 1024) / 1024, np.round(o * 1024) / 1024  # y - o is then a float
    z = _dual_point("squared", X, y, w, o, True, np.random.default_rng(10))
    a = general_dual_value(X, y, "squared", 0.5, 2, (), (), z, w=w, o=o)
    b = general_dual_value(X, y - o, "squared", 0.5, 2, (), (), z, w=w)
    assert a == b  # exactly: the conjugate of f(. + o) is f*(z) - z o
    va = V.node_lower_bound(X, y,
                            V.Problem("squared", 0.5, 2, None, fit_intercept=True, sample_weight=w,
                                      offset=o),
                            (), (), ("dual", z))
    vb = V.node_lower_bound(X, y - o,
                            V.Problem("squared", 0.5, 2, None, fit_intercept=True, sample_weight=w),
                            (), (), ("dual", z))
    assert va == pytest.approx(vb, rel=1e-12)


def test_the_bounded_term_is_the_conjugate_of_the_bounded_quadratic():
    """H(a) = sup_{b in [l, u]} (a b - b^2/2), against a fine grid and the closed form's
    special cases (the symmetric box, a sign constraint)."""
    from _exact import bounded_h

    for lo, hi in ((-1.0, 2.0), (0.0, np.inf), (-np.inf, 0.0), (-0.5, 0.5), (0.0, 0.0)):
        grid = np.linspace(max(lo, -5), min(hi, 5), 20001)
        for a in (-3.0, -0.7, -0.2, 0.0, 0.3, 1.1, 4.0):
            sup = float(np.max(a * grid - grid * grid / 2))
            assert float(bounded_h(F(a), lo, hi)) == pytest.approx(sup, abs=1e-6)
    # the symmetric box M is H_M(|a|)
    assert bounded_h(F(-3.0), -1.0, 1.0) == bounded_h(F(3.0), -1.0, 1.0) == Fraction(5, 2)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_the_producer_proves_a_weighted_shift_only_where_the_verifier_does(fit_intercept):
    from sparsecert.solvers.rigorous import proves_eig_shift

    X, y, w, o = _problem("squared", seed=12, n=16, p=4)
    Xd = X - (w @ X) / w.sum() if fit_intercept else X
    lam_min = float(np.linalg.eigvalsh(Xd.T @ (w[:, None] * Xd))[0])
    for frac, expected in ((0.5, True), (0.99, True), (1.01, False), (3.0, False)):
        mu = frac * lam_min
        producer = proves_eig_shift(Xd, mu, fit_intercept, weights=w)
        verifier = V.proves_eig_shift_weighted(X, mu, fit_intercept, w)[0]
        assert producer == expected and verifier == expected, frac
        if producer:  # what the producer proves with room, the verifier proves
            assert V.proves_eig_shift_weighted(X, mu * (1 + 2.0 ** -20), fit_intercept, w)[0]
    # the plain proof of the weighted problem's shift: another matrix
    plain = X - X.mean(axis=0) if fit_intercept else X
    lam_plain = float(np.linalg.eigvalsh(plain.T @ plain)[0])
    assert not V.proves_eig_shift_weighted(X, 1.01 * lam_min, fit_intercept, w)[0]
    assert lam_plain != pytest.approx(lam_min, rel=1e-2)
