"""Branch and bound against exhaustive enumeration of supports (an independent reference)."""

from __future__ import annotations

import concurrent.futures as cf
import itertools

import numpy as np
import pytest
from _bruteforce import brute_force
from _data import sparse_glm_data

from sparsecert.bnb import BnBSettings, BranchAndBound, make_queue
from sparsecert.bnb.node import Node
from sparsecert.solvers.perspective import RelaxationProblem

LOSSES = ["squared", "logistic", "squared_hinge", "poisson"]


def make_data(loss: str, n: int = 40, p: int = 9, seed: int = 0, rho: float = 0.5):
    return sparse_glm_data(loss, n, p, seed, rho=rho, support=(1, 4, -2), coef=(1.0, -0.8, 0.6),
                           noise=0.8, offset=2.0, poisson_scale=0.4)


def run(X, y, k, loss, lambda2, M=None, fit_intercept=False, eig_shift=None, **kw):
    prob = RelaxationProblem.from_data(X, y, lambda2, loss=loss, max_abs_coef=M,
                                       eig_shift=eig_shift, fit_intercept=fit_intercept)
    return BranchAndBound(prob, k, BnBSettings(verbose=0, **kw)).run()


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


@pytest.mark.slow
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
        w = None if n.witness is None else (n.witness.kind, n.witness.vector.tobytes())
        out.append((n.id, n.parent, n.branch_var, n.branch_value, n.status,
                    float(n.lower_bound), w))
    return out


@pytest.mark.timeout(300)
def test_tree_identical_whatever_the_executor():
    X, y = make_data("logistic", p=9, seed=1)
    kw = dict(rel_gap=0.0, abs_gap=0.0, node_limit=40, batch_size=4)
    serial = run(X, y, 3, "logistic", 0.05, **kw)
    threads = run(X, y, 3, "logistic", 0.05, n_jobs=2, **kw)
    with cf.ThreadPoolExecutor(3) as ex:
        user = run(X, y, 3, "logistic", 0.05, executor=ex, **kw)
    assert serial.n_nodes > 5
    assert _signature(serial) == _signature(threads) == _signature(user)


@pytest.mark.timeout(300)
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
    with pytest.raises(ValueError, match="1 <= k <= n_features"):
        BranchAndBound(prob, 7)
    with pytest.raises(TypeError, match="k must be an integer"):
        BranchAndBound(prob, 2.0)


def test_progress_log_lines():
    X, y = make_data("logistic", p=8)
    prob = RelaxationProblem.from_data(X, y, 0.1, loss="logistic")
    lines: list[str] = []
    BranchAndBound(prob, 3, BnBSettings(verbose=1, log=lines.append)).run()
    assert any("incumbent" in ln and "lower bound" in ln for ln in lines)
    assert any(ln.strip().endswith("%") for ln in lines)
    quiet: list[str] = []
    BranchAndBound(prob, 3, BnBSettings(verbose=0, log=quiet.append)).run()
    assert quiet == []


def test_queue_by_name():
    with pytest.raises(ValueError, match="unknown node selection"):
        make_queue("fifo")


# ----------------------------------------------------------------------------------------------
# public extension points: start supports, root warm start, node callback, history records
# ----------------------------------------------------------------------------------------------
def _no_root_heuristics(monkeypatch):
    """Make the engine's own root heuristics return the empty model."""
    import sparsecert.bnb.incumbents as incumbents

    monkeypatch.setattr(incumbents, "beam_search", lambda refitter, k, **kw: refitter.fit(()))
    monkeypatch.setattr(incumbents, "swap_search", lambda refitter, model, k, **kw: model)


def test_start_support_is_the_first_incumbent(monkeypatch):
    _no_root_heuristics(monkeypatch)
    X, y = make_data("logistic", p=8, seed=4)
    lam = 0.1
    ref, best = brute_force(X, y, 3, "logistic", lam)
    prob = RelaxationProblem.from_data(X, y, lam, loss="logistic")
    cold = BranchAndBound(prob, 3, BnBSettings(verbose=0)).run()
    warm = BranchAndBound(prob, 3, BnBSettings(verbose=0), start_supports=[best]).run()
    empty = cold.history[0].upper_bound
    assert warm.history[0].upper_bound == pytest.approx(ref, rel=1e-8)
    assert ref < empty
    assert warm.status == cold.status == "optimal"
    assert warm.upper_bound == pytest.approx(cold.upper_bound, rel=1e-8)
    assert warm.n_nodes <= cold.n_nodes  # pruning starts earlier


