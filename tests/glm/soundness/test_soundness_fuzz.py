"""A fast, seeded slice of the verifier's differential fuzzing campaign
(tests/glm/soundness/_fuzz.py).

The campaign (``python tests/glm/soundness/_fuzz.py --cases 20000``, outside CI) draws data,
parameters and witnesses toward the float edges for all four losses and checks the verifier's own
bound code against exact rational references: every region bound of a dual or shifted witness
against the exact bound of that witness, the largest eigenvalue shift the verifier proves (found by
bisection on the floats) against an exact LDL^T, the incumbent objective's upper estimate against
the exact objective, and whole certificates claimed as tightly as the verifier allows against the
exact optimum (squared loss) or the exact objective of feasible points. Here a few hundred of its
seeds run, and the slice is shown to catch a verifier that drops a rounding error."""

from __future__ import annotations

from fractions import Fraction

import _fuzz
import numpy as np
import pytest
from _cli import one_error_line

import sparsecert
from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate import verify as V
from sparsecert.cli import main as cli_main


@pytest.mark.parametrize("loss", _fuzz._LOSSES)
def test_component_bounds_are_true_in_exact_arithmetic(loss):
    _fuzz.STATS.clear()
    bad = [line for seed in range(40) for line in _fuzz.run_case(seed, loss)]
    assert not bad, "\n".join(bad[:5])
    # not vacuous: finite bounds were compared
    assert _fuzz.STATS.get("dual", 0) >= 20 and _fuzz.STATS.get("objective", 0) >= 20
    if loss == "squared":
        assert _fuzz.STATS.get("shifted", 0) >= 2 and _fuzz.STATS.get("shift_edge", 0) >= 5


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


# ------------------------------------------------------------------------------ data dtypes


def _integer_forgery():
    """Integer data beyond 2^53: X = 2^53 + 1 rounds to 2^53 as a float64, y = 2^53 + 2 does
    not, so b = 1 + 2^-52 fits the rounded data exactly (F = lambda2 b^2 ~ 1e-6) while on the
    user's integers F(b) = (1 + 2^-52)^2 + lambda2 b^2 > 1."""
    X = np.array([[2 ** 53 + 1]], dtype=np.int64)
    y = np.array([2 ** 53 + 2], dtype=np.int64)
    b, lam = 1.0 + 2.0 ** -52, 1e-6
    _, ub = V.objective_upper_bound(X.astype(float), y.astype(float), V.Problem("squared", lam),
                                    np.array([b]), 0.0)
    cert = Certificate.build(
        X, y, problem=dict(loss="squared", k=1, lambda2=lam, max_abs_coef=None,
                           fit_intercept=False),
        incumbent=dict(coef=np.array([b]), intercept=0.0, objective=ub),
        bounds=dict(lower_bound=-1e-300, upper_bound=ub, status="optimal", rel_gap_tol=1e-4),
        eig_shift=0.0,
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="solved",
                    witness=("dual", np.zeros(1)))])
    exact = (Fraction(int(y[0])) - Fraction(int(X[0, 0])) * Fraction(b)) ** 2 \
        + Fraction(lam) * Fraction(b) ** 2
    assert exact > 1 > ub  # the claim UB >= F(incumbent) is false for the user's data
    return X, y, cert


def test_integer_data_beyond_2_53_is_refused_not_verified_rounded():
    X, y, cert = _integer_forgery()
    assert verify_certificate(cert, X.astype(float), y.astype(float)).ok  # true when rounded
    with pytest.raises(ValueError, match=r"X\[0, 0\] = 9007199254740993 is not exactly"):
        verify_certificate(cert, X, y)  # used to be VERIFIED (exit code 0)
    with pytest.raises(ValueError, match="y.0. = 9007199254740993 is not exactly"):
        verify_certificate(cert, X.astype(float), np.array([2 ** 53 + 1]))
    with pytest.raises(ValueError, match="not exactly a float64"):
        sparsecert.verify(cert, X, y)
    Xl = np.array([[np.longdouble(1) / 3]])
    with pytest.raises(ValueError, match="not exactly a float64"):
        verify_certificate(cert, Xl, np.array([1.0]))
    # integers a float64 holds exactly are data like any other (here the claim is true)
    assert verify_certificate(cert, np.array([[2 ** 53]], dtype=np.int64),
                              np.array([2 ** 53 + 2], dtype=np.uint64)).ok


