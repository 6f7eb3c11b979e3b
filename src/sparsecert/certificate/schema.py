"""Constants and small primitives of the sparsecert certificate format (version 3).

Everything here depends on numpy and the standard library only (the loss names come from the
loss registry :mod:`sparsecert.solvers.losses`, the statuses and the gap definition from
:mod:`sparsecert.statuses`; both are light). The format is specified in
``docs/certificate-format.md``; the standalone verifier (:mod:`sparsecert.certificate.verify`)
restates these constants on purpose (it shares no code with the writer) and a test checks that
the two agree.
"""

from __future__ import annotations

import hashlib
import struct

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
FORMAT_VERSION = 3
SUPPORTED_FORMAT_VERSIONS = (3,)

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
#: ``problem.X_format`` of a certificate whose X is sparse (absent: a dense X)
SPARSE_X_FORMAT = "csc"
SPARSE_HASH_DEFINITION = (
    "sha256 of the ASCII header 'csc <i8 <i8 <f8 ' + n + 'x' + p + ' ' + nnz + '\\n' followed "
    "by the canonical compressed sparse column arrays of X: indptr (p + 1, little-endian int64), "
    "indices (nnz row indices strictly increasing within each column, little-endian int64) and "
    "data (nnz finite non-zero values, little-endian float64); explicit zeros are not entries"
)

# -- the proof file (docs/certificate-format.md, section 2.7) ----------------------------------
#: the proof file is the certificate's name with this extension (``cert.json`` -> ``cert.proof``)
PROOF_SUFFIX = ".proof"
#: the first 8 bytes of a proof file
PROOF_MAGIC = b"SCPROOF\0"
#: the header: magic, version, record size, then n_nodes, n_dual, n_shifted, shifted_nnz,
#: n_samples, n_features (little-endian)
PROOF_HEADER = struct.Struct("<8sII6Q")
PROOF_HEADER_SIZE = PROOF_HEADER.size  # 64
#: one node record: head (status | derive | witness kind; upper 24 bits zero), the branching
#: variable of a branched node, the witness slot, the size of the first child's subtree
RECORD_DTYPE = np.dtype([("head", "<u4"), ("var", "<u4"), ("slot", "<u4"), ("size0", "<u4")])
RECORD_SIZE = RECORD_DTYPE.itemsize  # 16
#: the status of a node record (its two low bits)
RECORD_STATUS = {"branched": 0, "pruned": 1, "solved": 2, "open": 3}
#: the head's bit asking the verifier to derive the node's bound fixings
RECORD_DERIVE = 4
#: the head's witness kind (bits 3 and 4): 0 none (the nearest ancestor's), 1 dual, 2 shifted
RECORD_WITNESS_SHIFT = 3
RECORD_WITNESS = {"dual": 1, "shifted": 2}
#: the largest count a record field holds (variables, slots, subtree sizes)
RECORD_MAX = 2 ** 32 - 1
PROOF_DESCRIPTION = (
    "binary, little-endian, next to the certificate under the same name with extension "
    ".proof: a 64-byte header (magic SCPROOF\\0, version, record size 16, n_nodes, n_dual, "
    "n_shifted, shifted_nnz, n_samples, n_features), the node records in depth-first preorder "
    "(16 bytes each: head, branching variable, witness slot, size of the first child's "
    "subtree), the dual witnesses (n_dual rows of n_samples float64), the shifted witnesses' "
    "offsets (n_shifted + 1 uint64), values (float64) and indices (uint32)"
)


def proof_size(n_nodes: int, n_dual: int, n_shifted: int, nnz: int, n: int) -> int:
    """The exact size in bytes of a proof file with these counts (``n`` samples)."""
    return (PROOF_HEADER_SIZE + RECORD_SIZE * n_nodes + 8 * n * n_dual + 8 * (n_shifted + 1)
            + 12 * nnz)


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


def sha256_bytes(data: bytes) -> str:
    """Hex SHA-256 of raw bytes."""
    return hashlib.sha256(data).hexdigest()


def data_hash(X) -> tuple[str | None, str]:
    """``(X_format, X_sha256)`` of a design: ``(None, array_sha256(X))`` for a dense one, and
    ``("csc", its canonical CSC hash)`` for a :class:`sparsecert.sparse.SparseDesign`."""
    from sparsecert.sparse import SparseDesign

    if isinstance(X, SparseDesign):
        return SPARSE_X_FORMAT, X.sha256()
    return None, array_sha256(X)
