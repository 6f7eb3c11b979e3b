"""The FISTA kernel's state record: chunked runs continue exactly where they stopped, and the
polishing schedule inside the kernel is the one written out in Python between chunks."""

import numpy as np
import pytest

from sparsecert.solvers.perspective import RelaxationProblem
from sparsecert.solvers.perspective._fista import (
    POLISH_BLAS_SPEEDUP,
    RESTART_BOTH,
    fista_chunk,
    fista_data,
    intercept,
    new_iterate,
)
from sparsecert.solvers.perspective._linalg import xb
from sparsecert.solvers.perspective.evaluate import objective
from sparsecert.solvers.perspective.full import initial_L, run_fista
from sparsecert.solvers.perspective.node import Limits, node_state
from sparsecert.solvers.perspective.polish import Polisher
from sparsecert.solvers.perspective.runner import Runner


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
    ux0 = xb(prob.design, x0) + c0

    def fresh():
        it = new_iterate(x0, ux0, initial_L(prob, prob.norm_sq, ux0),
                         objective(prob, state, budget, x0, ux0), c0=c0)
        it.set("restart", RESTART_BOTH)
        it.set("l_down", 0.9)
        return it

    n_iter = 60
    a = fresh()
    st_a, done_a = fista_chunk(data, icpt_arg, state, budget, a, 0.0, n_iter, np.inf, 0.0)
    b = fresh()
    done_b = 0
    for _ in range(n_iter):
        st_b, d = fista_chunk(data, icpt_arg, state, budget, b, 0.0, 1, np.inf, 0.0)
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


def _python_schedule(prob, state, budget, it, tol, n_max, polisher):
    """The polishing schedule written out in Python between 10-iteration chunks of the kernel
    (whose own schedule is off): the reference for the schedule the kernel runs inside."""
    data, sig, stable, since, n_fail, n_polish = fista_data(prob), None, 0, 0, 0, 0
    n = prob.n_samples
    n_active = int(np.sum(state != 0))
    done = status = 0
    it.set("restart", RESTART_BOTH)
    while done < n_max:
        m = min(10, n_max - done)
        status, n_it = fista_chunk(data, None, state, budget, it, tol, m, np.inf, tol)
        done += n_it
        if status != 0:
            break
        since += n_it
        s = np.sign(it.x).astype(np.int8)
        if sig is not None:
            changed = int(np.count_nonzero(s != sig))
            nnz = int(np.count_nonzero(s))
            stable = stable + n_it if changed <= max(2, nnz // 100) else 0
        sig = s
        mm = int(np.count_nonzero(s))
        wait = max(30.0, 2.0 * (n * mm * mm + mm ** 3 / 3.0)
                   / (POLISH_BLAS_SPEEDUP * n * (n_active + mm)))
        if n_fail >= 6 or stable < 20 or since < wait:
            continue
        since = 0
        fails = it.get("pol_fail")
        status = polisher.polish(it, tol, np.inf)
        n_polish += 1
        n_fail += it.get("pol_fail") - fails
        if status != 0:
            break
    return status, done, n_polish


@pytest.mark.slow
def test_the_kernels_polishing_schedule_equals_the_python_schedule():
    rng = np.random.default_rng(7)
    n, p, k = 120, 160, 6
    X = rng.standard_normal((n, p))
    y = X[:, :6] @ rng.standard_normal(6) + rng.standard_normal(n)
    prob = RelaxationProblem.from_data(X, y, 0.05, loss="squared")
    state, budget = node_state(p, k, np.zeros(p, bool), np.zeros(p, bool))
    x0 = np.zeros(p)
    ux0 = xb(prob.design, x0)

    def fresh():
        return new_iterate(x0, ux0, initial_L(prob, prob.norm_sq, ux0),
                           objective(prob, state, budget, x0, ux0))

    tol, n_max = 1e-9, 600
    a = fresh()
    pol_a = Polisher(prob, state, budget)
    limits = Limits(tol, n_max, restart=RESTART_BOTH)
    kernel = (fista_data(prob), None, state, budget)
    st_a, done_a = run_fista(Runner(None), kernel, a, limits, n_max, pol_a)
    b = fresh()
    st_b, done_b, n_polish_b = _python_schedule(prob, state, budget, b, tol, n_max,
                                                Polisher(prob, state, budget))
    assert (st_a, done_a) == (st_b, done_b)
    assert pol_a.n_polish == n_polish_b >= 1  # the schedule did fire
    for name in ("x", "x_prev", "ux", "ux_prev", "bound_point", "dual"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for name in ("best", "px", "t", "L", "n_restart"):
        assert a.get(name) == b.get(name), name
    # a deadline far away cuts the run into chunks of other lengths: the same run
    c = fresh()
    st_c, done_c = run_fista(Runner(1e300), kernel, c, limits, n_max,
                             Polisher(prob, state, budget))
    assert (st_c, done_c) == (st_a, done_a)
    np.testing.assert_array_equal(c.x, a.x)
    assert c.get("best") == a.get("best")


def test_step_search_ends_when_the_values_are_not_numbers():
    """With lambda2 near the largest float (refused by the entry points since; set here on the
    kernel's data) the step search met inf - inf and doubled L a billion times; it now stops
    once L is infinite, so a chunk returns and the caller's clock is read."""
    prob = RelaxationProblem.from_data(np.array([[-6.85473557363738e32, 0.0]]),
                                       np.array([2.0]), 1.0,
                                       max_abs_coef=2.4947162005845917e-162,
                                       fit_intercept=False)
    state, budget = node_state(2, 1, np.zeros(2, bool), np.zeros(2, bool))
    data = fista_data(prob)._replace(lam=1.7e308)
    x0 = np.zeros(2)
    ux0 = xb(prob.design, x0)
    it = new_iterate(x0, ux0, initial_L(prob, prob.norm_sq, ux0),
                     objective(prob, state, budget, x0, ux0))
    it.set("restart", RESTART_BOTH)
    it.set("l_down", 0.9)
    status, n_it = fista_chunk(data, None, state, budget, it, 1e-6, 5, np.inf, 1e-6)
    assert (status, n_it) == (0, 5)
    assert it.get("n_backtrack") < 5 * 2000  # a few thousand doublings reach inf, not 1e9
