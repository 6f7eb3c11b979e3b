"""A Ctrl-C may land between any two bytecodes of the search's tree updates: whatever the
moment, the returned lower bound covers every region of the feasible set, and the certificate
verifies.

The interrupt is simulated with an opcode-level trace: a KeyboardInterrupt raised at the N-th
bytecode executed inside the engine's tree-update methods, for N spread over a whole search.
"""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest

import sparsecert
from sparsecert.bnb import search as search_mod
from sparsecert.certificate import verify_certificate

#: the engine's methods that change the tree (the interrupt lands inside one of them)
UPDATES = ("_branch", "_close", "_fix", "_process", "_next_batch", "_evaluate", "_record_bound",
           "_prune")
LAM = 0.1


def _data():
    rng = np.random.default_rng(0)
    n, p = 30, 12
    X = rng.normal(size=(n, p))
    X[:, 1] = X[:, 0] + 0.1 * rng.normal(size=n)  # two nearly collinear pairs
    X[:, 3] = X[:, 2] + 0.1 * rng.normal(size=n)
    y = X[:, [0, 2, 5]] @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=n)
    return X, y


def _brute_force_optimum(X, y, k, lam):
    best = float(y @ y)
    for r in range(1, k + 1):
        for S in itertools.combinations(range(X.shape[1]), r):
            A = X[:, S]
            b = np.linalg.solve(A.T @ A + lam * np.eye(r), A.T @ y)
            res = y - A @ b
            best = min(best, float(res @ res + lam * b @ b))
    return best


class _Interrupter:
    """Counts the bytecodes executed inside :data:`UPDATES`; raises KeyboardInterrupt at the
    ``at``-th one (never when ``at`` is None)."""

    def __init__(self, at: int | None):
        self.at = at
        self.count = 0
        self.codes = {getattr(search_mod.BranchAndBound, name).__code__ for name in UPDATES}

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_code in self.codes:
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            return self._local
        return None

    def _local(self, frame, event, arg):
        if event == "opcode":
            self.count += 1
            if self.count == self.at:
                raise KeyboardInterrupt
        return self._local


def _certify(X, y, at):
    tracer = _Interrupter(at)
    sys.settrace(tracer)
    try:
        res = sparsecert.certify(X, y, 3, LAM, fit_intercept=False, rel_gap=0.0, verbose=0,
                                 batch_size=3)
    finally:
        sys.settrace(None)
    return res, tracer.count


@pytest.fixture(scope="module")
def problem():
    X, y = _data()
    res, total = _certify(X, y, None)
    assert res.status == "optimal" and res.n_nodes >= 15  # a real tree
    return X, y, total, _brute_force_optimum(X, y, 3, LAM)


@pytest.mark.parametrize("fraction", np.linspace(0.0, 1.0, 41)[1:-1])
def test_an_interrupt_at_any_bytecode_keeps_the_bound_valid(problem, fraction):
    X, y, total, optimum = problem
    at = max(1, int(fraction * total))
    res, _ = _certify(X, y, at)
    assert res.status in ("interrupted", "optimal")
    assert res.lower_bound <= optimum * (1 + 1e-9)
    open_nodes = [n for n in res.search.nodes if n.status == "open"]
    assert res.search.n_open == len(open_nodes)
    if open_nodes:
        assert res.search.lower_bound <= min(n.lower_bound for n in open_nodes)
    rep = verify_certificate(res.certificate, X, y)
    assert rep.ok, str(rep)


@pytest.mark.parametrize("loss,fit_intercept", [("squared", True), ("logistic", True),
                                                ("poisson", False), ("squared_hinge", True)])
def test_an_interrupt_before_the_root_bound_still_gives_a_certificate_that_verifies(
        loss, fit_intercept):
    """Stopped before the root's relaxation: the root leaf gets the dual point zeta = 0, whose
    bound is weak but proven for every loss."""
    X, y = _data()
    if loss == "poisson":
        y = np.floor(np.abs(y))
    elif loss != "squared":
        y = np.where(y > np.median(y), 1.0, 0.0)
    tracer = _Interrupter(1)
    sys.settrace(tracer)
    try:
        res = sparsecert.certify(X, y, 3, LAM, loss=loss, fit_intercept=fit_intercept,
                                 verbose=0)
    finally:
        sys.settrace(None)
    assert res.status == "interrupted" and res.n_nodes == 1
    rep = verify_certificate(res.certificate, X, y)
    assert rep.ok, str(rep)
    assert res.certificate.bounds["lower_bound"] <= res.objective
