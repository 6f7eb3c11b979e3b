"""The compiled Lanczos estimate of ``||X||_2^2`` (a node's step size) against LAPACK's SVD, on
dense and (centred) sparse designs, wide and tall, with clustered and separated spectra."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparsecert.solvers.perspective._linalg import (
    dense_design,
    design_norm_sq,
    lanczos_norm_sq,
    sparse_design,
    sub_design,
)
from sparsecert.sparse import as_sparse_design


def _svd_norm_sq(X: np.ndarray) -> float:
    return float(np.linalg.norm(X, 2) ** 2) if X.size else 0.0


@pytest.mark.parametrize("shape", [(71, 300), (300, 71), (40, 40), (5, 3), (1, 7), (7, 1),
                                   (120, 90)])
def test_dense_estimate_matches_the_svd_from_below(shape):
    rng = np.random.default_rng(sum(shape))
    X = rng.standard_normal(shape)  # a random matrix: its top eigenvalues cluster
    ref = _svd_norm_sq(X)
    got = design_norm_sq(dense_design(np.ascontiguousarray(X)))
    assert got <= ref * (1 + 1e-12)  # a Ritz value: from below
    assert got == pytest.approx(ref, rel=1e-6)


def test_a_separated_spectrum_and_a_rank_one_design_are_exact():
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((60, 60)))
    V, _ = np.linalg.qr(rng.standard_normal((200, 60)))
    s = np.geomspace(30.0, 1e-3, 60)
    X = np.ascontiguousarray((U * s) @ V.T)
    assert design_norm_sq(dense_design(X)) == pytest.approx(900.0, rel=1e-10)
    u, v = rng.standard_normal(50), rng.standard_normal(80)
    X1 = np.ascontiguousarray(np.outer(u, v))  # Lanczos stops after one step
    assert design_norm_sq(dense_design(X1)) == pytest.approx(
        float(u @ u) * float(v @ v), rel=1e-12)
    assert design_norm_sq(dense_design(np.zeros((4, 6)))) == 0.0


@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("shape", [(50, 200), (200, 50)])
def test_sparse_and_column_subset_estimates_match_the_svd(centred, shape):
    X = sp.random(*shape, density=0.1, format="csc", random_state=4) * 3.0
    dense = X.toarray()
    m = dense.mean(axis=0) if centred else None
    D = sparse_design(as_sparse_design(X), m)
    Xc = dense - (m if centred else 0.0)
    assert design_norm_sq(D) == pytest.approx(_svd_norm_sq(Xc), rel=1e-6)
    cols = np.arange(0, shape[1], 3)
    assert design_norm_sq(sub_design(D, cols)) == pytest.approx(_svd_norm_sq(Xc[:, cols]),
                                                                rel=1e-6)


def test_the_estimate_is_the_same_on_every_call_and_follows_the_seed():
    X = np.ascontiguousarray(np.random.default_rng(9).standard_normal((80, 500)))
    D = dense_design(X)
    a = lanczos_norm_sq(D, n_steps=6)  # few steps: not converged, so the start shows
    assert lanczos_norm_sq(D, n_steps=6) == a
    assert lanczos_norm_sq(X, n_steps=6, seed=1) != a
    assert a <= _svd_norm_sq(X)
