"""A fast, seeded slice of the verifier's differential fuzzing campaign (tests/_fuzz.py).

The campaign (``python tests/_fuzz.py --cases 20000``, outside CI) draws data, parameters and
witnesses toward the float edges for all four losses and checks the verifier's own bound code
against exact rational references: every region bound of a dual or shifted witness against the
exact bound of that witness, the largest eigenvalue shift the verifier proves (found by bisection
on the floats) against an exact LDL^T, the incumbent objective's upper estimate against the exact
objective, and whole certificates claimed as tightly as the verifier allows against the exact
optimum (squared loss) or the exact objective of feasible points. Here a few hundred of its
seeds run, and the slice is shown to catch a verifier that drops a rounding error.
"""

from __future__ import annotations

import _fuzz
import numpy as np
import pytest

from sparsecert.certificate import verify as V


@pytest.mark.parametrize("loss", _fuzz._LOSSES)
def test_component_bounds_are_true_in_exact_arithmetic(loss):
    _fuzz.STATS.clear()
    bad = [line for seed in range(40) for line in _fuzz.run_case(seed, loss)]
    assert not bad, "\n".join(bad[:5])
    # not vacuous: finite bounds were compared
    assert _fuzz.STATS.get("dual", 0) >= 20 and _fuzz.STATS.get("objective", 0) >= 20
    if loss == "squared":
        assert _fuzz.STATS.get("shifted", 0) >= 5 and _fuzz.STATS.get("shift_edge", 0) >= 5


def test_whole_certificates_claimed_tightly_are_true():
    _fuzz.STATS.clear()
    bad = [line for seed in range(25) for line in _fuzz.run_e2e(seed)]
    assert not bad, "\n".join(bad[:5])
    assert _fuzz.STATS.get("e2e_accepted", 0) >= 5


def test_the_slice_catches_a_verifier_that_drops_a_rounding_error(monkeypatch):
    """Without the rounding radius of X^T zeta the same seeds find bounds above the exact
    value of their witness (the data cancel in X^T zeta on purpose)."""
    radius = V._Design.xt_ball_radius

    def no_radius(self, nzc, nzr):
        return np.zeros_like(radius(self, nzc, nzr))

    monkeypatch.setattr(V._Design, "xt_ball_radius", no_radius)
    bad = [line for seed in range(60) for line in _fuzz.run_case(seed, "logistic")]
    assert any(" dual " in line for line in bad)
