"""Data sets: real data shipped with the package, and the synthetic benchmark family.

Real data (bundled, no download; provenance and licence terms in ``sparsecert/data/README.md``,
shipped with the files, and in the documentation page "Data sets"):

- :func:`load_diabetes`: the diabetes data of Efron et al. (2004), 442 x 10, regression, as
  scikit-learn ships it (the data of the default ``sparsecert certify`` job).
- :func:`load_riboflavin`: riboflavin production by *Bacillus subtilis*, 71 x 4088, regression
  (Buhlmann, Kalisch and Meier 2014; from the R package hdi).
- :func:`load_leukemia`: ALL/AML leukemia gene expression, 38 x 7129, labels -1/+1
  (Golub et al. 1999; as distributed in the LIBSVM data collection).

Each loader returns ``(X, y)`` as float64 arrays, bit-for-bit the reference arrays: the stored
encoding is lossless and every load checks the SHA-256 of the decoded arrays.

**Standardisation is the user's choice, and it changes the problem.** The loaders return the raw
data by default. ``standardize=True`` returns them as the package's benchmarks use them (the
published numbers): every column of ``X`` centred and scaled to unit Euclidean norm and, for a
regression target, ``y`` centred (:func:`standardize`). The penalty ``lambda2 ||b||^2`` weighs
the coefficients of unit-norm columns, so ``lambda2`` means something else on raw columns, and
the search is far harder there (riboflavin, k = 5, lambda2 = 1: certified in about a second
standardised, a large gap after a minute raw). A certificate is about the arrays it was given:
certify standardised data, and the certificate (its data hashes, its coefficients) is about the
standardised arrays; verify it with the same arrays.

:func:`feature_names` gives the columns' names where the source data have them (the riboflavin
genes, the diabetes variables; the leukemia file carries none).

Synthetic family of the benchmarks: rows of ``X`` are ``N(0, Sigma)`` with
``Sigma_ij = rho^|i-j|``; ``beta*`` has ``k`` equally spaced ones; least squares
``y = X beta* + noise`` at the given signal-to-noise ratio ``Var(X beta*) / Var(noise)``; logistic
labels ``sign(X beta* + noise)``.
"""

from __future__ import annotations

import hashlib
import io
import json
from importlib import resources
from typing import Any

import numpy as np

from sparsecert._constraints import CONSTRAINTS, check
from sparsecert.solvers.losses import DEFAULT_LOSS, get_loss

__all__ = ["load_diabetes", "load_riboflavin", "load_leukemia", "standardize", "feature_names",
           "make_synthetic", "true_support", "DIABETES_FEATURE_NAMES"]

#: the folder of the bundled files inside the package, and its manifest
_DATA_DIR = "data"
_MANIFEST = "datasets.json"
#: the names of the diabetes features, in the order of the columns of X
DIABETES_FEATURE_NAMES = ("age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6")


def load_diabetes() -> tuple[np.ndarray, np.ndarray]:
    """Diabetes data: 442 patients, 10 baseline variables, disease progression after one year.

    The data of B. Efron, T. Hastie, I. Johnstone and R. Tibshirani (2004), Least angle
    regression, Annals of Statistics 32, 407-499, bit for bit as scikit-learn's
    ``sklearn.datasets.load_diabetes(return_X_y=True)`` returns them: every column of ``X``
    centred and scaled to unit Euclidean norm, ``y`` the raw progression measure (25 to 346).
    The column names are :data:`DIABETES_FEATURE_NAMES`. Loading it does not import
    scikit-learn. See ``sparsecert/data/README.md`` for provenance and terms.

    Returns
    -------
    X : numpy.ndarray of shape (442, 10), float64
    y : numpy.ndarray of shape (442,), float64

    Examples
    --------
    >>> from sparsecert.datasets import load_diabetes
    >>> X, y = load_diabetes()
    >>> X.shape, y.shape
    ((442, 10), (442,))
    """
    return _load("diabetes")


