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
UPDATES = ("_branch", "_close", "_fix", "_process", "_next_batch", "_submit", "_apply_next",
           "_requeue", "_search", "_record_bound", "_prune")


def _data(seed=0, n=30, p=12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[:, 1] = X[:, 0] + 0.1 * rng.normal(size=n)  # nearly collinear pairs
    if seed == 0:
        X[:, 3] = X[:, 2] + 0.1 * rng.normal(size=n)
    y = X[:, [0, 2, 5]] @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=n)
    return X, y


#: (data, lambda2): a tree that branches, and one that also fixes variables by reduced costs
PROBLEMS = {"branching": ((0, 30, 12), 0.1), "fixing": ((1, 40, 30), 1.0)}


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
    """Counts the bytecodes executed inside the methods ``names``; raises KeyboardInterrupt at
    the ``at``-th one (never when ``at`` is None)."""

    def __init__(self, at: int | None, names=UPDATES):
        self.at = at
        self.count = 0
        self.codes = {getattr(search_mod.BranchAndBound, name).__code__ for name in names}

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


def _certify(X, y, lam, at, names=UPDATES):
    tracer = _Interrupter(at, names)
    sys.settrace(tracer)
    try:
        res = sparsecert.certify(X, y, 3, lam, fit_intercept=False, rel_gap=0.0, verbose=0,
                                 batch_size=3)
    finally:
        sys.settrace(None)
    return res, tracer.count


@pytest.fixture(scope="module", params=sorted(PROBLEMS))
def problem(request):
    shape, lam = PROBLEMS[request.param]
    X, y = _data(*shape)
    res, total = _certify(X, y, lam, None)
    assert res.status == "optimal" and res.n_nodes >= 15  # a real tree
    n_fixed = res.certificate.data["tree"]["n_derive"]  # nodes with bound fixings
    assert (n_fixed > 0) == (request.param == "fixing")
    return X, y, lam, total, _brute_force_optimum(X, y, 3, lam)


@pytest.mark.parametrize("fraction", np.linspace(0.0, 1.0, 41)[1:-1])
def test_an_interrupt_at_any_bytecode_keeps_the_bound_valid(problem, fraction):
    X, y, lam, total, optimum = problem
    at = max(1, int(fraction * total))
    res, _ = _certify(X, y, lam, at)
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
    lam = PROBLEMS["branching"][1]
    if loss == "poisson":
        y = np.floor(np.abs(y))
    elif loss != "squared":
        y = np.where(y > np.median(y), 1.0, 0.0)
    tracer = _Interrupter(1)
    sys.settrace(tracer)
    try:
        res = sparsecert.certify(X, y, 3, lam, loss=loss, fit_intercept=fit_intercept,
                                 verbose=0)
    finally:
        sys.settrace(None)
    assert res.status == "interrupted" and res.n_nodes == 1
    rep = verify_certificate(res.certificate, X, y)
    assert rep.ok, str(rep)
    assert res.certificate.bounds["lower_bound"] <= res.objective


@pytest.mark.parametrize("method", ["_branch", pytest.param("_fix", marks=pytest.mark.slow)])
def test_an_interrupt_at_every_bytecode_of_the_first_branching_or_fixing(method):
    """Every bytecode of the first call of ``_branch`` (and of ``_fix`` that fixes
    variables): the narrow windows between the steps of one update, one by one."""
    shape, lam = PROBLEMS["fixing"]
    X, y = _data(*shape)
    calls = []  # (first, last) bytecode count of each call that changed the tree
    original = getattr(search_mod.BranchAndBound, method)
    tracer_box = []

    def spy(self, *args):
        first = tracer_box[0].count + 1
        out = original(self, *args)
        if method == "_branch" or out or args[0].bound_fixings:
            calls.append((first, tracer_box[0].count))
        return out

    setattr(search_mod.BranchAndBound, method, spy)
    try:
        tracer_box.append(_Interrupter(None, (method,)))
        tracer_box[0].codes.add(original.__code__)
        sys.settrace(tracer_box[0])
        try:
            sparsecert.certify(X, y, 3, lam, fit_intercept=False, rel_gap=0.0, verbose=0,
                               batch_size=3)
        finally:
            sys.settrace(None)
    finally:
        setattr(search_mod.BranchAndBound, method, original)
    first, last = calls[0]
    assert last - first > 10
    optimum = _brute_force_optimum(X, y, 3, lam)
    for at in range(first, last + 1):
        res, _ = _certify(X, y, lam, at, (method,))
        # (optimal: stopped after the last region's bound reached the cutoff)
        assert res.status in ("interrupted", "optimal")
        assert res.lower_bound <= optimum * (1 + 1e-9)
        open_nodes = [n for n in res.search.nodes if n.status == "open"]
        if open_nodes:
            assert res.search.lower_bound <= min(n.lower_bound for n in open_nodes)
        rep = verify_certificate(res.certificate, X, y)
        assert rep.ok, f"interrupted at bytecode {at} of {method}: {rep}"
