"""The lean Python of a node evaluation gives what the plain forms give.

The node task's Python (the witness terms of the fixing screen, the screen itself, the rounding
heuristic) avoids generic checks and repeated numpy calls, and the screen's products with X run
in the compiled (GIL-free) kernels. Each piece is compared here with the straightforward form it
replaces: the rounding and the fixing plans exactly, the screen's terms to rounding (the screen
has a relative slack of 1e-9, so its verdicts, and the plans, are the same); and a whole serial
search with the plain forms swapped in must give the same tree, node by node.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _data import sparse_glm_data

import sparsecert.bnb.evaluate as bnb_evaluate
from sparsecert.bnb.fixing import (
    FIX_SLACK,
    WitnessTerms,
    dual_terms,
    fixing_plan,
    plan_fixings,
)
from sparsecert.bnb.node import Witness
from sparsecert.solvers.heuristics import SupportRefitter, round_relaxation
from sparsecert.solvers.losses import get_loss
from sparsecert.solvers.perspective import RelaxationProblem, solve_node


def _data(n=30, p=16, seed=0):
    return sparse_glm_data("squared", n, p, seed, support=(1, 5, 9), coef=(1.0, -0.8, 0.6))


def _problem(loss="squared", seed=0, **kw):
    X, y = _data(seed=seed)
    if loss == "logistic":
        y = np.where(y > 0, 1.0, -1.0)
    return RelaxationProblem.from_data(X, y, 0.2, loss=loss, **kw)


def _masks(p, rng, n_in, n_out):
    idx = rng.permutation(p)
    fi, fo = np.zeros(p, bool), np.zeros(p, bool)
    fi[idx[:n_in]] = True
    fo[idx[n_in:n_in + n_out]] = True
    return fi, fo


# -- the plain forms (as the node task computed them before) ---------------------------------
def _plain_terms(prob, witness, cols):
    """K, lam and the terms h on ``cols`` (inf elsewhere) through the loss's generic methods."""
    kind, vec = witness.kind, witness.vector
    loss = get_loss(prob.loss)
    zeta = vec if kind == "dual" else loss.gradient(prob.X @ vec, prob.y)
    if cols.size == prob.n_features:
        K, h = dual_terms(prob, zeta)
        return K, prob.lambda2, h
    K = -loss.conjugate_sum(zeta, prob.y)
    h = np.full(prob.n_features, np.inf)
    xtz = (prob.XT @ zeta)[cols] if 2 * cols.size >= prob.n_features else prob.XT[cols] @ zeta
    a = np.abs(xtz) / (2.0 * prob.lambda2)
    h[cols] = 0.5 * a * a
    return float(K), prob.lambda2, h


def _plain_fixing_plan(terms, witness, fixed_in, fixed_out, k, cutoff):
    free = np.flatnonzero(~(fixed_in | fixed_out))
    beta = k - int(fixed_in.sum())
    if beta <= 0 or free.size <= beta or not math.isfinite(cutoff):
        return None
    K, lam, h = _plain_terms(terms.problem, witness, np.flatnonzero(~fixed_out))
    top = -np.partition(-h[free], beta)[:beta + 1]
    top.sort()
    bound = K - 2.0 * lam * (float(h[fixed_in].sum()) + float(top[1:].sum()))
    gain = 2.0 * lam * max(top[1], top[-1] - top[0])
    if not bound + gain >= cutoff - 1e-9 * max(1.0, abs(cutoff)):
        return None
    wb = terms.safe(witness, np.flatnonzero(~fixed_out))
    if wb is None:
        return None
    plan = plan_fixings(wb, fixed_in, fixed_out, k, cutoff + FIX_SLACK * max(1.0, abs(cutoff)))
    return plan if plan.fixings else None


def _plain_round(refitter, coef, k, fixed_in, fixed_out):
    free = ~(fixed_in | fixed_out)
    score = np.where(free, np.abs(coef), -np.inf)
    ok = np.flatnonzero(np.isfinite(score))
    take = ok[np.lexsort((ok, -score[ok]))][:k - int(fixed_in.sum())]
    take = take[np.abs(coef[take]) > 0]
    return refitter.fit(tuple(np.flatnonzero(fixed_in)) + tuple(int(j) for j in take))


# -- the pieces --------------------------------------------------------------------------------
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_witness_zeta_and_conjugate_sum_are_the_loss_s_own(loss):
    prob = _problem(loss)
    f = get_loss(loss)
    terms = WitnessTerms(prob)
    rng = np.random.default_rng(1)
    for _ in range(3):
        vec = rng.normal(size=prob.n_features)
        zeta = terms._zeta(Witness("point", vec))  # the safe terms start here
        assert np.array_equal(zeta, f.gradient(prob.X @ vec, prob.y))
        assert terms._conjugate_sum(zeta) == f.conjugate_sum(zeta, prob.y)


