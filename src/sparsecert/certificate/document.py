"""The certificate object: a JSON document and its binary proof file; build, save, load.

numpy and the standard library only (like the verifier). The format is specified in
``docs/certificate-format.md`` (version 3); the proof file is written by
:mod:`sparsecert.certificate.proof_file`.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import math
import os
import platform
import re
import shutil
import sys
import uuid
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sparsecert._version import __version__
from sparsecert.certificate.proof_file import (
    ProofCounts,
    decode_tree,
    pack_records,
    read_witness,
    tree_order,
    write_proof,
)
from sparsecert.certificate.schema import (
    EXTENSION_FIELDS,
    FORMAT_NAME,
    FORMAT_VERSION,
    HASH_DEFINITION,
    LABEL_RULE,
    LOSS_DEFINITIONS,
    LOSS_PARAMETERS,
    LOSSES,
    NODE_STATUSES,
    OBJECTIVE_DEFINITION,
    PROOF_DESCRIPTION,
    PROOF_MAGIC,
    PROOF_SUFFIX,
    RECORD_STATUS,
    RECORD_WITNESS,
    RELATIVE_GAP_DEFINITION,
    SPARSE_HASH_DEFINITION,
    STATUSES,
    SUPPORTED_FORMAT_VERSIONS,
    WITNESS_KINDS,
    array_sha256,
    check_loss_params,
    data_hash,
)
from sparsecert.statuses import what_it_means

__all__ = ["Certificate", "sidecar_path", "proof_path", "check_save_path", "format_summary",
           "tree_summary"]

_CERT_PREFIX = re.compile(rb'\A\s*\{\s*"format"\s*:\s*"' + FORMAT_NAME.encode() + rb'"')


def proof_path(json_path: str | os.PathLike) -> str:
    """The proof file of a certificate: next to it, same name, extension ``.proof``
    (``cert.json`` -> ``cert.proof``)."""
    path = os.fspath(json_path)
    root, ext = os.path.splitext(path)
    return (root if ext.lower() == ".json" else path) + PROOF_SUFFIX


#: the proof file is the certificate's sidecar (the name the rest of the package uses)
sidecar_path = proof_path


def _finite(v: Any, what: str) -> float:
    if isinstance(v, bool):
        raise TypeError(f"{what} must be a number, got a bool")
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{what} must be a number, got {type(v).__name__}") from None
    if not math.isfinite(f):
        raise ValueError(f"{what} must be finite, got {f}")
    return f


def _int(v: Any, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {v!r}")
    return int(v)


def _jsonable(v: Any) -> Any:
    """Producer metadata to plain JSON (numpy scalars, tuples; non-finite floats as strings)."""
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else str(f)
    if v is None or isinstance(v, str):
        return v
    return str(v)


def _is_certificate_json(path: str) -> bool:
    """The file starts like a sparsecert certificate (any format version)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return bool(_CERT_PREFIX.match(head))


def _is_proof_file(path: str) -> bool:
    """The file starts like a sparsecert proof file."""
    try:
        with open(path, "rb") as fh:
            return fh.read(len(PROOF_MAGIC)) == PROOF_MAGIC
    except OSError:
        return False


#: The fields of a certificate's ``problem`` that say which problem it certifies (a loss's
#: parameters are written only for a loss that has them).
PROBLEM_KEYS = ("loss", "k", "lambda2", "max_abs_coef", "fit_intercept", "n_samples",
                "n_features", "X_sha256", "y_sha256", *LOSS_PARAMETERS, *EXTENSION_FIELDS)


def problem_key(X, y, *, loss: str, k: int, lambda2: float, max_abs_coef: float | None,
                fit_intercept: bool, loss_params: Mapping[str, Any] | None = None,
                extensions: Mapping[str, Any] | None = None) -> dict:
    """The :data:`PROBLEM_KEYS` fields of the certificate that :meth:`Certificate.build` would
    write for this problem and data (what :func:`check_save_path` compares)."""
    _, x_hash = data_hash(X if _is_sparse_design(X) else np.asarray(X))
    M = max_abs_coef
    M = None if M is None or math.isinf(float(M)) else float(M)
    return dict(loss=loss, k=int(k), lambda2=float(lambda2), max_abs_coef=M,
                fit_intercept=bool(fit_intercept), n_samples=int(X.shape[0]),
                n_features=int(X.shape[1]), X_sha256=x_hash, y_sha256=array_sha256(y),
                **check_loss_params(loss, loss_params),
                **encode_extensions(extensions, X.shape[0], X.shape[1]))


