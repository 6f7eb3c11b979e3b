"""Certificates written by an attacker (JSON and sidecar consistent, hashes right).

Each of the five attack classes that fooled the version-1 verifier is rebuilt here: first a
few lines reproduce the version-1 acceptance test (the point-form bound evaluated in plain
floating point, or a plain Cholesky test of the eigenvalue shift) to show the forged claim would
have passed it; then the version-2 verifier must refuse every form the attacker can give it in
the new format. The claims are checked to be false in exact rational arithmetic.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from _exact import F, squared_objective, squared_optimum

import sparsecert
from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate.verify import proves_eig_shift


def _forge(X, y, loss, k, lam, coef, lb, ub, witness, *, mu=0.0, M=None, fit_intercept=False,
           intercept=0.0, status="optimal"):
    """A one-leaf certificate with whatever claims and witness the attacker chooses."""
    return Certificate.build(
        X, y, problem=dict(loss=loss, k=k, lambda2=lam, max_abs_coef=M,
                           fit_intercept=fit_intercept),
        incumbent=dict(coef=coef, intercept=intercept, objective=ub),
        bounds=dict(lower_bound=lb, upper_bound=ub, status=status, rel_gap_tol=1e-4),
        eig_shift=mu,
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="solved",
                    witness=witness)])


def _refused(cert, X, y):
    rep = verify_certificate(cert, X, y)
    assert not rep.ok and rep.exit_code == 1, str(rep)
    return set(rep.failed_checks)


# -- the version-1 acceptance test, restated (plain floating point, no error bounds) ----------


def _v1_point_bound(X, y, loss, k, lam, M, b, mu=0.0):
    """What the version-1 verifier computed for a point witness at the root."""
    u = b @ X.T
    if loss == "squared":
        F0, d = ((y - u) ** 2).sum(), 2.0 * (u - y)
    else:
        F0, d = np.logaddexp(0.0, -y * u).sum(), -y * np.exp(-np.logaddexp(0.0, y * u))
    grad = d @ X - 2.0 * mu * b
    lamp = lam + mu
    a = -grad / (2.0 * lamp)
    aa = np.abs(a)
    h = 0.5 * a * a if M is None else np.where(aa <= M, 0.5 * a * a, M * aa - 0.5 * M * M)
    return F0 - mu * (b @ b) - grad @ b - 2.0 * lamp * np.sort(h)[-k:].sum()


def _v1_cholesky(X, mu):
    try:
        np.linalg.cholesky(X.T @ X - mu * np.eye(X.shape[1]))
        return True
    except np.linalg.LinAlgError:
        return False


# ------------------------------------------------------------------------------ class 1


def _dummies(seed):
    rng = np.random.default_rng(seed)
    n = 40
    D = np.eye(4)[rng.integers(0, 4, n)]
    X = np.hstack([D, np.ones((n, 1)), rng.standard_normal((n, 2))])
    y = 3 * D[:, 0] - 2 * D[:, 2] + rng.standard_normal(n) + X[:, 5]
    return X, y


def test_class1_exact_null_vector_dummies_plus_ones():
    """X v = 0 exactly (one-hot dummies + a ones column). The attacker claims the zero model
    optimal; a point witness t v pushed the version-1 bound anywhere."""
    v = np.array([1.0, 1, 1, 1, -1, 0, 0])
    k, lam = 2, 0.1
    found = None
    for seed in range(100, 160):
        X, y = _dummies(seed)
        assert not (X @ v).any()  # an exact null vector
        claim = float(y @ y)  # the zero model
        for t in (1e22, -1e22):
            if _v1_point_bound(X, y, "squared", k, lam, None, t * v) >= claim:
                found = (X, y, t, claim)
                break
        if found:
            break
    assert found is not None, "the version-1 bound could not be pushed on any instance"
    X, y, t, claim = found
    assert squared_optimum(X, y, k, lam) < F(claim) / 2  # the claim is false
    p = X.shape[1]
    # 1. the only primal witness left needs a proven shift: none exists (lambda_min = 0)
    for mu in (1e-20, 1e-300, 5e-324):
        failed = _refused(_forge(X, y, "squared", k, lam, np.zeros(p), claim, claim,
                                 ("shifted", t * v), mu=mu), X, y)
        assert {"eig_shift", "leaf_witnesses"} <= failed
    # 2. the dual of the point t v is zeta = f'(X t v) = -2 y, and adding huge multiples of a
    #    null direction of X^T does not help either
    _, _, Vt = np.linalg.svd(X.T)
    w = Vt[-1]
    for s in (0.0, 1e8, -1e15, 1e30):
        failed = _refused(_forge(X, y, "squared", k, lam, np.zeros(p), claim, claim,
                                 ("dual", -2.0 * y + s * w)), X, y)
        assert "leaf_bounds" in failed


# ------------------------------------------------------------------------------ class 2


def _singular_integer(seed):
    rng = np.random.default_rng(seed)
    A = rng.integers(-3, 4, (12, 4)).astype(float)
    kind = seed % 3
    if kind == 0:
        return np.hstack([A, A[:, :1] + A[:, 1:2]])  # a dependent column
    if kind == 1:
        return np.hstack([A, A[:, 2:3]])  # a duplicated column
    return np.hstack([A, np.zeros((12, 1)), 2 * A[:, :1] - A[:, 3:4]])


def test_class2_forged_eigen_shift_fails_on_every_singular_integer_gram():
    """Exactly singular integer Gram matrices: a plain Cholesky of X^T X - mu I succeeds for
    tiny mu on some of them; the proof must fail on all, for any mu > 0."""
    plain_fooled = 0
    for seed in range(150):
        X = _singular_integer(seed)
        for mu in (1e-20, 1e-300, 5e-324):
            assert not proves_eig_shift(X, mu, False)[0], (seed, mu)
            assert not proves_eig_shift(X, mu, True)[0], (seed, mu)
        plain_fooled += _v1_cholesky(X, 1e-20)
    assert plain_fooled > 0  # the version-1 check was fooled on some of these matrices
    # a nonsingular integer matrix: mu just above lambda_min fails, half of it is proven
    X = np.random.default_rng(0).integers(-3, 4, (20, 4)).astype(float)
    lam_min = np.linalg.eigvalsh(X.T @ X)[0]
    assert lam_min > 1
    assert not proves_eig_shift(X, lam_min * (1 + 1e-15), False)[0]
    assert not proves_eig_shift(X, lam_min * (1 + 1e-6), False)[0]
    assert proves_eig_shift(X, 0.5 * lam_min, False)[0]
    assert proves_eig_shift(X, 0.5 * np.linalg.eigvalsh(
        (X - X.mean(0)).T @ (X - X.mean(0)))[0], True)[0]


def test_class2_forged_shift_certificate_is_refused():
    found = None
    for seed in range(300):
        X = _singular_integer(3 * seed)
        if _v1_cholesky(X, 1e-20):
            found = X
            break
    assert found is not None
    X = found
    y = np.random.default_rng(1).standard_normal(12) * 3
    v = np.array([1.0, 1, 0, 0, -1])
    assert not (X @ v).any()
    claim = float(y @ y)
    t = next(t for t in 10.0 ** np.arange(5, 40)
             if _v1_point_bound(X, y, "squared", 1, 0.5, None, t * v, mu=1e-20) >= claim)
    assert squared_optimum(X, y, 1, 0.5) < F(claim)
    failed = _refused(_forge(X, y, "squared", 1, 0.5, np.zeros(5), claim, claim,
                             ("shifted", t * v), mu=1e-20), X, y)
    assert {"eig_shift", "leaf_witnesses"} <= failed


# ------------------------------------------------------------------------------ class 3


def test_class3_duplicated_column_logistic_box():
    """Two identical columns: the attacker's point t (e_0 - e_5) has X b = 0 exactly but the
    computed gradient entries differ by an ulp; the zero model is claimed optimal."""
    X = y = None
    for seed in range(200):
        rng = np.random.default_rng(seed)
        G = rng.standard_normal((30, 5))
        X = np.hstack([G, G[:, :1]])
        y = np.where(rng.random(30) < 0.5, 1.0, -1.0)
        g = (-y * 0.5) @ X
        if g[0] != g[5]:  # this BLAS computes the two identical columns differently
            break
    claim = 30 * math.log(2)  # the zero model's objective
    b = np.zeros(6)
    b[0], b[5] = 1.0, -1.0
    t = 1e20
    if g[0] != g[5]:  # the version-1 test accepted the zero model with t (e_0 - e_5)
        t = next(s * t for t in 10.0 ** np.arange(5, 40) for s in (1, -1)
                 if _v1_point_bound(X, y, "logistic", 1, 0.5, 5.0, s * t * b) >= claim)
    # the dual of that point is f'(0) = -y/2; any dual is bounded rigorously
    failed = _refused(_forge(X, y, "logistic", 1, 0.5, np.zeros(6), claim, claim,
                             ("dual", -0.5 * y), M=5.0), X, y)
    assert "leaf_bounds" in failed
    # the primal form does not exist for the logistic loss
    failed = _refused(_forge(X, y, "logistic", 1, 0.5, np.zeros(6), claim, claim,
                             ("shifted", t * b), M=5.0, mu=1e-3), X, y)
    assert {"eig_shift", "leaf_witnesses"} <= failed


# ------------------------------------------------------------------------------ class 4


def test_class4_floating_point_null_direction_p_greater_than_n():
    """Gaussian data with p > n: witnesses along a floating-point null direction of X, at any
    scale, never give a bound above the exact optimum; a model 4.8% worse than the optimum
    cannot be certified."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((8, 14))
    y = X[:, :2] @ np.array([2.0, -1.0]) + 0.3 * rng.standard_normal(8)
    k, lam = 2, 0.5
    opt = squared_optimum(X, y, k, lam)
    claim = float(opt) * 1.048
    _, _, Vt = np.linalg.svd(X)
    w = Vt[-1]  # X w is ~1e-16, not 0
    from _exact import ridge_on_support

    val, bS, _ = ridge_on_support(X, y, [0, 1], lam, False)
    b = np.zeros(14)
    b[[0, 1]] = [float(v) for v in bS]
    for t in 10.0 ** np.arange(0, 31, 3):
        for s in (1.0, -1.0):
            zeta = 2.0 * (X @ (b + s * t * w) - y)
            rep = verify_certificate(_forge(X, y, "squared", k, lam, b, claim, claim * 1.01,
                                            ("dual", zeta)), X, y)
            assert not rep.ok
            assert F(rep.certified_lower_bound) <= opt  # never above the exact optimum


