"""Mutation property test: honest certificates, randomly mutated by a forger (witnesses scaled,
pushed along null directions or to the domain's boundary, nodes flagged for the verifier to
derive bound fixings, subtrees collapsed into leaves, witnesses swapped, the eigenvalue shift
raised, coefficients nudged), re-hashed, and then claimed as tightly as the verifier allows (LB
raised to the verifier's own recomputed minimum, UB lowered to its upper estimate). Whatever it
accepts must be true in exact arithmetic: LB <= the exact optimum (squared loss: every support
solved in ``fractions``) and UB >= the exact objective of the incumbent.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction

import numpy as np
import pytest
from _certgen import enumeration_certificate, forge, reforge, zero_sum
from _exact import F, squared_objective, squared_optimum

import sparsecert
from sparsecert.certificate import verify_certificate


def _data(kind: str, rng):
    if kind == "singular_int":
        X = rng.integers(-3, 4, (8, 4)).astype(float)
        X[:, 3] = X[:, 0] - X[:, 1]
    elif kind == "dummies":
        D = np.eye(2)[rng.integers(0, 2, 8)]
        X = np.hstack([D, np.ones((8, 1)), rng.standard_normal((8, 1))])
    elif kind == "offset":
        X = rng.integers(-4, 5, (8, 3)).astype(float)
        X[:, 0] += 1e9
    else:  # wide
        X = rng.standard_normal((3, 5))
    lin = X[:, 0] - X[:, 0].mean()
    y = np.round(lin + rng.integers(-2, 3, X.shape[0])) + 1.0
    return X, y


def tightly_claimed_mutants(cert, X, y, fit_intercept, rng, tries: int):
    """The forger's mutants of ``cert`` (``tries`` of them) that the verifier accepts once
    re-hashed and claimed as tightly as it allows: LB raised to its own recomputed minimum
    (probed with a claim at the incumbent's objective: the bound fixings the verifier derives
    only shrink the regions when the claim is then lowered to that minimum), UB lowered to its
    upper estimate. Yields each accepted certificate's document."""
    doc, root = forge(cert)
    for _ in range(tries):
        d, r = copy.deepcopy(doc), copy.deepcopy(root)
        _mutate(d, r, X, fit_intercept, rng)
        top = float(d["incumbent"]["objective"])
        d["bounds"].update(lower_bound=top, upper_bound=1e300, status="time_limit")
        mutant = reforge(d, r)
        probe = verify_certificate(mutant, X, y)
        lb, ub = probe.certified_lower_bound, probe.objective_upper
        if not (np.isfinite(lb) and np.isfinite(ub)):
            continue
        mutant.data["bounds"].update(lower_bound=float(min(lb, ub)), upper_bound=float(ub))
        if verify_certificate(mutant, X, y).ok:
            yield mutant.to_dict()


def _mutate(doc, root, X, fit_intercept, rng):
    nodes = root.preorder()
    duals = [nd for nd in nodes if nd.witness is not None and nd.witness[0] == "dual"]
    shifted = [nd for nd in nodes if nd.witness is not None and nd.witness[0] == "shifted"]
    for _ in range(int(rng.integers(1, 4))):
        op = int(rng.integers(0, 7))
        if op == 0 and duals:
            nd = duals[rng.integers(0, len(duals))]
            nd.witness = ("dual", nd.witness[1] * rng.choice([0.5, 1.1, -1.0, 1e6, 1 + 1e-12]))
        elif op == 1 and duals:
            v = np.linalg.svd(X.T)[2][-1]
            nd = duals[rng.integers(0, len(duals))]
            nd.witness = ("dual", nd.witness[1] + rng.choice([1e-8, 1.0, 1e8, 1e15]) * v)
        elif op == 2 and shifted:
            scale = rng.choice([1.01, 1e3, -1.0])
            for nd in shifted:
                nd.witness = ("shifted", nd.witness[1] * scale)
        elif op == 3:  # the verifier derives this node's bound fixings
            nodes[rng.integers(0, len(nodes))].derive = True
        elif op == 4:
            branched = [nd for nd in nodes if nd.kids]
            if branched:
                top = branched[rng.integers(0, len(branched))]
                wits = [x.witness for x in top.preorder() if x.witness is not None]
                top.kids, top.var, top.status = None, None, "solved"
                if wits:
                    top.witness = wits[rng.integers(0, len(wits))]
                nodes = root.preorder()
                duals = [nd for nd in nodes if nd.witness is not None
                         and nd.witness[0] == "dual"]
                shifted = [nd for nd in nodes if nd.witness is not None
                           and nd.witness[0] == "shifted"]
        elif op == 5:
            mu = doc["relaxation"]["eig_shift"]
            doc["relaxation"]["eig_shift"] = float(mu * rng.choice([1.5, 1 + 1e-9]) if mu > 0
                                                   else 1e-20)
        else:
            leaves = [x for x in nodes if x.witness is not None]
            if len(leaves) > 1:
                i, j = rng.choice(len(leaves), 2, replace=False)
                leaves[i].witness, leaves[j].witness = leaves[j].witness, leaves[i].witness
    if fit_intercept:
        for nd in root.preorder():
            if nd.witness is not None and nd.witness[0] == "dual" and \
                    math.fsum(nd.witness[1].tolist()) != 0.0 and rng.random() < 0.8:
                nd.witness = ("dual", zero_sum(nd.witness[1]))


@pytest.mark.parametrize("seed", range(6))
def test_accepted_mutants_are_true_in_exact_arithmetic(seed):
    rng = np.random.default_rng(seed)
    kind = ["singular_int", "dummies", "offset", "wide"][seed % 4]
    X, y = _data(kind, rng)
    fit_intercept = kind in ("dummies", "offset") or seed % 2 == 1
    k, lam = 2, 0.3
    if seed % 3 == 0 and kind != "wide":
        Xc = X - X.mean(0) if fit_intercept else X
        lmin = np.linalg.eigvalsh(Xc.T @ Xc)[0]
        if lmin > 1e-3:
            cert, _ = enumeration_certificate(X, y, "squared", k, lam,
                                              fit_intercept=fit_intercept,
                                              witness="shifted", eig_shift=0.5 * lmin)
        else:
            cert, _ = enumeration_certificate(X, y, "squared", k, lam,
                                              fit_intercept=fit_intercept)
    else:
        cert = sparsecert.certify(X, y, k, lam, fit_intercept=fit_intercept, verbose=0,
                                  rel_gap=1e-6).certificate
    opt = squared_optimum(X, y, k, lam, fit_intercept)
    accepted = 0
    for d in tightly_claimed_mutants(cert, X, y, fit_intercept, rng, 12):
        accepted += 1
        inc = d["incumbent"]
        assert F(d["bounds"]["lower_bound"]) <= opt
        assert squared_objective(X, y, lam, np.array(inc["coef"]), inc["intercept"]) \
            <= Fraction(d["bounds"]["upper_bound"])
    assert accepted > 0  # not vacuous: some mutants are valid certificates
