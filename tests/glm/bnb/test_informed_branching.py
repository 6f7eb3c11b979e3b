"""Informed branching (pseudo-costs, strong branching, reliability): the book-keeping against a
hand-computed example, strong-branching bounds against enumeration, and searches under every
rule that reach the enumerated optimum with certificates the verifier accepts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _bruteforce import brute_force, solve_support
from _data import sparse_glm_data

import sparsecert
from sparsecert._validation import prepare
from sparsecert.api import certify_prepared
from sparsecert.bnb import BRANCHING_RULES, BnBSettings, BranchAndBound
from sparsecert.bnb.evaluate import NodeContext, NodeTask
from sparsecert.bnb.informed import BranchSpec, StrongParams, choose
from sparsecert.bnb.pseudocost import PseudoCosts, product_score
from sparsecert.problem import ProblemSpec
from sparsecert.solvers.perspective import RelaxationProblem, solve_node

INFORMED = ("pseudo_cost", "strong", "reliability")


def _data(loss="squared", n=40, p=10, seed=0):
    if loss == "logistic":  # the enumeration solves each support with scipy: fewer of them
        p = min(p, 8)
    return sparse_glm_data(loss, n, p, seed, rho=0.6, support=(1, 4, 6, -2),
                           coef=(1.0, -0.8, 0.6, 0.5), noise=1.5)


def test_pseudo_costs_match_a_hand_computed_example():
    pc = PseudoCosts(4)
    # variable 1 down: gains 2 at z = 0.5 and 3 at z = 0.25 -> 4 and 12 per unit, average 8
    assert pc.record(1, 0, 2.0, 0.5)
    assert pc.record(1, 0, 3.0, 0.25)
    # variable 1 up: gain 1 at 1 - z = 0.5 -> 2; variable 3 up: gain 0.9 at 0.3 -> 3
    assert pc.record(1, 1, 1.0, 0.5)
    assert pc.record(3, 1, 0.9, 0.3)
    # a negative gain counts as 0; a vanishing fractionality is not recorded
    assert pc.record(3, 1, -5.0, 0.5)
    assert not pc.record(2, 0, 1.0, 0.0)
    t = pc.table()
    assert t.observed
    assert t.down[1] == pytest.approx(8.0)
    assert t.up[1] == pytest.approx(2.0)
    assert t.up[3] == pytest.approx(1.5)  # (3 + 0) / 2
    assert list(t.n_down) == [0, 2, 0, 0] and list(t.n_up) == [0, 1, 0, 2]
    down, up = t.estimates()
    # unobserved entries: the direction's average over the observed variables
    assert down.tolist() == pytest.approx([8.0, 8.0, 8.0, 8.0])
    assert up.tolist() == pytest.approx([1.75, 2.0, 1.75, 1.5])
    assert t.reliable(1).tolist() == [False, True, False, False]
    # the product score with its floor: eps = 1e-9 * max(1, |scale|)
    s = product_score(np.array([2.0, 0.0]), np.array([3.0, 4.0]), 100.0)
    assert s.tolist() == pytest.approx([6.0, 4e-7])
    # the children's gains: expected at branching, recorded once when bounded
    pc.expect(7, 0, 1, parent_bound=10.0, frac=0.4)
    assert pc.observe(7, 10.8)  # 0.8 / 0.4 = 2
    assert not pc.observe(7, 11.0)
    assert pc.table().up[0] == pytest.approx(2.0)
    pc.expect(8, 2, 0, parent_bound=10.0, frac=0.5)
    pc.forget(8)
    assert not pc.observe(8, 12.0)


def test_the_informed_rules_are_accepted_by_name():
    for rule in INFORMED:
        assert rule in BRANCHING_RULES
    X, y = _data()
    with pytest.raises(ValueError, match="branching"):
        sparsecert.certify(X, y, 3, 0.1, branching="pseudocost", verbose=0)


def _region_optimum(X, y, k, lam, loss, fi, fo):
    """The best objective over the supports of the region (brute force)."""
    p = X.shape[1]
    free = [j for j in range(p) if not fi[j] and not fo[j]]
    inside = list(np.flatnonzero(fi))
    best = np.inf
    for size in range(k - len(inside) + 1):
        for S in itertools.combinations(free, size):
            best = min(best, solve_support(X, y, inside + list(S), loss, lam)[0])
    return best


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_strong_branching_child_bounds_are_below_the_enumerated_region_optima(loss):
    X, y = _data(loss, p=8 if loss == "squared" else 6)
    k, lam = (3, 0.05) if loss == "squared" else (2, 0.05)
    prob = RelaxationProblem.from_data(X, y, lam, loss=loss)
    p = X.shape[1]
    fi, fo = np.zeros(p, bool), np.zeros(p, bool)
    res = solve_node(prob, k, fi, fo, rel_tol=1e-6, max_iter=5000)
    task = NodeTask(NodeContext(prob, k), fi, fo, cutoff=np.inf, warm_start=None, rel_tol=1e-6,
                    max_iter=5000, time_limit=None)
    # enough iterations for every child to converge: every candidate's gains are observed
    spec = BranchSpec("strong", None, True, StrongParams(candidates=4, iterations=5000))
    choice = choose(task.context, task, spec, res, fi, fo, float(res.lower_bound))
    assert choice.n_solves == 2 * len(choice.observations) > 2
    assert choice.n_iter > 0
    down, up = choice.children
    j = choice.var
    for value, sb in ((0, down), (1, up)):
        cfi, cfo = fi.copy(), fo.copy()
        (cfi if value else cfo)[j] = True
        ref = _region_optimum(X, y, k, lam, loss, cfi, cfo)
        assert sb.lower_bound <= ref + 1e-7 * max(1.0, abs(ref))
    # the chosen candidate has the largest product of its observed gains
    scores = {jj: product_score(np.array([gd]), np.array([gu]), res.lower_bound)[0]
              for jj, _, gd, gu in choice.observations}
    assert scores[j] == max(scores.values())


@pytest.mark.parametrize("rule", INFORMED)
@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_searches_under_every_rule_reach_the_optimum_and_verify(rule, loss, tmp_path):
    X, y = _data(loss)
    k, lam = 3, 0.02
    res = sparsecert.certify(X, y, k, lam, loss=loss, fit_intercept=False, branching=rule,
                             batch_size=2, verbose=0)
    assert res.status == "optimal"
    if loss == "squared":  # enumeration (lstsq per support)
        ref, _ = brute_force(X, y, k, loss, lam)
        assert res.objective == pytest.approx(ref, rel=1e-6)
        assert res.lower_bound <= ref + 1e-7 * max(1.0, abs(ref))
    else:  # the default rule's certified optimum (enumeration with scipy is slow here)
        ref = sparsecert.certify(X, y, k, lam, loss=loss, fit_intercept=False,
                                 verbose=0).objective
        assert res.objective == pytest.approx(ref, rel=2e-4)
    assert res.search.n_evaluated > 3  # a real tree
    # strong branching's iterations are counted, on top of the nodes' own
    prob = RelaxationProblem.from_data(X, y, lam, loss=loss)
    s = BranchAndBound(prob, k, BnBSettings(verbose=0, branching=rule, batch_size=2)).run()
    assert (s.n_strong_iters > 0) == (rule != "pseudo_cost")
    assert s.n_relaxation_iters == s.n_strong_iters + sum(n.n_iter for n in s.nodes)
    path = tmp_path / "c.json"
    res.save(path)
    assert sparsecert.verify(path, X, y).ok


def test_strong_branching_bounds_prune_children_and_the_certificate_verifies(tmp_path):
    """A child whose strong-branching bound passes the cutoff is closed without its own
    relaxation, its bound proven by the strong-branching witness."""
    X, y = _data("squared", n=30, p=12, seed=3)
    k, lam = 4, 0.01
    prob = RelaxationProblem.from_data(X, y, lam, loss="squared")
    res = BranchAndBound(prob, k, BnBSettings(verbose=0, branching="strong",
                                              batch_size=1)).run()
    unevaluated = [n for n in res.nodes if n.n_iter == 0 and n.parent is not None
                   and n.witness is not None and n.status == "pruned"
                   and n.lower_bound > res.nodes[n.parent].lower_bound]
    assert unevaluated, "no child was closed on its strong-branching bound"
    ref, _ = brute_force(X, y, k, "squared", lam)
    assert res.upper_bound == pytest.approx(ref, rel=1e-6)
    cert = sparsecert.certify(X, y, k, lam, fit_intercept=False, branching="strong",
                              batch_size=1, verbose=0)
    cert.save(tmp_path / "c.json")
    assert sparsecert.verify(tmp_path / "c.json", X, y).ok


@pytest.mark.parametrize("rule", ["strong", "reliability"])
def test_the_tree_is_the_same_on_threads_and_with_subtree_tasks_it_verifies(rule, tmp_path):
    X, y = _data("logistic", seed=2)
    k, lam = 3, 0.02
    prob = RelaxationProblem.from_data(X, y, lam, loss="logistic")

    def tree(**kw):
        res = BranchAndBound(prob, k, BnBSettings(verbose=0, branching=rule, batch_size=3,
                                                  **kw)).run()
        return [(n.id, n.parent, n.branch_var, n.status, n.lower_bound) for n in res.nodes]

    assert tree() == tree(n_jobs=2)
    ref = sparsecert.certify(X, y, k, lam, loss="logistic", fit_intercept=False,
                             verbose=0).objective
    spec = ProblemSpec(k=k, lambda2=lam, loss="logistic", fit_intercept=False)
    res = certify_prepared(prepare(X, y, spec), BnBSettings(verbose=0, branching=rule,
                                                             subtree_nodes=4, batch_size=2))
    assert res.objective == pytest.approx(ref, rel=2e-4)
    res.save(tmp_path / "c.json")
    assert sparsecert.verify(tmp_path / "c.json", X, y).ok