# ------------------------------------------------------------------------------ class 5


def _offset_data(seed, offset):
    rng = np.random.default_rng(seed)
    n = 30
    Z = rng.integers(-5, 6, (n, 4)).astype(float)
    X = Z.copy()
    X[:, 0] = offset + Z[:, 0]
    y = 2.0 * Z[:, 0] - Z[:, 2] + rng.integers(-3, 4, n) + 7.0
    return X, y


@pytest.mark.parametrize("offset", [1e6, 1e9, 1e12])
def test_class5_large_offsets_with_an_intercept(offset):
    """A column = offset + small integers, squared loss with an intercept: honest certificates
    verify and contain the exact optimum; a claim computed in plain floating point below the
    exact optimum is refused."""
    X, y = _offset_data(int(math.log10(offset)), offset)
    k, lam = 2, 0.5
    opt = squared_optimum(X, y, k, lam, fit_intercept=True)
    res = sparsecert.certify(X, y, k, lam, fit_intercept=True, verbose=0)
    rep = verify_certificate(res.certificate, X, y)
    assert res.status == "optimal" and rep.ok and rep.exit_code == 0, str(rep)
    lb, ub = F(res.certificate.lower_bound), F(res.certificate.upper_bound)
    assert lb <= opt <= ub
    assert squared_objective(X, y, lam, res.coef, res.intercept) <= ub
    # the attacker's certificate: the exact optimum's model, its objective computed naively,
    # pulled just below the exact optimum (what a plain float evaluation can produce)
    naive = float(((y - X @ res.coef - res.intercept) ** 2).sum() + lam * res.coef @ res.coef)
    claim = min(naive, float(opt) * (1 - 1e-12))
    assert F(claim) < opt
    cert = Certificate.build(
        X, y, problem=dict(loss="squared", k=k, lambda2=lam, max_abs_coef=None,
                           fit_intercept=True),
        incumbent=dict(coef=res.coef, intercept=res.intercept, objective=claim),
        bounds=dict(lower_bound=claim, upper_bound=claim, status="optimal"),
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="solved",
                    witness=_a_witness(res.certificate))])
    assert "incumbent_objective" in _refused(cert, X, y)


