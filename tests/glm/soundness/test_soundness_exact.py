"""Every certificate the verifier accepts is true in exact arithmetic.

Small data where exact rational arithmetic is feasible inside the test: one-hot dummies plus a
ones column (an exact null vector), duplicated columns, p > n, integer data with a singular Gram
matrix, a column with a 1e6..1e12 offset and an intercept. On each, honest certificates from
``sparsecert.certify`` and mutated ones (witnesses scaled, pushed along null directions, moved
to the domain's boundary, with the claimed lower bound raised to the most the verifier accepts)
are verified; whenever the verifier accepts, the exact optimum must lie in [LB, UB]:

* squared loss: exactly, with every support's ridge problem solved in ``fractions``;
* the other losses: rigorously, every region's safe bound is below an upper enclosure of the
  exact dual value D(zeta) of its witness (weak duality puts D(zeta) below the region's optimum),
  and the claimed UB is above an enclosure of the exact objective of the incumbent.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from _certgen import map_labels, zero_sum
from _exact import (
    F,
    dual_value_upper,
    node_optimum,
    objective_enclosure,
    squared_objective,
    squared_optimum,
)

import sparsecert
from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate.verify import Problem, dual_domain_bounds, node_lower_bound

# ------------------------------------------------------------------------------ data families


def _family(name: str, loss: str, seed: int):
    rng = np.random.default_rng(seed)
    if name == "dummies":
        n = 16
        D = np.eye(3)[rng.integers(0, 3, n)]
        X = np.hstack([D, np.ones((n, 1)), rng.standard_normal((n, 1))])
    elif name == "duplicated":
        G = rng.standard_normal((14, 4))
        X = np.hstack([G, G[:, 1:2]])
    elif name == "wide":
        X = rng.standard_normal((6, 8))
    elif name == "singular_int":
        A = rng.integers(-3, 4, (14, 3)).astype(float)
        X = np.hstack([A, A[:, :1] - A[:, 2:3], A[:, 1:2]])
    elif name.startswith("offset"):
        off = float(name[6:])
        Z = rng.integers(-4, 5, (14, 4)).astype(float)
        X = Z.copy()
        X[:, 0] = off + Z[:, 0]
    else:
        raise ValueError(name)
    n, p = X.shape
    lin = X[:, 0] - X[:, 0].mean() + 0.5 * X[:, min(2, p - 1)]
    if loss == "squared":
        y = np.round(2 * lin + rng.integers(-2, 3, n), 0) + 3.0
    elif loss == "logistic":
        y = (lin + 0.7 * rng.standard_normal(n) > 0).astype(float)
        if y.min() == y.max():
            y[0] = 1 - y[0]
    else:  # poisson
        y = rng.poisson(1.5, n).astype(float)
    return X, y


CASES = [
    ("dummies", "squared", False), ("dummies", "squared", True), ("dummies", "logistic", True),
    ("duplicated", "squared", False), ("duplicated", "logistic", False),
    ("wide", "squared", False), ("wide", "poisson", False),
    ("singular_int", "squared", True), ("singular_int", "squared", False),
    ("offset1e6", "squared", True), ("offset1e9", "squared", True),
    ("offset1e12", "squared", True), ("offset1e12", "logistic", True),
]


# ------------------------------------------------------------------------------ helpers


def _fixings(cert: Certificate) -> dict[int, tuple[list[int], list[int]]]:
    """(S1, S0) of every node from its branchings (the bound fixings the verifier may derive
    on top only shrink the regions)."""
    by_id = {nd["index"]: nd for nd in cert.nodes}
    out: dict[int, tuple[list[int], list[int]]] = {}

    def get(i):
        if i not in out:
            nd = by_id[i]
            if nd["parent"] is None:
                out[i] = ([], [])
            else:
                s1, s0 = get(nd["parent"])
                j, v = nd["branch_var"], nd["branch_value"]
                out[i] = (s1 + [j], s0) if v == 1 else (s1, s0 + [j])
        return out[i]

    for i in by_id:
        get(i)
    return out


def _leaf_witnesses(cert: Certificate):
    """(leaf position, witness) with the nearest ancestor's witness for leaves without one."""
    by_id = {nd["index"]: nd for nd in cert.nodes}
    for nd in cert.nodes:
        if nd["status"] == "branched":
            continue
        cur = nd
        while cur["witness"] is None and cur["parent"] is not None:
            cur = by_id[cur["parent"]]
        if cur["witness"] is not None:
            kind, slot = cur["witness"]
            yield nd["index"], (kind, cert.witness(kind, slot))


def _mutations(w, X, ym, loss, fit_intercept, rng):
    """Witnesses an attacker could substitute: scaled, along null directions, at the boundary."""
    kind, vec = w
    out = [w]
    lo, hi = dual_domain_bounds(loss, ym)
    if kind == "dual":
        _, _, Vt = np.linalg.svd(X.T)
        null = Vt[-1] if X.shape[0] > np.linalg.matrix_rank(X) else None
        cands = [vec * 1.37, vec * (1 + 1e-9)]
        if loss in ("squared", "poisson") and null is not None:
            for t in (1e3, 1e9, 1e15):
                cands.append(vec + t * null if loss == "squared" else vec + t * np.abs(null))
        if loss == "logistic":  # to the boundary of the domain
            cands.append(np.where(rng.random(vec.size) < 0.5, lo, hi))
        for z in cands:
            z = np.clip(z, lo, hi)
            if fit_intercept:
                try:
                    z = zero_sum(z, lo, hi)
                except AssertionError:
                    continue
            out.append((kind, z))
    else:
        _, _, Vt = np.linalg.svd(X)
        for t in (1e2, 1e8, 1e14):
            out.append((kind, vec + t * Vt[-1]))
    return out


