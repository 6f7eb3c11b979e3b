"""The node strategies as objects that say when they apply, and the automatic choice between
z-space and FISTA by expected cost: on a square least-squares problem with a small ridge weight
the choice is FISTA, which costs fewer operations there (counted here without the cost model's
weights); the race is reproducible, and the search runs it on its first node below the root;
every strategy certifies the enumerated optimum."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pytest
from _bruteforce import brute_force

from sparsecert.bnb import BnBSettings, BranchAndBound
from sparsecert.datasets import make_synthetic
from sparsecert.solvers.perspective import RelaxationProblem, solve_node, strategies
from sparsecert.solvers.perspective.centring import Centring
from sparsecert.solvers.perspective.cost import Iterations
from sparsecert.solvers.perspective.node import NodeProblem, Start


def _square(n: int, lam: float = 0.01, seed: int = 0) -> RelaxationProblem:
    """n = p, Toeplitz rho = 0.5, SNR 3, columns centred and unit-norm, no intercept (the
    centring leaves no eigen shift: z-space applies)."""
    X, y, _ = make_synthetic(n, n, 10, rho=0.5, snr=3.0, seed=seed)
    X = X - X.mean(axis=0)
    X /= np.linalg.norm(X, axis=0)
    prob = RelaxationProblem.from_data(X, y - y.mean(), lam, eig_shift="auto")
    assert prob.mu == 0.0
    return prob


def _multiply_adds(prob, k, res, fixed_out) -> float:
    """The multiply-adds of a node solve, counted from its iterations without the cost model:
    FISTA two mat-vecs per iteration (at most: the sorts and the set-up are left out, which
    favours FISTA's rival); z-space at least two evaluations of phi per iteration, each one
    product with the active columns and the Gram matrix and factorisation of the smaller
    system at the solution's positive indicators."""
    n = prob.n_samples
    m = int(np.count_nonzero(~fixed_out))
    if res.strategy == "zspace":
        s = int(np.count_nonzero(res.z > 0))
        q = min(s, n)
        return 2.0 * res.n_iter * (n * m + max(s, n) * q * q / 2.0 + q ** 3 / 6.0)
    return 2.0 * res.n_iter * n * m


@pytest.mark.parametrize("config, applies, leaf_exact", [
    (dict(), {"exact": False, "zspace": True, "working_set": True, "full": True}, True),
    (dict(max_abs_coef=2.0), {"exact": False, "zspace": False, "working_set": True,
                              "full": True}, False),
    (dict(loss="logistic", fit_intercept=True), {"exact": False, "zspace": False,
                                                 "working_set": False, "full": True}, False),
    (dict(eig_shift=0.01), {"exact": False, "zspace": False, "working_set": True,
                            "full": True}, True),
])
def test_each_strategy_says_when_it_applies(config, applies, leaf_exact):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 8))
    y = X[:, 0] - X[:, 2] + 0.1 * rng.standard_normal(30)
    if config.get("loss") == "logistic":
        y = np.where(y > 0, 1.0, -1.0)
    prob = RelaxationProblem.from_data(X, y, 0.5, **config)
    node = NodeProblem.build(prob, 3, np.zeros(8, bool), np.zeros(8, bool))
    assert {s.name: s.applies(node) for s in strategies.STRATEGIES} == applies
    leaf = NodeProblem.build(prob, 3, np.arange(8) < 2, np.arange(8) >= 3)  # no free feature
    assert strategies.EXACT_LEAF.applies(leaf) == leaf_exact
    assert strategies.choose(leaf, Start.of(leaf)).name == (
        "exact" if leaf_exact else "full")


def test_auto_takes_fista_where_it_costs_fewer_operations():
    """n = p = 80, k = 8, lambda2 = 0.01: FISTA costs far fewer operations than z-space at the
    root and at a child; the root's race measures it and the child's choice is FISTA."""
    prob = _square(80)
    k, p = 8, prob.n_features
    none = np.zeros(p, bool)
    root = solve_node(prob, k, race=True)
    race = root.race
    assert race is not None and root.strategy == race.winner == "full"
    assert race.fista_cost < race.zspace_cost  # (z-space stopped at its cap, or finished)
    out = np.zeros(p, bool)
    out[np.argmax(np.abs(root.coef))] = True  # the child z_j = 0 on the largest coefficient
    counts = {}
    for solver in ("zspace", "fista"):
        res = solve_node(prob, k, None, out, warm_start=root, solver=solver,
                         cutoff=root.objective)
        counts[res.strategy] = _multiply_adds(prob, k, res, out)
    auto = solve_node(prob, k, None, out, warm_start=root, iterations=race.iterations,
                      cutoff=root.objective)
    assert auto.strategy == min(counts, key=counts.get) == "full"
    assert counts["zspace"] > 5 * counts["full"]
    root_counts = {"full": 2.0 * race.fista_iters * prob.n_samples * p}
    assert root_counts["full"] < _multiply_adds(prob, k, solve_node(prob, k, solver="zspace"),
                                                none)


def test_the_choice_follows_the_expected_iterations():
    """With the same node, z-space is taken once FISTA is expected to need enough more
    iterations (the riboflavin-like case: many correlated columns), FISTA otherwise."""
    prob = _square(40, lam=0.1)
    node = NodeProblem.build(prob, 5, np.zeros(40, bool), np.arange(40) >= 30)
    start = Start.of(node)
    picks = [strategies.choose(node, start, iterations=Iterations(50.0, f)).name
             for f in (10.0, 1e2, 1e4, 1e6)]
    assert picks[0] == "full" and picks[-1] == "zspace"
    assert picks == sorted(picks, key=["full", "zspace"].index)  # one switch, no way back
    assert strategies.choose(node, start, iterations=Iterations(np.inf, 1e6)).name == "full"