def test_start_supports_are_checked():
    X, y = make_data("squared", p=6)
    prob = RelaxationProblem.from_data(X, y, 1.0)
    with pytest.raises(ValueError, match="more than k"):
        BranchAndBound(prob, 2, start_supports=[(0, 1, 2)])
    with pytest.raises(ValueError, match="outside"):
        BranchAndBound(prob, 2, start_supports=[(0, 9)])
    with pytest.raises(ValueError, match="length"):
        BranchAndBound(prob, 2, root_warm_start=np.zeros(5))
    with pytest.raises(TypeError, match="callable"):
        BranchAndBound(prob, 2, node_callback="print")


def test_root_warm_start_reaches_the_root_task(monkeypatch):
    import sparsecert.bnb.evaluate as ev

    X, y = make_data("squared", p=8)
    prob = RelaxationProblem.from_data(X, y, 0.5)
    seen = []
    real = ev.solve_node

    def spy(prob, k, fixed_in, fixed_out, **kw):
        seen.append((fixed_in.any() or fixed_out.any(), kw["warm_start"]))
        return real(prob, k, fixed_in, fixed_out, **kw)

    monkeypatch.setattr(ev, "solve_node", spy)
    start = np.linspace(-1.0, 1.0, 8)
    res = BranchAndBound(prob, 3, BnBSettings(verbose=0), root_warm_start=start).run()
    assert res.status == "optimal"
    assert not seen[0][0]  # the root comes first
    np.testing.assert_array_equal(seen[0][1], start)


def test_node_callback_sees_every_evaluated_node(monkeypatch):
    X, y = make_data("logistic", p=9, seed=1)
    prob = RelaxationProblem.from_data(X, y, 0.05, loss="logistic")
    calls = []
    res = BranchAndBound(prob, 3, BnBSettings(rel_gap=0.0, abs_gap=0.0, node_limit=30, verbose=0),
                         node_callback=lambda node, r: calls.append((node, r))).run()
    ids = [n.id for n, _ in calls]
    assert ids[0] == 0 and len(set(ids)) == len(ids)
    assert all(n.status in ("branched", "pruned", "solved") for n, _ in calls)
    # every branched or solved node was evaluated, so the callback saw it
    done = {n.id for n in res.nodes if n.status in ("branched", "solved")}
    assert done <= set(ids)
    assert sum(int(r.n_iter) for _, r in calls) == res.n_relaxation_iters
    assert all(r.lower_bound <= n.lower_bound for n, r in calls if n.status != "branched")


def test_offer_support_from_a_callback(monkeypatch):
    _no_root_heuristics(monkeypatch)
    X, y = make_data("squared", p=8, seed=2)
    lam = 0.5
    ref, best = brute_force(X, y, 3, "squared", lam)
    prob = RelaxationProblem.from_data(X, y, lam)
    answers = []

    def offer_at_root(node, res):
        if node.parent is None:
            answers.append(engine.offer_support(best))
            answers.append(engine.offer_support(()))  # the empty model is worse now

    engine = BranchAndBound(prob, 3, BnBSettings(verbose=0), node_callback=offer_at_root)
    res = engine.run()
    assert answers == [True, False]
    assert res.status == "optimal"
    assert res.upper_bound == pytest.approx(ref, rel=1e-8)
    assert set(res.support) == set(best)


def test_history_is_named_records():
    X, y = make_data("logistic", p=8, seed=4)
    prob = RelaxationProblem.from_data(X, y, 0.1, loss="logistic")
    res = BranchAndBound(prob, 3, BnBSettings(rel_gap=0.0, abs_gap=0.0, node_limit=20,
                                              verbose=0)).run()
    h = res.history
    assert len(h) >= 2
    times = [r.time for r in h]
    ubs = [r.upper_bound for r in h]
    assert times == sorted(times) and ubs == sorted(ubs, reverse=True)
    assert h[-1].n_nodes == res.n_nodes and h[-1].upper_bound == res.upper_bound
    assert h[-1].lower_bound == pytest.approx(res.lower_bound)
    assert h[-1].gap == pytest.approx(res.relative_gap)
