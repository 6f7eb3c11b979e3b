"""A library result that comes back without an error proves nothing: the verifier (and the
producer) check every result of numpy/LAPACK/BLAS that enters a proof.

First the forgery that fooled every entry point: numpy's Cholesky (OpenBLAS potrf) stops only on
a pivot <= 0; a pivot that is not a number compares false, the factorisation "completes" and a
factor full of NaN comes back. The eigenvalue-shift proof read that as "positive definite", and
a shifted witness along the null direction of a singular Gram matrix then bounded the optimum as
high as wanted. Then the same verdict ("not proven") with each library call monkeypatched to
return NaN, inf or plausible garbage without raising.
"""

from __future__ import annotations

import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from _certgen import enumeration_certificate, make_data

import sparsecert
from sparsecert.certificate import Certificate, verify_certificate
from sparsecert.certificate import verify as V
from sparsecert.cli.main import main
from sparsecert.solvers import rigorous as R

# ------------------------------------------------------------------------------ the forgery


def _nan_pivot_design(t2: float, g: float) -> np.ndarray:
    """4 x 4 columns with squared norms <= 9e299 (below the 1e300 that certify accepts):
    columns 0 and 3 are equal (X^T X is singular), column 1 leans on column 0 by g. With the
    shift mu chosen so that the first pivot is tiny, the factorisation overflows in a way that
    leaves 0 * inf = NaN in the last pivot, which OpenBLAS's test lets through."""
    s, t = math.sqrt(1e299), math.sqrt(t2)
    X = np.zeros((4, 4))
    X[0, 0], X[1, 1], X[0, 1], X[2, 2], X[0, 3] = s, t, g / s, s, s
    return X


#: (t2, g, mu) found by bisecting mu for the verifier's and for the producer's own roundings
VERIFIER_NAN = (8.810108496773586e+299, 3.737519483642953e+290, 9.999999999999895e+298)
PRODUCER_NAN = (7.69537810660764e+299, 2.4983550370742004e+290, 9.999999999999904e+298)
Y_TINY = np.array([1e-150, -2e-150, 3e-150, 5e-151])


@pytest.fixture(scope="module")
def forged():
    """The zero model claimed optimal with lower bound 1 while the optimum is ~1e-299."""
    t2, g, mu = VERIFIER_NAN
    X = _nan_pivot_design(t2, g)
    beta = math.sqrt(2.0 / mu)  # mu ||b||^2 - 2 lambda' g*(...) ~ mu beta^2 = 2
    cert = Certificate.build(
        X, Y_TINY, problem=dict(loss="squared", k=1, lambda2=1.0, max_abs_coef=None,
                                fit_intercept=False),
        incumbent=dict(coef=np.zeros(4), intercept=0.0, objective=float(Y_TINY @ Y_TINY)),
        bounds=dict(lower_bound=1.0, upper_bound=1.0, status="optimal", rel_gap_tol=1e-4),
        eig_shift=mu,
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="solved",
                    witness=("shifted", np.array([beta, 0.0, 0.0, -beta])))])
    # the claim is false in exact arithmetic: the zero model's objective is ||y||^2 < 1
    assert sum(Fraction(v) ** 2 for v in Y_TINY) < Fraction(cert.lower_bound)
    assert np.linalg.matrix_rank(X) == 3  # X^T X is singular: no shift mu > 0 is true
    return X, Y_TINY, cert


@pytest.fixture
def nan_seen(monkeypatch):
    """Records whether numpy's Cholesky returned a non-finite factor without raising (so the
    tests below do exercise the library's hole)."""
    seen = []
    real = np.linalg.cholesky

    def spy(a):
        out = real(a)
        seen.append(not np.isfinite(out).all())
        return out

    monkeypatch.setattr(np.linalg, "cholesky", spy)
    return seen


def test_the_nan_pivot_forgery_is_refused_by_the_verifier(forged, nan_seen):
    X, y, cert = forged
    rep = verify_certificate(cert, X, y)
    assert nan_seen == [True]  # the library returned NaN/inf and raised nothing
    assert rep.exit_code == 1 and "eig_shift" in rep.failed_checks, str(rep)
    assert "NaN or infinite" in dict(rep.failures)["eig_shift"]