def encode_extensions(extensions: Mapping[str, Any] | None, n: int, p: int) -> dict:
    """The problem's optional fields as the certificate writes them (section 2.2 of the
    format): only those that are not neutral, so a certificate of the plain problem is the
    same as before they existed.

    ``extensions`` may hold ``sample_weight`` and ``offset`` (arrays of length n: their
    hashes), ``coef_lower`` and ``coef_upper`` (arrays of length p, every coefficient's bounds
    with the box: lists with null for an infinite bound), ``always_select`` and ``exclude``
    (feature indices: sorted lists).
    """
    ext = dict(extensions or {})
    out: dict[str, Any] = {}
    for name, length in (("sample_weight", n), ("offset", n)):
        v = ext.get(name)
        if v is not None:
            arr = np.asarray(v, dtype=np.float64)
            if arr.shape != (length,) or not np.isfinite(arr).all():
                raise ValueError(f"{name} must be {length} finite numbers, got {arr.shape}")
            out[name + "_sha256"] = array_sha256(arr)
    if ext.get("coef_lower") is not None:
        for name, sign in (("coef_lower", -1.0), ("coef_upper", 1.0)):
            arr = np.asarray(ext[name], dtype=np.float64)
            if arr.shape != (p,) or np.isnan(arr).any() or (sign * arr < 0).any():
                raise ValueError(f"{name} must be {p} bounds with lower <= 0 <= upper")
            out[name] = [None if math.isinf(v) else float(v) for v in arr.tolist()]
    for name in ("always_select", "exclude"):
        idx = sorted(int(j) for j in (ext.get(name) or ()))
        if any(not 0 <= j < p for j in idx) or len(set(idx)) != len(idx):
            raise ValueError(f"{name} must hold distinct feature indices in [0, {p})")
        if idx:
            out[name] = idx
    return out


def _is_sparse_design(X) -> bool:
    from sparsecert.sparse import SparseDesign

    return isinstance(X, SparseDesign)