def _a_witness(cert):
    """(kind, vector) of the last witness of a certificate's tree."""
    kind, slot = [nd["witness"] for nd in cert.nodes if nd["witness"]][-1]
    return kind, cert.witness(kind, slot)


def test_class5_producer_error_free_objective_beats_plain_float():
    """On the 1e12 offset data the plain float objective of a model is off by far more than
    the rigorous radius the producer and verifier use."""
    from sparsecert.proof.bounds import SafeEvaluator

    X, y = _offset_data(12, 1e12)
    res = sparsecert.certify(X, y, 2, 0.5, fit_intercept=True, verbose=0)
    exact = squared_objective(X, y, 0.5, res.coef, res.intercept)
    naive = F(((y - X @ res.coef - res.intercept) ** 2).sum() + 0.5 * res.coef @ res.coef)
    ev = SafeEvaluator(X, y, "squared", 0.5, None, True)
    value, upper = ev.objective(res.coef, res.intercept)
    assert F(value) - exact == pytest.approx(0, abs=1e-9 * float(exact))
    assert exact <= F(upper) and F(upper) - exact < abs(naive - exact) + Fraction(1, 10 ** 6)


def test_producer_refuses_a_zero_sum_witness_whose_partial_sums_overflow():
    """The producer's own zero-sum test (with an intercept) treats a vector whose float sum
    overflows, or that holds infinities, as no witness instead of raising."""
    from sparsecert.proof.bounds import SafeEvaluator

    X = np.arange(8.0).reshape(4, 2)
    y = np.array([1.0, -2.0, 0.5, 3.0])
    ev = SafeEvaluator(X, y, "squared", 0.5, None, True)
    assert ev.dual(np.array([1e308, 1e308, -1e308, -1e308])) is None
    assert ev.dual(np.array([np.inf, -np.inf, 0.0, 0.0])) is None
    honest = ev.dual(np.array([0.5, -0.25, -0.25, 0.0]))  # exactly zero-sum: a witness
    assert honest is not None