def test_the_race_is_reproducible_and_keeps_the_winners_own_result():
    prob = _square(40, lam=0.05, seed=3)
    k = 5
    a = solve_node(prob, k, race=True)
    b = solve_node(prob, k, race=True)
    assert a.race == b.race
    np.testing.assert_array_equal(a.coef, b.coef)
    alone = solve_node(prob, k, solver="zspace" if a.strategy == "zspace" else "fista")
    assert alone.strategy == a.strategy
    np.testing.assert_array_equal(alone.coef, a.coef)
    assert alone.lower_bound == a.lower_bound and alone.n_iter == a.n_iter
    # z-space does not apply with a box: no race, the FISTA result
    boxed = RelaxationProblem.from_data(prob.X, prob.y, 0.05, max_abs_coef=1.0)
    assert solve_node(boxed, k, race=True).race is None


def test_the_search_races_on_its_first_node_below_the_root():
    """The search races the strategies once, on the root's first child, not on the root: the
    root's reduced-cost fixings leave the child a few dozen of the 400 columns, so the race
    costs a fraction of a race at the root, and every later node expects its iterations."""
    X, y, _ = make_synthetic(40, 400, 4, rho=0.5, snr=10.0, seed=0)
    X = X - X.mean(axis=0)
    X /= np.linalg.norm(X, axis=0)
    prob = RelaxationProblem.from_data(X, y - y.mean(), 1.0)
    k = 4
    seen = []
    bb = BranchAndBound(prob, k, BnBSettings(node_limit=5, verbose=0))
    bb.node_callback = lambda node, res: seen.append((node.id, node.parent, res.race))
    res = bb.run()
    raced = [(i, parent, race) for i, parent, race in seen if race is not None]
    assert seen[0][:2] == (0, None) and seen[0][2] is None  # the root: no race
    assert len(raced) == 1 and raced[0][1] == 0 and len(seen) > 2
    race = raced[0][2]
    assert res.strategy_race == asdict(race)
    at_root = solve_node(prob, k, race=True).race
    assert race.zspace_cost + race.fista_cost < (at_root.zspace_cost + at_root.fista_cost) / 3


@pytest.mark.parametrize("node_strategy", ["auto", "fista", "zspace"])
def test_every_node_strategy_certifies_the_enumerated_optimum(node_strategy):
    X, y, _ = make_synthetic(14, 12, 3, rho=0.5, snr=3.0, seed=4)
    X = X - X.mean(axis=0)
    X /= np.linalg.norm(X, axis=0)
    y = y - y.mean()
    k, lam = 3, 0.05
    prob = RelaxationProblem.from_data(X, y, lam)
    res = BranchAndBound(prob, k, BnBSettings(node_strategy=node_strategy, verbose=0)).run()
    opt, support = brute_force(X, y, k, "squared", lam)
    assert res.status == "optimal"
    assert res.upper_bound == pytest.approx(opt, rel=1e-8)
    assert res.lower_bound <= opt * (1 + 1e-9)
    assert sum(res.node_strategies.values()) == res.n_evaluated
    if node_strategy == "auto":
        assert res.strategy_race is not None
        assert res.strategy_race["winner"] in ("zspace", "full")
    else:
        assert res.strategy_race is None
        assert set(res.node_strategies) <= {"exact", "zspace" if node_strategy == "zspace"
                                            else "full"}


def test_the_node_strategy_setting_is_checked():
    with pytest.raises(ValueError, match="node_strategy"):
        BnBSettings(node_strategy="newton")
    rng = np.random.default_rng(1)
    X = rng.standard_normal((20, 5))
    prob = RelaxationProblem.from_data(X, X[:, 0], 1.0, max_abs_coef=1.0)
    with pytest.raises(ValueError, match="zspace"):
        solve_node(prob, 2, solver="zspace")


def test_the_centring_owns_its_forward_and_inverse():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((25, 4)) + 3.0
    y = X @ np.array([1.0, -2.0, 0.0, 0.5]) + 4.0
    cen, Xc, yc = Centring.apply(X, y, fit_intercept=True, centre_y=True)
    np.testing.assert_allclose(Xc.mean(axis=0), 0.0, atol=1e-12)
    assert abs(yc.mean()) < 1e-12 and Xc.flags.c_contiguous
    b = np.array([1.0, -2.0, 0.0, 0.5])
    # the least-squares fit on the centred data maps back to the true intercept
    assert cen.user_intercept(b) == pytest.approx(4.0, abs=1e-9)
    np.testing.assert_allclose(Xc @ b + cen.user_intercept(b) + X.mean(0) @ b - y.mean(),
                               X @ b + cen.user_intercept(b) - y.mean(), atol=1e-9)
    carried, Xl, yl = Centring.apply(X, y, fit_intercept=True, centre_y=False)
    assert yl is y and carried.y_mean == 0.0
    c = 0.7
    assert carried.carried_intercept(b, carried.user_intercept(b, c)) == pytest.approx(c)
    plain, Xn, yn = Centring.apply(X, y, fit_intercept=False, centre_y=True)
    assert Xn is X and yn is y and plain.user_intercept(b) == 0.0
