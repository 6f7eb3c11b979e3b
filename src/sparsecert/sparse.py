"""Sparse design matrices: the canonical compressed-column form the package works on.

A scipy.sparse matrix or array given as ``X`` (CSR, CSC or COO, as ``OneHotEncoder`` and
``TfidfVectorizer`` return; LIL, DOK, DIA and BSR are converted the same way) is never
densified. It is checked and converted once, in the prepare step, into a
:class:`SparseDesign`: the matrix in *canonical compressed sparse column* form,

* ``indptr`` (int64, ``p + 1`` entries): column ``j`` holds the entries
  ``indptr[j]:indptr[j + 1]``, ``indptr[0] = 0``, non-decreasing;
* ``indices`` (int32): their row indices, strictly increasing within each column (sorted, no
  entry twice), in ``[0, n)``;
* ``data`` (float64): their values, finite and non-zero (an explicitly stored zero, of either
  sign, is dropped: it is the same matrix).

This form is unique for a matrix: two representations of the same matrix (CSR or CSC, sorted or
not, with or without explicit zeros, 32- or 64-bit indices, a dense array) give the same arrays
and so the same hash (:func:`csc_sha256`, the certificate's ``X_sha256`` for a sparse X; the
standalone verifier computes it with its own code). Duplicate entries (one position stored
twice, which scipy reads as their sum) are refused: their floating-point sum depends on the
order of the additions, so the matrix they denote is not well defined.

What is refused, with one line: NaN or infinite values, complex or non-numeric values, integers
that float64 cannot hold exactly, duplicate entries, an empty shape, more than 2^31 - 1 rows,
and column sums of squares beyond float64's range. Nothing the user passed is modified.

This module imports numpy only (the prepare step is light); scipy is not imported: a scipy
sparse matrix is recognised and converted through its own methods.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["SparseDesign", "is_sparse", "as_sparse_design", "csc_sha256", "HASH_PREFIX",
           "SPARSE_FORMAT"]

#: the certificate's ``X_format`` of a sparse design (its hash is defined on these arrays)
SPARSE_FORMAT = "csc"
#: the first bytes of the hash input of a sparse design (followed by its shape and nnz)
HASH_PREFIX = "csc <i8 <i8 <f8 "
#: the scipy.sparse formats the estimators take as they are (scikit-learn's ``accept_sparse``)
SCIPY_FORMATS = ("csr", "csc")
#: the formats converted exactly by scipy's ``tocsc`` (no entry can be stored twice)
_CONVERTED = ("lil", "dok", "dia", "bsr")
#: the largest number of rows (row indices are stored as int32)
MAX_ROWS = 2 ** 31 - 1
#: the temporaries of the blocked passes over the entries (entries per block)
_BLOCK = 1 << 16
#: the largest sum of squares of a column (as for a dense X, see ``_validation``)
MAX_SUM_OF_SQUARES = 1e300


def is_sparse(X) -> bool:
    """Whether ``X`` is a scipy.sparse matrix or array (scipy is not imported for this: a user
    who has one has imported it)."""
    sp = sys.modules.get("scipy.sparse")
    return sp is not None and bool(sp.issparse(X))


def _column_blocks(indptr: np.ndarray, block: int = _BLOCK) -> Iterator[tuple[int, int]]:
    """Ranges ``[j0, j1)`` of columns whose entries are about ``block`` at most (a column with
    more entries is a range of its own)."""
    p = indptr.size - 1
    j0 = 0
    while j0 < p:
        target = indptr[j0] + block
        j1 = int(np.searchsorted(indptr, target, side="right")) - 1
        j1 = min(max(j1, j0 + 1), p)
        yield j0, j1
        j0 = j1


def _segment_sums(values: np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """Per column, the sum of ``values`` over its entries (0 for an empty column)."""
    p = indptr.size - 1
    out = np.zeros(p)
    counts = np.diff(indptr)
    nonempty = np.flatnonzero(counts > 0)
    if nonempty.size:
        out[nonempty] = np.add.reduceat(values, indptr[nonempty])
    return out


@dataclass(frozen=True, eq=False)
class SparseDesign:
    """A design matrix in canonical compressed sparse column form (see the module's docstring).

    Build it with :func:`as_sparse_design`; the arrays are read-only by convention.

    Attributes
    ----------
    indptr : ndarray of int64 (p + 1,)
    indices : ndarray of int32 (nnz,)
    data : ndarray of float64 (nnz,)
    shape : tuple (n_samples, n_features)
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    shape: tuple[int, int]

    @property
    def n_samples(self) -> int:
        return int(self.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.shape[1])

    @property
    def ndim(self) -> int:
        return 2

    @property
    def nnz(self) -> int:
        """The number of stored (non-zero) entries."""
        return int(self.data.size)

    @property
    def nbytes(self) -> int:
        """Bytes of the three arrays."""
        return int(self.indptr.nbytes + self.indices.nbytes + self.data.nbytes)

    def column_nnz(self) -> np.ndarray:
        """The number of entries of each column (int64, (p,))."""
        return np.diff(self.indptr)

    def column_sums(self) -> np.ndarray:
        """Per column, the sum of its entries."""
        return _segment_sums(self.data, self.indptr)

    def column_sq_sums(self) -> np.ndarray:
        """Per column, the sum of the squares of its entries (in blocks of entries: the
        temporaries stay small)."""
        out = np.zeros(self.n_features)
        for j0, j1 in _column_blocks(self.indptr):
            a, b = self.indptr[j0], self.indptr[j1]
            v = self.data[a:b]
            out[j0:j1] = _segment_sums(v * v, self.indptr[j0:j1 + 1] - a)
        return out

    def row_sq_sums(self) -> np.ndarray:
        """Per row, the sum of the squares of its entries."""
        out = np.zeros(self.n_samples)
        for j0, j1 in _column_blocks(self.indptr):
            a, b = self.indptr[j0], self.indptr[j1]
            v = self.data[a:b]
            out += np.bincount(self.indices[a:b], weights=v * v, minlength=self.n_samples)
        return out

    def columns(self, idx, rows: tuple[int, int] | None = None) -> np.ndarray:
        """The columns ``idx`` as a dense (n, len(idx)) float64 array (a few columns: the
        support of a model); with ``rows = (r0, r1)``, their rows ``r0:r1`` only."""
        idx = np.asarray(idx, dtype=np.int64).reshape(-1)
        r0, r1 = (0, self.n_samples) if rows is None else (int(rows[0]), int(rows[1]))
        out = np.zeros((r1 - r0, idx.size))
        for t, j in enumerate(idx.tolist()):
            a, b = int(self.indptr[j]), int(self.indptr[j + 1])
            if rows is not None:  # the column's rows are sorted
                ind = self.indices[a:b]
                a, b = a + int(np.searchsorted(ind, r0)), a + int(np.searchsorted(ind, r1))
            out[self.indices[a:b] - r0, t] = self.data[a:b]
        return out

    def matvec(self, b: np.ndarray) -> np.ndarray:
        """``X b`` (numpy; the solver's compiled kernels are in ``solvers.perspective``)."""
        b = np.asarray(b, dtype=np.float64)
        out = np.zeros(self.n_samples)
        for j in np.flatnonzero(b).tolist():
            a, e = self.indptr[j], self.indptr[j + 1]
            out[self.indices[a:e]] += self.data[a:e] * b[j]
        return out

    def rmatvec(self, z: np.ndarray) -> np.ndarray:
        """``X^T z`` (numpy, in blocks of entries)."""
        z = np.asarray(z, dtype=np.float64)
        out = np.zeros(self.n_features)
        for j0, j1 in _column_blocks(self.indptr):
            a, b = self.indptr[j0], self.indptr[j1]
            out[j0:j1] = _segment_sums(self.data[a:b] * z[self.indices[a:b]],
                                       self.indptr[j0:j1 + 1] - a)
        return out

    def take_rows(self, rows: np.ndarray) -> SparseDesign:
        """The rows ``rows`` (sorted, distinct) of the matrix, in the same form (``O(nnz)``)."""
        rows = np.asarray(rows, dtype=np.int64)
        new = np.full(self.n_samples, -1, dtype=np.int64)
        new[rows] = np.arange(rows.size)
        mapped = new[self.indices]
        keep = mapped >= 0
        counts = _segment_sums(keep.astype(np.float64), self.indptr).astype(np.int64)
        indptr = np.zeros(self.n_features + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        return SparseDesign(indptr, mapped[keep].astype(np.int32), self.data[keep],
                            (int(rows.size), self.n_features))

    def scale_rows(self, s: np.ndarray) -> SparseDesign:
        """``diag(s) X`` (a new array of values; the index arrays are shared)."""
        s = np.asarray(s, dtype=np.float64)
        return SparseDesign(self.indptr, self.indices, self.data * s[self.indices], self.shape)

    def __matmul__(self, b):
        return self.matvec(b)

    def toarray(self) -> np.ndarray:
        """The dense matrix (for small matrices and tests only)."""
        return self.columns(np.arange(self.n_features))

    def tocsc(self):
        """A ``scipy.sparse.csc_matrix`` sharing these arrays (scipy is imported here)."""
        import scipy.sparse

        return scipy.sparse.csc_matrix((self.data, self.indices, self.indptr), shape=self.shape,
                                       copy=False)

    def sha256(self) -> str:
        """The hash of the matrix (:func:`csc_sha256`)."""
        return csc_sha256(self.indptr, self.indices, self.data, self.shape)


def csc_sha256(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
               shape: tuple[int, int]) -> str:
    """SHA-256 of a matrix in canonical CSC form: ASCII ``"csc <i8 <i8 <f8 {n}x{p} {nnz}\\n"``,
    then ``indptr`` as little-endian int64, ``indices`` as little-endian int64 and ``data`` as
    little-endian float64 (whatever the arrays' own integer widths)."""
    n, p = (int(d) for d in shape)
    header = f"{HASH_PREFIX}{n}x{p} {int(data.size)}\n"
    h = hashlib.sha256(header.encode("ascii"))
    for arr, dt in ((indptr, "<i8"), (indices, "<i8"), (data, "<f8")):
        for s in range(0, arr.size, _BLOCK):
            h.update(np.ascontiguousarray(arr[s:s + _BLOCK], dtype=dt).tobytes())
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------
# conversion and checks
# ----------------------------------------------------------------------------------------------
def _check_values(data: np.ndarray, name: str) -> np.ndarray:
    """The stored values as float64 (a new array only when the dtype is not float64), refusing
    what the conversion would change or what is not a finite real number."""
    kind = data.dtype.kind
    if kind == "c":
        raise TypeError(f"{name} must be real, got a complex sparse matrix")
    if kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got a sparse matrix of dtype {data.dtype}")
    if data.dtype == np.float64:
        out = data
    else:
        out = data.astype(np.float64)
        if kind in "iu" and data.dtype.itemsize >= 8:
            big = np.flatnonzero((data > 2 ** 53) | (data < -(2 ** 53)))
            bad = [e for e in big.tolist() if int(out[e]) != int(data[e])]
            if bad:
                raise ValueError(f"{name} holds the value {data[bad[0]]}, which is not exactly a "
                                 f"float64 (it would become {float(out[bad[0]])!r}); convert the "
                                 "data to float64 yourself if that rounding is intended")
        elif kind == "f" and data.dtype.itemsize > 8:
            bad = np.flatnonzero(out.astype(data.dtype) != data)
            if bad.size:
                raise ValueError(f"{name} holds the value {data[bad[0]]}, which is not exactly a "
                                 f"float64 (it would become {float(out[bad[0]])!r}); convert the "
                                 "data to float64 yourself if that rounding is intended")
    for s in range(0, out.size, _BLOCK):
        if not np.isfinite(out[s:s + _BLOCK]).all():
            raise ValueError(f"{name} (sparse) contains NaN or infinite values")
    return out


def _duplicate_column(indptr: np.ndarray, indices: np.ndarray) -> int | None:
    """The first column whose row indices are not strictly increasing (an entry stored twice
    once the rows are sorted), or None."""
    for j0, j1 in _column_blocks(indptr):
        a, b = int(indptr[j0]), int(indptr[j1])
        if b - a < 2:
            continue
        d = np.diff(indices[a:b])
        bad = d <= 0
        starts = indptr[j0 + 1:j1] - a  # the first entry of each later column
        starts = starts[(starts > 0) & (starts < b - a)]
        bad[starts - 1] = False
        hit = np.flatnonzero(bad)
        if hit.size:
            return int(np.searchsorted(indptr, a + int(hit[0]), side="right")) - 1
    return None


def as_sparse_design(X, name: str = "X") -> SparseDesign:
    """Check a scipy.sparse ``X`` and return it in canonical CSC form.

    The user's arrays are used as they are when they already are canonical CSC with int32
    row indices and float64 values (no copy); otherwise one copy is made. CSR (and COO, LIL,
    DOK, DIA, BSR) is converted by scipy's own ``tocsc``; a COO matrix with an entry stored
    twice is refused (scipy would add them).

    Raises
    ------
    TypeError
        Not numeric, complex, or not a matrix.
    ValueError
        NaN or infinite values, inexact integers, duplicate entries, an empty or too large
        shape, column sums of squares beyond float64's range.
    """
    fmt = getattr(X, "format", None)
    shape = tuple(int(d) for d in getattr(X, "shape", ()))
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-dimensional (n_samples, n_features), got a sparse "
                         f"array of shape {shape}")
    n, p = shape
    if n < 1 or p < 1:
        raise ValueError(f"{name} must have at least one sample and one feature, got shape "
                         f"{shape}")
    if n > MAX_ROWS:
        raise ValueError(f"{name} has {n} rows, more than the {MAX_ROWS} a sparse design can "
                         "have")
    if fmt not in ("csr", "csc", "coo", *_CONVERTED):
        raise TypeError(f"{name} is a sparse matrix of format {fmt!r}; give it as CSR or CSC "
                        "(X.tocsr())")
    if fmt in _CONVERTED:  # (no entry twice: scipy's conversion is exact)
        X = X.tocsc()
        fmt = "csc"
    _check_values(np.asarray(X.data), name)  # before any conversion: NaN, dtype, exactness
    if fmt == "csc":
        csc = X
    else:
        csc = X.tocsc()
        if fmt == "coo" and csc.nnz != X.nnz:
            raise ValueError(f"{name} (COO) stores some entries twice (scipy would add them, "
                             "with rounding); call X.sum_duplicates() first if their sum is "
                             "meant")
    indptr = np.asarray(csc.indptr)
    indices = np.asarray(csc.indices)
    data = _check_values(np.asarray(csc.data), name)
    if indptr.shape != (p + 1,) or indptr[0] != 0 or indptr[-1] != data.size \
            or indices.shape != data.shape:
        raise ValueError(f"{name} is not a consistent sparse matrix (its index arrays do not "
                         f"match its shape {shape})")
    if indices.size and (indices.min() < 0 or indices.max() >= n):
        raise ValueError(f"{name} has row indices outside [0, {n})")
    dup = _duplicate_column(indptr, indices)
    if dup is not None and fmt == "csc":  # unsorted rows, or an entry twice: sort a copy
        csc = csc.copy()
        csc.sort_indices()
        indptr, indices = np.asarray(csc.indptr), np.asarray(csc.indices)
        data = _check_values(np.asarray(csc.data), name)
        dup = _duplicate_column(indptr, indices)
    if dup is not None:
        raise ValueError(f"{name} stores an entry of column {dup} twice (scipy would add them, "
                         "with rounding); call X.sum_duplicates() first if their sum is meant")
    indptr = indptr.astype(np.int64, copy=False)
    indices = indices.astype(np.int32, copy=False)
    zero = np.flatnonzero(data == 0.0)
    if zero.size:  # explicit zeros (either sign): the same matrix without them
        keep = np.ones(data.size, dtype=bool)
        keep[zero] = False
        counts = np.diff(indptr) - np.bincount(
            np.searchsorted(indptr, zero, side="right") - 1, minlength=p)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        indices, data = indices[keep], data[keep]
    out = SparseDesign(indptr, indices, data, (n, p))
    col = out.column_sq_sums()
    worst = float(col.max()) if col.size else 0.0
    if not worst <= MAX_SUM_OF_SQUARES:
        j = int(np.argmax(np.where(np.isfinite(col), col, np.inf)))
        raise ValueError(f"{name} is too large for float64 arithmetic: the sum of squares of "
                         f"column {j} is {worst:.3g} (at most {MAX_SUM_OF_SQUARES:g}); rescale "
                         f"{name}")
    return out
