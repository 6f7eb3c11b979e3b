"""The certificate object: a JSON document and its binary proof file; build, save, load.

numpy and the standard library only (like the verifier). The format is specified in
``docs/certificate-format.md`` (version 3); the proof file is written by
:mod:`sparsecert.certificate.proof_file`. The document's parts have rooms of their own:
the problem section (:mod:`~sparsecert.certificate.problem`), the tree's encoding
(:mod:`~sparsecert.certificate.tree`), the paths and the checks before a file is replaced
(:mod:`~sparsecert.certificate.paths`), the printed summary
(:mod:`~sparsecert.certificate.summary`).
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import platform
import shutil
import sys
import uuid
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sparsecert._version import __version__
from sparsecert.certificate.fields import finite, is_sparse_design, jsonable
from sparsecert.certificate.paths import check_save_path, proof_path, sidecar_path
from sparsecert.certificate.problem import problem_section
from sparsecert.certificate.proof_file import decode_tree, read_witness, write_proof
from sparsecert.certificate.schema import (
    FORMAT_NAME,
    FORMAT_VERSION,
    PROOF_DESCRIPTION,
    RELATIVE_GAP_DEFINITION,
    STATUSES,
    SUPPORTED_FORMAT_VERSIONS,
)
from sparsecert.certificate.summary import format_summary
from sparsecert.certificate.tree import encode_tree, tree_summary

__all__ = ["Certificate", "sidecar_path", "proof_path", "check_save_path", "format_summary",
           "tree_summary"]


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


class Certificate:
    """A branch-and-bound optimality certificate: a JSON document and its proof file.

    Attributes
    ----------
    data : dict
        The JSON document (see ``docs/certificate-format.md``).

    The proof file (the tree's records in preorder and the witnesses) is kept on disk (a
    large certificate made by :func:`sparsecert.certify` holds a temporary file, removed with
    the object; :meth:`load` refers to the file next to the JSON) or in memory (:meth:`build`,
    and a certificate of :func:`sparsecert.certify` whose proof file is at most 1 MiB).
    """

    def __init__(self, data: dict, proof: str | os.PathLike | bytes, *,
                 temporary: bool = False) -> None:
        self.data = data
        if isinstance(proof, (bytes, bytearray)):
            self._bytes: bytes | None = bytes(proof)
            self._path: str | None = None
        else:
            self._bytes, self._path = None, os.fspath(proof)
            if temporary:
                weakref.finalize(self, _remove, self._path)
        self._tree: list[dict] | None = None

    # ------------------------------------------------------------------ construction
    @staticmethod
    def document(X: np.ndarray, y: np.ndarray, *, problem: Mapping[str, Any],
                 incumbent: Mapping[str, Any], bounds: Mapping[str, Any], eig_shift: float,
                 proof: Mapping[str, Any], producer: Mapping[str, Any] | None = None) -> dict:
        """The JSON document of a certificate whose proof file is written (``proof``: its
        ``sha256``, ``bytes`` and ``tree``, the informational summary of its tree,
        :func:`~sparsecert.certificate.tree.tree_summary`). The other arguments are
        :meth:`build`'s; every field is checked."""
        section = problem_section(X, y, problem)
        p = section["n_features"]
        coef = np.asarray(incumbent["coef"], dtype=np.float64)
        if coef.shape != (p,) or not np.isfinite(coef).all():
            raise ValueError(f"incumbent['coef'] must be {p} finite numbers, got {coef.shape}")
        intercept = finite(incumbent.get("intercept", 0.0), "incumbent['intercept']")
        objective = finite(incumbent["objective"], "incumbent['objective']")

        lb = finite(bounds["lower_bound"], "bounds['lower_bound']")
        ub = finite(bounds["upper_bound"], "bounds['upper_bound']")
        status = bounds["status"]
        if status not in STATUSES:
            raise ValueError(f"bounds['status'] must be one of {STATUSES}, got {status!r}")
        rel_tol = finite(bounds.get("rel_gap_tol", 1e-4), "bounds['rel_gap_tol']")
        abs_tol = finite(bounds.get("abs_gap_tol", 0.0), "bounds['abs_gap_tol']")
        mu = finite(eig_shift, "eig_shift")
        if mu < 0:
            raise ValueError(f"eig_shift = {mu} must be >= 0")
        abs_gap = max(0.0, ub - lb)
        rel_gap = abs_gap / max(1.0, abs(ub))
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "problem": section,
            "incumbent": {
                "coef": [float(v) for v in coef],
                "intercept": intercept,
                "support": np.flatnonzero(coef).tolist(),
                "objective": objective,
            },
            "bounds": {
                "lower_bound": lb,
                "upper_bound": ub,
                "absolute_gap": abs_gap,
                "relative_gap": rel_gap,
                "relative_gap_definition": RELATIVE_GAP_DEFINITION,
                "rel_gap_tolerance": rel_tol,
                "abs_gap_tolerance": abs_tol,
                "status": status,
            },
            "relaxation": {"eig_shift": mu},
            "tree": jsonable(dict(proof["tree"])),
            "proof": {"sha256": str(proof["sha256"]), "bytes": int(proof["bytes"]),
                      "description": PROOF_DESCRIPTION},
            "producer": Certificate._producer(producer),
        }

    @classmethod
    def build(
        cls,
        X: np.ndarray,
        y: np.ndarray,
        *,
        problem: Mapping[str, Any],
        incumbent: Mapping[str, Any],
        bounds: Mapping[str, Any],
        eig_shift: float = 0.0,
        nodes: Sequence[Mapping[str, Any]],
        producer: Mapping[str, Any] | None = None,
    ) -> Certificate:
        """A certificate of a tree given node by node (its proof file kept in memory).

        Parameters
        ----------
        X, y : ndarray
            The data exactly as the user passed it (hashed as float64; raw labels).
        problem : dict
            ``loss``, ``k``, ``lambda2``, ``max_abs_coef`` (None = no box), ``fit_intercept``,
            and the loss's parameters by name (its defaults when not given); optionally
            ``feature_names`` (the names of the columns of X: informational, not part of the
            proof) and the problem's optional parts
            (:func:`~sparsecert.certificate.problem.encode_extensions`): ``sample_weight`` and
            ``offset`` (bound by their hashes), ``coef_lower`` and ``coef_upper`` (every
            coefficient's bounds), ``always_select`` and ``exclude`` (the features forced in
            and kept out).
        incumbent : dict
            ``coef`` (length p), ``intercept``, ``objective`` (the computed value,
            informational).
        bounds : dict
            ``lower_bound``, ``upper_bound`` (the claims, proven by the tree and the incumbent),
            ``status``, ``rel_gap_tol``, ``abs_gap_tol``.
        eig_shift : float
            mu >= 0 used by shifted witnesses (squared loss; the verifier proves it).
        nodes : list of dict
            ``id``, ``parent``, ``branch_var``, ``branch_value``, ``status``, ``witness`` (None,
            ("dual", zeta of length n) or ("shifted", b of length p)) and optionally
            ``derive_fixings`` (True: the verifier derives the node's bound fixings from its
            witness, section 2.6.1). Any order; a node with children must be ``branched``,
            with exactly two, ``z_j = 0`` and ``z_j = 1`` on one variable. Each node's witness
            gets its own slot.
        producer : dict, optional
            ``settings``, ``elapsed``, ``n_jobs``, ``executor`` (metadata, not verified).

        Returns
        -------
        Certificate

        Raises
        ------
        ValueError, TypeError
            On inputs that cannot be encoded (shapes, non-finite values, unknown names, a
            parent that does not exist, a cycle, a node with one child).
        """
        X = X if is_sparse_design(X) else np.asarray(X)
        n, p = (X.shape if X.ndim == 2 else (0, 0))
        tree = encode_tree(nodes, n, p)
        buf = io.BytesIO()
        off = np.zeros(len(tree.shifted) + 1, dtype=np.int64)
        off[1:] = np.cumsum([idx.size for idx, _ in tree.shifted], dtype=np.int64)
        sha, size = write_proof(buf, tree.counts, [tree.records], [tree.dual],
                                off, [v for _, v in tree.shifted], [i for i, _ in tree.shifted])
        doc = cls.document(X, y, problem=problem, incumbent=incumbent, bounds=bounds,
                           eig_shift=eig_shift,
                           proof=dict(sha256=sha, bytes=size, tree=tree.summary),
                           producer=producer)
        return cls(doc, buf.getvalue())

    @staticmethod
    def _producer(producer: Mapping[str, Any] | None) -> dict:
        producer = dict(producer or {})
        out = {
            "package": "sparsecert",
            "version": __version__,
            "python": sys.version.split()[0],
            "numpy": np.__version__,
            "platform": platform.platform(),
            "time_utc": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        for key in ("settings", "elapsed", "n_jobs", "executor"):
            if key in producer:
                out[key] = jsonable(producer.pop(key))
        out.update(jsonable(producer))
        return out

    # ------------------------------------------------------------------ accessors
    @property
    def problem(self) -> dict:
        return self.data["problem"]

    @property
    def bounds(self) -> dict:
        return self.data["bounds"]

    @property
    def incumbent(self) -> dict:
        return self.data["incumbent"]

    @property
    def lower_bound(self) -> float:
        return self.bounds["lower_bound"]

    @property
    def upper_bound(self) -> float:
        return self.bounds["upper_bound"]

    @property
    def status(self) -> str:
        return self.bounds["status"]

    @property
    def n_nodes(self) -> int:
        """The number of nodes of the tree (as the document states it)."""
        return int(self.data.get("tree", {}).get("n_nodes", 0))

    @property
    def nbytes(self) -> int:
        """The size of the certificate in bytes: its JSON text and its proof file."""
        return len(self.to_json().encode("utf-8")) + int(self.data["proof"]["bytes"])

    def proof_source(self) -> str | bytes:
        """The proof file: its path, or its bytes when it is held in memory."""
        return self._bytes if self._bytes is not None else self._path

    def _open(self):
        return io.BytesIO(self._bytes) if self._bytes is not None else open(self._path, "rb")

    def proof_bytes(self) -> bytes:
        """The proof file's bytes (read whole: for small certificates)."""
        if self._bytes is not None:
            return self._bytes
        with open(self._path, "rb") as fh:
            return fh.read()

    @property
    def nodes(self) -> list[dict]:
        """The tree's nodes in preorder, decoded from the proof file (see
        :func:`sparsecert.certificate.proof_file.decode_tree`; for small certificates)."""
        if self._tree is None:
            with self._open() as fh:
                self._tree = decode_tree(fh)
        return self._tree

    def witness(self, kind: str, slot: int) -> np.ndarray:
        """Witness ``slot`` of ``kind``: ``"dual"`` (zeta, length n) or ``"shifted"`` (b~,
        length p)."""
        with self._open() as fh:
            return read_witness(fh, kind, slot)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        """The JSON document (a deep copy)."""
        return json.loads(json.dumps(self.data, allow_nan=False))

    def to_json(self) -> str:
        """Deterministic JSON text (2-space indentation)."""
        return json.dumps(self.data, indent=2, allow_nan=False) + "\n"

    def save(self, path: str | os.PathLike, overwrite: bool = False) -> tuple[str, str]:
        """Write the certificate to ``path`` (must end in ``.json``) and its proof file next to
        it (``cert.json`` -> ``cert.proof``).

        An existing certificate pair of the same problem on the same data is replaced (the
        same job re-run); a certificate of another problem, and any other existing file at
        either path, is left untouched (``FileExistsError``) unless ``overwrite=True``. Both
        files are written to temporary names first and renamed into place, proof file first,
        so an interrupted save never leaves a half-written JSON under the certificate's name.

        Returns
        -------
        (json_path, proof_path)

        Raises
        ------
        ValueError, FileExistsError, IsADirectoryError, FileNotFoundError
            The path is refused before anything is written (not ``.json``; a file that is not
            a sparsecert certificate or proof file, or a certificate of another problem, would
            be replaced): :func:`~sparsecert.certificate.paths.check_save_path`.
        OSError
            The files cannot be written.
        """
        path, ppath = check_save_path(path, overwrite, problem=self.data.get("problem"))
        folder = os.path.dirname(os.path.abspath(path))
        tag = f"{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        tmp_proof = os.path.join(folder, f".{os.path.basename(ppath)}.{tag}")
        tmp_json = os.path.join(folder, f".{os.path.basename(path)}.{tag}")
        try:
            if self._bytes is not None:
                with open(tmp_proof, "xb") as fh:
                    fh.write(self._bytes)
            else:
                shutil.copyfile(self._path, tmp_proof)
            with open(tmp_json, "x", encoding="utf-8") as fh:
                fh.write(self.to_json())
            os.replace(tmp_proof, ppath)
            os.replace(tmp_json, path)
        finally:
            for tmp in (tmp_proof, tmp_json):
                if os.path.exists(tmp):
                    os.remove(tmp)
        return path, ppath

    @classmethod
    def load(cls, path: str | os.PathLike) -> Certificate:
        """Read a certificate (no verification: use ``verify_certificate``); its proof file is
        the file next to ``path`` with the same name and extension ``.proof`` (its SHA-256,
        recorded in the JSON, binds it: a pair renamed together stays valid). The proof file
        is read when needed, from its path.

        Raises
        ------
        OSError
            A file cannot be read.
        ValueError
            The JSON is invalid, not a version-3 sparsecert certificate, or the proof file's
            header is malformed.
        """
        from sparsecert.certificate import verify as _verify

        path = os.fspath(path)
        data = _verify.read_document(path)  # as strict as the verifier: NaN, repeated keys
        if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
            raise ValueError(f"{path} is not a {FORMAT_NAME} file")
        version = data.get("format_version")
        if version in (1, 2) and not isinstance(version, bool):
            raise ValueError(f"{path}: format version {version} is not supported (this "
                             f"sparsecert reads version {FORMAT_VERSION}): re-run sparsecert "
                             "certify")
        if version not in SUPPORTED_FORMAT_VERSIONS:
            raise ValueError(f"{path}: unsupported format_version {version!r}")
        ppath = proof_path(path)
        try:  # the verifier's reader: the header's counts against the file's size
            _verify.read_proof_header(data, ppath)
        except ValueError as exc:
            raise ValueError(f"{ppath}: {exc}") from None
        return cls(data, ppath)

    def verify(self, X: np.ndarray, y: np.ndarray, **kwargs):
        """Verify this certificate against the data (see ``verify_certificate``; the keyword
        arguments fix the problem and the tolerance)."""
        from sparsecert.certificate.verify import verify_certificate

        return verify_certificate(self, X, y, **kwargs)

    def summary(self) -> str:
        """A human-readable summary (what ``sparsecert show`` prints)."""
        return format_summary(self.data)

    def __repr__(self) -> str:
        pr, bd = self.problem, self.bounds
        return (f"Certificate(loss={pr['loss']!r}, n={pr['n_samples']}, p={pr['n_features']}, "
                f"k={pr['k']}, status={bd['status']!r}, objective={bd['upper_bound']:.6g}, "
                f"lower_bound={bd['lower_bound']:.6g}, nodes={self.n_nodes})")
