"""Huber regression, certified: the loss against cvxpy, the certified optimum against brute force
over supports (cvxpy), tampered certificates refused, and every accepted bound below the exact
(rational) value it stands for.

The Huber loss of the package is cvxpy's ``huber``: ``f(u; y) = h(y - u)``, ``h(r) = r^2`` for
``|r| <= d`` and ``2 d |r| - d^2`` beyond (``d = huber_delta``); its conjugate is ``z^2/4 + y z``
on ``|z| <= 2 d``. Both are rational functions of rational data, so the exact checks here are in
``fractions``.
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction

import cvxpy as cp
import numpy as np
import pytest
from _certgen import zero_sum

import sparsecert
from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate.verify import Problem, dual_domain_bounds, node_lower_bound
from sparsecert.solvers.losses import get_loss


def _data(seed: int, n: int = 22, p: int = 6, outliers: int = 3):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, p)), 3)
    y = X[:, 0] - 2.0 * X[:, 2] + 0.3 * rng.standard_normal(n) + 1.5
    y[:outliers] += 6.0 * rng.choice([-1.0, 1.0], outliers)  # gross outliers
    return X, np.round(y, 3)


# ------------------------------------------------------------------------------ the loss


@pytest.mark.parametrize("delta", [0.25, 1.0, 1.345])
def test_value_and_conjugate_equal_cvxpy(delta):
    rng = np.random.default_rng(0)
    n = 6
    u, y = 3 * rng.standard_normal(n), 2 * rng.standard_normal(n)
    loss = get_loss("huber", {"huber_delta": delta})
    assert loss.value(u, y) == pytest.approx(float(cp.sum(cp.huber(y - u, delta)).value),
                                              rel=1e-12)
    z = rng.uniform(-2 * delta, 2 * delta, n)
    z[0] = 2 * delta  # the domain is closed
    conj = loss.conjugate(z, y)
    for i in range(n):  # f*(z; y) = sup_u z u - h(y - u), solved by cvxpy
        v = cp.Variable()
        prob = cp.Problem(cp.Maximize(z[i] * v - cp.huber(y[i] - v, delta)))
        prob.solve(solver="CLARABEL")
        assert prob.status == "optimal"
        assert conj[i] == pytest.approx(prob.value, rel=1e-6, abs=1e-7)
    assert loss.conjugate(np.array([2 * delta * (1 + 1e-15)]), y[:1])[0] == np.inf
    for zz in (2.05 * delta, -2.5 * delta):  # outside: the sup is unbounded
        assert loss.conjugate(np.array([zz]), y[:1])[0] == np.inf
        v = cp.Variable()
        prob = cp.Problem(cp.Maximize(zz * v - cp.huber(y[0] - v, delta)))
        prob.solve(solver="CLARABEL")
        assert prob.status in ("unbounded", "unbounded_inaccurate")


def test_the_parameter_is_checked():
    with pytest.raises(ValueError, match="huber_delta must be a finite number > 0"):
        get_loss("huber", {"huber_delta": 0.0})
    with pytest.raises(TypeError, match="huber_delta must be a number"):
        get_loss("huber", {"huber_delta": "1"})
    with pytest.raises(ValueError, match="is a parameter of the huber loss, not of"):
        get_loss("squared", {"huber_delta": 1.0})
    with pytest.raises(ValueError, match="not a loss parameter"):
        get_loss("huber", {"delta": 1.0})
    X, y = _data(1)
    with pytest.raises(ValueError, match="huber_delta"):
        sparsecert.certify(X, y, 2, 1.0, loss="huber", loss_params={"huber_delta": -1.0},
                           verbose=0)


# ------------------------------------------------------------------------------ the optimum


def _brute_force(X, y, k, lam, delta, M, fit_intercept):
    """min over supports of size k of the Huber objective, each solved by cvxpy."""
    best = np.inf
    for S in itertools.combinations(range(X.shape[1]), k):
        b = cp.Variable(k)
        c = cp.Variable() if fit_intercept else 0.0
        cons = [cp.abs(b) <= M] if M is not None else []
        obj = cp.sum(cp.huber(y - X[:, S] @ b - c, delta)) + lam * cp.sum_squares(b)
        prob = cp.Problem(cp.Minimize(obj), cons)
        prob.solve(solver="CLARABEL")
        assert prob.status == "optimal"
        best = min(best, prob.value)
    return best


@pytest.mark.parametrize("fit_intercept, M, delta, seed", [
    (False, None, 1.0, 0), (True, None, 1.0, 1), (True, None, 0.4, 2), (False, 0.8, 1.345, 3),
    (True, 0.8, 0.4, 4),
])
def test_certified_optimum_equals_brute_force(fit_intercept, M, delta, seed):
    X, y = _data(seed)
    k, lam = 2, 0.4
    res = sparsecert.certify(X, y, k, lam, loss="huber", fit_intercept=fit_intercept,
                             max_abs_coef=M, loss_params={"huber_delta": delta}, verbose=0,
                             rel_gap=1e-7)
    assert res.status == "optimal"
    assert res.certificate.problem["huber_delta"] == delta
    opt = _brute_force(X, y, k, lam, delta, M, fit_intercept)
    tol = 1e-6 * max(1.0, abs(opt))  # cvxpy's accuracy
    assert res.lower_bound <= opt + tol and opt <= res.objective + tol
    assert res.objective - opt <= 1e-5 * max(1.0, abs(opt))
    rep = verify_certificate(res.certificate, X, y, loss="huber", huber_delta=delta)
    assert rep.ok, str(rep)


# ------------------------------------------------------------------------------ tampering


@pytest.fixture(scope="module")
def honest():
    X, y = _data(5, n=26, p=7)
    res = sparsecert.certify(X, y, 3, 0.3, loss="huber", loss_params={"huber_delta": 0.7},
                             verbose=0, rel_gap=1e-7)
    assert res.status == "optimal"
    return X, y, res.certificate


def test_the_user_fixes_the_threshold(honest):
    X, y, cert = honest
    assert verify_certificate(cert, X, y, huber_delta=0.7).ok
    rep = verify_certificate(cert, X, y, huber_delta=0.8)
    assert rep.failed_checks == ["parameters"] and "huber_delta" in str(rep)
    sq = sparsecert.certify(X, y, 2, 0.3, verbose=0).certificate
    rep = verify_certificate(sq, X, y, huber_delta=0.7)  # no such parameter for this loss
    assert rep.failed_checks == ["parameters"]


def _doc(cert: Certificate) -> dict:
    return json.loads(json.dumps(cert.data))


@pytest.mark.parametrize("delta", [0.35, 0.69, 3.0])
def test_another_threshold_in_the_certificate_is_refused(honest, delta):
    """A certificate rewritten to another threshold claims bounds of another problem."""
    X, y, cert = honest
    doc = _doc(cert)
    doc["problem"]["huber_delta"] = delta
    rep = verify_certificate(doc, X, y, proof=cert.proof_bytes())
    assert not rep.ok and rep.exit_code == 1
    assert set(rep.failed_checks) & {"leaf_witnesses", "leaf_bounds", "incumbent_objective"}


@pytest.mark.parametrize("bad", [None, 0.0, -1.0, "1.0", float("inf")])
def test_a_missing_or_bad_threshold_is_an_input_error(honest, bad):
    X, y, cert = honest
    doc = _doc(cert)
    if bad is None:
        del doc["problem"]["huber_delta"]
    else:
        doc["problem"]["huber_delta"] = bad
    rep = verify_certificate(doc, X, y, proof=cert.proof_bytes())
    assert rep.input_error and rep.exit_code == 2 and "huber_delta" in rep.error_line


def _witness_of(cert, nd):
    """The node's own witness (kind, vector) or None."""
    return None if nd["witness"] is None else (nd["witness"][0], cert.witness(*nd["witness"]))


