"""Subtree tasks (``subtree_nodes > 1``): a worker explores its node's subtree depth first and
the engine replays the records; the tree is the same for any number of workers and any
executor, its bound is valid and its certificate verifies."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import numpy as np
import pytest
from _bruteforce import brute_force
from _data import sparse_glm_data

from sparsecert.bnb import BnBSettings, BranchAndBound
from sparsecert.solvers.perspective import RelaxationProblem


def _data(loss="squared", n=40, p=9, seed=0):
    return sparse_glm_data(loss, n, p, seed, rho=0.5, support=(1, 4, -2), coef=(1.0, -0.8, 0.6),
                           noise=0.8, offset=2.0, poisson_scale=0.4)


def _tree(res):
    return ([(n.id, n.parent, n.branch_var, n.branch_value, n.status, n.lower_bound,
              tuple(n.bound_fixings)) for n in res.nodes], res.support, res.upper_bound)


def _leaves_partition_the_supports(nodes, p, k):
    leaves = [n for n in nodes if not n.children]
    for size in range(k + 1):
        for S in itertools.combinations(range(p), size):
            z = np.zeros(p, bool)
            z[list(S)] = True
            owners = [lf for lf in leaves
                      if not (lf.fixed_in & ~z).any() and not (lf.fixed_out & z).any()
                      and z[~(lf.fixed_in | lf.fixed_out)].sum() <= k - lf.fixed_in.sum()]
            # a region cut off by a fixing belongs to its node, not to a leaf: 0 or 1 owner
            assert len(owners) <= 1, f"support {S} is in {len(owners)} leaves"


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_a_subtree_search_finds_the_enumerated_optimum_with_a_valid_bound(loss):
    X, y = _data(loss)
    k, lam = 3, 0.05
    prob = RelaxationProblem.from_data(X, y, lam, loss=loss)
    s = BnBSettings(verbose=0, subtree_nodes=4, batch_size=3)
    res = BranchAndBound(prob, k, s).run()
    ref, _ = brute_force(X, y, k, loss, lam)
    assert res.status == "optimal"
    assert res.upper_bound == pytest.approx(ref, rel=1e-6)
    assert res.lower_bound <= ref + 1e-7 * max(1, abs(ref))
    assert len(res.nodes) > 3
    _leaves_partition_the_supports(res.nodes, X.shape[1], k)


def _larger():
    X, y = sparse_glm_data("squared", 20, 30, 1, support=(1, 5, 9), coef=(1.0, -0.8, 0.6))
    X = X + np.random.default_rng(0).normal(size=X.shape)
    s = BnBSettings(rel_gap=0.0, abs_gap=0.0, node_limit=80, batch_size=4, subtree_nodes=6,
                    verbose=0)
    return RelaxationProblem.from_data(X, y, 0.01), s


@pytest.mark.timeout(300)
def test_the_subtree_tree_is_the_same_for_any_number_of_threads():
    prob, s = _larger()
    serial = BranchAndBound(prob, 4, s).run()
    assert serial.n_evaluated > 40
    # the same settings with one node per task make another tree: the tasks do explore
    assert _tree(BranchAndBound(prob, 4, replace(s, subtree_nodes=1)).run()) != _tree(serial)
    for n_jobs in (2, 3):
        assert _tree(BranchAndBound(prob, 4, replace(s, n_jobs=n_jobs)).run()) == _tree(serial)


@pytest.mark.parametrize("backend", [pytest.param("processes", marks=pytest.mark.slow),
                                     pytest.param("mpi", marks=[pytest.mark.slow,
                                                                pytest.mark.mpi])])
@pytest.mark.timeout(300)
def test_the_subtree_tree_is_the_same_on_processes_and_mpi(backend):
    if backend == "mpi":
        pytest.importorskip("mpi4py.futures")
        from test_evaluate import _skip_unless_mpi_can_spawn

        _skip_unless_mpi_can_spawn()
    prob, s = _larger()
    serial = BranchAndBound(prob, 4, s).run()
    assert _tree(BranchAndBound(prob, 4, replace(s, n_jobs=2, backend=backend)).run()
                 ) == _tree(serial)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_subtree_tree_is_the_same_on_a_user_pool():
    import concurrent.futures as cf

    prob, s = _larger()
    serial = BranchAndBound(prob, 4, s).run()
    with cf.ProcessPoolExecutor(2) as pool:
        assert list(pool.map(abs, [-1, -2])) == [1, 2]  # started before the search
        assert _tree(BranchAndBound(prob, 4, replace(s, executor=pool)).run()) == _tree(serial)


def test_the_engine_drops_the_records_below_a_node_it_prunes(monkeypatch):
    """The engine's incumbent can be better than a task's: a task made before another task
    of its batch found a leaf's model branched nodes that the engine then prunes, and the
    records below them are dropped (here without any heuristic: the incumbents come from the
    leaves only). The result is still the optimum with a valid bound."""
    import sparsecert.bnb.evaluate as evaluate
    import sparsecert.bnb.incumbents as incumbents

    X, y = _data("squared", n=30, p=9, seed=2)
    X = X + np.random.default_rng(2).normal(size=X.shape) * 0.5
    k, lam = 3, 0.05
    ref, _ = brute_force(X, y, k, "squared", lam)
    monkeypatch.setattr(incumbents, "beam_search", lambda refitter, k, **kw: refitter.fit(()))
    monkeypatch.setattr(incumbents, "swap_search", lambda refitter, model, k, **kw: model)
    monkeypatch.setattr(evaluate, "round_relaxation", lambda refitter, *a, **kw: refitter.fit(()))
    prob = RelaxationProblem.from_data(X, y, lam)
    s = BnBSettings(verbose=0, subtree_nodes=2, batch_size=8, heuristic_every=10**6,
                    node_selection="best_bound")
    engine = BranchAndBound(prob, k, s)
    res = engine.run()
    assert engine._n_dropped > 0
    assert res.status == "optimal"
    assert res.upper_bound == pytest.approx(ref, rel=1e-8)
    assert res.lower_bound <= ref + 1e-7 * max(1, abs(ref))
    _leaves_partition_the_supports(res.nodes, X.shape[1], k)
    assert all(n.status != "open" for n in res.nodes)  # every node closed, none lost


@pytest.mark.timeout(300)
def test_a_subtree_search_certificate_verifies(tmp_path):
    import sparsecert
    from sparsecert._validation import prepare
    from sparsecert.api import certify_prepared
    from sparsecert.problem import ProblemSpec

    X, y = _data("squared", n=30, p=12, seed=3)
    spec = ProblemSpec(k=3, lambda2=0.05, loss="squared")
    serial = certify_prepared(prepare(X, y, spec), BnBSettings(verbose=0, subtree_nodes=5))
    par = certify_prepared(prepare(X, y, spec),
                           BnBSettings(verbose=0, subtree_nodes=5, n_jobs=2))
    assert serial.status == "optimal" and serial.n_nodes > 3
    serial.save(tmp_path / "a.json")
    par.save(tmp_path / "b.json")
    docs = [json.loads((tmp_path / f"{name}.json").read_text()) for name in "ab"]
    for doc in docs:
        doc.pop("producer")  # times and the executor used
    assert docs[0] == docs[1]
    assert (tmp_path / "a.proof").read_bytes() == (tmp_path / "b.proof").read_bytes()
    assert sparsecert.verify(tmp_path / "a.json", X, y).ok


@pytest.mark.parametrize("bad", [0, -1, 2.0, True, "4"])
def test_subtree_nodes_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="subtree_nodes must be a positive integer"):
        BnBSettings(subtree_nodes=bad)
