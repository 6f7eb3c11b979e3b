"""Red-team attacks on the version-3 verifier (the streamed proof file, derived bound fixings,
the problem's extensions fixed at the root), each a forged certificate or witness the verifier
must refuse. JSON and proof file are rewritten together with consistent hashes, as a forger
would.
"""

from __future__ import annotations

import struct
from fractions import Fraction

import numpy as np
import pytest
from _certgen import (
    TNode,
    data_sha256,
    document,
    encode_proof,
    enumeration_certificate,
    forge,
    make_data,
    raw_proof,
    reforge,
    rehashed,
)
from _exact import squared_optimum

from sparsecert.certificate import verify as V
from sparsecert.certificate import verify_certificate
from sparsecert.solvers.losses import get_loss


def _single_leaf(X, y, problem, zeta, *, extensions=None, lb=-1e300, ub=1e300):
    """A certificate whose tree is one leaf with the dual witness ``zeta`` (doc, proof)."""
    proof = encode_proof(TNode(status="solved", witness=("dual", zeta)), *X.shape)
    doc = document(X, y, problem=problem, incumbent=dict(coef=np.zeros(X.shape[1])),
                   bounds=dict(lower_bound=lb, upper_bound=ub, status="time_limit"),
                   proof=proof)
    doc["problem"].update(extensions or {})
    return doc, proof


def test_weighted_huber_domain_when_twice_delta_overflows():
    """The weighted Huber conjugate's domain is |zeta_i| <= 2 delta w_i. With delta above half
    the largest float, 2 delta overflows to inf; the check rounded inf * w_i down to the largest
    float and so accepted any finite zeta_i, e.g. the weighted least-squares optimum's dual point
    where the residual exceeds delta. Outside the domain the conjugate is +inf, so the "bound"
    (the weighted squared loss's dual value) is no bound of the Huber problem."""
    delta = 9e307  # 2 * delta is inf in float64
    X = np.array([[1.0], [0.5]])
    y = np.array([1.0, -1.0])
    w = np.array([1e-320, 1.0])
    zeta = np.array([-1e-10, 0.5])  # |zeta_0| far above 2 delta w_0 (about 1.8e-12)
    assert abs(Fraction(zeta[0])) > 2 * Fraction(delta) * Fraction(w[0])
    problem = dict(loss="huber", huber_delta=delta, k=1, lambda2=1.0, max_abs_coef=None,
                   fit_intercept=False)
    doc, proof = _single_leaf(X, y, problem, zeta,
                              extensions=dict(sample_weight_sha256=data_sha256(w)))
    rep = verify_certificate(doc, X, y, proof=proof, sample_weight=w)
    assert "leaf_witnesses" in rep.failed_checks
    assert "outside the domain of the weighted huber conjugate" in str(rep)
    # the check itself, on the witness alone
    assert V._weighted_dual_problem("huber", zeta, y, w, False, delta) is not None
    # a witness inside the domain (|zeta_0| <= 2 delta w_0 exactly) is still accepted
    inside = np.array([1e-12, 0.5])
    assert abs(Fraction(inside[0])) <= 2 * Fraction(delta) * Fraction(w[0])
    assert V._weighted_dual_problem("huber", inside, y, w, False, delta) is None


def test_the_producers_weighted_huber_domain_is_inside_the_exact_one():
    """The producer clips its witnesses to this interval: with 2 delta overflowing it had no
    ends, so its witnesses fell outside the domain the verifier (now) checks."""
    delta = 9e307
    y = np.array([1.0, -1.0, 2.0, 0.5])
    w = np.array([1e-320, 1.0, 0.0, 3.0])
    lo, hi = get_loss("huber", {"huber_delta": delta}).weighted_dual_domain(y, w)
    for i in range(y.size):
        assert lo[i] == -hi[i]
        if np.isfinite(hi[i]):
            assert Fraction(hi[i]) <= 2 * Fraction(delta) * Fraction(w[i])
        else:  # every float is inside
            assert 2 * Fraction(delta) * Fraction(w[i]) > Fraction(np.finfo(float).max)
    assert hi[2] == 0.0 and hi[0] > 0.0 and hi[1] == np.inf
    # the ends (the largest float for an infinite one) are what the verifier accepts
    end = np.minimum(hi, np.finfo(float).max)
    assert V._weighted_dual_problem("huber", end, y, w, False, delta) is None
    assert V._weighted_dual_problem("huber", -end, y, w, False, delta) is None


# ---------------------------------------------------------------------------------------------
# The tree: a forger who claims a lower bound just above the exact optimum must leave the
# optimum's support in some region the walk bounds with a witness, whatever the records say
# ---------------------------------------------------------------------------------------------

K, LAM = 2, 0.5


@pytest.fixture(scope="module")
def honest():
    """An honest enumeration certificate (squared loss, p = 4, k = 2), its tree, the position
    of its optimal leaf, and the exact optimum (fractions)."""
    X, y = make_data("squared", n=10, p=4, seed=5)
    cert, info = enumeration_certificate(X, y, "squared", K, LAM)
    assert verify_certificate(cert, X, y).ok
    return X, y, cert, info, squared_optimum(X, y, K, LAM)


def _above(opt: Fraction) -> float:
    """The smallest float above the exact optimum: a false lower bound."""
    f = float(opt)
    return f if Fraction(f) > opt else float(np.nextafter(f, np.inf))


