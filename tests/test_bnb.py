"""Branch and bound against exhaustive enumeration of supports (an independent reference)."""

from __future__ import annotations

import concurrent.futures as cf
import itertools

import numpy as np
import pytest
from _bruteforce import brute_force

from sparsecert.bnb import BnBSettings, BranchAndBound, make_queue
from sparsecert.bnb.node import Node
from sparsecert.solvers.perspective import RelaxationProblem

LOSSES = ["squared", "logistic", "squared_hinge", "poisson"]


def make_data(loss: str, n: int = 40, p: int = 9, seed: int = 0, rho: float = 0.5):
    rng = np.random.default_rng(seed)
    cov = rho ** np.abs(np.subtract.outer(np.arange(p), np.arange(p)))
    X = rng.normal(size=(n, p)) @ np.linalg.cholesky(cov).T
    beta = np.zeros(p)
    beta[[1, 4, p - 2]] = [1.0, -0.8, 0.6]
    u = X @ beta
    if loss == "squared":
        y = u + 0.8 * rng.normal(size=n) + 2.0
    elif loss == "poisson":
        y = rng.poisson(np.exp(0.4 * u)).astype(float)
    else:
        y = np.where(u + 0.8 * rng.normal(size=n) > 0, 1.0, -1.0)
    return X, y


def run(X, y, k, loss, lambda2, M=None, fit_intercept=False, eig_shift=None, **kw):
    prob = RelaxationProblem.from_data(X, y, lambda2, loss=loss, max_abs_coef=M,
                                       eig_shift=eig_shift, fit_intercept=fit_intercept)
    n_jobs = kw.pop("n_jobs", 1)
    executor = kw.pop("executor", None)
    backend = kw.pop("backend", "threads")
    settings = BnBSettings(**kw)
    return BranchAndBound(prob, k, settings, n_jobs=n_jobs, executor=executor, backend=backend,
                          verbose=0).run()


def _centred_objective_matches(res, X, y, loss, lam, fit_intercept):
    """Objective of the engine's incumbent, recomputed on the raw data."""
    coef = res.coef
    c = res.intercept
    if fit_intercept and loss == "squared":
        c = y.mean() - X.mean(axis=0) @ coef
    elif fit_intercept:  # the engine's intercept is for centred columns
        c = c - X.mean(axis=0) @ coef
    u = X @ coef + c
    if loss == "squared":
        val = np.sum((y - u) ** 2)
    elif loss == "logistic":
        val = np.sum(np.logaddexp(0, -y * u))
    elif loss == "squared_hinge":
        val = np.sum(np.maximum(0, 1 - y * u) ** 2)
    else:
        val = np.sum(np.exp(u) - y * u)
    return val + lam * coef @ coef


CASES = [(loss, fi, M) for loss in LOSSES for fi in (False, True) for M in (None, 0.3)
         ]


@pytest.mark.parametrize("loss,fit_intercept,M", CASES)
def test_bnb_matches_enumeration(loss, fit_intercept, M):
    X, y = make_data(loss)
    k, lam = 3, 0.5
    res = run(X, y, k, loss, lam, M=M, fit_intercept=fit_intercept,
              eig_shift="auto" if loss == "squared" else None)
    ref, ref_support = brute_force(X, y, k, loss, lam, M, fit_intercept)
    assert res.status == "optimal"
    assert np.count_nonzero(res.coef) <= k
    if M is not None:
        assert np.max(np.abs(res.coef)) <= M + 1e-12
    ub = _centred_objective_matches(res, X, y, loss, lam, fit_intercept)
    assert ub == pytest.approx(res.upper_bound, rel=1e-9, abs=1e-9)
    # the incumbent is the enumerated optimum (up to the L-BFGS-B accuracy of the reference)
    assert ub <= ref + 1e-6 * max(1, abs(ref))
    assert ub >= ref - 1e-6 * max(1, abs(ref))
    # the proven bound never exceeds the true optimum, and the gap is closed
    assert res.lower_bound <= ref + 1e-7 * max(1, abs(ref))
    assert res.relative_gap <= 1e-4


def _leaves(nodes: list[Node]) -> list[Node]:
    return [n for n in nodes if not n.children]


def test_leaves_partition_the_supports():
    X, y = make_data("logistic", p=8)
    k = 3
    res = run(X, y, k, "logistic", 0.05, rel_gap=0.0, abs_gap=0.0, node_limit=200)
    leaves = _leaves(res.nodes)
    assert len(res.nodes) > 3, "expected a real tree"
    p = X.shape[1]
    for size in range(k + 1):
        for S in itertools.combinations(range(p), size):
            z = np.zeros(p, bool)
            z[list(S)] = True
            owners = [lf for lf in leaves
                      if not (lf.fixed_in & ~z).any() and not (lf.fixed_out & z).any()
                      and z[~(lf.fixed_in | lf.fixed_out)].sum() <= k - lf.fixed_in.sum()]
            assert len(owners) == 1, f"support {S} is in {len(owners)} leaves"


