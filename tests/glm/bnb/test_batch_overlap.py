"""Overlapping batches (``batch_overlap > 0``): the next batch goes to the workers while the
last outcomes of the previous one are still to be applied. The tree is the same for any
number of workers and any executor, its bound is valid, its certificate verifies, and a
Ctrl-C anywhere keeps the bound valid."""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import numpy as np
import pytest
from _bruteforce import brute_force
from _data import sparse_glm_data

from sparsecert.bnb import BnBSettings, BranchAndBound
from sparsecert.solvers.perspective import RelaxationProblem


def _tree(res):
    return ([(n.id, n.parent, n.branch_var, n.branch_value, n.status, n.lower_bound,
              tuple(n.bound_fixings)) for n in res.nodes], res.support, res.upper_bound)


def _larger():
    X, y = sparse_glm_data("squared", 20, 30, 1, support=(1, 5, 9), coef=(1.0, -0.8, 0.6))
    X = X + np.random.default_rng(0).normal(size=X.shape)
    s = BnBSettings(rel_gap=0.0, abs_gap=0.0, node_limit=80, batch_size=4, batch_overlap=2,
                    verbose=0)
    return RelaxationProblem.from_data(X, y, 0.01), s


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_an_overlapping_search_finds_the_enumerated_optimum_with_a_valid_bound(loss):
    X, y = sparse_glm_data(loss, 40, 9, 0, rho=0.5, support=(1, 4, -2), coef=(1.0, -0.8, 0.6),
                           noise=0.8, offset=2.0, poisson_scale=0.4)
    k, lam = 3, 0.05
    prob = RelaxationProblem.from_data(X, y, lam, loss=loss)
    res = BranchAndBound(prob, k, BnBSettings(verbose=0, batch_size=3, batch_overlap=2,
                                              n_jobs=2)).run()
    ref, _ = brute_force(X, y, k, loss, lam)
    assert res.status == "optimal"
    assert res.upper_bound == pytest.approx(ref, rel=1e-6)
    assert res.lower_bound <= ref + 1e-7 * max(1, abs(ref))
    assert len(res.nodes) > 3
    assert all(n.status != "open" for n in res.nodes)  # every node closed, none lost


@pytest.mark.timeout(300)
def test_the_overlapping_tree_is_the_same_for_any_number_of_threads():
    prob, s = _larger()
    serial = BranchAndBound(prob, 4, s).run()
    assert serial.n_evaluated > 40
    # without the overlap the batches see every outcome before them: another tree
    assert _tree(BranchAndBound(prob, 4, replace(s, batch_overlap=0)).run()) != _tree(serial)
    for n_jobs in (2, 3):
        assert _tree(BranchAndBound(prob, 4, replace(s, n_jobs=n_jobs)).run()) == _tree(serial)


@pytest.mark.timeout(300)
def test_the_overlapping_tree_is_the_same_on_processes_and_a_user_pool():
    import concurrent.futures as cf

    prob, s = _larger()
    serial = BranchAndBound(prob, 4, s).run()
    assert _tree(BranchAndBound(prob, 4, replace(s, n_jobs=2, backend="processes")).run()
                 ) == _tree(serial)
    with cf.ThreadPoolExecutor(2) as pool:
        assert _tree(BranchAndBound(prob, 4, replace(s, executor=pool)).run()) == _tree(serial)