def _false_claim(doc: dict, opt: Fraction) -> dict:
    doc["bounds"].update(lower_bound=_above(opt), status="time_limit")
    assert doc["bounds"]["lower_bound"] <= doc["bounds"]["upper_bound"]
    return doc


def test_derived_fixings_cannot_cut_off_the_optimal_support(honest):
    """The derive bit on every node (the root given the optimal leaf's witness, the best one
    for the optimum's region, so every branched node derives with it), with the claim just
    above the optimum: the fixings are derived at the claimed bound, so none of them can cut
    off the region holding the optimal support, and that region's bound stays below the claim."""
    X, y, cert, info, opt = honest
    doc, root = forge(cert)
    root.witness = root.preorder()[info["best_leaf"]].witness
    for nd in root.preorder():
        nd.derive = True
    fair = verify_certificate(reforge(doc, root), X, y)  # the honest claim: fixings derived
    assert fair.ok and "bound fixings derived" in dict(
        (n, m) for n, _, m in fair.checks)["tree_fixings"], str(fair)
    rep = verify_certificate(reforge(_false_claim(doc, opt), root), X, y)
    assert rep.failed_checks == ["leaf_bounds"], str(rep)
    assert "safe bound below the claimed lower bound" in dict(rep.failures)["leaf_bounds"]


def test_swapped_children_move_every_witness_to_another_region(honest):
    """The children of the root swapped (the z_j = 0 subtree read as z_j = 1 and back): every
    leaf keeps its witness but is bounded over the other region, which holds the optimum."""
    X, y, cert, _, opt = honest
    doc, root = forge(cert)
    root.kids.reverse()
    rep = verify_certificate(reforge(_false_claim(doc, opt), root), X, y)
    assert rep.failed_checks == ["leaf_bounds"], str(rep)


def test_the_optimal_subtree_replaced_by_one_leaf_with_another_witness(honest):
    """The branched node above the optimal leaf replaced by a single leaf that carries a
    sibling's witness (and the records renumbered to a valid preorder): that leaf's region holds
    the optimal support and its witness does not bound it above the claim."""
    X, y, cert, info, opt = honest
    doc, root = forge(cert)
    order = root.preorder()
    best = order[info["best_leaf"]]
    parent = next(nd for nd in order if nd.kids and any(c is best for c in nd.kids))
    other = parent.kids[1] if parent.kids[0] is best else parent.kids[0]
    while other.witness is None:
        other = other.kids[0]
    parent.status, parent.var, parent.kids = "solved", None, None
    parent.witness = other.witness
    rep = verify_certificate(reforge(_false_claim(doc, opt), root), X, y)
    assert rep.failed_checks == ["leaf_bounds"], str(rep)


def test_every_leaf_aliasing_one_witness_slot(honest):
    """Every leaf's record pointing at one non-optimal leaf's witness slot (slots may be
    shared; the cache keys by slot): each region is bounded with that witness, and the region
    holding the optimum is not bounded above the claim."""
    X, y, cert, info, opt = honest
    doc, root = forge(cert)
    order = root.preorder()
    best = order[info["best_leaf"]]
    donor = next(nd for nd in order if nd.witness is not None and nd is not best)
    for nd in order:
        if nd.witness is not None:
            nd.witness = donor.witness
    rep = verify_certificate(reforge(_false_claim(doc, opt), root), X, y)
    assert rep.failed_checks == ["leaf_bounds"], str(rep)


def test_a_certificate_that_excludes_the_optimal_support_is_about_another_problem(honest):
    """The problem's exclude (the root's fixings) can certify a higher bound: of the problem
    without those features. A user who poses the plain problem (exclude=[]) gets a failed
    parameter check, not a verified bound above the plain problem's optimum."""
    X, y, cert, info, opt = honest
    doc, root = forge(cert)
    j = int(np.flatnonzero(info["coef"])[0])
    doc["problem"]["exclude"] = [j]
    doc["incumbent"].update(coef=[0.0] * X.shape[1], support=[])
    doc["bounds"]["upper_bound"] = float(y @ y) * 2
    rep = verify_certificate(reforge(_false_claim(doc, opt), root), X, y, exclude=[])
    assert rep.failed_checks == ["parameters"], str(rep)
    assert f"exclude = [] (user) but [{j}] in the certificate" in dict(rep.failures)["parameters"]


def test_header_counts_that_wrap_around_64_bits_are_refused():
    """Counts chosen so that the file's size, computed in wrapping 64-bit arithmetic (as a
    C port might), equals the real size of a one-node file: 16 (2^60 + 1) = 2^64 + 16 and
    8 n (2^59 + 1) = 2^64 + 8 n for n = 4. The verifier's counts are exact integers."""
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, -1.0]])
    y = np.array([1.0, 2.0, 0.5, -1.0])
    real = raw_proof(4, 2, [(2 | 8, 0, 0, 0)], duals=[-2.0 * y])
    n_nodes, n_dual = 2 ** 60 + 1, 2 ** 59 + 1
    size = V.PROOF_HEADER_SIZE + 16 * n_nodes + 8 * 4 * n_dual + 8 * 1 + 0
    assert size % 2 ** 64 == len(real)
    forged = real[:16] + struct.pack("<4Q", n_nodes, n_dual, 0, 0) + real[48:]
    doc, _ = _single_leaf(X, y, dict(loss="squared", k=1, lambda2=1.0, max_abs_coef=None,
                                     fit_intercept=False), -2.0 * y)
    rep = verify_certificate(rehashed(doc, forged), X, y)
    assert rep.exit_code == 2 and "more than the format's" in rep.error_line, str(rep)