def _padded_integer_forgery():
    """The forgery above with a zero row and a zero column added (the same claim, false on
    the user's integers): room for data given as a list that mixes floats with the integer,
    or as a data frame with an integer column beside a float column. numpy and pandas
    convert such data to float64 themselves, rounding 2^53 + 1, before any dtype is seen."""
    b, lam = 1.0 + 2.0 ** -52, 1e-6
    X = np.array([[2.0 ** 53, 0.0], [0.0, 0.0]])  # the rounded data the certificate is about
    y = np.array([2.0 ** 53 + 2, 0.0])
    _, ub = V.objective_upper_bound(X, y, V.Problem("squared", lam), np.array([b, 0.0]), 0.0)
    cert = Certificate.build(
        X, y, problem=dict(loss="squared", k=1, lambda2=lam, max_abs_coef=None,
                           fit_intercept=False),
        incumbent=dict(coef=np.array([b, 0.0]), intercept=0.0, objective=ub),
        bounds=dict(lower_bound=-1e-300, upper_bound=ub, status="optimal", rel_gap_tol=1e-4),
        eig_shift=0.0,
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="solved",
                    witness=("dual", np.zeros(2)))])
    exact = (Fraction(2 ** 53 + 2) - Fraction(2 ** 53 + 1) * Fraction(b)) ** 2 \
        + Fraction(lam) * Fraction(b) ** 2
    assert exact > 1 > ub
    return cert


def test_lists_and_frames_rounded_by_their_conversion_are_refused():
    """Used to be VERIFIED: the verifier looked at the dtype numpy (or pandas) produced, float64,
    after the conversion had rounded the user's integer."""
    pd = pytest.importorskip("pandas")
    cert = _padded_integer_forgery()
    y = [2 ** 53 + 2, 0.0]
    assert verify_certificate(cert, [[2.0 ** 53, 0.0], [0.0, 0.0]], y).ok  # the rounded data
    with pytest.raises(ValueError, match=r"X\[0, 0\] = 9007199254740993 is not exactly"):
        verify_certificate(cert, [[2 ** 53 + 1, 0.0], [0, 0.0]], y)
    frame = pd.DataFrame({"a": [2 ** 53 + 1, 0], "b": [0.0, 0.0]})
    with pytest.raises(ValueError, match=r"X\[0, 0\] = 9007199254740993 is not exactly"):
        verify_certificate(cert, frame, y)
    with pytest.raises(ValueError, match=r"y\[0\] = 9007199254740993 is not exactly"):
        verify_certificate(cert, [[2.0 ** 53, 0.0], [0.0, 0.0]], [2 ** 53 + 1, 0.5])
    # the same entry points, on data that float64 holds exactly, verify
    exact_frame = pd.DataFrame({"a": [2 ** 53, 0], "b": [0.0, 0.0]})
    assert verify_certificate(cert, exact_frame, pd.Series(y)).ok


def test_parameters_the_user_fixes_must_be_exactly_float64():
    """A parameter the user fixes replaces the certificate's only if it is the same number:
    lambda2 = 1/3 as a Fraction used to be checked as 0.333...3 and VERIFIED."""
    X = np.array([[1.0, 2.0], [3.0, 1.0], [0.5, -1.0], [2.0, 2.0]])
    y = np.array([1.0, 2.0, 0.0, 3.0])
    cert = sparsecert.certify(X, y, 1, 1 / 3, max_abs_coef=10.0, verbose=0).certificate
    assert verify_certificate(cert, X, y, lambda2=1 / 3, max_abs_coef=10.0).ok
    assert verify_certificate(cert, X, y, lambda2=Fraction(1 / 3), max_abs_coef=10).ok
    for kw in (dict(lambda2=Fraction(1, 3)), dict(max_abs_coef=Fraction(10) + Fraction(1, 2 ** 60)),
               dict(lambda2=2 ** 60 + 1), dict(lambda2=10 ** 400)):
        with pytest.raises(ValueError, match="exactly a float64|too large"):
            verify_certificate(cert, X, y, **kw)
    with pytest.raises(TypeError, match="lambda2 must be a real number"):
        verify_certificate(cert, X, y, lambda2="0.3")
    with pytest.raises(TypeError, match="k must be an integer"):  # a type, as certify says
        verify_certificate(cert, X, y, k="1")


def test_standalone_verifier_refuses_integer_data_in_one_line(tmp_path, capsys):
    X, y, cert = _integer_forgery()
    cert.save(tmp_path / "c.json")
    np.savez(tmp_path / "d.npz", X=X, y=y)
    assert V._main([str(tmp_path / "c.json"), str(tmp_path / "d.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "not exactly a float64" in err


def test_command_line_refuses_integer_data_in_one_line(tmp_path, capsys):
    """The command line's loader converted the arrays to float64 before the verifier saw
    them: ``sparsecert verify`` said VERIFIED for the forgery above."""
    X, y, cert = _integer_forgery()
    cert.save(tmp_path / "c.json")
    np.savez(tmp_path / "d.npz", X=X, y=y)
    assert cli_main(["verify", str(tmp_path / "c.json"), "--data", str(tmp_path / "d.npz")]) == 2
    assert "X[0, 0] = 9007199254740993 is not exactly a float64" in one_error_line(capsys)
    np.save(tmp_path / "X.npy", X.astype(float))
    np.save(tmp_path / "y.npy", np.array([2 ** 64 - 1], dtype=np.uint64))
    assert cli_main(["verify", str(tmp_path / "c.json"), "--data", str(tmp_path / "X.npy"),
                     "--y", str(tmp_path / "y.npy")]) == 2
    assert "y[0] = 18446744073709551615 is not exactly" in one_error_line(capsys)