def test_node_limit_is_honest():
    X, y = make_data("logistic", p=9, seed=3)
    k, lam = 3, 0.02
    res = run(X, y, k, "logistic", lam, node_limit=2, rel_gap=0.0, abs_gap=0.0)
    ref, _ = brute_force(X, y, k, "logistic", lam)
    assert res.status == "node_limit"
    assert res.n_open > 0
    assert res.lower_bound <= ref + 1e-8
    assert res.upper_bound >= ref - 1e-8
    # every open node keeps a bound and a witness inherited from its parent
    for n in res.nodes:
        if n.status == "open":
            assert n.witness is not None and np.isfinite(n.lower_bound)


def test_time_limit_status():
    X, y = make_data("logistic", p=9, seed=3)
    res = run(X, y, 3, "logistic", 0.02, time_limit=1e-6, rel_gap=0.0, abs_gap=0.0)
    assert res.status in ("time_limit", "optimal")
    assert res.n_nodes >= 1  # the root is always evaluated


def _signature(res):
    out = []
    for n in res.nodes:
        w = None if n.witness is None else (n.witness[0], n.witness[1].tobytes())
        out.append((n.id, n.parent, n.branch_var, n.branch_value, n.status,
                    float(n.lower_bound), w))
    return out


def test_tree_identical_whatever_the_executor():
    X, y = make_data("logistic", p=9, seed=1)
    kw = dict(rel_gap=0.0, abs_gap=0.0, node_limit=40, batch_size=4)
    serial = run(X, y, 3, "logistic", 0.05, **kw)
    threads = run(X, y, 3, "logistic", 0.05, n_jobs=2, **kw)
    with cf.ThreadPoolExecutor(3) as ex:
        user = run(X, y, 3, "logistic", 0.05, executor=ex, **kw)
    assert serial.n_nodes > 5
    assert _signature(serial) == _signature(threads) == _signature(user)


@pytest.mark.slow
def test_tree_identical_with_processes():
    X, y = make_data("squared_hinge", p=8, seed=2)
    kw = dict(rel_gap=0.0, abs_gap=0.0, node_limit=12, batch_size=4)
    serial = run(X, y, 3, "squared_hinge", 0.05, **kw)
    procs = run(X, y, 3, "squared_hinge", 0.05, n_jobs=2, backend="processes", **kw)
    assert _signature(serial) == _signature(procs)


@pytest.mark.parametrize("selection", ["best_bound", "depth_first", "best_bound_dive"])
@pytest.mark.parametrize("rule", ["largest_coef", "most_fractional", "weighted_fractional"])
def test_strategies_reach_the_same_optimum(selection, rule):
    X, y = make_data("logistic", p=8, seed=4)
    ref, _ = brute_force(X, y, 3, "logistic", 0.1)
    res = run(X, y, 3, "logistic", 0.1, node_selection=selection, branching=rule)
    assert res.status == "optimal"
    assert res.upper_bound == pytest.approx(ref, rel=1e-6)


def test_bad_settings_raise():
    X, y = make_data("squared", p=6)
    with pytest.raises(ValueError, match="node_selection"):
        run(X, y, 2, "squared", 1.0, node_selection="random")
    with pytest.raises(ValueError, match="branching"):
        run(X, y, 2, "squared", 1.0, branching="nope")
    with pytest.raises(ValueError, match="rel_gap"):
        run(X, y, 2, "squared", 1.0, rel_gap=-1)
    prob = RelaxationProblem.from_data(X, y, 1.0)
    with pytest.raises(ValueError, match="k must be"):
        BranchAndBound(prob, 7)


def test_progress_log_lines():
    X, y = make_data("logistic", p=8)
    prob = RelaxationProblem.from_data(X, y, 0.1, loss="logistic")
    lines: list[str] = []
    BranchAndBound(prob, 3, verbose=1, log=lines.append).run()
    assert any("incumbent" in ln and "lower bound" in ln for ln in lines)
    assert any(ln.strip().endswith("%") for ln in lines)
    quiet: list[str] = []
    BranchAndBound(prob, 3, verbose=0, log=quiet.append).run()
    assert quiet == []


def test_queue_by_name():
    with pytest.raises(ValueError, match="unknown node selection"):
        make_queue("fifo")