@pytest.mark.timeout(300)
def test_an_overlapping_search_certificate_is_the_same_on_two_threads_and_verifies(tmp_path):
    import sparsecert
    from sparsecert._validation import prepare
    from sparsecert.api import certify_prepared
    from sparsecert.problem import ProblemSpec

    X, y = sparse_glm_data("squared", 30, 12, 3, rho=0.5, support=(1, 4, -2),
                           coef=(1.0, -0.8, 0.6), noise=0.8, offset=2.0, poisson_scale=0.4)
    spec = ProblemSpec(k=3, lambda2=0.05, loss="squared")
    s = BnBSettings(verbose=0, batch_size=4, batch_overlap=3)
    serial = certify_prepared(prepare(X, y, spec), s)
    par = certify_prepared(prepare(X, y, spec), replace(s, n_jobs=2))
    assert serial.status == "optimal" and serial.n_nodes > 3
    serial.save(tmp_path / "a.json")
    par.save(tmp_path / "b.json")
    docs = [json.loads((tmp_path / f"{name}.json").read_text()) for name in "ab"]
    for doc in docs:
        doc.pop("producer")  # times and the executor used
    assert docs[0] == docs[1]
    assert (tmp_path / "a.proof").read_bytes() == (tmp_path / "b.proof").read_bytes()
    assert sparsecert.verify(tmp_path / "a.json", X, y).ok


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.5, 0.7, 0.9])
def test_an_interrupt_anywhere_in_an_overlapping_search_keeps_the_bound_valid(fraction):
    """A Ctrl-C at a bytecode of the engine's updates while two batches are in flight: the
    nodes not processed go back to the queue, the bound stays valid, the certificate verifies."""
    import itertools

    from test_interrupt_anywhere import _Interrupter

    from sparsecert._validation import prepare
    from sparsecert.api import certify_prepared
    from sparsecert.certificate import verify_certificate
    from sparsecert.problem import ProblemSpec

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 12))
    X[:, 1] = X[:, 0] + 0.1 * rng.normal(size=30)
    y = X[:, [0, 2, 5]] @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=30)
    lam, k = 0.1, 3
    spec = ProblemSpec(k=k, lambda2=lam, fit_intercept=False)
    s = BnBSettings(verbose=0, rel_gap=0.0, batch_size=3, batch_overlap=2)

    def run(at):
        tracer = _Interrupter(at)
        sys.settrace(tracer)
        try:
            return certify_prepared(prepare(X, y, spec), s), tracer.count
        finally:
            sys.settrace(None)

    full, total = run(None)
    assert full.status == "optimal" and full.n_nodes >= 15
    best = float(y @ y)
    for r in range(1, k + 1):
        for S in itertools.combinations(range(X.shape[1]), r):
            A = X[:, S]
            b = np.linalg.solve(A.T @ A + lam * np.eye(r), A.T @ y)
            best = min(best, float((y - A @ b) @ (y - A @ b) + lam * b @ b))
    res, _ = run(max(1, int(fraction * total)))
    assert res.status in ("interrupted", "optimal")
    assert res.lower_bound <= best * (1 + 1e-9)
    assert verify_certificate(res.certificate, X, y).ok


@pytest.mark.parametrize("bad, exc", [(-1, ValueError), (2.0, TypeError), (True, TypeError),
                                      ("4", TypeError)])
def test_batch_overlap_must_be_a_non_negative_integer(bad, exc):
    with pytest.raises(exc, match="^batch_overlap must be"):
        BnBSettings(batch_overlap=bad)


def test_certify_takes_the_overlap_and_the_certificate_records_it():
    """``certify(batch_overlap=0)`` searches the tree of the engine's ``batch_overlap=0`` (the
    trees before overlapping batches) and the certificate records the value used."""
    import sparsecert
    from sparsecert.bnb import BnBSettings, BranchAndBound
    from sparsecert.solvers.perspective import RelaxationProblem

    rng = np.random.default_rng(7)
    X = rng.normal(size=(40, 14))
    y = X[:, [0, 3, 5]] @ np.array([1.0, -0.8, 0.6]) + rng.normal(size=40)
    kw = dict(rel_gap=0.0, abs_gap=0.0, node_limit=60, batch_size=8)
    for overlap in (0, 3):
        res = sparsecert.certify(X, y, 3, 0.05, fit_intercept=False, verbose=0,
                                 batch_overlap=overlap, **kw)
        assert res.certificate.data["producer"]["settings"]["batch_overlap"] == overlap
        engine = BranchAndBound(RelaxationProblem.from_data(X, y, 0.05), 3,
                                BnBSettings(batch_overlap=overlap, verbose=0, **kw)).run()
        assert res.search.n_nodes == engine.n_nodes
    with pytest.raises(ValueError, match="batch_overlap must be >= 0, got -1"):
        sparsecert.certify(X, y, 3, 0.05, batch_overlap=-1)
