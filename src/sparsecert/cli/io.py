"""Data loading and input validation for the command line.

Every problem with the user's files raises ``ValueError`` (or ``OSError`` for a
file that cannot be opened) with a one-line message naming the problem; the CLI turns these into
exit code 2.

Supported files:

- ``.npz`` with arrays ``X`` (n x p) and ``y`` (n); a sparse X as its index and value arrays
  ``X_indptr``, ``X_indices``, ``X_data``, ``X_shape`` (and ``X_format``, ``"csc"`` (the
  default) or ``"csr"``), read as a scipy.sparse matrix and never densified;
- ``.npy`` holding X, with the target in a second ``.npy`` given by ``--y FILE``;
- ``.csv`` (comma-separated) with a header row naming every column; ``--target COLUMN`` names the
  target column, every other column is a feature and must be numeric.

The sample weights and offsets (``--sample-weight NAME``, ``--offset NAME``) are a column of the
``.csv`` (not a feature then), an array of the ``.npz`` besides X and y, or a ``.npy`` file.
"""

from __future__ import annotations

import csv
import os
import pickle
import zipfile
from collections.abc import Mapping, Sequence

import numpy as np

from sparsecert._validation import check_exactly_float64

__all__ = ["load_data", "load_sample_data", "load_default_data", "feature_names",
           "validate_data"]

DEFAULT_DATA_DESCRIPTION = "the diabetes data (Efron et al. 2004, as scikit-learn ships them)"


def load_default_data() -> tuple[np.ndarray, np.ndarray, str]:
    """The diabetes data bundled with the package (no download, no scikit-learn import)."""
    from sparsecert.datasets import load_diabetes

    X, y = load_diabetes()
    return X, y, DEFAULT_DATA_DESCRIPTION


def feature_names(path: str | os.PathLike | None, target: str | None = None,
                  others: Sequence[str] = ()) -> list[str] | None:
    """The names of the feature columns, in the order of the columns of X.

    A ``.csv`` gives its header without the target column (and the ``others``: the columns of
    the sample weights and offsets); ``None`` (the default data) gives the names of the
    diabetes features; ``.npz`` and ``.npy`` files have no names (``None``). Call after
    :func:`load_data` succeeded: the header is not validated again.
    """
    if path is None:
        from sparsecert.datasets import DIABETES_FEATURE_NAMES

        return list(DIABETES_FEATURE_NAMES)
    path = os.fspath(path)
    if os.path.splitext(path)[1].lower() != ".csv":
        return None
    with open(path, newline="", encoding="utf-8-sig") as fh:
        for row in csv.reader(fh):
            if any(cell.strip() for cell in row):
                return [h.strip() for h in row if h.strip() != target
                        and h.strip() not in others]
    return None


def _load_array(path: str, what: str) -> np.ndarray:
    try:
        arr = np.load(path, allow_pickle=False)
    except OSError:
        raise
    except (ValueError, EOFError, zipfile.BadZipFile, pickle.UnpicklingError) as exc:
        raise ValueError(f"{path}: cannot read {what} ({exc})") from None
    if isinstance(arr, np.lib.npyio.NpzFile):
        arr.close()
        raise ValueError(f"{path}: expected a .npy array for {what}, got an .npz archive")
    return arr


