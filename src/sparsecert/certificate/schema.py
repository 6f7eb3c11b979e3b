"""Constants and small primitives of the sparsecert certificate format (version 2).

Everything here depends on numpy and the standard library only (the loss names come from the
loss registry :mod:`sparsecert.solvers.losses`, the statuses and the gap definition from
:mod:`sparsecert.statuses`; both are light). The format is specified in
``docs/certificate-format.md``; the standalone verifier (:mod:`sparsecert.certificate.verify`)
restates these constants on purpose (it shares no code with the writer) and a test checks that
the two agree.
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
from sparsecert.solvers.losses import LOSS_PARAMETERS as LOSS_PARAMETERS
from sparsecert.solvers.losses import check_loss_params as check_loss_params
from sparsecert.statuses import NODE_STATUSES as NODE_STATUSES
from sparsecert.statuses import RELATIVE_GAP_DEFINITION as RELATIVE_GAP_DEFINITION
from sparsecert.statuses import STATUSES as STATUSES

FORMAT_NAME = "sparsecert-certificate"
FORMAT_VERSION = 2
SUPPORTED_FORMAT_VERSIONS = (2,)

LOSSES = LOSS_NAMES
WITNESS_KINDS = ("dual", "shifted")
LABEL_RULE = ("classification losses: y has exactly two distinct values; the smaller maps to -1, "
              "the larger to +1")
OBJECTIVE_DEFINITION = (
    "F(b, c) = sum_i f(x_i^T b + c, y_i) + lambda2 * ||b||_2^2 subject to ||b||_0 <= k and "
    "|b_j| <= max_abs_coef (null = no bound); c = 0 unless fit_intercept (c is not penalised "
    "and not counted in k)"
)
HASH_DEFINITION = (
    "sha256 of the ASCII header '<f8 ' + 'x'.join(shape) + '\\n' followed by the C-contiguous "
    "little-endian float64 bytes of the array"
)

#: The problem's optional fields (written only when not neutral; section 2.2 of the format):
#: the hashes of the sample weights and offsets, every coefficient's bounds, the features forced
#: in and kept out.
EXTENSION_FIELDS = ("sample_weight_sha256", "offset_sha256", "coef_lower", "coef_upper",
                    "always_select", "exclude")

#: Arrays of the sidecar (.npz) and their dtypes.
SIDECAR_ARRAYS = {
    "dual_values": "<f8",
    "shifted_offsets": "<i8",
    "shifted_indices": "<i8",
    "shifted_values": "<f8",
}
SIDECAR_DESCRIPTION = (
    "npz (zip, stored) of .npy arrays, found next to the certificate under the same name with "
    "extension .npz: dual witness s is the row dual_values[s] (length n_samples); shifted "
    "witness s has indices shifted_indices[shifted_offsets[s]:shifted_offsets[s+1]] and values "
    "shifted_values[same] (length n_features, zeros elsewhere)"
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
    h.update(memoryview(arr).cast("B"))
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