def _other_problem(path: str, problem: Mapping[str, Any]) -> str:
    """How the certificate at ``path`` differs from ``problem`` ('' if it certifies it)."""
    try:
        with open(path, encoding="utf-8") as fh:
            old = json.load(fh)["problem"]
        diff = [key for key in PROBLEM_KEYS if old.get(key) != problem.get(key)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return "it cannot be read"
    data = [key for key in diff if key in ("n_samples", "n_features", "X_sha256", "y_sha256")]
    said = [f"{key} = {old.get(key)!r}, not {problem.get(key)!r}" for key in diff
            if key not in data]
    return ", ".join(said + (["other data"] if data else []))


def check_save_path(path: str | os.PathLike, overwrite: bool = False,
                    problem: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """The checks :meth:`Certificate.save` makes before writing anything, on their own, so that
    a caller can refuse a bad output path before a long solve.

    With ``problem`` (the :data:`PROBLEM_KEYS` of the certificate to be written, see
    :func:`problem_key`), an existing certificate at ``path`` is replaced only if it certifies
    the same problem on the same data (re-running the same job); a certificate of another
    problem is the user's result and is kept unless ``overwrite``.

    Returns
    -------
    (json_path, proof_path)

    Raises
    ------
    ValueError
        ``path`` does not end in ``.json``.
    IsADirectoryError
        ``path`` or its proof path is a directory.
    FileNotFoundError
        The folder of ``path`` does not exist.
    FileExistsError
        A file that is not a sparsecert certificate (or proof file), or a certificate of another
        problem than ``problem``, would be replaced and ``overwrite`` is false.
    """
    path = os.fspath(path)
    if not path.lower().endswith(".json") or os.path.basename(path).lower() == ".json":
        raise ValueError(f"a certificate path must end in .json (its proof file is the .proof "
                         f"of the same name), got {path!r}")
    spath = proof_path(path)
    if os.path.isdir(path) or os.path.isdir(spath):
        raise IsADirectoryError(f"{path if os.path.isdir(path) else spath} is a directory")
    folder = os.path.dirname(path) or os.curdir
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"folder {folder} does not exist (create it first)")
    if not overwrite:
        for f, ours, what in ((path, _is_certificate_json, "a sparsecert certificate"),
                              (spath, _is_proof_file, "a sparsecert proof file")):
            if os.path.lexists(f) and not ours(f):
                raise FileExistsError(f"{f} exists and is not {what}: refusing to replace "
                                      "it (choose another name, or overwrite=True / --force)")
        if problem is not None and os.path.lexists(path):
            other = _other_problem(path, problem)
            if other:
                raise FileExistsError(f"{path} holds a certificate of another problem "
                                      f"({other}): refusing to replace it (choose another "
                                      "name, or overwrite=True / --force)")
    return path, spath


def tree_summary(records: np.ndarray, depth: int | None = None) -> dict:
    """The ``tree`` section of a certificate (informational: what ``sparsecert show`` prints
    without reading the proof file) from its records (:data:`RECORD_DTYPE`)."""
    head = records["head"].astype(np.int64)
    status = head & 3
    names = {v: k for k, v in RECORD_STATUS.items()}
    leaves = {names[s]: int(np.count_nonzero(status == s)) for s in (1, 2, 3)
              if np.count_nonzero(status == s)}
    kinds = (head >> 3) & 3
    out = {"n_nodes": int(head.size), "n_leaves": int(np.count_nonzero(status != 0)),
           "leaves": leaves, "n_derive": int(np.count_nonzero(head & 4)),
           "witnesses": {"dual": int(np.count_nonzero(kinds == 1)),
                         "shifted": int(np.count_nonzero(kinds == 2))}}
    if depth is not None:
        out["depth"] = int(depth)
    return out


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
    certificate made by :func:`sparsecert.certify` holds a temporary file, removed with the
    object; :meth:`load` refers to the file next to the JSON) or in memory (:meth:`build`).
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
                 proof: Mapping[str, Any], tree: Mapping[str, Any],
                 producer: Mapping[str, Any] | None = None,
                 feature_names: Sequence[str] | None = None,
                 extensions: Mapping[str, Any] | None = None) -> dict:
        """The JSON document of a certificate whose proof file is written (``proof``: its
        ``sha256`` and ``bytes``; ``tree``: its informational summary, :func:`tree_summary`).
        The other arguments are :meth:`build`'s (``extensions``: the problem's optional parts,
        :func:`encode_extensions`: sample weights and offsets, bound by their hashes, every
        coefficient's bounds, the features forced in and kept out); every field is checked."""
        x_format, x_hash = data_hash(X if _is_sparse_design(X) else np.asarray(X))
        X = X if x_format is not None else np.asarray(X)
        y = np.asarray(y)
        if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
            raise ValueError(f"X must be (n, p) and y (n,), got {X.shape} and {y.shape}")
        if (x_format is None and X.dtype.kind not in "biuf") or y.dtype.kind not in "biuf":
            raise TypeError("X and y must be numeric arrays")
        n, p = (int(d) for d in X.shape)
        loss = problem.get("loss")
        if loss not in LOSSES:
            raise ValueError(f"problem['loss'] must be one of {LOSSES}, got {loss!r}")
        k = _int(problem.get("k"), "problem['k']")
        if not 0 <= k <= p:
            raise ValueError(f"problem['k'] = {k} must be in [0, p = {p}]")
        lambda2 = _finite(problem.get("lambda2"), "problem['lambda2']")
        if lambda2 <= 0:
            raise ValueError(f"problem['lambda2'] = {lambda2} must be > 0")
        M = problem.get("max_abs_coef")
        M = None if M is None or (isinstance(M, float) and math.isinf(M)) else _finite(
            M, "problem['max_abs_coef']")
        if M is not None and M <= 0:
            raise ValueError(f"problem['max_abs_coef'] = {M} must be > 0")
        fit_intercept = bool(problem.get("fit_intercept", False))
        loss_params = check_loss_params(loss, {key: problem[key] for key in LOSS_PARAMETERS
                                               if key in problem})
        names = None
        if feature_names is not None:
            names = [str(s) for s in feature_names]
            if len(names) != p:
                raise ValueError(f"feature_names has {len(names)} names for {p} features")

        coef = np.asarray(incumbent["coef"], dtype=np.float64)
        if coef.shape != (p,) or not np.isfinite(coef).all():
            raise ValueError(f"incumbent['coef'] must be {p} finite numbers, got {coef.shape}")
        intercept = _finite(incumbent.get("intercept", 0.0), "incumbent['intercept']")
        objective = _finite(incumbent["objective"], "incumbent['objective']")

        lb = _finite(bounds["lower_bound"], "bounds['lower_bound']")
        ub = _finite(bounds["upper_bound"], "bounds['upper_bound']")
        status = bounds["status"]
        if status not in STATUSES:
            raise ValueError(f"bounds['status'] must be one of {STATUSES}, got {status!r}")
        rel_tol = _finite(bounds.get("rel_gap_tol", 1e-4), "bounds['rel_gap_tol']")
        abs_tol = _finite(bounds.get("abs_gap_tol", 0.0), "bounds['abs_gap_tol']")
        mu = _finite(eig_shift, "eig_shift")
        if mu < 0:
            raise ValueError(f"eig_shift = {mu} must be >= 0")
        abs_gap = max(0.0, ub - lb)
        rel_gap = abs_gap / max(1.0, abs(ub))

        ext_fields = encode_extensions(extensions, n, p)
        if len(ext_fields.get("always_select", ())) > k:
            raise ValueError(f"always_select holds more than k = {k} features")
        if set(ext_fields.get("always_select", ())) & set(ext_fields.get("exclude", ())):
            raise ValueError("always_select and exclude overlap")
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "problem": {
                "loss": loss,
                "loss_definition": LOSS_DEFINITIONS[loss],
                **loss_params,
                "k": k,
                "lambda2": lambda2,
                "max_abs_coef": M,
                "fit_intercept": fit_intercept,
                "n_samples": n,
                "n_features": p,
                **({} if x_format is None else {"X_format": x_format}),
                "X_sha256": x_hash,
                "y_sha256": array_sha256(y),
                **ext_fields,
                "hash_definition": (HASH_DEFINITION if x_format is None else
                                    f"X: {SPARSE_HASH_DEFINITION}; y: {HASH_DEFINITION}"),
                "label_rule": LABEL_RULE,
                "objective_definition": OBJECTIVE_DEFINITION,
                "feature_names": names,
            },
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
            "tree": _jsonable(dict(tree)),
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
        feature_names: Sequence[str] | None = None,
        extensions: Mapping[str, Any] | None = None,
    ) -> Certificate:
        """A certificate of a tree given node by node (its proof file kept in memory).

        Parameters
        ----------
        X, y : ndarray
            The data exactly as the user passed it (hashed as float64; raw labels).
        problem : dict
            ``loss``, ``k``, ``lambda2``, ``max_abs_coef`` (None = no box), ``fit_intercept``,
            and the loss's parameters by name (its defaults when not given).
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
        feature_names : list of str, optional
            Names of the columns of X (informational; not part of the proof).
        extensions : dict, optional
            The problem's optional parts (:func:`encode_extensions`): sample weights and
            offsets (bound by their hashes), every coefficient's bounds, the features forced in
            and kept out.

        Returns
        -------
        Certificate

        Raises
        ------
        ValueError, TypeError
            On inputs that cannot be encoded (shapes, non-finite values, unknown names, a
            parent that does not exist, a cycle, a node with one child).
        """
        X = X if _is_sparse_design(X) else np.asarray(X)
        n, p = (X.shape if X.ndim == 2 else (0, 0))
        data, counts, records, dual, shifted = cls._encode_tree(nodes, n, p)
        buf = io.BytesIO()
        off = np.zeros(len(shifted) + 1, dtype=np.int64)
        off[1:] = np.cumsum([idx.size for idx, _ in shifted], dtype=np.int64)
        sha, size = write_proof(buf, counts, [records], [dual],
                                off, [v for _, v in shifted], [i for i, _ in shifted])
        doc = cls.document(X, y, problem=problem, incumbent=incumbent, bounds=bounds,
                           eig_shift=eig_shift, proof=dict(sha256=sha, bytes=size),
                           tree=data, producer=producer, feature_names=feature_names,
                           extensions=extensions)
        return cls(doc, buf.getvalue())

    @staticmethod
    def _encode_tree(nodes, n: int, p: int):
        ids, parents, bvars, bvals, status, derive, wits = [], [], [], [], [], [], []
        for i, nd in enumerate(nodes):
            nid = _int(nd["id"], f"nodes[{i}]['id']")
            if nd.get("fixings"):
                raise ValueError(f"node {nid}: a version-3 certificate does not list bound "
                                 "fixings (the verifier derives them from the node's "
                                 "witness): give derive_fixings=True")
            parent = nd.get("parent")
            parent = None if parent is None else _int(parent, f"node {nid} parent")
            bvar = nd.get("branch_var")
            bvar = None if bvar is None else _int(bvar, f"node {nid} branch_var")
            bval = nd.get("branch_value")
            bval = None if bval is None else _int(bval, f"node {nid} branch_value")
            if bval not in (None, 0, 1):
                raise ValueError(f"node {nid}: branch_value must be 0, 1 or None")
            if (parent is None) != (bvar is None) or (bvar is None) != (bval is None):
                raise ValueError(f"node {nid}: parent, branch_var and branch_value must all be "
                                 "given (or all None for the root)")
            if bvar is not None and not 0 <= bvar < p:
                raise ValueError(f"node {nid}: branch_var {bvar} not in [0, {p})")
            st = nd.get("status")
            if st not in NODE_STATUSES:
                raise ValueError(f"node {nid}: status must be one of {NODE_STATUSES}")
            ids.append(nid)
            parents.append(-1 if parent is None else parent)
            bvars.append(-1 if bvar is None else bvar)
            bvals.append(0 if bval is None else bval)
            status.append(st)
            derive.append(bool(nd.get("derive_fixings", False)))
            wits.append(nd.get("witness"))
        tree = tree_order(ids, parents, bvars, bvals)
        for i in range(len(ids)):
            inner = tree.var[i] >= 0
            if inner != (status[i] == "branched"):
                raise ValueError(f"node {ids[i]}: status {status[i]!r} "
                                 + ("but it has children" if inner else
                                    "but it has no children (a leaf is missing)"))
        wkind = np.zeros(len(ids), dtype=np.int64)
        wslot = np.zeros(len(ids), dtype=np.int64)
        dual_rows: list[np.ndarray] = []
        shifted: list[tuple[np.ndarray, np.ndarray]] = []
        for i in tree.order:  # slots in preorder
            wit = wits[i]
            if wit is None:
                continue
            kind, vec = wit
            if kind not in WITNESS_KINDS:
                raise ValueError(f"node {ids[i]}: witness kind must be one of {WITNESS_KINDS}, "
                                 f"got {kind!r}")
            vec = np.asarray(vec, dtype=np.float64)
            want = (n,) if kind == "dual" else (p,)
            if vec.shape != want or not np.isfinite(vec).all():
                raise ValueError(f"node {ids[i]}: {kind} witness must be {want[0]} finite "
                                 f"numbers, got shape {vec.shape}")
            wkind[i] = RECORD_WITNESS[kind]
            if kind == "dual":
                wslot[i] = len(dual_rows)
                dual_rows.append(vec)
            else:
                nz = np.flatnonzero(vec)
                wslot[i] = len(shifted)
                shifted.append((nz, vec[nz]))
        codes = np.array([RECORD_STATUS[s] for s in status], dtype=np.int64)
        records = pack_records(tree, codes, derive, wkind, wslot)
        counts = ProofCounts(n_nodes=len(ids), n_dual=len(dual_rows), n_shifted=len(shifted),
                             shifted_nnz=int(sum(i.size for i, _ in shifted)), n_samples=n,
                             n_features=p)
        dual = np.stack(dual_rows) if dual_rows else np.zeros((0, n))
        return tree_summary(records, tree.depth), counts, records, dual, shifted

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
                out[key] = _jsonable(producer.pop(key))
        out.update(_jsonable(producer))
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
        ValueError
            ``path`` does not end in ``.json``.
        FileExistsError
            A file that is not a sparsecert certificate (or proof file), or a certificate of
            another problem, would be replaced.
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