def test_every_entry_point_refuses_the_forgery(forged, tmp_path, capsys):
    X, y, cert = forged
    path, _ = cert.save(tmp_path / "forged.json")
    np.savez(tmp_path / "data.npz", X=X, y=y)
    assert not sparsecert.verify(path, X, y).ok
    assert not Certificate.load(path).verify(X, y).ok
    assert not cert.verify(X, y).ok  # the in-memory path
    assert main(["verify", path, "--data", str(tmp_path / "data.npz")]) == 1
    assert "FAILED" in capsys.readouterr().out
    assert V._main([path, str(tmp_path / "data.npz")]) == 1
    run = subprocess.run([sys.executable, "-m", "sparsecert.certificate.verify", path,
                          str(tmp_path / "data.npz")], capture_output=True, text=True)
    assert run.returncode == 1 and "eig_shift" in run.stdout, run.stdout + run.stderr


def test_the_estimators_verify_certificate_refuses_the_forgery(forged):
    X, y, cert = forged
    est = sparsecert.KSparseLinearRegression(k=1, lambda2=1.0, fit_intercept=False)
    est.n_features_in_ = 4
    est.coef_, est.intercept_, est.certificate_ = np.zeros(4), 0.0, cert
    rep = est.verify_certificate(X, y)
    assert not rep.ok and "eig_shift" in rep.failed_checks, str(rep)
    assert ("estimator_model", True) in [(n, ok) for n, ok, _ in rep.checks]


def test_the_producer_does_not_prove_a_nan_pivot_shift(nan_seen):
    t2, g, mu = PRODUCER_NAN
    X = _nan_pivot_design(t2, g)
    assert not R.proves_eig_shift(X, mu, False)
    assert nan_seen == [True]
    assert not R.proves_eig_shift(X, mu, False, gram=X.T @ X)


# ------------------------------------------------------------------------------ Cholesky


def _shift_case(ratio: float, fit_intercept: bool):
    rng = np.random.default_rng(7)
    X = rng.standard_normal((30, 6))
    Xc = X - X.mean(0) if fit_intercept else X
    return X, Xc, ratio * np.linalg.eigvalsh(Xc.T @ Xc)[0]


_CHOLESKY = np.linalg.cholesky


def _garbage_factors(A):
    p = A.shape[0]
    good = _CHOLESKY(A + (1.0 + np.abs(A).max()) * np.eye(p))
    return {
        "nan": np.full((p, p), np.nan),
        "inf": np.where(np.tri(p, dtype=bool), np.inf, 0.0),
        "identity": np.eye(p),
        "another_matrix": good,  # the factor of A + c I: finite, positive diagonal
        "scaled": 1.5 * np.tril(np.ones((p, p))),
        "wrong_shape": np.eye(p + 1),
        "not_float": np.eye(p, dtype=np.float32),
        "negative_pivot": -np.eye(p),
    }


GARBAGE = ["nan", "inf", "identity", "another_matrix", "scaled", "wrong_shape", "not_float",
           "negative_pivot"]


@pytest.mark.parametrize("ratio", [0.5, 1.05])  # a true shift and a false one
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("garbage", GARBAGE)
def test_a_cholesky_that_returns_garbage_proves_nothing(monkeypatch, garbage, ratio,
                                                        fit_intercept):
    X, Xc, mu = _shift_case(ratio, fit_intercept)
    assert V.proves_eig_shift(X, mu, fit_intercept)[0] == (ratio < 1)
    assert R.proves_eig_shift(Xc, mu, fit_intercept) == (ratio < 1)
    calls = []
    monkeypatch.setattr(np.linalg, "cholesky",
                        lambda a: calls.append(1) or _garbage_factors(a)[garbage])
    ok, msg = V.proves_eig_shift(X, mu, fit_intercept)
    assert not ok, msg
    assert not R.proves_eig_shift(Xc, mu, fit_intercept)
    assert len(calls) == 2  # both reached the factorisation: the garbage was checked


def test_a_genuine_factor_passes_the_residual_check():
    """The residual check never refuses what a floating-point Cholesky factorisation returns,
    across scales (the check's tolerance is the factorisation's backward error)."""
    rng = np.random.default_rng(3)
    for scale in (1e-150, 1e-20, 1.0, 1e20, 1e140):
        for p in (1, 2, 5, 40):
            B = rng.standard_normal((p + 3, p))
            A = scale * (B.T @ B)
            A = np.triu(A) + np.triu(A, 1).T
            L = np.linalg.cholesky(A)
            assert V._cholesky_problem(A, L, 0.0) is None, (scale, p)
            assert R._factor_ok(A, L, 0.0), (scale, p)


# ------------------------------------------------------------------------------ BLAS products