def _rebuild(cert, X, y, witnesses: dict, lower: float) -> Certificate:
    """The certificate with leaf witnesses replaced and the lower bound claimed at ``lower``
    (nodes by their position in preorder)."""
    nodes = []
    for nd in cert.nodes:
        w = _witness_of(cert, nd)
        if nd["status"] != "branched":
            w = witnesses.get(nd["index"], w)
        nodes.append(dict(id=nd["index"], parent=nd["parent"], branch_var=nd["branch_var"],
                          branch_value=nd["branch_value"], status=nd["status"], witness=w,
                          derive_fixings=nd["derive"]))
    inc, pr = cert.incumbent, cert.problem
    return Certificate.build(
        X, y, problem={key: pr[key] for key in ("loss", "k", "lambda2", "max_abs_coef",
                                                 "fit_intercept", "huber_delta")},
        incumbent=dict(coef=np.array(inc["coef"]), intercept=inc["intercept"],
                       objective=inc["objective"]),
        bounds=dict(lower_bound=lower, upper_bound=cert.upper_bound, status=cert.status,
                    rel_gap_tol=cert.bounds["rel_gap_tolerance"],
                    abs_gap_tol=cert.bounds["abs_gap_tolerance"]),
        eig_shift=cert.data["relaxation"]["eig_shift"], nodes=nodes)


def _leaves(cert):
    """The leaves with a witness of their own (positions in preorder)."""
    return [nd["index"] for nd in cert.nodes if nd["status"] != "branched"
            and nd["witness"] is not None]


def _leaf_witness(cert, leaf):
    return _witness_of(cert, cert.nodes[[nd["index"] for nd in cert.nodes].index(leaf)])


def test_a_witness_outside_the_domain_is_refused(honest):
    X, y, cert = honest
    leaf = _leaves(cert)[0]
    kind, z = _leaf_witness(cert, leaf)
    assert kind == "dual"
    z = z.copy()
    i, j = int(np.argmax(z)), int(np.argmin(z))
    step = 2 * 0.7 * 1e-6
    z[i], z[j] = 2 * 0.7 + step, z[j] - (2 * 0.7 + step - z[i])  # still sums to zero
    forged = _rebuild(cert, X, y, {leaf: ("dual", z)}, cert.lower_bound)
    rep = verify_certificate(forged, X, y)
    assert "leaf_witnesses" in rep.failed_checks and "outside the domain" in str(rep)


