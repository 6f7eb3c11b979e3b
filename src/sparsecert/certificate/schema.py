"""Constants and small primitives of the sparsecert certificate format (version 1).

Everything here depends on numpy and the standard library only (the loss names come from the
loss registry :mod:`sparsecert.solvers.losses`, the statuses and the gap definition from
:mod:`sparsecert.statuses`; both are light). The format is specified in
``docs/certificate-format.md``.
"""

from __future__ import annotations

import hashlib
import io
import zipfile

import numpy as np

# re-exported: the format's loss names, status names and gap definition are the package's own
# (the loss registry and the statuses module import numpy and the standard library only)
from sparsecert.solvers.losses import CLASSIFICATION_LOSSES as CLASSIFICATION_LOSSES
from sparsecert.solvers.losses import LOSS_DEFINITIONS as LOSS_DEFINITIONS
from sparsecert.solvers.losses import LOSS_NAMES
from sparsecert.statuses import NODE_STATUSES as NODE_STATUSES
from sparsecert.statuses import RELATIVE_GAP_DEFINITION as RELATIVE_GAP_DEFINITION
from sparsecert.statuses import STATUSES as STATUSES

FORMAT_NAME = "sparsecert-certificate"
FORMAT_VERSION = 1
SUPPORTED_FORMAT_VERSIONS = (1,)

LOSSES = LOSS_NAMES
WITNESS_KINDS = ("point", "dual")

OBJECTIVE_DEFINITION = (
    "F(b, c) = sum_i f(x_i^T b + c, y_i) + lambda2 * ||b||_2^2 subject to ||b||_0 <= k and "
    "|b_j| <= max_abs_coef (null = no bound); c = 0 unless fit_intercept (c is not penalised "
    "and not counted in k); classification labels are mapped to -1/+1 by problem.labels"
)
PSD_CHECK_DESCRIPTION = (
    "if eig_shift mu > 0: loss is squared and numpy.linalg.cholesky(Xc^T Xc - mu I) succeeds, "
    "Xc = X minus its column means if fit_intercept else X; then sum_i f(x_i^T b) - mu ||b||^2 is "
    "convex and point witnesses are evaluated with lambda2 + mu"
)
HASH_DEFINITION = (
    "sha256 of the ASCII header '<f8 ' + 'x'.join(shape) + '\\n' followed by the C-contiguous "
    "little-endian float64 bytes of the array"
)

#: Relative floating-point margin: the certified lower bound must be >= claimed lower bound
#: minus ``BOUND_MARGIN_REL * max(1, |UB|)``.
BOUND_MARGIN_REL = 1e-9
#: The recomputed incumbent objective must match the claimed one within this relative margin.
OBJECTIVE_REL_TOL = 1e-9
#: absolute_gap / relative_gap must match their definitions within this relative margin.
ARITHMETIC_REL_TOL = 1e-12

#: Arrays of the sidecar (.npz) and their dtypes.
SIDECAR_ARRAYS = {
    "point_offsets": "<i8",
    "point_indices": "<i8",
    "point_values": "<f8",
    "dual_values": "<f8",
}
SIDECAR_DESCRIPTION = (
    "npz (zip, stored) of .npy arrays: point witness s has indices "
    "point_indices[point_offsets[s]:point_offsets[s+1]] and values point_values[same]; "
    "dual witness s is the row dual_values[s] (length n_samples)"
)


def array_sha256(a: np.ndarray) -> str:
    """SHA-256 of an array as float64: header ``'<f8 ' + 'x'.join(shape) + '\\n'`` then the
    C-contiguous little-endian float64 bytes.

    Parameters
    ----------
    a : array_like
        The array (converted to float64; a conversion that is not exact is the caller's concern).

    Returns
    -------
    str
        The hexadecimal digest.
    """
    arr = np.ascontiguousarray(np.asarray(a, dtype=np.float64), dtype="<f8")
    h = hashlib.sha256()
    h.update(("<f8 " + "x".join(str(d) for d in arr.shape) + "\n").encode("ascii"))
    h.update(arr.tobytes(order="C"))
    return h.hexdigest()


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """Deterministic ``.npz`` bytes (zip, stored, fixed timestamps, entries sorted by name).

    ``numpy.savez`` stamps the current time into the zip, so the same arrays would hash
    differently from one run to the next; this writer does not.
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(arrays):
            arr = np.ascontiguousarray(arrays[name])
            entry = io.BytesIO()
            np.lib.format.write_array(entry, arr, version=(1, 0), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_STORED
            zf.writestr(info, entry.getvalue())
    return buf.getvalue()


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of raw bytes."""
    return hashlib.sha256(data).hexdigest()