def _bad_matmul(kind):
    real = np.matmul

    def fake(a, b, *args, **kwargs):
        c = real(a, b, *args, **kwargs)
        if kind == "zeros":
            return np.zeros_like(c)
        if kind == "nan":
            return np.full_like(c, np.nan)
        if kind == "half":
            return 0.5 * c
        if kind == "transposed_rows":
            return c[::-1].copy() if c.ndim == 2 and c.shape[0] > 1 else -c
        return c[:, ::-1].copy() if c.ndim == 2 and c.shape[1] > 1 else c[..., :-1]

    return fake


@pytest.fixture(scope="module")
def honest():
    """Genuine certificates: dual witnesses with an intercept, shifted witnesses."""
    X, y = make_data("squared", n=14, p=5, seed=2)
    dual, _ = enumeration_certificate(X, y, "squared", 2, 0.5, fit_intercept=True)
    lmin = np.linalg.eigvalsh(X.T @ X)[0]
    shifted, _ = enumeration_certificate(X, y, "squared", 2, 0.5, witness="shifted",
                                         eig_shift=0.5 * lmin)
    return X, y, dual, shifted


@pytest.mark.parametrize("kind", ["zeros", "nan", "half", "transposed_rows", "other"])
@pytest.mark.parametrize("which", ["dual", "shifted"])
def test_a_matmul_that_returns_garbage_proves_nothing(monkeypatch, honest, kind, which):
    X, y, dual, shifted = honest
    cert = dual if which == "dual" else shifted
    assert verify_certificate(cert, X, y).ok
    monkeypatch.setattr(np, "matmul", _bad_matmul(kind))
    rep = verify_certificate(cert, X, y)
    assert not rep.ok and rep.exit_code == 1, str(rep)
    assert set(rep.failed_checks) & {"leaf_bounds", "eig_shift"}, str(rep)


@pytest.mark.parametrize("kind", ["zeros", "nan", "half", "other"])
def test_the_gram_product_is_checked(monkeypatch, kind):
    X, Xc, mu = _shift_case(0.5, True)
    bad_gram = _bad_matmul(kind)(Xc.T, Xc)
    monkeypatch.setattr(np, "matmul", _bad_matmul(kind))
    assert not V.proves_eig_shift(X, mu, True)[0]
    assert not R.proves_eig_shift(Xc, mu, True)
    monkeypatch.undo()
    assert R.proves_eig_shift(Xc, mu, True, gram=Xc.T @ Xc)
    assert not R.proves_eig_shift(Xc, mu, True, gram=bad_gram)  # a Gram matrix handed in


def test_the_product_check_accepts_every_honest_product():
    rng = np.random.default_rng(0)
    for scale in (1e-160, 1e-3, 1.0, 1e100, 1e150):
        for m, k, q in ((1, 1, 1), (3, 7, 2), (20, 50, 30), (64, 5, 200)):
            A = scale * rng.standard_normal((m, k))
            B = rng.standard_normal((k, q)) / scale if scale > 1 else rng.standard_normal((k, q))
            assert V._product_rows_ok(A, B, A @ B).all(), (scale, m, k, q)
            assert R._product_consistent(A, B, A @ B), (scale, m, k, q)
            # the column-major layouts (transposed views) are read down their columns
            At, Bt = np.asfortranarray(A), np.asfortranarray(B)
            Cf = np.asfortranarray(A @ B)
            assert At.flags.f_contiguous and V._product_rows_ok(At, Bt, Cf).all()
            assert R._product_consistent(At, Bt, Cf), (scale, m, k, q)
            assert R._product_consistent(A.T.copy().T, B, A @ B), (scale, m, k, q)


@pytest.mark.parametrize("blocks", ["one", "many"])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_the_product_check_rejects_a_wrong_row_in_either_layout(monkeypatch, layout, blocks):
    if blocks == "many":  # the producer's sums accumulated over blocks of 7 rows of X
        monkeypatch.setattr(R, "_CHUNK_BYTES", 8 * 40 * 7)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 40))
    A, B = X.T, X  # A a transposed view: column-major
    if layout == "C":
        A = np.ascontiguousarray(A)
    C = A @ B
    for row, col, delta in ((3, 5, 1e-9), (0, 0, -1e-7), (39, 17, 1e-8)):
        bad = np.array(C, order=layout)
        bad[row, col] += delta * max(1.0, abs(bad[row, col]))
        ok = V._product_rows_ok(A, B, bad)
        assert not ok[row] and ok.sum() == C.shape[0] - 1, (layout, row)
        # the producer's check (both weight vectors in one pass, A read in its memory order)
        assert not R._product_consistent(A, B, bad), (layout, row)
    assert R._product_consistent(A, B, C)