# ------------------------------------------------------------------------------ exact soundness


def F(x) -> Fraction:
    return Fraction(float(x))


def _h(r: Fraction, d: Fraction) -> Fraction:
    return r * r if abs(r) <= d else 2 * d * abs(r) - d * d


def exact_objective(X, y, delta, lam, coef, intercept) -> Fraction:
    n, p = X.shape
    d = F(delta)
    total = Fraction(0)
    for i in range(n):
        r = F(y[i]) - F(intercept) - sum(F(X[i, j]) * F(coef[j]) for j in range(p) if coef[j])
        total += _h(r, d)
    return total + F(lam) * sum(F(b) * F(b) for b in coef)


def exact_dual(X, y, delta, lam, M, k, fixed_in, fixed_out, zeta) -> Fraction:
    """D(zeta) = -sum_i (zeta_i^2/4 + y_i zeta_i) - 2 lam g*_node(-X^T zeta / (2 lam)), exactly
    (zeta in the domain; with an intercept it sums to exactly 0, so X need not be centred);
    weak duality puts it below the node's optimum."""
    n, p = X.shape
    lam = F(lam)
    assert all(abs(F(z)) <= 2 * F(delta) for z in zeta)
    conj = sum(F(z) * F(z) / 4 + F(yy) * F(z) for z, yy in zip(zeta, y, strict=True))
    a = [abs(sum(F(X[i, j]) * F(zeta[i]) for i in range(n))) / (2 * lam) for j in range(p)]
    h = [t * t / 2 if M is None or t <= F(M) else F(M) * t - F(M) * F(M) / 2 for t in a]
    free = [j for j in range(p) if j not in fixed_in and j not in fixed_out]
    top = sorted((h[j] for j in free), reverse=True)[:max(k - len(fixed_in), 0)]
    return -conj - 2 * lam * (sum(h[j] for j in fixed_in) + sum(top))


def _derives(cert, leaf) -> bool:
    """Whether the verifier derives bound fixings at the node or above it."""
    by_id = {nd["index"]: nd for nd in cert.nodes}
    nd = by_id[leaf]
    while True:
        if nd["derive"]:
            return True
        if nd["parent"] is None:
            return False
        nd = by_id[nd["parent"]]


def _fixings(cert, leaf):
    """(S1, S0) of a node from the branchings above it (the bound fixings the verifier may
    derive on top only shrink its region)."""
    by_id = {nd["index"]: nd for nd in cert.nodes}
    s1, s0 = [], []
    nd = by_id[leaf]
    while nd["parent"] is not None:
        (s1 if nd["branch_value"] == 1 else s0).append(nd["branch_var"])
        nd = by_id[nd["parent"]]
    return s1, s0


@pytest.mark.parametrize("fit_intercept, M, delta", [(False, None, 0.7), (True, None, 0.5),
                                                     (True, 0.9, 1.1)])
def test_accepted_bounds_are_below_the_exact_values(fit_intercept, M, delta):
    """Every bound the verifier accepts, for the honest witnesses and for mutated ones (scaled,
    pushed to the domain's boundary), is below the exact dual value of its witness, and the
    claimed upper bound is above the incumbent's exact objective."""
    X, y = _data(7, n=16, p=5)
    k, lam = 2, 0.5
    res = sparsecert.certify(X, y, k, lam, loss="huber", fit_intercept=fit_intercept,
                             max_abs_coef=M, loss_params={"huber_delta": delta}, verbose=0,
                             rel_gap=1e-7)
    cert = res.certificate
    assert verify_certificate(cert, X, y).ok
    assert exact_objective(X, y, delta, lam, res.coef, res.intercept) <= F(cert.upper_bound)
    lo, hi = dual_domain_bounds("huber", y, delta)
    rng = np.random.default_rng(0)
    n_checked = 0
    for leaf in _leaves(cert):
        s1, s0 = _fixings(cert, leaf)
        z = _leaf_witness(cert, leaf)[1]
        cands = [z, z * 1.37, z * 0.5, np.where(rng.random(z.size) < 0.5, lo, hi)]
        for w in cands:
            w = np.clip(w, lo, hi)
            if fit_intercept:
                w = zero_sum(w, lo, hi)
            b = node_lower_bound(X, y,
                                 Problem("huber", lam, k, M, fit_intercept=fit_intercept,
                                         huber_delta=delta),
                                 s1, s0, ("dual", w))
            if np.isfinite(b):
                assert F(b) <= exact_dual(X, y, delta, lam, M, k, s1, s0, w)
                n_checked += 1
        if not _derives(cert, leaf):  # (derived bound fixings shrink the leaf's region)
            exact = exact_dual(X, y, delta, lam, M, k, s1, s0, z)
            assert F(cert.lower_bound) <= exact  # the claim is below the honest witness's truth
    assert n_checked >= 4
