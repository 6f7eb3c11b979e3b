"""The looser node tolerance once the primal value is below the cutoff (``open_rel_tol``): a
node whose every iterate stays above the cutoff runs exactly as without it; a node whose
relaxation optimum is below the cutoff stops at the looser tolerance, with a valid bound; the
search with it still finds the enumerated optimum, and its certificate verifies and records
the setting."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _bruteforce import brute_force
from _data import sparse_glm_data

from sparsecert.bnb import BnBSettings, BranchAndBound
from sparsecert.solvers.perspective import RelaxationProblem, solve_node
from sparsecert.solvers.perspective.node import Limits

TIGHT = 1e-9
LOOSE = 1e-2


def _problem(loss: str, p: int, intercept: bool = False) -> RelaxationProblem:
    X, y = sparse_glm_data(loss, 30, p, 2, rho=0.5, support=(1, 4, -2),
                           coef=(1.0, -0.8, 0.6), noise=0.8, offset=0.5, poisson_scale=0.4)
    if loss == "squared":
        X = X - X.mean(axis=0)
        y = y - y.mean()
    return RelaxationProblem.from_data(X, y, 0.05, loss=loss, fit_intercept=intercept)


# (problem, solve_node options, the strategy that must solve the node)
CASES = {
    "full": (lambda: _problem("squared", 12), dict(solver="fista", working_set=False), "full"),
    "working_set": (lambda: _problem("squared", 200), dict(solver="fista", working_set=True),
                    "working_set"),
    "zspace": (lambda: _problem("squared", 40), dict(solver="zspace"), "zspace"),
    "logistic_intercept": (lambda: _problem("logistic", 12, intercept=True),
                           dict(solver="fista"), "full"),
}


def _fixings(prob):
    p = prob.n_features
    fi, fo = np.zeros(p, bool), np.zeros(p, bool)
    fi[0] = True
    fo[3] = True
    return fi, fo


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_looser_tolerance_applies_only_below_the_cutoff(case):
    make, opts, strategy = CASES[case]
    prob = make()
    k = 3
    fi, fo = _fixings(prob)
    tight = solve_node(prob, k, fi, fo, rel_tol=1e-12, max_iter=200000, **opts)
    assert tight.strategy == strategy
    lo, hi = float(tight.lower_bound), float(tight.objective)
    assert hi - lo <= 1e-9 * max(1.0, abs(hi))  # the relaxation's optimum is within [lo, hi]

    # a cutoff just below the optimum: every iterate's P is above it, the open tolerance
    # never applies and the run is the one without it, step for step
    cut = lo - 1e-6 * max(1.0, abs(lo))
    plain = solve_node(prob, k, fi, fo, rel_tol=TIGHT, max_iter=200000, cutoff=cut, **opts)
    opened = solve_node(prob, k, fi, fo, rel_tol=TIGHT, max_iter=200000, cutoff=cut,
                        open_rel_tol=LOOSE, **opts)
    assert plain.status == opened.status == "cutoff"
    assert opened.n_iter == plain.n_iter
    assert opened.lower_bound == plain.lower_bound and opened.lower_bound >= cut

    # a cutoff above the optimum: the node cannot be pruned, and it stops at the open
    # tolerance, earlier, with a bound that is still valid
    cut = hi + 0.05 * max(1.0, abs(hi))
    plain = solve_node(prob, k, fi, fo, rel_tol=TIGHT, max_iter=200000, cutoff=cut, **opts)
    opened = solve_node(prob, k, fi, fo, rel_tol=TIGHT, max_iter=200000, cutoff=cut,
                        open_rel_tol=LOOSE, **opts)
    assert plain.status == opened.status == "converged"
    assert plain.gap <= TIGHT
    assert opened.gap <= LOOSE and opened.objective < cut
    assert opened.n_iter < plain.n_iter
    assert opened.lower_bound <= hi + 1e-9 * max(1.0, abs(hi))
    assert opened.lower_bound >= opened.objective - LOOSE * max(1.0, abs(opened.objective))


def test_the_limits_pick_the_tolerance_at_the_primal_value():
    lim = Limits(1e-6, 10, cutoff=5.0, open_rel_tol=1e-3)
    assert lim.tol_at(4.999) == 1e-3
    assert lim.tol_at(5.0) == 1e-6 and lim.tol_at(7.0) == 1e-6
    assert Limits(1e-6, 10, cutoff=5.0).tol_at(1.0) == 1e-6  # None: one tolerance
    assert Limits(1e-3, 10, cutoff=5.0, open_rel_tol=1e-6).tol_at(1.0) == 1e-3  # never tighter


@pytest.mark.parametrize("bad", [-1e-3, float("nan")])
def test_a_bad_open_tolerance_is_refused(bad):
    prob = _problem("squared", 12)
    with pytest.raises(ValueError, match="open_rel_tol must be None or >= 0"):
        solve_node(prob, 3, open_rel_tol=bad)


@pytest.mark.parametrize("loss, subtree", [("squared", 1), ("logistic", 1), ("squared", 4)])
def test_a_search_with_the_open_tolerance_finds_the_enumerated_optimum(loss, subtree):
    X, y = sparse_glm_data(loss, 40, 9, 0, rho=0.5, support=(1, 4, -2), coef=(1.0, -0.8, 0.6),
                           noise=0.8, offset=2.0, poisson_scale=0.4)
    k, lam = 3, 0.05
    prob = RelaxationProblem.from_data(X, y, lam, loss=loss)
    res = BranchAndBound(prob, k, BnBSettings(verbose=0, node_open_rel_tol=LOOSE,
                                              subtree_nodes=subtree, batch_size=3)).run()
    ref, _ = brute_force(X, y, k, loss, lam)
    assert res.status == "optimal"
    assert res.upper_bound == pytest.approx(ref, rel=1e-6)
    assert res.lower_bound <= ref + 1e-7 * max(1, abs(ref))
    assert res.n_evaluated > 3


def test_the_certificate_of_a_search_with_the_open_tolerance_verifies(tmp_path):
    import sparsecert
    from sparsecert._validation import prepare
    from sparsecert.api import certify_prepared
    from sparsecert.problem import ProblemSpec

    X, y = sparse_glm_data("squared", 30, 12, 3, rho=0.5, support=(1, 4, -2),
                           coef=(1.0, -0.8, 0.6), noise=0.8, offset=2.0, poisson_scale=0.4)
    res = certify_prepared(prepare(X, y, ProblemSpec(k=3, lambda2=0.05, loss="squared")),
                           BnBSettings(verbose=0, node_open_rel_tol=LOOSE))
    assert res.status == "optimal" and res.n_nodes > 3
    res.save(tmp_path / "c.json")
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["producer"]["settings"]["node_open_rel_tol"] == LOOSE
    assert sparsecert.verify(tmp_path / "c.json", X, y).ok


def test_the_settings_resolve_the_open_tolerance():
    assert BnBSettings().open_rel_tol == BnBSettings().rel_gap  # None: the gap asked for
    assert BnBSettings(rel_gap=1e-3).open_rel_tol == 1e-3
    assert BnBSettings(rel_gap=0.0).open_rel_tol == 1e-6  # never below node_rel_tol
    assert BnBSettings(node_open_rel_tol=0).open_rel_tol == 1e-6
    assert BnBSettings(node_open_rel_tol=5e-3).open_rel_tol == 5e-3
    assert BnBSettings(node_open_rel_tol=5e-3).record()["node_open_rel_tol"] == 5e-3
    assert BnBSettings().record()["node_open_rel_tol"] == BnBSettings().rel_gap


@pytest.mark.parametrize("bad", [-1e-3, float("nan"), "1e-3", True])
def test_a_bad_open_tolerance_setting_is_refused(bad):
    with pytest.raises(ValueError, match="node_open_rel_tol must be None or a number >= 0"):
        BnBSettings(node_open_rel_tol=bad)
