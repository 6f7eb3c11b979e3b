"""The certificate object: build from a solver run, serialise to JSON + .npz sidecar, load.

numpy and the standard library only (like the verifier). The format is specified in
``docs/certificate-format.md``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sparsecert._version import __version__
from sparsecert.certificate.schema import (
    CLASSIFICATION_LOSSES,
    FORMAT_NAME,
    FORMAT_VERSION,
    HASH_DEFINITION,
    LOSS_DEFINITIONS,
    LOSSES,
    NODE_STATUSES,
    OBJECTIVE_DEFINITION,
    PSD_CHECK_DESCRIPTION,
    RELATIVE_GAP_DEFINITION,
    SIDECAR_ARRAYS,
    SIDECAR_DESCRIPTION,
    STATUSES,
    SUPPORTED_FORMAT_VERSIONS,
    WITNESS_KINDS,
    array_sha256,
    npz_bytes,
    sha256_bytes,
)

__all__ = ["Certificate", "exact_zero_sum", "sidecar_path"]


def sidecar_path(json_path: str | os.PathLike) -> str:
    """The sidecar written next to a certificate: ``cert.json`` -> ``cert.npz``."""
    path = os.fspath(json_path)
    root, ext = os.path.splitext(path)
    return (root if ext.lower() == ".json" else path) + ".npz"


def _finite(v: Any, what: str) -> float:
    if isinstance(v, bool):
        raise TypeError(f"{what} must be a number, got a bool")
    try:
        f = float(v)
    except (TypeError, ValueError):
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


class Certificate:
    """A branch-and-bound optimality certificate.

    Attributes
    ----------
    data : dict
        The JSON document (see ``docs/certificate-format.md``).
    arrays : dict of str to ndarray
        The sidecar arrays (``point_offsets``, ``point_indices``, ``point_values``,
        ``dual_values``).
    """

    def __init__(self, data: dict, arrays: dict[str, np.ndarray],
                 sidecar: bytes | None = None):
        self.data = data
        self.arrays = arrays
        self._disk_sidecar = sidecar  # the exact bytes read by ``load`` (None if built)

    # ------------------------------------------------------------------ construction
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
        """Assemble a certificate from a finished (or interrupted) search.

        Parameters
        ----------
        X, y : ndarray
            The data exactly as the user passed it (hashed as float64).
        problem : dict
            ``loss``, ``k``, ``lambda2``, ``max_abs_coef`` (None = no box), ``fit_intercept``,
            ``labels`` (None, or [negative_label, positive_label] for classification).
        incumbent : dict
            ``coef`` (length p), ``intercept``, ``objective``.
        bounds : dict
            ``lower_bound``, ``upper_bound``, ``status``, ``rel_gap_tol``, ``abs_gap_tol``.
        eig_shift : float
            mu >= 0 used by point witnesses (least-squares shifted relaxation).
        nodes : list of dict
            ``id``, ``parent``, ``branch_var``, ``branch_value``, ``status``, ``bound``,
            ``witness`` (None, ("point", b of length p) or ("dual", zeta of length n)).
            ``fixed_in``/``fixed_out`` are derived from the parent chain.
        producer : dict, optional
            ``settings``, ``elapsed``, ``n_jobs``, ``executor`` (metadata, not verified).

        Returns
        -------
        Certificate

        Raises
        ------
        ValueError, TypeError
            On inputs that cannot be encoded (shapes, non-finite values, unknown names, a
            parent that does not exist).
        """
        X = np.asarray(X)
        y = np.asarray(y)
        if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
            raise ValueError(f"X must be (n, p) and y (n,), got {X.shape} and {y.shape}")
        if X.dtype.kind not in "biuf" or y.dtype.kind not in "biuf":
            raise TypeError("X and y must be numeric arrays")
        n, p = X.shape
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
        labels = problem.get("labels")
        if labels is not None:
            if loss not in CLASSIFICATION_LOSSES:
                raise ValueError(f"problem['labels'] must be None for the {loss} loss")
            labels = [_finite(v, "problem['labels']") for v in labels]
            if len(labels) != 2 or labels[0] == labels[1]:
                raise ValueError("problem['labels'] must be [negative_label, positive_label]")

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
        abs_gap = ub - lb
        rel_gap = abs_gap / max(1.0, abs(ub))

        node_docs, arrays = cls._encode_tree(nodes, n, p)
        side = npz_bytes(arrays)
        data = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "problem": {
                "loss": loss,
                "loss_definition": LOSS_DEFINITIONS[loss],
                "k": k,
                "lambda2": lambda2,
                "max_abs_coef": M,
                "fit_intercept": fit_intercept,
                "n_samples": n,
                "n_features": p,
                "X_sha256": array_sha256(X),
                "y_sha256": array_sha256(y),
                "hash_definition": HASH_DEFINITION,
                "labels": labels,
                "objective_definition": OBJECTIVE_DEFINITION,
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
            "relaxation": {"eig_shift": mu, "psd_check": PSD_CHECK_DESCRIPTION},
            "tree": {"n_nodes": len(node_docs), "nodes": node_docs},
            "arrays": {"file": None, "sha256": sha256_bytes(side),
                       "description": SIDECAR_DESCRIPTION},
            "producer": cls._producer(producer),
        }
        return cls(data, arrays)

    @staticmethod
    def _encode_tree(nodes, n: int, p: int) -> tuple[list[dict], dict[str, np.ndarray]]:
        recs = []
        for i, nd in enumerate(nodes):
            nid = _int(nd["id"], f"nodes[{i}]['id']")
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
            status = nd.get("status")
            if status not in NODE_STATUSES:
                raise ValueError(f"node {nid}: status must be one of {NODE_STATUSES}")
            bound = nd.get("bound")
            if bound is not None:
                bound = float(bound)
                if not math.isfinite(bound):
                    bound = None  # e.g. -inf for a node that was never evaluated
            recs.append((nid, parent, bvar, bval, status, bound, nd.get("witness")))
        recs.sort(key=lambda r: r[0])
        by_id = {r[0]: r for r in recs}
        if len(by_id) != len(recs):
            raise ValueError("node ids must be unique")
        fix: dict[int, tuple[frozenset, frozenset]] = {}

        def fixings(nid: int) -> tuple[frozenset, frozenset]:
            chain, cur = [], nid
            while cur not in fix:  # walk up to the root or to a node already resolved
                if len(chain) > len(recs):
                    raise ValueError(f"node {nid}: the parent chain has a cycle")
                chain.append(cur)
                parent = by_id[cur][1]
                if parent is None:
                    fix[cur] = (frozenset(), frozenset())
                    chain.pop()
                    break
                if parent not in by_id:
                    raise ValueError(f"node {cur}: parent {parent} is not among the nodes")
                cur = parent
            for c in reversed(chain):
                _, parent, bvar, bval, *_ = by_id[c]
                pin, pout = fix[parent]
                fix[c] = (pin | {bvar}, pout) if bval == 1 else (pin, pout | {bvar})
            return fix[nid]

        off, idx, val, duals = [0], [], [], []
        docs = []
        for nid, parent, bvar, bval, status, bound, wit in recs:
            fin, fout = fixings(nid)
            ref = None
            if wit is not None:
                kind, vec = wit
                if kind not in WITNESS_KINDS:
                    raise ValueError(f"node {nid}: witness kind must be one of {WITNESS_KINDS}")
                vec = np.asarray(vec, dtype=np.float64)
                want = (p,) if kind == "point" else (n,)
                if vec.shape != want or not np.isfinite(vec).all():
                    raise ValueError(f"node {nid}: {kind} witness must be {want[0]} finite "
                                     f"numbers, got shape {vec.shape}")
                if kind == "point":
                    nzi = np.flatnonzero(vec)
                    ref = {"kind": "point", "slot": len(off) - 1}
                    idx.append(nzi)
                    val.append(vec[nzi])
                    off.append(off[-1] + nzi.size)
                else:
                    ref = {"kind": "dual", "slot": len(duals)}
                    duals.append(vec)
            docs.append({"id": nid, "parent": parent, "branch_var": bvar, "branch_value": bval,
                         "fixed_in": sorted(fin), "fixed_out": sorted(fout), "status": status,
                         "bound": bound, "witness": ref})
        arrays = {
            "point_offsets": np.asarray(off, dtype="<i8"),
            "point_indices": (np.concatenate(idx) if idx else np.zeros(0)).astype("<i8"),
            "point_values": (np.concatenate(val) if val else np.zeros(0)).astype("<f8"),
            "dual_values": (np.stack(duals) if duals else np.zeros((0, n))).astype("<f8"),
        }
        return docs, arrays

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
    def nodes(self) -> list[dict]:
        return self.data["tree"]["nodes"]

    @property
    def lower_bound(self) -> float:
        return self.bounds["lower_bound"]

    @property
    def upper_bound(self) -> float:
        return self.bounds["upper_bound"]

    @property
    def status(self) -> str:
        return self.bounds["status"]

    def witness(self, node_id: int) -> tuple[str, np.ndarray] | None:
        """The witness of a node as ("point", dense b) or ("dual", zeta), or None."""
        nd = next((x for x in self.nodes if x["id"] == node_id), None)
        if nd is None:
            raise KeyError(f"no node with id {node_id}")
        ref = nd["witness"]
        if ref is None:
            return None
        s = ref["slot"]
        if ref["kind"] == "dual":
            return "dual", self.arrays["dual_values"][s].copy()
        off = self.arrays["point_offsets"]
        b = np.zeros(self.problem["n_features"])
        b[self.arrays["point_indices"][off[s]:off[s + 1]]] = (
            self.arrays["point_values"][off[s]:off[s + 1]])
        return "point", b

    # ------------------------------------------------------------------ serialisation
    def to_dict(self) -> dict:
        """The JSON document (a deep copy)."""
        return json.loads(json.dumps(self.data, allow_nan=False))

    def to_json(self) -> str:
        """Deterministic JSON text: 2-space indentation, one tree node per line."""
        body = dict(self.data)
        tree = dict(body["tree"])
        nodes = tree.pop("nodes")
        tree["nodes"] = "@@NODES@@"
        body["tree"] = tree
        text = json.dumps(body, indent=2, allow_nan=False)
        lines = ",\n".join("        " + json.dumps(nd, allow_nan=False, separators=(", ", ": "))
                           for nd in nodes)
        return text.replace('"@@NODES@@"', "[\n" + lines + "\n      ]") + "\n"

    def sidecar_bytes(self) -> bytes:
        """The sidecar bytes: as read from disk by ``load``, else the deterministic ``.npz``
        encoding of ``arrays`` (whose SHA-256 ``build`` recorded in ``data["arrays"]``)."""
        if self._disk_sidecar is not None:
            return self._disk_sidecar
        return npz_bytes(self.arrays)

    def save(self, path: str | os.PathLike) -> tuple[str, str]:
        """Write ``path`` (JSON) and its sidecar (``cert.json`` -> ``cert.npz``).

        Returns
        -------
        (json_path, sidecar_path)
        """
        path = os.fspath(path)
        spath = sidecar_path(path)
        self.data["arrays"]["file"] = os.path.basename(spath)
        with open(spath, "wb") as fh:
            fh.write(self.sidecar_bytes())
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(self.to_json())
        return path, spath

    @classmethod
    def load(cls, path: str | os.PathLike) -> Certificate:
        """Read a certificate and its sidecar (no verification: use ``verify_certificate``).

        Raises
        ------
        OSError
            A file cannot be read.
        ValueError
            The JSON is invalid, not a sparsecert certificate, or the sidecar is unreadable.
        """
        path = os.fspath(path)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        try:
            data = json.loads(text, parse_constant=_reject)
        except ValueError as exc:
            raise ValueError(f"{path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
            raise ValueError(f"{path} is not a {FORMAT_NAME} file")
        if data.get("format_version") not in SUPPORTED_FORMAT_VERSIONS:
            raise ValueError(f"{path}: unsupported format_version {data.get('format_version')!r}")
        fname = (data.get("arrays") or {}).get("file")
        if not isinstance(fname, str) or os.path.basename(fname) != fname or not fname:
            raise ValueError(f"{path}: arrays.file must name the sidecar file next to it")
        spath = os.path.join(os.path.dirname(os.path.abspath(path)), fname)
        with open(spath, "rb") as fh:
            side = fh.read()
        try:
            import io

            with np.load(io.BytesIO(side), allow_pickle=False) as z:
                arrays = {name: z[name] for name in z.files}
        except Exception as exc:  # untrusted bytes: any decoding failure is a ValueError
            raise ValueError(f"{spath} is not a readable .npz file ({exc})") from None
        missing = [a for a in SIDECAR_ARRAYS if a not in arrays]
        if missing:
            raise ValueError(f"{spath} lacks the arrays {missing}")
        return cls(data, arrays, sidecar=side)  # the verifier checks the bytes on disk

    def verify(self, X: np.ndarray, y: np.ndarray, rel_gap: float | None = None):
        """Verify this certificate against the data (see ``verify_certificate``)."""
        from sparsecert.certificate.verify import verify_certificate

        return verify_certificate(self, X, y, rel_gap=rel_gap)

    def summary(self) -> str:
        """A human-readable summary (what ``sparsecert show`` prints)."""
        return format_summary(self.data, self.arrays)

    def __repr__(self) -> str:
        pr, bd = self.problem, self.bounds
        return (f"Certificate(loss={pr['loss']!r}, n={pr['n_samples']}, p={pr['n_features']}, "
                f"k={pr['k']}, status={bd['status']!r}, objective={bd['upper_bound']:.6g}, "
                f"lower_bound={bd['lower_bound']:.6g}, nodes={len(self.nodes)})")


def _reject(name: str):
    raise ValueError(f"non-standard JSON constant {name}")


def format_summary(data: dict, arrays: dict | None = None) -> str:
    """Human summary of a certificate document (tolerant of missing optional fields)."""
    pr, inc, bd = data.get("problem", {}), data.get("incumbent", {}), data.get("bounds", {})
    nodes = data.get("tree", {}).get("nodes", [])
    parents = {nd.get("parent") for nd in nodes}
    leaves = [nd for nd in nodes if nd.get("id") not in parents]
    by_status: dict[str, int] = {}
    for nd in leaves:
        by_status[nd.get("status")] = by_status.get(nd.get("status"), 0) + 1
    kinds: dict[str, int] = {}
    for nd in nodes:
        if nd.get("witness"):
            kinds[nd["witness"]["kind"]] = kinds.get(nd["witness"]["kind"], 0) + 1
    depth = max((len(nd.get("fixed_in", [])) + len(nd.get("fixed_out", [])) for nd in nodes),
                default=0)
    coef = inc.get("coef", [])
    supp = inc.get("support", [])
    M = pr.get("max_abs_coef")
    prod = data.get("producer", {})
    lines = [
        f"sparsecert certificate (format {data.get('format')} v{data.get('format_version')})",
        f"  problem   : {pr.get('loss')} loss, n={pr.get('n_samples')}, "
        f"p={pr.get('n_features')}, k={pr.get('k')}, lambda2={pr.get('lambda2')}, "
        f"max_abs_coef={'inf' if M is None else M}, fit_intercept={pr.get('fit_intercept')}",
        f"  status    : {bd.get('status')}",
        f"  objective : {bd.get('upper_bound')!r} (upper bound)",
        f"  lower bd  : {bd.get('lower_bound')!r}",
        f"  gap       : absolute {bd.get('absolute_gap')!r}, relative {bd.get('relative_gap')!r} "
        f"= {bd.get('relative_gap_definition')} (tolerance {bd.get('rel_gap_tolerance')})",
        f"  support   : {supp} ({len(supp)} of {len(coef)} features)",
        "  coef      : " + ", ".join(f"b[{j}]={coef[j]:.6g}" for j in supp if j < len(coef)),
        f"  intercept : {inc.get('intercept')!r}",
        f"  tree      : {len(nodes)} nodes, {len(leaves)} leaves "
        f"({', '.join(f'{v} {k}' for k, v in sorted(by_status.items()))}), depth {depth}, "
        f"witnesses {kinds or 'none'}",
        f"  eig shift : {data.get('relaxation', {}).get('eig_shift')}",
        f"  producer  : sparsecert {prod.get('version')}, python {prod.get('python')}, "
        f"numpy {prod.get('numpy')}, {prod.get('time_utc')}, elapsed {prod.get('elapsed')} s",
    ]
    return "\n".join(lines)


def exact_zero_sum(
    zeta: np.ndarray, lower: np.ndarray | None = None, upper: np.ndarray | None = None
) -> np.ndarray:
    """A vector close to ``zeta`` whose exact sum is zero (``math.fsum(out) == 0.0``).

    Dual witnesses with an unpenalised intercept (non-squared losses) must sum to zero exactly.
    The entries are moved to a common power-of-two grid ``q`` fine enough that all partial sums
    are exact, the mean is removed, and the remaining integer number of grid units is spread over
    the entries with room inside ``[lower, upper]`` (the conjugate's domain, e.g. from
    :func:`sparsecert.certificate.verify.dual_domain_bounds`).

    Raises
    ------
    ValueError
        If the box leaves no room to reach a zero sum.
    """
    z = np.asarray(zeta, dtype=np.float64)
    n = z.size
    lo = np.full(n, -np.inf) if lower is None else np.asarray(lower, dtype=np.float64)
    hi = np.full(n, np.inf) if upper is None else np.asarray(upper, dtype=np.float64)
    z = np.clip(z - z.mean(), lo, hi)
    scale = max(float(np.abs(z).max(initial=0.0)),
                float(np.abs(lo[np.isfinite(lo)]).max(initial=0.0)),
                float(np.abs(hi[np.isfinite(hi)]).max(initial=0.0)), 1e-300)
    e = math.frexp(scale)[1]  # scale < 2**e
    q = math.ldexp(1.0, e + math.ceil(math.log2(n + 1)) + 1 - 52)
    big = float(2**52)
    lo_u = np.ceil(np.clip(lo / q, -big, big)).astype(np.int64)
    hi_u = np.floor(np.clip(hi / q, -big, big)).astype(np.int64)
    units = np.clip(np.rint(z / q).astype(np.int64), lo_u, hi_u)
    r = int(units.sum())  # entries are < 2**(52 - log2 n): the int64 sum is exact
    if r != 0:
        room = (units - lo_u) if r > 0 else (hi_u - units)
        order = np.argsort(-room, kind="stable")
        need = abs(r)
        take = np.minimum(room[order], need)
        cum = np.cumsum(take)
        take = np.where(cum <= need, take, np.maximum(0, need - (cum - take)))
        if int(take.sum()) != need:
            raise ValueError("the box [lower, upper] leaves no room for an exact zero sum")
        units[order] -= np.sign(r) * take
    out = units.astype(np.float64) * q
    if math.fsum(out.tolist()) != 0.0:  # cannot happen: all entries lie on the grid q
        raise RuntimeError("exact_zero_sum: internal error, the sum is not exactly zero")
    return out
