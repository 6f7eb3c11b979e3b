"""Red-team attacks on the version-3 verifier (the streamed proof file, derived bound fixings,
the problem's extensions fixed at the root), each a forged certificate or witness the verifier
must refuse. JSON and proof file are rewritten together with consistent hashes, as a forger
would.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from _certgen import TNode, data_sha256, document, encode_proof

from sparsecert.certificate import verify as V
from sparsecert.certificate import verify_certificate


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
