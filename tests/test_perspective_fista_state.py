"""The FISTA kernel's state record: chunked runs continue exactly where they stopped."""

import numpy as np
import pytest

from sparsecert.solvers.perspective import RelaxationProblem
from sparsecert.solvers.perspective._fista import (
    RESTART_BOTH,
    fista_chunk,
    fista_data,
    intercept,
    new_iterate,
)
from sparsecert.solvers.perspective._linalg import xb
from sparsecert.solvers.perspective.evaluate import objective
from sparsecert.solvers.perspective.full import initial_L
from sparsecert.solvers.perspective.node import node_state


@pytest.mark.parametrize("loss,icpt", [("squared", False), ("logistic", True),
                                       ("poisson", True)])
def test_chunks_of_one_iteration_equal_one_long_run(loss, icpt):
    rng = np.random.default_rng(3)
    n, p, k = 25, 12, 3
    X = rng.standard_normal((n, p))
    u = X[:, 0] - X[:, 4]
    y = {"squared": u + 0.5 * rng.standard_normal(n),
         "logistic": np.where(u + 0.5 * rng.standard_normal(n) > 0, 1.0, -1.0),
         "poisson": rng.poisson(np.exp(0.3 * u)).astype(float)}[loss]
    prob = RelaxationProblem.from_data(X, y, 0.3, loss=loss, fit_intercept=icpt,
                                       max_abs_coef=2.0)
    s1 = np.zeros(p, bool)
    s1[2] = True
    s0 = np.zeros(p, bool)
    s0[[5, 7]] = True
    state, budget = node_state(p, k, s1, s0)
    data = fista_data(prob)
    icpt_arg = intercept(prob)
    assert (icpt_arg is None) == (not icpt)
    x0 = np.zeros(p)
    c0 = 0.2 if icpt else 0.0
    ux0 = xb(prob.XT, x0) + c0

    def fresh():
        return new_iterate(x0, ux0, initial_L(prob, prob.norm_sq, ux0),
                           objective(prob, state, budget, x0, ux0), c0=c0)

    n_iter = 60
    a = fresh()
    st_a, done_a = fista_chunk(data, icpt_arg, state, budget, a, 0.0, n_iter, RESTART_BOTH,
                               np.inf, 0.9)
    b = fresh()
    done_b = 0
    for _ in range(n_iter):
        st_b, d = fista_chunk(data, icpt_arg, state, budget, b, 0.0, 1, RESTART_BOTH, np.inf,
                              0.9)
        done_b += d
    assert done_a == done_b == n_iter
    assert st_a == st_b == 0
    for name in ("x", "x_prev", "ux", "ux_prev", "bound_point", "dual"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.sc.tobytes() == b.sc.tobytes()
    # the run really moved: restarts, a finite bound below the objective
    assert a.get("n_restart") > 0
    assert np.isfinite(a.get("best")) and a.get("best") <= a.get("px")
    assert a.get("L") != initial_L(prob, prob.norm_sq, ux0)  # l_down moved the step
