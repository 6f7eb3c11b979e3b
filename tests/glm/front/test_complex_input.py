"""Complex input is refused before any conversion: a clear error, and no numpy ComplexWarning
(the warning a cast to float64 gives while it drops the imaginary part) on the way."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _certgen import make_data

import sparsecert
from sparsecert.estimators import (
    KSparseHingeClassifier,
    KSparseLinearRegression,
    KSparseLogisticRegression,
    KSparsePoissonRegression,
)
from sparsecert.path import KSparseCV, KSparseLinearRegressionCV, certify_path


def _complex(a):
    return a.astype(np.complex128) + 1j


ENTRY_POINTS = {
    "certify": lambda X, y: sparsecert.certify(X, y, 1, 1.0, verbose=0),
    "certify_path": lambda X, y: certify_path(X, y, [1, 2], 1.0),
    "KSparseLinearRegression": lambda X, y: KSparseLinearRegression(k=1).fit(X, y),
    "KSparsePoissonRegression": lambda X, y: KSparsePoissonRegression(k=1).fit(X, y),
    "KSparseLogisticRegression": lambda X, y: KSparseLogisticRegression(k=1).fit(X, y > 0),
    "KSparseHingeClassifier": lambda X, y: KSparseHingeClassifier(k=1).fit(X, y > 0),
    "KSparseLinearRegressionCV": lambda X, y: KSparseLinearRegressionCV(ks=[1], cv=2).fit(X, y),
    "KSparseCV": lambda X, y: KSparseCV(KSparseLogisticRegression(), ks=[1], cv=2).fit(X, y > 0),
}


@pytest.mark.parametrize("which", ["X", "y"])
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_complex_input_is_refused_without_a_complex_warning(entry, which):
    X, y = make_data("squared", n=12, p=3, seed=0)
    y = np.abs(y)  # counts for the Poisson loss; the labels are y > median
    y = y - np.median(y) if entry in ("KSparseLogisticRegression", "KSparseHingeClassifier",
                                      "KSparseCV") else y
    if which == "X":
        X = _complex(X)
    elif entry in ("KSparseLogisticRegression", "KSparseHingeClassifier", "KSparseCV"):
        pytest.skip("a classifier's labels are classes, not numbers")
    else:
        y = _complex(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        with pytest.raises((TypeError, ValueError), match="[Cc]omplex"):
            ENTRY_POINTS[entry](X, y)