def _with_witnesses(cert: Certificate, X, y, witnesses: dict[int, tuple],
                    lower: float) -> Certificate:
    """The certificate with leaf witnesses replaced and the lower bound claimed at ``lower``."""
    nodes = []
    for nd in cert.nodes:
        if nd["status"] != "branched":
            w = witnesses.get(nd["index"])
        else:
            w = None if nd["witness"] is None else (nd["witness"][0],
                                                     cert.witness(*nd["witness"]))
        nodes.append(dict(id=nd["index"], parent=nd["parent"], branch_var=nd["branch_var"],
                          branch_value=nd["branch_value"], status=nd["status"], witness=w,
                          derive_fixings=nd["derive"]))
    inc = cert.incumbent
    return Certificate.build(
        X, y,
        problem={k: cert.problem[k] for k in ("loss", "k", "lambda2", "max_abs_coef",
                                              "fit_intercept")},
        incumbent=dict(coef=np.array(inc["coef"]), intercept=inc["intercept"],
                       objective=inc["objective"]),
        bounds=dict(lower_bound=lower, upper_bound=cert.upper_bound, status=cert.status,
                    rel_gap_tol=cert.bounds["rel_gap_tolerance"],
                    abs_gap_tol=cert.bounds["abs_gap_tolerance"]),
        eig_shift=cert.data["relaxation"]["eig_shift"], nodes=nodes)


# ------------------------------------------------------------------------------ the test


@pytest.mark.parametrize("family, loss, fit_intercept", CASES)
def test_accepted_certificates_contain_the_exact_optimum(family, loss, fit_intercept):
    X, y = _family(family, loss, seed=len(family) + 7 * fit_intercept)
    k, lam = 2, 0.3
    ym = map_labels(y, loss)
    res = sparsecert.certify(X, y, k, lam, loss=loss, fit_intercept=fit_intercept, verbose=0,
                             rel_gap=1e-6)
    cert = res.certificate
    rep = verify_certificate(cert, X, y)
    assert rep.ok, str(rep)  # an honest certificate always verifies
    mu = cert.data["relaxation"]["eig_shift"]
    fix = _fixings(cert)
    pr = cert.problem
    M = pr["max_abs_coef"]

    # the incumbent: UB is above the exact objective
    if loss == "squared":
        exact_obj = squared_objective(X, y, lam, res.coef, res.intercept)
        assert exact_obj <= F(cert.upper_bound)
        opt = squared_optimum(X, y, k, lam, fit_intercept)
        assert F(cert.lower_bound) <= opt <= F(cert.upper_bound)
    else:
        lo, hi = objective_enclosure(X, ym, loss, lam, res.coef, res.intercept)
        assert hi <= cert.upper_bound

    # every leaf, every mutated witness: the verifier's bound is below the exact truth
    rng = np.random.default_rng(0)
    best_mutants: dict[int, tuple] = {}
    tight = False
    for leaf, w in _leaf_witnesses(cert):
        s1, s0 = fix[leaf]
        exact_node = (node_optimum(X, y, k, lam, s1, s0, fit_intercept) if loss == "squared"
                      else None)
        best = -np.inf
        honest = node_lower_bound(X, ym, Problem(loss, lam, k, M, fit_intercept=fit_intercept), s1,
                                  s0, w, eig_shift=mu)
        tight = tight or (loss == "squared" and float(exact_node - F(honest))
                          <= 2e-6 * max(1.0, float(exact_node)))
        for mw in _mutations(w, X, ym, loss, fit_intercept, rng):
            b = node_lower_bound(X, ym, Problem(loss, lam, k, M, fit_intercept=fit_intercept), s1,
                                 s0, mw, eig_shift=mu)
            if not np.isfinite(b):
                continue
            if loss == "squared":
                assert F(b) <= exact_node, (leaf, mw[0])
            if mw[0] == "dual":
                assert b <= dual_value_upper(X, ym, loss, lam, M, k, s1, s0, mw[1],
                                             fit_intercept), (leaf,)
            if b > best:
                best, best_mutants[leaf] = b, mw
    # not vacuous: some leaf is bounded within the requested gap of its exact optimum
    assert tight or loss != "squared"
    # the mutated certificate, its lower bound raised to the most the verifier accepts (probed
    # with a claim at the upper bound: the bound fixings it derives only shrink the regions
    # when the claim is then lowered to that minimum)
    mutated = _with_witnesses(cert, X, y, best_mutants, cert.upper_bound)
    top = verify_certificate(mutated, X, y).certified_lower_bound
    if np.isfinite(top):
        mutated = _with_witnesses(cert, X, y, best_mutants, min(top, cert.upper_bound))
        rep = verify_certificate(mutated, X, y)
        assert rep.ok, str(rep)
        if loss == "squared":
            assert F(mutated.lower_bound) <= squared_optimum(X, y, k, lam, fit_intercept)
        assert Fraction(mutated.lower_bound) <= F(cert.upper_bound)