def load_data(
    path: str | os.PathLike, *, y_path: str | os.PathLike | None = None,
    target: str | None = None,
) -> tuple[np.ndarray, np.ndarray, str]:
    """Load (X, y) from a ``.npz``, ``.npy`` (+ ``y_path``) or ``.csv`` (+ ``target``) file.

    Returns
    -------
    X : ndarray (n, p), float64
    y : ndarray (n,), float64
    description : str

    Raises
    ------
    OSError
        A file cannot be opened.
    ValueError
        Malformed content, missing arrays or columns, non-numeric values, NaN/inf, bad shapes.
    """
    path = os.fspath(path)
    ext = os.path.splitext(path)[1].lower()
    if not os.path.exists(path):
        raise ValueError(f"data file {path} does not exist")
    if ext == ".npz":
        if y_path is not None or target is not None:
            raise ValueError("--y and --target do not apply to .npz data (arrays X and y)")
        try:
            with np.load(path, allow_pickle=False) as z:
                sparse = "X" not in z.files and "X_indptr" in z.files
                need = ("X_indptr", "X_indices", "X_data", "X_shape", "y") if sparse else \
                    ("X", "y")
                missing = [a for a in need if a not in z.files]
                if missing:
                    raise ValueError(f"{path} has no array {' or '.join(missing)} "
                                     f"(found: {', '.join(z.files) or 'none'})")
                X = _sparse_from_arrays(z) if sparse else z["X"]
                y = z["y"]
        except OSError:
            raise
        except (EOFError, zipfile.BadZipFile, pickle.UnpicklingError) as exc:
            raise ValueError(f"{path}: not a readable .npz file ({exc})") from None
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
        desc = f"{path}"
    elif ext == ".npy":
        if y_path is None:
            raise ValueError(f"{path} holds X only: give the target with --y Y.npy")
        if target is not None:
            raise ValueError("--target applies to .csv data only")
        X = _load_array(path, "X")
        y = _load_array(os.fspath(y_path), "y")
        desc = f"{path} + {os.fspath(y_path)}"
    elif ext == ".csv":
        if y_path is not None:
            raise ValueError("--y applies to .npy data only")
        X, y = _load_csv(path, target)
        desc = f"{path} (target column {target!r})"
    else:
        raise ValueError(f"{path}: unsupported data file type {ext or '(none)'!r}; "
                         "use .npz (X, y), .npy with --y, or .csv with --target")
    if not isinstance(X, np.ndarray):  # sparse: its entries are checked by the prepare step
        _, y = validate_data(np.zeros((np.asarray(y).shape[0] if np.ndim(y) else 0, 1)), y,
                             source=path)
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"{path}: X has {X.shape[0]} rows but y has {y.shape[0]} entries")
        return X, y, desc
    X, y = validate_data(X, y, source=path)
    return X, y, desc