def load_riboflavin(standardize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Riboflavin production data: 71 samples, 4088 gene-expression features (p >> n).

    ``y`` is the log-transformed riboflavin production rate of *Bacillus subtilis*, ``X`` the
    logarithm of the expression levels of 4088 genes (their names:
    ``feature_names("riboflavin")``). From the R package hdi (data provided to its authors by
    DSM, Switzerland); reference: P. Buhlmann, M. Kalisch and L. Meier (2014),
    High-dimensional statistics with a view towards applications in biology, Annual Review of
    Statistics and Its Application 1, 255-278. The bundled file is distributed under the terms
    of hdi's licence (GPL-2 or GPL-3, texts shipped beside it); see ``sparsecert/data/README.md``.

    Parameters
    ----------
    standardize : bool, default False
        False: the data as published. True: every column of ``X`` centred and scaled to unit
        Euclidean norm, ``y`` centred (:func:`standardize`), as the package's benchmarks and
        documentation use them. This changes the problem a certificate is about (see the
        module's notes): certify and verify the same arrays.

    Returns
    -------
    X : numpy.ndarray of shape (71, 4088), float64
    y : numpy.ndarray of shape (71,), float64

    Examples
    --------
    >>> from sparsecert.datasets import load_riboflavin
    >>> X, y = load_riboflavin()
    >>> X.shape, y.shape
    ((71, 4088), (71,))
    >>> Xs, ys = load_riboflavin(standardize=True)
    >>> norms = (Xs ** 2).sum(axis=0)
    >>> bool(abs(ys.mean()) < 1e-12 and abs(norms - 1).max() < 1e-12)
    True
    """
    X, y = _load("riboflavin")
    return _unit_norm_columns(X, y) if standardize else (X, y)


def load_leukemia(standardize: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Leukemia (ALL/AML) gene-expression data: 38 samples, 7129 features, labels -1/+1.

    The 38-sample training set of T. R. Golub et al. (1999), Molecular classification of
    cancer: class discovery and class prediction by gene expression monitoring, Science 286,
    531-537, as preprocessed (rescaled expression values) and distributed in the LIBSVM data
    collection (file ``leu``, which does not name the probes). See
    ``sparsecert/data/README.md`` for provenance and terms.

    Parameters
    ----------
    standardize : bool, default False
        False: the data as published. True: every column of ``X`` centred and scaled to unit
        Euclidean norm (:func:`standardize`; the labels stay -1/+1), as the package's
        benchmarks use them. Certify and verify the same arrays.

    Returns
    -------
    X : numpy.ndarray of shape (38, 7129), float64
    y : numpy.ndarray of shape (38,), float64
        The class labels, -1.0 or +1.0.

    Examples
    --------
    >>> from sparsecert.datasets import load_leukemia
    >>> X, y = load_leukemia()
    >>> X.shape, sorted(set(y.tolist()))
    ((38, 7129), [-1.0, 1.0])
    """
    X, y = _load("leukemia")
    if standardize:
        X, _ = _unit_norm_columns(X, None)
    return X, y


def standardize(X, y=None) -> tuple[np.ndarray, np.ndarray | None]:
    """Centre every column of ``X`` and scale it to unit Euclidean norm; centre ``y``.

    The preprocessing behind the package's published numbers (its benchmarks and the loaders'
    ``standardize=True``), for your own data too. A constant column is centred only (it
    becomes zero). Unit *norm*, not unit variance (scikit-learn's ``StandardScaler`` scales
    each column to norm ``sqrt(n)``): the same ``lambda2`` weighs the coefficients ``n`` times
    more here.

    The model certified on standardised data predicts from standardised columns. On the
    original scale its coefficients are ``b_j / s_j`` (``s_j`` the centred column's norm) and
    its intercept is ``mean(y) + c - sum_j b_j m_j / s_j`` (``m_j`` the column's mean), but the
    certificate proves optimality for the standardised problem, the one it was given.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,) or None
        A regression target to centre; None (labels, counts) leaves the target alone.

    Returns
    -------
    X : numpy.ndarray, float64
    y : numpy.ndarray (float64) or None
    """
    return _unit_norm_columns(np.asarray(X, dtype=np.float64),
                              None if y is None else np.asarray(y, dtype=np.float64))


def _unit_norm_columns(X: np.ndarray, y: np.ndarray | None):
    """:func:`standardize` on float64 arrays (the loaders' ``standardize=True``)."""
    X = X - X.mean(axis=0)
    norms = np.linalg.norm(X, axis=0)
    norms[norms == 0] = 1.0
    X = X / norms
    return X, (None if y is None else y - y.mean())


def feature_names(name: str) -> tuple[str, ...] | None:
    """The names of a bundled data set's columns, in the order of ``X``, or None.

    ``"riboflavin"``: the 4088 gene (probe set) names of hdi's data, such as ``"YXLD_at"``;
    ``"diabetes"``: :data:`DIABETES_FEATURE_NAMES`; ``"leukemia"``: None (the LIBSVM file
    does not name its 7129 probes). Pass them on as ``certify(..., feature_names=...)`` to
    have the model printed with them.

    Examples
    --------
    >>> from sparsecert.datasets import feature_names
    >>> names = feature_names("riboflavin")
    >>> len(names), names[4002]
    (4088, 'YXLD_at')
    """
    entries = _manifest()["datasets"]
    if name not in entries:
        raise ValueError(f"no bundled data set {name!r}: choose one of {sorted(entries)}")
    names = entries[name].get("feature_names")
    return None if names is None else tuple(str(n) for n in names)


# ------------------------------------------------------------------------------ bundled files
def _data_path(name: str):
    return resources.files("sparsecert").joinpath(_DATA_DIR, name)


def _manifest() -> dict[str, Any]:
    return json.loads(_data_path(_MANIFEST).read_text(encoding="utf-8"))


def _load(name: str) -> tuple[np.ndarray, np.ndarray]:
    entry = _manifest()["datasets"][name]
    with _data_path(entry["file"]).open("rb") as fh:
        raw = fh.read()
    with np.load(io.BytesIO(raw), allow_pickle=False) as z:
        X = _decode_array(z["X"], entry["arrays"]["X"])
        y = _decode_array(z["y"], entry["arrays"]["y"])
    for key, arr in (("X", X), ("y", y)):
        if _array_sha256(arr) != entry["arrays"][key]["sha256"]:
            raise ValueError(f"the bundled {name} data are damaged ({key} does not match its "
                             "SHA-256): reinstall sparsecert")
    return X, y


def _array_sha256(a: np.ndarray) -> str:
    """SHA-256 of an array's float64 little-endian, C-order bytes (the reference hashes)."""
    return hashlib.sha256(np.ascontiguousarray(a, dtype="<f8").tobytes()).hexdigest()


def _encode_array(a: np.ndarray, decimals: int | None = None) -> tuple[np.ndarray, dict]:
    """Lossless, compressible encoding of a float64 array (the bundled files are made with it).

    The bytes of each element are split into planes (all first bytes, then all second bytes,
    ...), which ``zlib`` compresses far better than interleaved floats. With ``decimals=d`` the
    values are stored as integers ``m = round(a * 10**d)`` (int32) when ``m / 10**d`` gives back
    ``a`` exactly (data printed with ``d`` decimals); otherwise the float64 bytes are stored.

    Returns
    -------
    planes : numpy.ndarray of uint8, shape (itemsize, a.size)
    spec : dict
        What :func:`_decode_array` needs (dtype, shape, decimals) and the SHA-256 of ``a``.
    """
    a = np.ascontiguousarray(a, dtype="<f8")
    spec: dict[str, Any] = {"dtype": "<f8", "shape": list(a.shape), "decimals": None}
    stored = a
    if decimals is not None:
        m = np.round(a * 10.0**decimals)
        if np.abs(m).max(initial=0.0) < 2**31 and np.array_equal(m / 10.0**decimals, a):
            stored = m.astype("<i4")
            spec.update(dtype="<i4", decimals=int(decimals))
    planes = np.frombuffer(stored.tobytes(), dtype=np.uint8).reshape(-1, stored.itemsize).T
    spec["sha256"] = _array_sha256(a)
    return np.ascontiguousarray(planes), spec


def _decode_array(planes: np.ndarray, spec: dict) -> np.ndarray:
    """Invert :func:`_encode_array`: float64 array of ``spec["shape"]``."""
    dtype = np.dtype(spec["dtype"])
    shape = tuple(int(s) for s in spec["shape"])
    size = int(np.prod(shape))
    if planes.dtype != np.uint8 or planes.shape != (dtype.itemsize, size):
        raise ValueError(f"encoded array has dtype {planes.dtype} and shape {planes.shape}; "
                         f"expected uint8 and {(dtype.itemsize, size)}")
    a = np.ascontiguousarray(planes.T).view(dtype).reshape(shape)
    if spec.get("decimals") is not None:
        return a / 10.0 ** int(spec["decimals"])
    return a.astype(np.float64)


#: how each bundled set is stored: the decimals of X when it was printed with fixed decimals
_PACKING = {"diabetes": {"task": "regression", "X": None, "y": 0},
            "riboflavin": {"task": "regression", "X": None, "y": None},
            "leukemia": {"task": "classification", "X": 6, "y": 0}}


def _pack_bundled(source_dir, out_dir, names=None) -> dict[str, Any]:
    """Write the bundled files from reference ``.npz`` files (arrays ``X``, ``y``).

    Build-time helper (never called at run time): ``source_dir`` holds ``NAME.npz`` for each
    set of ``names`` (default: all of them); ``out_dir`` receives one compressed ``.npz`` per
    set and the manifest (entries of other sets already in ``out_dir``'s manifest are kept).
    Refuses to write anything that does not decode to the reference arrays bit for bit.
    """
    from pathlib import Path

    src, out = Path(source_dir), Path(out_dir)
    manifest: dict[str, Any] = {"format": "sparsecert-datasets", "version": 1, "datasets": {}}
    if (out / _MANIFEST).exists():
        manifest = json.loads((out / _MANIFEST).read_text(encoding="utf-8"))
    for name in names if names is not None else list(_PACKING):
        how = _PACKING[name]
        with np.load(src / f"{name}.npz", allow_pickle=False) as z:
            ref = {key: np.asarray(z[key], dtype=np.float64) for key in ("X", "y")}
        encoded, specs = {}, {}
        for key, a in ref.items():
            encoded[key], specs[key] = _encode_array(a, how[key])
            back = _decode_array(encoded[key], specs[key])
            if back.dtype != np.float64 or back.tobytes() != a.tobytes():
                raise AssertionError(f"{name}.{key}: the encoding is not lossless")
        np.savez_compressed(out / f"{name}.npz", **encoded)
        n, p = ref["X"].shape
        names = manifest["datasets"].get(name, {}).get("feature_names")  # kept as they were
        manifest["datasets"][name] = {"file": f"{name}.npz", "task": how["task"],
                                      "n_samples": n, "n_features": p, "arrays": specs}
        if names is not None:
            manifest["datasets"][name]["feature_names"] = names
    (out / _MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


# ------------------------------------------------------------------------------ synthetic


def true_support(p: int, k: int) -> np.ndarray:
    """The ``k`` equally spaced indices carrying the signal."""
    if not 1 <= k <= p:
        raise ValueError(f"need 1 <= k <= p, got k={k}, p={p}")
    return np.unique(np.linspace(0, p - 1, k).round().astype(int))


def make_synthetic(n: int, p: int, k: int, *, rho: float = 0.5, snr: float = 5.0,
                   loss: str = DEFAULT_LOSS, seed: int = 0) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """Draw ``(X, y, beta*)`` from the benchmark family.

    Parameters
    ----------
    n, p, k : int
        Samples, features, true support size.
    rho : float
        Correlation decay, ``|rho| < 1``.
    snr : float
        Signal-to-noise ratio (> 0).
    loss : str
        A loss of the registry whose target is real (``"squared"``, ``"huber"``: a continuous
        response) or two labels (``"logistic"``, ``"squared_hinge"``: labels in {-1, +1}).
    seed : int

    Returns
    -------
    X : numpy.ndarray of shape (n, p)
    y : numpy.ndarray of shape (n,)
    beta : numpy.ndarray of shape (p,)
    """
    target = check("loss", get_loss(loss), CONSTRAINTS["synthetic loss"]).target
    check("rho", rho, CONSTRAINTS["rho"])
    check("snr", snr, CONSTRAINTS["snr"])
    rng = np.random.default_rng(seed)
    # AR(1) rows: x_j = rho x_{j-1} + sqrt(1 - rho^2) e_j has exactly Sigma_ij = rho^|i-j|
    E = rng.standard_normal((n, p))
    X = np.empty((n, p))
    X[:, 0] = E[:, 0]
    s = np.sqrt(1.0 - rho * rho)
    for j in range(1, p):
        X[:, j] = rho * X[:, j - 1] + s * E[:, j]
    beta = np.zeros(p)
    beta[true_support(p, k)] = 1.0
    signal = X @ beta
    sigma = np.sqrt(np.var(signal) / snr) if np.var(signal) > 0 else 1.0
    noisy = signal + sigma * rng.standard_normal(n)
    y = noisy if target == "real" else np.where(noisy > 0, 1.0, -1.0)
    return X, y, beta
