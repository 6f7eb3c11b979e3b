"""The node strategies as objects that say when they apply, and the centring reduction with
its forward and inverse in one place."""

from __future__ import annotations

import numpy as np
import pytest

from sparsecert.solvers.perspective import RelaxationProblem, strategies
from sparsecert.solvers.perspective.centring import Centring
from sparsecert.solvers.perspective.node import NodeProblem, Start


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