@pytest.mark.parametrize("n_out", [0, 3, 12])
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_plain_terms_agree_with_the_generic_computation_to_rounding(n_out, loss):
    prob = _problem(loss)
    rng = np.random.default_rng(n_out)
    fi, fo = _masks(prob.n_features, rng, 2, n_out)
    cols = np.flatnonzero(~fo)
    for witness in (Witness("point", rng.normal(size=prob.n_features) * ~fo),
                    Witness("dual", 0.3 * rng.normal(size=prob.n_samples))):
        if loss == "logistic" and witness.kind == "dual":
            witness = Witness("dual", -prob.y * rng.uniform(0.1, 0.9, size=prob.n_samples))
        K, lam, h = WitnessTerms(prob).plain(witness, cols)
        K0, lam0, h0 = _plain_terms(prob, witness, cols)
        assert lam == lam0
        assert K == pytest.approx(K0, rel=1e-13, abs=1e-13)
        np.testing.assert_allclose(h[cols], h0[cols], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed", range(4))
def test_fixing_plan_equals_the_plain_screen_and_plan(seed):
    prob = _problem(seed=seed)
    rng = np.random.default_rng(seed)
    k, p = 4, prob.n_features
    terms = WitnessTerms(prob)
    n_plans = 0
    for n_in, n_out in ((0, 0), (1, 3), (2, 6), (3, 0)):
        fi, fo = _masks(p, rng, n_in, n_out)
        res = solve_node(prob, k, fi, fo, rel_tol=1e-8)
        witness = Witness("point", res.bound_point)
        for rise in (-1.0, 0.0, 1e-3, 0.05, 0.3, 1.0, 3.0, 10.0, np.inf):
            cutoff = res.lower_bound + rise * max(1.0, abs(res.lower_bound))
            got = fixing_plan(terms, witness, fi, fo, k, cutoff)
            want = _plain_fixing_plan(terms, witness, fi, fo, k, cutoff)
            assert (got is None) == (want is None)
            if got is not None:
                n_plans += 1
                assert got.fixings == want.fixings
                assert got.region_bounds == want.region_bounds
                assert got.covers_node == want.covers_node
    assert n_plans > 0  # the comparison saw fixings, not only screened-out nodes


@pytest.mark.parametrize("seed", range(5))
def test_rounding_picks_the_plain_support(seed):
    X, y = _data(seed=seed)
    refitter = SupportRefitter(X, y, "squared", 0.2)
    rng = np.random.default_rng(seed)
    p = X.shape[1]
    coef = rng.normal(size=p)
    coef[rng.integers(p, size=3)] = 0.0
    coef[rng.integers(p, size=2)] = coef[rng.integers(p)]  # ties, broken by the lower index
    for n_in, n_out in ((0, 0), (1, 2), (3, 10), (4, 0)):
        fi, fo = _masks(p, rng, n_in, n_out)
        got = round_relaxation(refitter, coef, 5, fi, fo)
        want = _plain_round(refitter, coef, 5, fi, fo)
        assert got.support == want.support and got.objective == want.objective


def test_a_serial_search_with_the_plain_forms_gives_the_same_tree(monkeypatch):
    from sparsecert.bnb import BnBSettings, BranchAndBound

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 20))
    y = X[:, [1, 5, 9]] @ np.array([1.0, -0.8, 0.6]) + rng.normal(size=30)
    prob = RelaxationProblem.from_data(X, y, 1.0)

    def run():
        s = BnBSettings(rel_gap=0.0, abs_gap=0.0, node_limit=80, batch_size=4,
                        heuristic_every=3, verbose=0)
        eng = BranchAndBound(prob, 5, s)
        res = eng.run()
        tree = [(n.id, n.parent, n.branch_var, n.branch_value, n.status, n.lower_bound,
                 list(n.bound_fixings)) for n in res.nodes]
        return tree, res.support, res.upper_bound, res.lower_bound, eng.n_fixed

    lean = run()
    monkeypatch.setattr(bnb_evaluate, "fixing_plan", _plain_fixing_plan)
    monkeypatch.setattr(bnb_evaluate, "round_relaxation", _plain_round)
    plain = run()
    assert len(lean[0]) > 50 and lean[-1] > 5  # a tree with reduced-cost fixings
    assert lean == plain