def load_sample_data(path: str | os.PathLike, X: np.ndarray, names: Mapping[str, str | None],
                     *, target: str | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per-sample vectors named on the command line (the sample weights, the offsets), read
    with the data, and X without them.

    ``names`` maps what each vector is (``"sample_weight"``) to where it is (None: not given):
    a column of a ``.csv`` (taken out of the features), an array of a ``.npz``, or (for any
    data) a ``.npy`` file holding the vector. Returns X (without the named columns of a
    ``.csv``) and the vectors given, float64.

    Raises
    ------
    ValueError
        A name that is not a column, an array or a readable file; a column that is the target
        or named twice; a vector that is not numeric or not 1-D (its values are checked with
        the problem's parameters).
    """
    path = os.fspath(path)
    given = {what: where for what, where in names.items() if where is not None}
    if not given:
        return X, {}
    ext = os.path.splitext(path)[1].lower()
    out: dict[str, np.ndarray] = {}
    drop: list[int] = []
    header = feature_names(path, target) if ext == ".csv" else None
    if len(set(given.values())) != len(given):
        raise ValueError(f"the same column or array is named for {' and '.join(given)}")
    for what, where in given.items():
        flag = "--" + what.replace("_", "-")
        if where.lower().endswith(".npy"):
            if not os.path.exists(where):
                raise ValueError(f"{flag}: file {where} does not exist")
            vec = _load_array(where, what)
        elif ext == ".csv":
            if where == target:
                raise ValueError(f"{flag}: {where!r} is the target column")
            if header is None or where not in header:
                raise ValueError(f"{flag}: {path} has no column {where!r} (columns: "
                                 f"{', '.join(header or [])})")
            j = header.index(where)
            drop.append(j)
            vec = X[:, j]
        elif ext == ".npz":
            with np.load(path, allow_pickle=False) as z:
                if where not in z.files or where in ("X", "y"):
                    raise ValueError(f"{flag}: {path} has no array {where!r} besides X and y "
                                     f"(found: {', '.join(z.files)})")
                vec = z[where]
        else:
            raise ValueError(f"{flag}: name a .npy file holding the {what.replace('_', ' ')}s "
                             f"(.npy data has no columns)")
        vec = np.asarray(vec)
        if vec.dtype.kind not in "biuf" or vec.ndim != 1:
            raise ValueError(f"{flag}: {where} must be a 1-D numeric vector, got dtype "
                             f"{vec.dtype} and shape {vec.shape}")
        out[what] = vec
    if drop:
        X = np.delete(X, drop, axis=1)
        if X.shape[1] == 0:
            raise ValueError(f"{path}: no feature columns besides the target and "
                             f"{', '.join(given.values())}")
    return X, out


def _sparse_from_arrays(z):
    """A scipy.sparse matrix from its arrays in a ``.npz`` (``X_format``: csc or csr)."""
    import scipy.sparse

    fmt = str(z["X_format"]) if "X_format" in z.files else "csc"
    if fmt not in ("csc", "csr"):
        raise ValueError(f"X_format must be 'csc' or 'csr', got {fmt!r}")
    shape = np.asarray(z["X_shape"])
    if shape.shape != (2,) or shape.dtype.kind not in "iu" or (shape < 0).any():
        raise ValueError("X_shape must be two non-negative integers")
    cls = scipy.sparse.csc_matrix if fmt == "csc" else scipy.sparse.csr_matrix
    return cls((z["X_data"], z["X_indices"], z["X_indptr"]),
               shape=(int(shape[0]), int(shape[1])))


def _load_csv(path: str, target: str | None) -> tuple[np.ndarray, np.ndarray]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.reader(fh))
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a UTF-8 text CSV file") from None
    except csv.Error as exc:
        raise ValueError(f"{path}: malformed CSV ({exc})") from None
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise ValueError(f"{path}: empty CSV file")
    header = [h.strip() for h in rows[0]]
    if target is None:
        raise ValueError(f"{path}: CSV data needs --target COLUMN (columns: {', '.join(header)})"
                         f"{_header_hint(header)}")
    if target not in header:
        raise ValueError(f"{path}: no column {target!r} (columns: {', '.join(header)})"
                         f"{_header_hint(header)}")
    if "" in header:  # pandas' to_csv writes its row index as a column without a name
        raise ValueError(f"{path}: column {header.index('') + 1} has no name in the header (a "
                         "row index, as pandas' to_csv writes by default? Save without it, "
                         "to_csv(..., index=False), or name the column)")
    if len(set(header)) != len(header):
        raise ValueError(f"{path}: duplicate column names in the header")
    if len(rows) < 2:
        raise ValueError(f"{path}: no data rows after the header")
    t = header.index(target)
    data = np.empty((len(rows) - 1, len(header)))
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"{path}: line {i} has {len(row)} fields, the header has "
                             f"{len(header)}")
        for j, cell in enumerate(row):
            try:
                data[i - 2, j] = float(cell)
            except ValueError:
                if not cell.strip():
                    raise ValueError(f"{path}: line {i}, column {header[j]!r} is empty (a "
                                     "missing value: drop or impute it first)") from None
                raise ValueError(f"{path}: line {i}, column {header[j]!r}: {cell.strip()!r} is "
                                 "not a number (only numeric columns are supported)") from None
    if data.shape[1] < 2:
        raise ValueError(f"{path}: no feature columns besides the target")
    return np.delete(data, t, axis=1), data[:, t]


def _header_hint(header: list[str]) -> str:
    """Why a column named on the command line may be missing from a CSV header."""
    if len(header) == 1 and any(sep in header[0] for sep in (";", "\t", "|")):
        return "; the file does not seem to be comma-separated: sparsecert reads commas only"
    if all(_is_number(h) for h in header):
        return "; the first line holds numbers: a .csv needs a header row naming the columns"
    return ""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def validate_data(X, y, source: str = "data") -> tuple[np.ndarray, np.ndarray]:
    """Check that X is a finite numeric (n, p) matrix and y a finite numeric (n,) vector."""
    X = np.asarray(X)
    y = np.asarray(y)
    for name, arr in (("X", X), ("y", y)):
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{source}: {name} is not numeric (dtype {arr.dtype})")
    if X.ndim != 2:
        raise ValueError(f"{source}: X must be 2-D (n_samples, n_features), got shape {X.shape}")
    if y.ndim != 1:
        raise ValueError(f"{source}: y must be 1-D (n_samples,), got shape {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"{source}: X has {X.shape[0]} rows but y has {y.shape[0]} entries")
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"{source}: empty data (X has shape {X.shape})")
    raw = {"X": X, "y": y}
    X = X.astype(np.float64, copy=False)
    y = y.astype(np.float64, copy=False)
    for name, arr in (("X", X), ("y", y)):
        try:  # integers beyond 2^53, long doubles: rounded data would be other data
            check_exactly_float64(raw[name], arr, name)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
        bad = ~np.isfinite(arr)
        if bad.any():
            where = np.argwhere(bad)[0].tolist()
            raise ValueError(f"{source}: {name} contains NaN or infinity (first at index "
                             f"{tuple(where) if len(where) > 1 else where[0]})")
    return X, y