@pytest.mark.filterwarnings("ignore:overflow encountered in nextafter")
def test_one_step_outward_is_the_next_float_for_numbers_and_arrays():
    """up / dn step exactly one float outward (numpy's nextafter, bit for bit) for a Python
    float, a float64 and an array, and give a float64 for a number: the number's fast path
    keeps the arithmetic that follows numpy's (a division by zero is inf, not an error)."""
    from sparsecert.proof.rounding import dn, up

    rng = np.random.default_rng(4)
    special = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.0, -1.0,
               1.7976931348623157e308, -1.7976931348623157e308, math.inf, -math.inf]
    values = special + list(rng.standard_normal(20) * 10.0 ** rng.integers(-300, 300, 20))
    for x in values:
        for given in (float(x), np.float64(x)):
            a, b = up(given), dn(given)
            assert type(a) is np.float64 and type(b) is np.float64
            assert a.tobytes() == np.nextafter(np.float64(x), np.inf).tobytes(), x
            assert b.tobytes() == np.nextafter(np.float64(x), -np.inf).tobytes(), x
            if math.isfinite(x) and abs(x) < 1.7976931348623157e308:
                assert Fraction(float(b)) < Fraction(float(x)) < Fraction(float(a))
    assert math.isnan(up(math.nan)) and math.isnan(dn(np.float64(math.nan)))
    arr = np.array(values)
    assert np.array_equal(up(arr), np.nextafter(arr, np.inf))
    assert np.array_equal(dn(arr), np.nextafter(arr, -np.inf))
    with np.errstate(divide="ignore"):
        assert up(1.0) / 0.0 == math.inf


def _no_blas(*args, **kwargs):
    raise AssertionError("the product check called a BLAS entry point")


@pytest.mark.parametrize("layout", ["C", "F"])
def test_the_product_checks_row_sums_are_within_their_error_model(monkeypatch, layout):
    """Every sum the product check reads (per row of M: M x, sum |M|, |M| v) is within
    gamma_k sum|terms| of its exact value (rational arithmetic), for a row-major M and for a
    column-major one read down its columns, accumulated over blocks of one row / two columns;
    numpy's BLAS entry points are never called (a check of a BLAS result must not reuse it)."""
    from sparsecert.proof.rounding import gamma

    monkeypatch.setattr(R, "_CHUNK_BYTES", 8 * 9 * 2)
    rng = np.random.default_rng(3)
    m, k = 9, 13
    M = rng.standard_normal((m, k)) * 10.0 ** rng.integers(-3, 4, (m, k))
    M = np.asfortranarray(M) if layout == "F" else np.ascontiguousarray(M)
    xs = [rng.standard_normal(k), rng.standard_normal(k) * 1e3]
    vs = [rng.random(k), rng.random(k) * 1e-2]
    for name in ("dot", "matmul", "inner", "vdot", "tensordot"):
        monkeypatch.setattr(np, name, _no_blas)
    dots, asum, mags = R._row_sums(M, xs, vs, absum=True)
    monkeypatch.undo()
    g = Fraction(gamma(k))
    F = [[Fraction(float(M[i, j])) for j in range(k)] for i in range(m)]

    def within(got, terms):
        exact = sum(terms)
        return abs(Fraction(float(got)) - exact) <= g * sum(abs(t) for t in terms)

    assert len(dots) == len(xs) and len(mags) == len(vs)
    for i in range(m):
        for x, d in zip(xs, dots, strict=True):
            assert within(d[i], [F[i][j] * Fraction(float(x[j])) for j in range(k)]), i
        assert within(asum[i], [abs(F[i][j]) for j in range(k)]), i
        for v, a in zip(vs, mags, strict=True):
            assert within(a[i], [abs(F[i][j]) * Fraction(float(v[j])) for j in range(k)]), i


# ------------------------------------------------------------------------------ selections


def _one_leaf(X, y, derive=False, lower=-1e6):
    """A one-node certificate (budget k = 2 of p = 5 free variables: the leaf's bound selects
    the 2 largest Huber terms; the bound fixings the verifier derives use one sort of them);
    the claimed lower bound is ``lower``."""
    zeta = -2.0 * y  # the gradient of the squared loss at the zero model
    return Certificate.build(
        X, y, problem=dict(loss="squared", k=2, lambda2=0.5, max_abs_coef=None,
                           fit_intercept=False),
        incumbent=dict(coef=np.zeros(X.shape[1]), intercept=0.0, objective=float(y @ y)),
        bounds=dict(lower_bound=lower, upper_bound=float(y @ y) * 1.01, status="time_limit"),
        nodes=[dict(id=0, parent=None, branch_var=None, branch_value=None, status="solved",
                    witness=("dual", zeta), derive_fixings=derive)])