def _number(v: Any) -> float | None:
    """v as a finite float, or None (a missing, non-numeric or out-of-range field)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _fmt(v: Any, spec: str = "r") -> str:
    """A field for printing: numbers with ``spec`` when they fit a float, else their repr (cut
    short), never an exception."""
    f = _number(v)
    if f is None:
        text = repr(v)
        return text if len(text) <= 40 else text[:37] + "..."
    return repr(v) if spec == "r" else format(f, spec)


def claims_problems(bounds: Mapping[str, Any]) -> list[str]:
    """Why a certificate's claims contradict each other (empty if they do not): a lower bound
    above the upper bound, a stored gap that is not the gap of the bounds, status optimal with
    a gap above the certificate's own tolerances. ``sparsecert show`` marks such a certificate
    INCONSISTENT; the verifier fails the first and the last (checks ``bounds_order`` and
    ``status``; the stored gap is informational, the verifier computes its own)."""
    lb, ub = _number(bounds.get("lower_bound")), _number(bounds.get("upper_bound"))
    if lb is None or ub is None:
        return ["the bounds are not finite numbers"]
    if lb > ub:
        return [f"the lower bound {lb!r} is above the upper bound {ub!r}"]
    from fractions import Fraction

    gap = Fraction(ub) - Fraction(lb)
    rel = gap / max(Fraction(1), abs(Fraction(ub)))
    out = []
    for key, want in (("absolute_gap", gap), ("relative_gap", rel)):
        got = bounds.get(key)
        if got is None:
            continue
        g = _number(got)
        if g is None or abs(Fraction(g) - want) > want / 2 ** 40 + Fraction(1, 2 ** 1000):
            out.append(f"the stored {key.replace('_', ' ')} {_fmt(got)} is not the bounds' "
                       f"{float(want):.6g}")
    rel_tol = _number(bounds.get("rel_gap_tolerance"))
    abs_tol = _number(bounds.get("abs_gap_tolerance"))
    if bounds.get("status") == "optimal" and rel_tol is not None and not (
            rel <= Fraction(rel_tol) or (abs_tol is not None and gap <= Fraction(abs_tol))):
        out.append(f"status optimal with a relative gap {float(rel):.3e} above the "
                   f"certificate's tolerance {rel_tol:g}")
    return out


def format_summary(data: dict, audit: bool = False, nodes: list[dict] | None = None) -> str:
    """Human summary of a certificate document (tolerant of missing optional fields).

    What the certificate states, unchecked: the problem, the status and what it means in plain
    words (claimed: ``sparsecert verify`` proves it on the data), the model, the bounds, the
    tree (the document's summary of it). With ``audit``, every node of the tree follows
    (``nodes``, decoded from the proof file by the caller), one line each (its position in
    preorder, its parent, the branching, status, witness, whether the verifier derives its bound
    fixings): the tree the verifier walks. A certificate whose claims contradict each other
    (:func:`claims_problems`) is marked INCONSISTENT instead of showing its status and meaning.
    """
    pr, inc, bd = data.get("problem", {}), data.get("incumbent", {}), data.get("bounds", {})
    tree = data.get("tree", {}) if isinstance(data.get("tree"), dict) else {}
    by_status = tree.get("leaves") if isinstance(tree.get("leaves"), dict) else {}
    kinds = tree.get("witnesses") if isinstance(tree.get("witnesses"), dict) else {}
    proof = data.get("proof", {}) if isinstance(data.get("proof"), dict) else {}
    size = _number(proof.get("bytes"))
    coef = inc.get("coef", [])
    supp = inc.get("support", [])
    names = pr.get("feature_names") or None
    M = pr.get("max_abs_coef")
    params = "".join(f" ({key}={_fmt(pr.get(key))})" for key in LOSS_PARAMETERS if key in pr)
    prod = data.get("producer", {})
    elapsed = prod.get("elapsed")
    elapsed = f"{_fmt(elapsed, '.2f')} s" if _number(elapsed) is not None else "?"
    problems = claims_problems(bd)
    status = (f"INCONSISTENT (claims {bd.get('status')}): {'; '.join(problems)}"
              if problems else f"{bd.get('status')}")

    def label(j: int) -> str:
        return names[j] if names and j < len(names) else f"b[{j}]"

    lines = [
        f"sparsecert certificate (format {data.get('format')} v{data.get('format_version')})",
        f"  problem   : {pr.get('loss')} loss{params}, n={pr.get('n_samples')}, "
        f"p={pr.get('n_features')}, k={pr.get('k')}, lambda2={_fmt(pr.get('lambda2'))}, "
        f"max_abs_coef={'None' if M is None else _fmt(M)}, "
        f"fit_intercept={pr.get('fit_intercept')}",
        *([f"  also      : {extra}"] if (extra := _extensions_line(pr, label)) else []),
        f"  status    : {status}",
        "  meaning   : "
        + ("none: the claims contradict each other" if problems else
           _meaning(pr.get('k'), bd.get('upper_bound'), bd.get('lower_bound'))),
        f"  objective : {_fmt(bd.get('upper_bound'))} (upper bound)",
        f"  lower bd  : {_fmt(bd.get('lower_bound'))}",
        f"  gap       : absolute {_fmt(bd.get('absolute_gap'))}, relative "
        f"{_fmt(bd.get('relative_gap'))} = {bd.get('relative_gap_definition')} (tolerance "
        f"{_fmt(bd.get('rel_gap_tolerance'))})",
        f"  support   : {supp} ({len(supp)} of {len(coef)} features)",
        "  coef      : " + ", ".join(f"{label(j)}={_fmt(coef[j], '.6g')}" for j in supp
                                     if isinstance(j, int) and 0 <= j < len(coef)),
        f"  intercept : {_fmt(inc.get('intercept'))}",
        f"  tree      : {tree.get('n_nodes', '?')} nodes, {tree.get('n_leaves', '?')} leaves "
        f"({', '.join(f'{v} {k}' for k, v in sorted(by_status.items()))}), depth "
        f"{tree.get('depth', '?')}, witnesses {kinds or 'none'}, {tree.get('n_derive', '?')} "
        "nodes whose bound fixings the verifier derives",
        "  proof     : " + (f"{size / 2 ** 20:.2f} MB" if size is not None else "?")
        + (f" ({size / max(1, tree.get('n_nodes') or 1):.0f} bytes a node)"
           if size is not None and isinstance(tree.get("n_nodes"), int) else ""),
        f"  eig shift : {_fmt(data.get('relaxation', {}).get('eig_shift'))}",
        f"  producer  : sparsecert {prod.get('version')}, python {prod.get('python')}, "
        f"numpy {prod.get('numpy')}, {prod.get('time_utc')}, elapsed {elapsed}",
    ]
    if audit:
        nodes = nodes or []
        lines.append(f"  nodes     : {len(nodes)} in preorder (position: parent, branching "
                     "z_j = 0/1, status, witness, derived bound fixings); 'sparsecert verify' "
                     "checks them on the data")
        lines.extend(f"    {_node_line(nd, label)}" for nd in nodes)
    else:
        lines.append("  (--audit lists every node of the tree; 'sparsecert verify CERT --data "
                     "FILE' checks the certificate and prints each check)")
    return "\n".join(lines)


def _extensions_line(pr: dict, label) -> str:
    """The problem's optional parts (section 2.2 of the format) in a few words ('' for the
    plain problem): what a model is compared with besides k and the box."""
    parts = []
    if pr.get("sample_weight_sha256"):
        parts.append("weighted samples (the weights are data: verify needs them)")
    if pr.get("offset_sha256"):
        parts.append("offsets (data, like the weights)")
    lower, upper = pr.get("coef_lower"), pr.get("coef_upper")
    if isinstance(lower, list) and isinstance(upper, list):
        signs = sum(1 for v in lower if v == 0)
        bounded = sum(1 for a, b in zip(lower, upper, strict=False)
                      if a is not None or b is not None)
        parts.append(f"bounds on {bounded} coefficient(s)"
                     + (f", {signs} of them >= 0" if signs else ""))
    for key, what in (("always_select", "forced in"), ("exclude", "excluded")):
        idx = pr.get(key)
        if isinstance(idx, list) and idx:
            shown = ", ".join(label(j) if isinstance(j, int) else "?" for j in idx[:8])
            parts.append(f"{what}: {shown}" + (f" (+{len(idx) - 8})" if len(idx) > 8 else ""))
    return "; ".join(parts)


def _meaning(k, upper, lower) -> str:
    """What the claimed bounds mean, in plain words (:func:`~sparsecert.statuses.what_it_means`)."""
    if not isinstance(k, int) or _number(upper) is None or _number(lower) is None:
        return "?"
    return what_it_means(k, float(upper), float(lower), proven=False)


def _node_line(nd: dict, label) -> str:
    """One node of the tree for ``sparsecert show --audit``."""
    var = nd.get("branch_var")
    branch = "root" if nd.get("parent") is None else (
        f"parent {nd.get('parent')}, z[{label(var) if isinstance(var, int) else var}] = "
        f"{nd.get('branch_value')}")
    witness = nd.get("witness")
    return (f"{nd.get('index')}: {branch}, {nd.get('status')}"
            + (f", witness {witness[0]} {witness[1]}" if witness else "")
            + (", bound fixings derived" if nd.get("derive") else ""))
