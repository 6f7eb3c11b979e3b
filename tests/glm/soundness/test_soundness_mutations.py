"""Mutation property test: honest certificates, randomly mutated by a forger (witnesses scaled,
pushed along null directions or to the domain's boundary, bound fixings added, subtrees
collapsed into leaves, witnesses swapped, the eigenvalue shift raised, coefficients nudged),
re-hashed, and then claimed as tightly as the verifier allows (LB raised to the verifier's own
recomputed minimum, UB lowered to its upper estimate). Whatever it accepts must be true in exact
arithmetic: LB <= the exact optimum (squared loss: every support solved in ``fractions``) and UB
>= the exact objective of the incumbent.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction

import numpy as np
import pytest
from _certgen import enumeration_certificate, zero_sum
from _exact import F, squared_objective, squared_optimum

import sparsecert
from sparsecert.certificate import verify_certificate
from sparsecert.certificate.schema import npz_bytes, sha256_bytes


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
    re-hashed and claimed as tightly as it allows: LB raised to its own recomputed minimum, UB
    lowered to its upper estimate. Yields each accepted certificate (a dict)."""
    doc, arr = cert.to_dict(), {key: v.copy() for key, v in cert.arrays.items()}
    for _ in range(tries):
        d, a = _mutate(doc, arr, X, fit_intercept, rng)
        side = npz_bytes(a)
        d["arrays"]["sha256"] = sha256_bytes(side)
        d["bounds"].update(lower_bound=-1e300, upper_bound=1e300, status="time_limit")
        probe = verify_certificate(d, X, y, sidecar=side)
        lb, ub = probe.certified_lower_bound, probe.objective_upper
        if not (np.isfinite(lb) and np.isfinite(ub)):
            continue
        d["bounds"].update(lower_bound=float(min(lb, ub)), upper_bound=float(ub))
        if verify_certificate(d, X, y, sidecar=side).ok:
            yield d


def _mutate(doc, arr, X, fit_intercept, rng):
    d = copy.deepcopy(doc)
    a = {k: v.copy() for k, v in arr.items()}
    nodes = d["tree"]["nodes"]
    Z = a["dual_values"]
    for _ in range(int(rng.integers(1, 4))):
        op = int(rng.integers(0, 7))
        if op == 0 and Z.shape[0]:
            Z[rng.integers(0, Z.shape[0])] *= rng.choice([0.5, 1.1, -1.0, 1e6, 1 + 1e-12])
        elif op == 1 and Z.shape[0]:
            v = np.linalg.svd(X.T)[2][-1]
            Z[rng.integers(0, Z.shape[0])] += rng.choice([1e-8, 1.0, 1e8, 1e15]) * v
        elif op == 2 and a["shifted_values"].size:
            a["shifted_values"] = a["shifted_values"] * rng.choice([1.01, 1e3, -1.0])
        elif op == 3:
            nd = nodes[rng.integers(0, len(nodes))]
            nd["fixings"] = (nd.get("fixings") or []) + [
                [int(rng.integers(0, X.shape[1])), int(rng.integers(0, 2))]]
        elif op == 4:
            branched = [nd for nd in nodes if nd["status"] == "branched"]
            if branched:
                top = branched[rng.integers(0, len(branched))]
                sub, grew = {top["id"]}, True
                while grew:
                    grew = False
                    for x in nodes:
                        if x["parent"] in sub and x["id"] not in sub:
                            sub.add(x["id"])
                            grew = True
                wits = [x["witness"] for x in nodes if x["id"] in sub and x["witness"]]
                nodes[:] = [x for x in nodes if x["id"] not in sub or x is top]
                top["status"] = "solved"
                if wits:
                    top["witness"] = wits[rng.integers(0, len(wits))]
        elif op == 5:
            mu = d["relaxation"]["eig_shift"]
            d["relaxation"]["eig_shift"] = float(mu * rng.choice([1.5, 1 + 1e-9]) if mu > 0
                                                 else 1e-20)
        else:
            leaves = [x for x in nodes if x["witness"]]
            if len(leaves) > 1:
                i, j = rng.choice(len(leaves), 2, replace=False)
                leaves[i]["witness"], leaves[j]["witness"] = (leaves[j]["witness"],
                                                              leaves[i]["witness"])
    if fit_intercept:
        for r in range(Z.shape[0]):
            if math.fsum(Z[r].tolist()) != 0.0 and rng.random() < 0.8:
                Z[r] = zero_sum(Z[r])
    return d, a


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
