"""Bad input gets a clear error; the user's arrays are never modified."""

import numpy as np
import pytest

from sparsecert.solvers.perspective import RelaxationProblem, perspective_relaxation, solve_node


def _xy(n=12, p=5, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)), rng.standard_normal(n)


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        ({"k": 0}, ValueError, "1 <= k"),
        ({"k": 6}, ValueError, "1 <= k"),
        ({"k": 2.0}, TypeError, "k must be an integer"),
        ({"lambda2": 0.0}, ValueError, "lambda2 must be > 0"),
        ({"lambda2": -1.0}, ValueError, "lambda2 must be > 0"),
        ({"lambda2": np.nan}, ValueError, "lambda2 must be finite"),
        ({"lambda2": 1.7e308}, ValueError, "lambda2 must be at most 1e"),
        ({"loss": "hinge"}, ValueError, "unknown loss"),
        ({"max_abs_coef": -1.0}, ValueError, "max_abs_coef must be > 0"),
        ({"fixed_in": [0, 1], "fixed_out": [1]}, ValueError, "overlap"),
        ({"fixed_in": [0, 1, 2], "k": 2}, ValueError, "exceeds k"),
        ({"fixed_out": [7]}, ValueError, "outside"),
        ({"fixed_in": [1, 1]}, ValueError, "repeated"),
        ({"eig_shift": "big"}, ValueError, "eig_shift"),
        ({"eig_shift": -1.0}, ValueError, "eig_shift"),
        ({"restart": "sometimes"}, ValueError, "restart"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    X, y = _xy()
    args = {"k": 2, "lambda2": 1.0}
    args.update(kwargs)
    with pytest.raises(exc, match=match):
        perspective_relaxation(X, y, **args)


def test_bad_data():
    X, y = _xy()
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        perspective_relaxation(X, y[:-1], 2, 1.0)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        perspective_relaxation(Xn, y, 2, 1.0)
    yi = y.copy()
    yi[3] = np.inf
    with pytest.raises(ValueError, match="y contains NaN or infinite"):
        perspective_relaxation(X, yi, 2, 1.0)
    with pytest.raises(ValueError, match="2-dimensional"):
        perspective_relaxation(X[:, 0], y, 1, 1.0)
    with pytest.raises(ValueError, match="1-dimensional"):
        perspective_relaxation(X, y[:, None], 2, 1.0)
    with pytest.raises(TypeError, match="numeric"):
        perspective_relaxation(X.astype(str), y, 2, 1.0)
    with pytest.raises(ValueError, match="binary labels"):
        perspective_relaxation(X, y, 2, 1.0, loss="logistic")
    with pytest.raises(ValueError, match="binary labels"):
        perspective_relaxation(X, np.arange(12.0) % 3, 2, 1.0, loss="squared_hinge")
    with pytest.raises(ValueError, match="non-negative counts"):
        perspective_relaxation(X, y, 2, 1.0, loss="poisson")


def test_data_beyond_float64_range_is_refused_in_one_line():
    """Finite values whose sums of squares overflow (a Gram matrix of inf) get a clear error,
    not a failure inside the eigen-solver; values just inside the range are accepted."""
    X, y = _xy()
    with pytest.raises(ValueError, match="X is too large for float64.*column 0"):
        perspective_relaxation(X * 1e160, y, 2, 1.0)
    with pytest.raises(ValueError, match="y is too large for float64"):
        perspective_relaxation(X, y * 1e160, 2, 1.0)
    res = perspective_relaxation(X * 1e140, y, 2, 1.0)
    assert np.isfinite(res.lower_bound)


def test_a_ridge_weight_near_the_largest_float_is_refused_before_the_search():
    """lambda2 = 1.7e308 (2 lambda2 overflows) made the node solver's step search loop on
    inf - inf, past the time limit; it is refused in one line."""
    from sparsecert import certify

    with pytest.raises(ValueError, match="lambda2 must be at most 1e"):
        certify(np.array([[-6.85473557363738e32, 0.0]]), np.array([2.0]), 1, 1.7e308,
                max_abs_coef=2.4947162005845917e-162, fit_intercept=False, verbose=0,
                time_limit=2.0)


def test_data_that_float64_would_round_is_refused():
    """Integers beyond 2^53 (and long doubles) that the conversion to float64 would change are
    refused with the entry named, as by the standalone verifier: the certificate would be about
    other data. Large integers that float64 holds exactly are accepted."""
    X, y = _xy()
    Xi = np.round(X * 1000).astype(np.int64)
    Xi[2, 1] = 2 ** 53 + 1
    with pytest.raises(ValueError, match=r"X\[2, 1\] = 9007199254740993 is not exactly a float64"):
        perspective_relaxation(Xi, y, 2, 1.0)
    yi = np.round(y * 1000).astype(np.int64)
    yi[3] = -(2 ** 60) - 1
    with pytest.raises(ValueError, match=r"y\[3\] = .* is not exactly a float64"):
        perspective_relaxation(X, yi, 2, 1.0)
    Xi[2, 1] = 2 ** 53 + 2  # even: a float64
    assert np.isfinite(perspective_relaxation(Xi / 1.0, y, 2, 1.0).lower_bound)
    from sparsecert._validation import check_X_y

    Xc, _ = check_X_y(Xi, y)  # the integer array itself, exactly representable
    assert Xc[2, 1] == 2 ** 53 + 2
    if np.finfo(np.longdouble).nmant > 52:  # a wider long double on this platform
        Xl = X.astype(np.longdouble)
        Xl[0, 0] += np.longdouble(2) ** -60
        with pytest.raises(ValueError, match=r"X\[0, 0\] = .* is not exactly a float64"):
            check_X_y(Xl, y)


def test_lists_frames_and_parameters_that_float64_would_round_are_refused():
    """numpy converts a list mixing floats and integers beyond 2^53 (pandas, a frame with such
    an integer column beside float columns) to float64 itself, rounding before any dtype can be
    checked; and float() rounds a Fraction or a large integer given as lambda2 or the box. Each
    is refused, naming the entry or the parameter, by certify, the estimators and the checks."""
    pd = pytest.importorskip("pandas")
    from fractions import Fraction

    from sparsecert import KSparseCV, certify
    from sparsecert._validation import check_lambda2, check_max_abs_coef
    from sparsecert.estimators import KSparseLinearRegression, KSparseLogisticRegression

    X, y = _xy()
    rows = X.tolist()
    rows[1][2] = 2 ** 53 + 1  # an int among floats
    with pytest.raises(ValueError, match=r"X\[1, 2\] = 9007199254740993 is not exactly"):
        certify(rows, y, 2, 1.0, verbose=0)
    with pytest.raises(ValueError, match=r"y\[4\] = 9007199254740993 is not exactly"):
        certify(X, [*y[:4].tolist(), 2 ** 53 + 1, *y[5:].tolist()], 2, 1.0, verbose=0)
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
    frame["c3"] = np.arange(X.shape[0]) + 2 ** 60 + 1  # an integer column beside floats
    with pytest.raises(ValueError, match=r"X\[0, 3\] = 1152921504606846977 is not exactly"):
        certify(frame, y, 2, 1.0, verbose=0)
    with pytest.raises(ValueError, match=r"X\[0, 3\] = 1152921504606846977 is not exactly"):
        KSparseLinearRegression(k=2).fit(frame, y)  # scikit-learn's conversion would round it
    with pytest.raises(ValueError, match=r"X\[0, 3\] = 1152921504606846977 is not exactly"):
        KSparseLogisticRegression(k=2).fit(frame, y > 0)
    with pytest.raises(ValueError, match=r"y\[0\] = 9007199254740993 is not exactly"):
        KSparseLinearRegression(k=2).fit(X, [2 ** 53 + 1, *y[1:].tolist()])
    with pytest.raises(ValueError, match=r"X\[0, 3\] = 1152921504606846977 is not exactly"):
        KSparseCV(ks=[1, 2], cv=2).fit(frame, y)
    with pytest.raises(ValueError, match=r"y\[0\] = 9007199254740993 is not exactly"):
        KSparseCV(ks=[1, 2], cv=2).fit(X, [2 ** 53 + 1, *y[1:].tolist()])
    for bad, check in ((Fraction(1, 3), check_lambda2), (2 ** 60 + 1, check_lambda2),
                       (Fraction(1, 3), check_max_abs_coef)):
        with pytest.raises(ValueError, match="is not exactly a float64"):
            check(bad)
    with pytest.raises(ValueError, match=r"lambda2 = 10+\.\.\. \(401 characters\) is too large"):
        check_lambda2(10 ** 400)
    with pytest.raises(ValueError, match="lambda2 = 1/3 is not exactly"):
        certify(X, y, 2, Fraction(1, 3), verbose=0)
    # what float64 holds exactly is accepted as given
    assert check_lambda2(Fraction(1, 4)) == 0.25 and check_lambda2(2 ** 60) == 2.0 ** 60
    assert check_max_abs_coef(np.float32(0.1)) == float(np.float32(0.1))
    frame["c3"] = np.arange(X.shape[0])
    assert certify(frame, y, 2, Fraction(1, 2), verbose=0).status == "optimal"


def test_frames_with_bool_and_integer_columns_are_data_like_any_other():
    """pandas converts a frame whose bool columns stand beside float columns to objects; certify
    took it for non-numeric data while the estimators (scikit-learn's conversion) accepted it.
    Such a frame is now read column by column: the same problem as its float64 array, and the
    verifier takes the same frame. A text column is named."""
    pd = pytest.importorskip("pandas")
    from sparsecert import certify, verify

    X, y = _xy()
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    frame["flag"] = X[:, 3] > 0
    frame["count"] = pd.array(np.arange(X.shape[0]), dtype="Int64")
    dense = frame.to_numpy(dtype=np.float64)
    res = certify(frame, y, 2, 1.0, verbose=0)
    ref = certify(dense, y, 2, 1.0, verbose=0)
    assert res.objective == ref.objective and res.lower_bound == ref.lower_bound
    assert verify(res, frame, y).ok and verify(res, dense, y).ok
    frame["name"] = [f"row{i}" for i in range(X.shape[0])]
    with pytest.raises(TypeError, match="column 'name' is not numeric"):
        certify(frame, y, 2, 1.0, verbose=0)


def test_labels_converted_without_mutation():
    X, y = _xy()
    y01 = (y > 0).astype(float)
    keep_X, keep_y = X.copy(), y01.copy()
    prob = RelaxationProblem.from_data(X, y01, 1.0, loss="logistic")
    assert set(np.unique(prob.y)) == {-1.0, 1.0}
    np.testing.assert_array_equal(prob.y, np.where(y01 > 0, 1.0, -1.0))
    r01 = perspective_relaxation(X, y01, 2, 1.0, loss="logistic", fit_intercept=False)
    rpm = perspective_relaxation(X, 2 * y01 - 1, 2, 1.0, loss="logistic")
    assert r01.objective == pytest.approx(rpm.objective, rel=1e-12)
    np.testing.assert_array_equal(X, keep_X)
    np.testing.assert_array_equal(y01, keep_y)
    # centring for the intercept does not touch the caller's arrays either
    RelaxationProblem.from_data(X, y, 1.0, fit_intercept=True)
    np.testing.assert_array_equal(X, keep_X)


def test_solve_node_checks_fixings_only():
    X, y = _xy()
    prob = RelaxationProblem.from_data(X, y, 1.0)
    none = np.zeros(5, bool)
    with pytest.raises(ValueError, match="boolean array of shape"):
        solve_node(prob, 2, np.zeros(4, bool), none)
    with pytest.raises(ValueError, match="boolean array of shape"):
        solve_node(prob, 2, [0, 1], none)
    both = none.copy()
    both[2] = True
    with pytest.raises(ValueError, match="overlap"):
        solve_node(prob, 2, both, both)
    with pytest.raises(ValueError, match="exceeds k"):
        solve_node(prob, 2, np.ones(5, bool), none)
    with pytest.raises(ValueError, match="warm_start must have shape"):
        solve_node(prob, 2, none, none, warm_start=np.zeros(3))
    with pytest.raises(ValueError, match="warm_start contains NaN"):
        solve_node(prob, 2, none, none, warm_start=np.full(5, np.nan))
    with pytest.raises(ValueError, match="solver must be"):
        solve_node(prob, 2, none, none, solver="newton")