def test_a_partition_that_returns_garbage_proves_nothing(monkeypatch, honest):
    X, y, _, _ = honest
    cert = _one_leaf(X, y)
    assert verify_certificate(cert, X, y).ok
    # the k smallest instead of the largest: the old code summed them and bounded too high
    monkeypatch.setattr(np, "partition", lambda a, kth, *args, **kw: -np.sort(-np.asarray(a)))
    rep = verify_certificate(cert, X, y)
    assert not rep.ok and "leaf_bounds" in rep.failed_checks, str(rep)


@pytest.mark.parametrize("garbage", ["identity", "ascending", "repeated", "out_of_range"])
def test_an_argsort_that_returns_garbage_proves_nothing(monkeypatch, honest, garbage):
    """The node's own bound is B; a claim above it needs the bound fixings the verifier derives
    from one sort of the terms, and those cannot prove it (the node's best support stays in the
    remainder). A sort returning garbage must not make it pass."""
    X, y, _, _ = honest
    t = V._dual_terms(V._Design(X, y, "squared", False), -2.0 * y[None, :], 0.5, None)[0]
    own = V._region_bound(t, V._g_star_up(t.h_up, np.zeros(X.shape[1], np.int8), 2))
    assert verify_certificate(_one_leaf(X, y, derive=True, lower=own), X, y).ok
    cert = _one_leaf(X, y, derive=True, lower=own + 1e-9 * abs(own))
    assert verify_certificate(cert, X, y).failed_checks == ["leaf_bounds"]
    real = np.argsort

    def fake(a, *args, **kwargs):
        n = np.asarray(a).size
        return {"identity": np.arange(n), "ascending": real(-np.asarray(a)),
                "repeated": np.zeros(n, dtype=np.int64),
                "out_of_range": np.arange(n) + 1}[garbage]

    monkeypatch.setattr(np, "argsort", fake)
    rep = verify_certificate(cert, X, y)
    assert not rep.ok and "leaf_bounds" in rep.failed_checks, str(rep)


def test_the_checked_selections_agree_with_sorting():
    rng = np.random.default_rng(5)
    for _ in range(200):
        h = rng.choice([0.0, 1.0, 2.5, np.inf], size=int(rng.integers(1, 12))) \
            if rng.random() < 0.4 else rng.random(int(rng.integers(1, 12)))
        beta = int(rng.integers(1, h.size + 1))
        top = np.sort(h)[::-1][:beta]
        want = math.inf if np.isinf(top).any() else math.fsum(top.tolist())
        got = V._top_sum_up(h, beta)
        assert got >= want and (math.isinf(want) or got <= want * (1 + 1e-12) + 1e-300)
        order = V._checked_descending_order(h)
        assert order is not None and (h[order][:-1] >= h[order][1:]).all()


# ------------------------------------------------------------------------------ exp, log, log1p


def _wrong_for_arrays(func, how):
    """``func`` exact on scalars and 0-d arrays (what the old self-test called) but wrong on
    arrays of several entries (the vectorised loops the bounds run)."""

    def fake(x, *args, **kwargs):
        out = func(x, *args, **kwargs)
        if np.ndim(x) == 0 or np.size(x) < 2:
            return out
        if how == "nan":
            return np.where(np.arange(np.size(x)) == np.size(x) - 1, np.nan, out)
        return out * (1 - 2.0 ** -30)  # 2^-30 relative: far above the assumed 2^-40

    return fake


@pytest.mark.parametrize("name", ["exp", "log", "log1p"])
@pytest.mark.parametrize("how", ["nan", "inaccurate"])
def test_the_self_test_covers_array_calls(monkeypatch, honest, name, how):
    monkeypatch.setattr(V, "_ELEM_OK", None)  # the check is cached per process
    assert V.elementary_functions_check()[0]
    monkeypatch.setattr(V, "_ELEM_OK", None)
    monkeypatch.setattr(np, name, _wrong_for_arrays(getattr(np, name), how))
    ok, msg = V.elementary_functions_check()
    assert not ok and name in msg and "array" in msg, msg
    X, y, dual, _ = honest
    rep = verify_certificate(dual, X, y)
    assert rep.exit_code == 2 and "elementary_functions" in rep.failed_checks
